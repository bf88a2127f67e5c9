//! Heap allocations per run: a run of 8 trivial calls through the whole pipeline, with and
//! without events, against the architecture's bare actor floor and the same per-call work done
//! with `tokio::spawn` + join. Counted by dhat's allocator (every thread's allocations); the
//! counts vary by a few per run with scheduling, not with the machine, so they show what a change
//! to the pipeline costs in allocations.
//!
//! `cargo bench -p golato --bench allocations`

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::sync::Arc;

use golato::{Host, HostConfig};

#[global_allocator]
static ALLOCATOR: dhat::Alloc = dhat::Alloc;

const CALLS: usize = 8;
const RUNS: u64 = 300;

/// Allocations and bytes per iteration of `work`, after a warm-up.
fn per_iteration(mut work: impl FnMut()) -> (f64, f64) {
    for _ in 0..100 {
        work();
    }
    let before = dhat::HeapStats::get();
    for _ in 0..RUNS {
        work();
    }
    let after = dhat::HeapStats::get();
    let count = after.total_blocks - before.total_blocks;
    let bytes = after.total_bytes - before.total_bytes;
    (count as f64 / RUNS as f64, bytes as f64 / RUNS as f64)
}

fn main() {
    let _profiler = dhat::Profiler::builder().testing().build();
    let host = Host::new(HostConfig::default()).unwrap();
    let agent = support::agent(CALLS, host.clone());
    let canned = support::canned_agent(CALLS, host.clone());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();

    let validator = support::floor::validator();
    let tool = support::trivial_tool();
    let calls = support::floor::calls(CALLS);
    let floor = support::floor::Floor::new(&host, CALLS);
    let rows = [
        (
            "golato Agent::run (no events)",
            per_iteration(|| {
                runtime.block_on(agent.run(support::input())).unwrap();
            }),
        ),
        (
            "golato Agent::run, whole messages",
            per_iteration(|| {
                runtime.block_on(canned.run(support::input())).unwrap();
            }),
        ),
        (
            "golato start + wait (events buffered)",
            per_iteration(|| {
                agent.start(support::input()).wait().unwrap();
            }),
        ),
        (
            "bare actor floor (no golato logic)",
            per_iteration(|| floor.run(support::floor::Shape::PerCallActors, 1)),
        ),
        (
            "floor: run + supervisor + call actors",
            per_iteration(|| floor.run(support::floor::Shape::RunSupervisorCalls, 1)),
        ),
        (
            "tokio spawn + join",
            per_iteration(|| {
                let batch = support::floor::tokio_batch(
                    calls.iter().cloned(),
                    tool.clone(),
                    Arc::clone(&validator),
                );
                runtime.block_on(batch);
            }),
        ),
    ];
    println!("allocations per run of {CALLS} trivial calls ({RUNS} runs each):");
    for (name, (count, bytes)) in rows {
        println!(
            "  {name:<40} {count:>8.1} allocations ({:.1} per call), {bytes:>9.0} bytes",
            count / CALLS as f64
        );
    }
    host.shutdown_blocking(std::time::Duration::from_secs(10));
}
