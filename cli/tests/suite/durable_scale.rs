//! Ten thousand durable runs at once (issue 47, point 5): one Restate server, three `golato
//! serve` workers behind a balancer, every run submitted at the same moment; every run ends
//! once and every outcome reads back. The figures (runs/s, latencies, CPU) are printed, not
//! asserted: BENCHMARKS.md has them for a release build.

use crate::support;

use std::time::Instant;

use golato_restate::Client;
use support::restate::{balancer, Server, Worker};

use super::durable::HANG_GUARD;

/// How many runs go at once.
const RUNS: usize = 10_000;

#[test]
#[ignore = "needs a Restate server: GOLATO_RESTATE_SERVER (.ci/run)"]
fn ten_thousand_runs_at_once_on_one_server_and_three_workers_each_end_once() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("note.txt"), "a small file\n").unwrap();
    let reads: Vec<_> = (0..2)
        .map(|n| {
            serde_json::json!({"id": format!("r{n}"), "name": "read", "arguments": {"path": "note.txt"}})
        })
        .collect();
    let script = dir.path().join("reads.jsonl");
    std::fs::write(
        &script,
        format!(
            "{}\n{}\n",
            serde_json::json!({ "tool_calls": reads }),
            serde_json::json!({"text": "done"})
        ),
    )
    .unwrap();
    let server = Server::start();
    let flags = [
        "--script",
        script.to_str().unwrap(),
        "--cwd",
        dir.path().to_str().unwrap(),
    ];
    let workers: Vec<Worker> = (0..3)
        .map(|n| Worker::start(dir.path(), &format!("worker{n}"), &flags))
        .collect();
    let front = balancer(workers.iter().map(|worker| worker.port).collect());
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime
        .block_on(golato_restate::register(
            &server.admin,
            &format!("http://{front}"),
        ))
        .unwrap();
    let client = Client::new(&server.ingress).unwrap();
    // Runs `count` runs named `prefix-N` at once; bounded by the hang guard, with a message.
    let submit_all = |client: &Client, prefix: &str, count: usize| {
        let burst = async {
            let started = Instant::now();
            let tasks: Vec<_> = (0..count)
                .map(|n| {
                    let client = client.clone();
                    let id = format!("{prefix}-{n}");
                    tokio::spawn(async move {
                        let outcome = client.submit(&id, "go").await;
                        (outcome, started.elapsed().as_secs_f64())
                    })
                })
                .collect();
            let mut ended = Vec::with_capacity(count);
            for task in tasks {
                ended.push(task.await.unwrap());
            }
            ended
        };
        runtime
            .block_on(async { tokio::time::timeout(HANG_GUARD, burst).await })
            .unwrap_or_else(|_| {
                panic!(
                    "{count} runs ({prefix}) did not all end within {HANG_GUARD:?}; the server's log:\n{}",
                    server.log().lines().rev().take(40).collect::<Vec<_>>().join("\n")
                )
            })
    };
    // A few runs first, as a user's first requests would be: the burst meets a server whose
    // partitions all run and which knows the deployment (a burst at a server still starting
    // its partitions overloaded it once, and its own metadata store stopped answering).
    for (outcome, _) in submit_all(&client, "warm", 20) {
        assert_eq!(outcome.unwrap().error, None);
    }
    let started = Instant::now();
    let first = submit_all(&client, "scale", RUNS);
    let wall = started.elapsed();
    assert!(wall < HANG_GUARD, "{RUNS} runs took {wall:?}");
    let mut latencies = Vec::with_capacity(RUNS);
    for (n, (outcome, at)) in first.into_iter().enumerate() {
        let outcome = outcome.unwrap_or_else(|error| panic!("scale-{n}: {error}"));
        assert_eq!(outcome.error, None, "scale-{n}");
        assert_eq!(outcome.final_text().as_deref(), Some("done"), "scale-{n}");
        latencies.push(at);
    }
    // Read back: the same ID gives the same run's outcome and runs nothing.
    for (n, (outcome, _)) in submit_all(&client, "scale", RUNS).into_iter().enumerate() {
        let outcome = outcome.unwrap_or_else(|error| panic!("scale-{n} read back: {error}"));
        assert_eq!(outcome.error, None, "scale-{n} read back");
        assert_eq!(outcome.turns, 2, "scale-{n} read back");
    }
    // Each run ran once: the workers log one end per run.
    let ended: usize = workers
        .iter()
        .map(|worker| {
            std::fs::read_to_string(&worker.log)
                .unwrap()
                .lines()
                .filter(|line| line.contains("run ended"))
                .count()
        })
        .sum();
    assert_eq!(ended, RUNS + 20);
    latencies.sort_by(f64::total_cmp);
    eprintln!(
        "{RUNS} runs at once, 3 workers: {:.0} runs/s, p50 {:.1} s, p99 {:.1} s (debug build)",
        RUNS as f64 / wall.as_secs_f64(),
        latencies[RUNS / 2],
        latencies[RUNS * 99 / 100]
    );
}
