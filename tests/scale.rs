//! Scale (issue 60, point 4): 100,000 runs × 8 calls at once in one process, every call parked
//! in its tool until all 800,000 are in, every outcome checked; the resident memory a parked run
//! holds stays within what BENCHMARKS.md states (about 10-12 KiB an 8-call run in release;
//! held under 16 KiB here).
//!
//! One test in its own binary: the memory read is this test's alone.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../examples/stress.rs"]
#[allow(dead_code)]
mod stress;

/// What one parked 8-call run may hold, resident.
const MAX_KIB_PER_PARKED_RUN: f64 = 16.0;

#[test]
fn a_hundred_thousand_runs_of_eight_calls_park_in_one_process_within_their_stated_memory() {
    let report = stress::stress(&stress::Options {
        runs: 100_000,
        calls: 8,
        parked: true,
        arbiters: None,
        workers: None,
        tool_tasks: golato::ToolTasks::default(),
        console: stress::Console::Off,
    })
    .unwrap_or_else(|why| panic!("a run went wrong: {why}"));
    assert_eq!(report["runs"], 100_000);
    let per_run = report["rss_per_parked_run_kib"].as_f64().unwrap();
    assert!(
        per_run <= MAX_KIB_PER_PARKED_RUN,
        "{per_run:.2} KiB a parked run, over {MAX_KIB_PER_PARKED_RUN}: {report}"
    );
}
