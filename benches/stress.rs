//! Concurrency stress: 10,000 concurrent runs × 8 trivial calls with the Scripted generator, all
//! started before any is awaited. Reports tool calls per second (criterion's throughput) and the
//! process's peak resident memory. Two ways of waiting: `Agent::run` (events are neither built
//! nor kept) awaited together, and `Agent::start` + `Run::wait` (a run's events are built and
//! buffered, unread, until `wait` is called on it; the runs are waited for one after another).
//!
//! The actor console's cost (issue 59): `stress_console/agent_run/console_off` and
//! `console_on`, the same runs on a host without and with `HostConfig::console`; run each alone
//! and in turns (`cargo bench -p golato --bench stress -- console_off`, then `console_on`, …),
//! as this machine's drift between minutes is larger than the few per cent measured.
//!
//! `cargo bench -p golato --bench stress`

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use golato::{Host, HostConfig};

const RUNS: usize = 10_000;
const CALLS: usize = 8;

fn stress(c: &mut Criterion) {
    let mut group = c.benchmark_group("stress");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(20));
    group.throughput(Throughput::Elements((RUNS * CALLS) as u64));
    for arbiters in [1, 2] {
        let host = Host::new(HostConfig {
            arbiters,
            ..HostConfig::default()
        })
        .unwrap();
        let agent = support::agent(CALLS, host);
        group.bench_function(format!("agent_run/arbiters_{arbiters}"), |b| {
            b.iter_custom(|iterations| run_all(&agent, iterations))
        });
        group.bench_function(
            format!("start_wait_events_buffered/arbiters_{arbiters}"),
            |b| {
                b.iter_custom(|iterations| {
                    let started = Instant::now();
                    for _ in 0..iterations {
                        let runs: Vec<_> =
                            (0..RUNS).map(|_| agent.start(support::input())).collect();
                        for run in runs {
                            let result = run.wait().unwrap();
                            assert_eq!(result.messages.len(), 2 + CALLS + 1);
                        }
                    }
                    started.elapsed()
                })
            },
        );
        eprintln!(
            "stress/start_wait/arbiters_{arbiters}: peak RSS so far {:.1} MiB",
            support::peak_rss_mib()
        );
    }
    group.finish();
}

/// `iterations` times, RUNS runs of CALLS calls awaited together; the time it took.
fn run_all(agent: &golato::Agent, iterations: u64) -> Duration {
    let started = Instant::now();
    for _ in 0..iterations {
        let runs = (0..RUNS).map(|_| agent.run(support::input()));
        for result in futures::executor::block_on(futures::future::join_all(runs)) {
            assert_eq!(result.unwrap().messages.len(), 2 + CALLS + 1);
        }
    }
    started.elapsed()
}

/// The same runs on a host without and with the actor console.
fn stress_console(c: &mut Criterion) {
    let mut group = c.benchmark_group("stress_console");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(20));
    group.throughput(Throughput::Elements((RUNS * CALLS) as u64));
    for console in [false, true] {
        let host = Host::new(HostConfig {
            arbiters: 2,
            console: console.then(golato::host::console::ConsoleConfig::default),
            ..HostConfig::default()
        })
        .unwrap();
        let agent = support::agent(CALLS, host);
        let name = if console { "console_on" } else { "console_off" };
        group.bench_function(format!("agent_run/{name}"), |b| {
            b.iter_custom(|iterations| run_all(&agent, iterations))
        });
    }
    group.finish();
}

criterion_group!(benches, stress, stress_console);
criterion_main!(benches);
