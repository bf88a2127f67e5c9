//! Durable runs on a real Restate server, measured: runs/s and calls/s with 1, 2 and 3 `golato
//! serve` workers (behind a TCP balancer, as in production) beside the same runs in-process;
//! journal entries and bytes per run; and the time from a worker's SIGKILL to every affected run
//! making progress again. Prints one JSON line per measurement; figures in BENCHMARKS.md.
//!
//! Each run: turn 1 is K parallel `read` calls of a small file, turn 2 the answer. The kill
//! phase gates two bash calls per run on a file lock, kills the worker with the most of them
//! running, releases the gate at once, and times each affected run until its interrupted calls
//! start again elsewhere (their ledger lines carry a clock).
//!
//! ```text
//! cargo build --release
//! GOLATO_RESTATE_SERVER=.../bin/restate-server \
//!     cargo run --release -p golato-restate --example durable_load -- [--runs 300] [--calls 8]
//! ```

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

#[path = "../../tests/support/restate.rs"]
#[allow(dead_code, unreachable_pub)]
mod restate;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use golato::agent::{self, Agent};
use golato::generator::Scripted;
use golato::message::UserMessage;
use golato_restate::Client;
use restate::{balancer, Server, Worker};
use serde_json::json;

fn argument(name: &str, default: usize) -> usize {
    let arguments: Vec<String> = std::env::args().collect();
    arguments
        .iter()
        .position(|argument| argument == name)
        .and_then(|at| arguments.get(at + 1))
        .map_or(default, |value| value.parse().expect("a number"))
}

/// Turn 1: `calls` reads of `note.txt`; turn 2: the answer.
fn read_script(dir: &Path, calls: usize) -> std::path::PathBuf {
    std::fs::write(dir.join("note.txt"), "a small file\n").unwrap();
    let reads: Vec<_> = (0..calls)
        .map(|n| json!({"id": format!("r{n}"), "name": "read", "arguments": {"path": "note.txt"}}))
        .collect();
    let path = dir.join("reads.jsonl");
    std::fs::write(
        &path,
        format!(
            "{}\n{}\n",
            json!({ "tool_calls": reads }),
            json!({"text": "done"})
        ),
    )
    .unwrap();
    path
}

fn submit(runtime: &tokio::runtime::Runtime, ingress: &str, prefix: &str, runs: usize) -> Duration {
    let client = Client::new(ingress).unwrap();
    let started = Instant::now();
    runtime.block_on(async {
        let tasks: Vec<_> = (0..runs)
            .map(|n| {
                let client = client.clone();
                let id = format!("{prefix}-{n}");
                tokio::spawn(async move { client.submit(&id, "go").await })
            })
            .collect();
        for task in tasks {
            let outcome = task.await.unwrap().unwrap();
            assert_eq!(outcome.error, None, "{}", outcome.run_id);
        }
    });
    started.elapsed()
}

/// Starts a server and `count` workers behind a balancer, registered.
fn cluster(
    runtime: &tokio::runtime::Runtime,
    dir: &Path,
    count: usize,
    flags: &[&str],
) -> (Server, Vec<Worker>) {
    let server = Server::start();
    let workers: Vec<Worker> = (0..count)
        .map(|n| Worker::start(dir, &format!("worker{n}"), flags))
        .collect();
    let front = balancer(workers.iter().map(|worker| worker.port).collect());
    runtime
        .block_on(golato_restate::register(
            &server.admin,
            &format!("http://{front}"),
        ))
        .unwrap();
    (server, workers)
}

/// Mean entries and bytes written per run, from the workers' "run ended" lines.
fn journal_per_run(workers: &[Worker]) -> (f64, f64) {
    let (mut runs, mut entries, mut bytes) = (0.0, 0.0, 0.0);
    for worker in workers {
        for line in std::fs::read_to_string(&worker.log).unwrap().lines() {
            if !line.contains("run ended") {
                continue;
            }
            let field = |name: &str| -> f64 {
                let start = line.find(name).unwrap() + name.len();
                line[start..].split(' ').next().unwrap().parse().unwrap()
            };
            runs += 1.0;
            entries += field("entries_written=");
            bytes += field("bytes_written=");
        }
    }
    (entries / runs, bytes / runs)
}

fn in_process(
    runtime: &tokio::runtime::Runtime,
    dir: &Path,
    runs: usize,
    calls: usize,
) -> Duration {
    let script = Scripted::from_file(read_script(dir, calls)).unwrap();
    let tools = golato::builtin::new(golato::builtin::Config {
        working_directory: dir.to_owned(),
        ..Default::default()
    })
    .unwrap();
    let agent = Arc::new(
        Agent::new(agent::Config {
            generator: Some(Arc::new(script)),
            tools,
            ..Default::default()
        })
        .unwrap(),
    );
    let started = Instant::now();
    runtime.block_on(async {
        let runs: Vec<_> = (0..runs)
            .map(|_| agent.start(UserMessage::new("go")))
            .collect();
        for run in runs {
            run.finish().await.unwrap();
        }
    });
    started.elapsed()
}

/// Kills one of three workers while every run's two gated calls run; returns the affected
/// runs and the seconds from the kill until each one's calls had started again.
fn kill_to_progress(runtime: &tokio::runtime::Runtime, runs: usize) -> (usize, Vec<f64>) {
    let dir = tempfile::tempdir().unwrap();
    let gate = dir.path().join("gate");
    let gate_file = std::fs::File::create(&gate).unwrap();
    rustix::fs::flock(&gate_file, rustix::fs::FlockOperation::LockExclusive).unwrap();
    let ledger = dir.path().join("ledger");
    let gated = |id: &str| {
        json!({"id": id, "name": "bash", "arguments": {"command": format!(
            "echo \"$GOLATO_RUN_KEY {id} $GOLATO_TOOL_ATTEMPT $PPID $(date +%s.%N)\" >> {}; flock -s {} true",
            ledger.display(), gate.display()
        )}})
    };
    let script = dir.path().join("gated.jsonl");
    std::fs::write(
        &script,
        format!(
            "{}\n{}\n",
            json!({"tool_calls": [gated("c"), gated("d")]}),
            json!({"text": "done"})
        ),
    )
    .unwrap();
    let flags = [
        "--script",
        script.to_str().unwrap(),
        "--cwd",
        dir.path().to_str().unwrap(),
    ];
    let (server, mut workers) = cluster(runtime, dir.path(), 3, &flags);
    let ingress = server.ingress.clone();
    let submitting = std::thread::spawn(move || {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        submit(&runtime, &ingress, "kill", runs)
    });
    let lines = || -> Vec<Vec<String>> {
        std::fs::read_to_string(&ledger)
            .unwrap_or_default()
            .lines()
            .map(|line| line.split_whitespace().map(str::to_owned).collect())
            .collect()
    };
    while lines().len() < 2 * runs {
        std::thread::sleep(Duration::from_millis(10));
    }
    let victim = workers[0].pid().to_string();
    let affected: std::collections::HashSet<String> = lines()
        .into_iter()
        .filter(|line| line[3] == victim)
        .map(|line| line[0].clone())
        .collect();
    let killed_at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    workers[0].kill();
    drop(gate_file);
    submitting.join().unwrap();
    let mut delays: Vec<f64> = affected
        .iter()
        .map(|run| {
            lines()
                .into_iter()
                .filter(|line| &line[0] == run && line[2] == "2")
                .map(|line| line[4].parse::<f64>().unwrap() - killed_at)
                .fold(0.0, f64::max)
        })
        .collect();
    delays.sort_by(f64::total_cmp);
    drop(server);
    (affected.len(), delays)
}

/// CPU seconds (user + system) process `pid` has used so far.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which may hold spaces) start after the last ')'.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or("", |(_, rest)| rest)
        .split_whitespace()
        .collect();
    let ticks = |at: usize| {
        fields
            .get(at)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // utime and stime are fields 14 and 15 of stat, 12 and 13 after the state field.
    (ticks(11) + ticks(12)) / 100.0
}

fn main() {
    let runs = argument("--runs", 300);
    let calls = argument("--calls", 8);
    let runtime = tokio::runtime::Runtime::new().unwrap();

    let dir = tempfile::tempdir().unwrap();
    let wall = in_process(&runtime, dir.path(), runs, calls);
    println!(
        "{}",
        json!({"mode": "in-process", "runs": runs, "calls_per_run": calls,
               "runs_per_s": runs as f64 / wall.as_secs_f64(),
               "calls_per_s": (runs * calls) as f64 / wall.as_secs_f64()})
    );

    for count in 1..=3 {
        let dir = tempfile::tempdir().unwrap();
        let script = read_script(dir.path(), calls);
        let flags = [
            "--script",
            script.to_str().unwrap(),
            "--cwd",
            dir.path().to_str().unwrap(),
        ];
        let (server, workers) = cluster(&runtime, dir.path(), count, &flags);
        submit(&runtime, &server.ingress, "warm", 20);
        let server_pid = server.pid().unwrap();
        let worker_cpu = || {
            workers
                .iter()
                .map(|worker| cpu_seconds(worker.pid()))
                .sum::<f64>()
        };
        let (server_before, workers_before) = (cpu_seconds(server_pid), worker_cpu());
        let wall = submit(&runtime, &server.ingress, "run", runs);
        let (server_cpu, workers_cpu) = (
            cpu_seconds(server_pid) - server_before,
            worker_cpu() - workers_before,
        );
        let (entries, bytes) = journal_per_run(&workers);
        println!(
            "{}",
            json!({"mode": "durable", "workers": count, "runs": runs, "calls_per_run": calls,
                   "runs_per_s": runs as f64 / wall.as_secs_f64(),
                   "calls_per_s": (runs * calls) as f64 / wall.as_secs_f64(),
                   "journal_entries_per_run": entries, "journal_bytes_per_run": bytes,
                   "wall_s": wall.as_secs_f64(), "server_cpu_s": server_cpu,
                   "workers_cpu_s": workers_cpu})
        );
    }

    let (affected, delays) = kill_to_progress(&runtime, 100);
    let at = |q: f64| delays[((delays.len() as f64 - 1.0) * q).round() as usize];
    println!(
        "{}",
        json!({"mode": "kill", "workers": 3, "runs": 100, "affected_runs": affected,
               "kill_to_progress_s_median": at(0.5), "kill_to_progress_s_max": at(1.0)})
    );
}
