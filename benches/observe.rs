//! What watching costs: 256 runs of 8 trivial calls in flight (CPU per call), with no tracing
//! subscriber, with one installed that filters golato's `DEBUG` spans out (the usual
//! production set-up: `INFO`), and with `golato::observe`'s layer on, formatting every span
//! to a sink. Every row also keeps `Host::stats()` counters, which are always on.
//!
//! The rows run in that order in one process, because a global subscriber, once installed,
//! stays: the filter is switched with a reload handle.
//!
//! `cargo bench -p golato --bench observe`

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use golato::{Host, HostConfig};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{reload, EnvFilter};

const CALLS: usize = 8;
const IN_FLIGHT: usize = 256;

fn observe(c: &mut Criterion) {
    let host = Host::new(HostConfig::default()).unwrap();
    let agent = support::agent(CALLS, host);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut batch = || {
        runtime.block_on(async {
            let runs: Vec<_> = (0..IN_FLIGHT)
                .map(|_| agent.run(support::input()))
                .collect();
            black_box(futures::future::join_all(runs).await)
        })
    };
    let mut group = c.benchmark_group("observe");
    group.throughput(Throughput::Elements((IN_FLIGHT * CALLS) as u64));
    group.bench_function("256_runs_x_8_calls_no_subscriber", |b| b.iter(&mut batch));

    let (filter, switch) = reload::Layer::new(EnvFilter::new("info"));
    tracing_subscriber::registry()
        .with(golato::observe::layer_with(
            EnvFilter::new("trace"),
            std::io::sink,
            false,
        ))
        .with(filter)
        .init();
    group.bench_function("256_runs_x_8_calls_spans_filtered_out", |b| {
        b.iter(&mut batch)
    });

    switch
        .reload(EnvFilter::new(golato::observe::DEFAULT_FILTER))
        .unwrap();
    group.bench_function("256_runs_x_8_calls_spans_on", |b| b.iter(&mut batch));
    group.finish();
}

criterion_group!(benches, observe);
criterion_main!(benches);
