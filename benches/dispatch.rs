//! Dispatch overhead: a batch of 8 trivial calls through the full pipeline (a whole run: two
//! generator turns, validation, supervisor, per-call actors; `Run::wait` called at once, so no
//! event is built, or every event read first), against the same per-call
//! work (parse, schema check, call, result message) done with plain `tokio::spawn` + join.
//! Between the two, `actix_floor_*`: the bare actor mechanics the architecture asks for (an actor
//! per batch on an arbiter, an actor per call, the work on the runtime), with no golato logic;
//! and `actix_supervisor_only_*`: the same without per-call actors (the batch's actor spawns the
//! work and awaits the join handles), the alternative design.
//! Also: two 200 ms CPU-bound calls in one batch, which must overlap.
//!
//! Tool tasks run where the host puts them by default (on the run's thread); with
//! `GOLATO_BENCH_TOOL_TASKS=workers` golato and the floors put them on the worker runtime.
//!
//! `cargo bench -p golato --bench dispatch`

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use golato::agent::{self, Agent};
use golato::generator::Scripted;
use golato::message::{AssistantMessage, ToolCall};
use golato::tool::{Tool, ToolResult};
use golato::{Host, HostConfig, ToolTasks};
use serde_json::json;

const CALLS: usize = 8;
const IN_FLIGHT: usize = 256;

fn pipeline(c: &mut Criterion) {
    let tool_tasks = match std::env::var("GOLATO_BENCH_TOOL_TASKS").as_deref() {
        Ok("workers") => ToolTasks::Workers,
        Ok("run-thread") | Err(_) => ToolTasks::RunThread,
        Ok(other) => panic!("GOLATO_BENCH_TOOL_TASKS is run-thread or workers, not {other:?}"),
    };
    let host = Host::new(HostConfig {
        tool_tasks,
        ..HostConfig::default()
    })
    .unwrap();
    let agent = support::agent(CALLS, host.clone());
    let mut group = c.benchmark_group("dispatch");
    group.throughput(Throughput::Elements(CALLS as u64));
    group.bench_function("golato_run_8_calls", |b| {
        b.iter(|| black_box(agent.start(support::input()).wait().unwrap()))
    });
    group.bench_function("golato_run_8_calls_reading_events", |b| {
        b.iter(|| {
            let run = agent.start(support::input());
            for event in run.events() {
                black_box(event);
            }
            black_box(run.wait().unwrap())
        })
    });

    // The same per-call work without golato's runtime.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let validator = support::floor::validator();
    let tool = support::trivial_tool();
    let calls = support::floor::calls(CALLS);
    let floor = support::floor::Floor::new(&host, CALLS);
    group.bench_function("tokio_spawn_join_8_calls", |b| {
        b.iter(|| {
            let batch = support::floor::tokio_batch(
                calls.iter().cloned(),
                tool.clone(),
                Arc::clone(&validator),
            );
            black_box(runtime.block_on(batch))
        })
    });
    group.bench_function("actix_supervisor_only_8_calls", |b| {
        b.iter(|| floor.run(support::floor::Shape::SupervisorOnly, 1))
    });
    group.bench_function("actix_floor_run_supervisor_calls_8_calls", |b| {
        b.iter(|| floor.run(support::floor::Shape::RunSupervisorCalls, 1))
    });
    group.bench_function("actix_floor_run_turns_supervisor_calls_8_calls", |b| {
        b.iter(|| floor.run(support::floor::Shape::RunTurnsSupervisorCalls, 1))
    });
    group.bench_function("actix_floor_8_calls", |b| {
        b.iter(|| floor.run(support::floor::Shape::PerCallActors, 1))
    });
    group.finish();

    // The same comparison with many batches in flight, so that thread wake-up latency overlaps
    // and what is left is the CPU cost per call.
    let mut group = c.benchmark_group("dispatch_in_flight");
    group.throughput(Throughput::Elements((IN_FLIGHT * CALLS) as u64));
    group.bench_function("golato_256_runs_x_8_calls", |b| {
        b.iter(|| {
            let runs: Vec<_> = (0..IN_FLIGHT)
                .map(|_| agent.start(support::input()))
                .collect();
            for run in runs {
                black_box(run.wait().unwrap());
            }
        })
    });
    group.bench_function("golato_256_agent_runs_x_8_calls", |b| {
        b.iter(|| {
            runtime.block_on(async {
                let runs: Vec<_> = (0..IN_FLIGHT)
                    .map(|_| agent.run(support::input()))
                    .collect();
                black_box(futures::future::join_all(runs).await)
            })
        })
    });
    let canned = support::canned_agent(CALLS, host);
    group.bench_function("golato_256_agent_runs_x_8_calls_whole_messages", |b| {
        b.iter(|| {
            runtime.block_on(async {
                let runs: Vec<_> = (0..IN_FLIGHT)
                    .map(|_| canned.run(support::input()))
                    .collect();
                black_box(futures::future::join_all(runs).await)
            })
        })
    });
    group.bench_function("actix_supervisor_only_256_batches_x_8_calls", |b| {
        b.iter(|| floor.run(support::floor::Shape::SupervisorOnly, IN_FLIGHT))
    });
    group.bench_function("actix_floor_run_supervisor_calls_256_x_8_calls", |b| {
        b.iter(|| floor.run(support::floor::Shape::RunSupervisorCalls, IN_FLIGHT))
    });
    group.bench_function(
        "actix_floor_run_turns_supervisor_calls_256_x_8_calls",
        |b| b.iter(|| floor.run(support::floor::Shape::RunTurnsSupervisorCalls, IN_FLIGHT)),
    );
    group.bench_function("actix_floor_256_batches_x_8_calls", |b| {
        b.iter(|| floor.run(support::floor::Shape::PerCallActors, IN_FLIGHT))
    });
    group.bench_function("tokio_256_batches_x_8_spawn_join", |b| {
        b.iter(|| {
            runtime.block_on(async {
                let batches: Vec<_> = (0..IN_FLIGHT)
                    .map(|_| {
                        tokio::spawn(support::floor::tokio_batch(
                            calls.clone(),
                            tool.clone(),
                            Arc::clone(&validator),
                        ))
                    })
                    .collect();
                for batch in batches {
                    black_box(batch.await.unwrap());
                }
            })
        })
    });
    group.finish();
}

fn cpu_bound(c: &mut Criterion) {
    let spin = Tool::blocking(
        "spin",
        "Computes for 200 ms.",
        json!({"type": "object"}),
        |_ctx, _args| {
            let started = Instant::now();
            let mut x = 0u64;
            while started.elapsed() < Duration::from_millis(200) {
                x = black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
            Ok(ToolResult::text(x.to_string()))
        },
    );
    let agent = Agent::new(agent::Config {
        generator: Some(Arc::new(Scripted::new([
            AssistantMessage::with_tool_calls([
                ToolCall::new("a", "spin", "{}"),
                ToolCall::new("b", "spin", "{}"),
            ]),
            AssistantMessage::with_text("done"),
        ]))),
        tools: vec![spin],
        ..Default::default()
    })
    .unwrap();
    let mut group = c.benchmark_group("cpu_bound");
    group.sample_size(10);
    group.bench_function("two_200ms_calls_in_one_batch", |b| {
        b.iter(|| black_box(agent.start(support::input()).wait().unwrap()))
    });
    group.finish();
}

criterion_group!(benches, pipeline, cpu_bound);
criterion_main!(benches);
