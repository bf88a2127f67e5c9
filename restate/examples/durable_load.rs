//! Durable runs on a real Restate server, measured: runs/s and calls/s with 1, 2 and 3 `golato
//! serve` workers (behind a TCP balancer, as in production) beside the same runs in-process;
//! journal entries and bytes per run; and the time from a worker's SIGKILL to every affected run
//! making progress again; and the floor, a bare `restate-sdk` handler making the same journal
//! entries (`--floor-only` measures it alone); and what publishing the runs' events costs
//! (`--events-only`: the same runs on one worker without and with `--restate`, alternately);
//! and the floor beside a library worker on tokio's threads and on one actix thread
//! (`--step-cost`); and `--scale`: `--runs` runs at once on one server and three workers, with
//! each run's latency, CPU, peak memory, and every outcome read back. Prints one JSON line per
//! measurement; figures in BENCHMARKS.md.
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

/// The mean of each of `fields` per run, from the workers' "run ended" lines.
fn per_run<const N: usize>(workers: &[Worker], fields: [&str; N]) -> [f64; N] {
    let mut runs = 0.0;
    let mut sums = [0.0; N];
    for worker in workers {
        for line in std::fs::read_to_string(&worker.log).unwrap().lines() {
            if !line.contains("run ended") {
                continue;
            }
            runs += 1.0;
            for (sum, name) in sums.iter_mut().zip(fields) {
                let start = line.find(&format!("{name}=")).unwrap() + name.len() + 1;
                *sum += line[start..]
                    .split(' ')
                    .next()
                    .unwrap()
                    .parse::<f64>()
                    .unwrap();
            }
        }
    }
    sums.map(|sum| sum / runs)
}

/// The same runs on one worker without and with published events, `sittings` times each,
/// alternately: wall, server and worker CPU, events and batches per run.
fn events_cost(runtime: &tokio::runtime::Runtime, runs: usize, calls: usize, sittings: usize) {
    for sitting in 0..sittings {
        for publish in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let script = read_script(dir.path(), calls);
            let server = Server::start();
            let mut flags = vec![
                "--script".to_owned(),
                script.to_str().unwrap().to_owned(),
                "--cwd".to_owned(),
                dir.path().to_str().unwrap().to_owned(),
            ];
            if publish {
                flags.extend(["--restate".to_owned(), server.ingress.clone()]);
            }
            let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
            let worker = Worker::start(dir.path(), "worker", &flags);
            runtime
                .block_on(golato_restate::register(
                    &server.admin,
                    &format!("http://127.0.0.1:{}", worker.port),
                ))
                .unwrap();
            submit(runtime, &server.ingress, "warm", 20);
            let (server_before, worker_before) = (
                cpu_seconds(server.pid().unwrap()),
                cpu_seconds(worker.pid()),
            );
            let wall = submit(runtime, &server.ingress, "run", runs);
            let server_cpu = cpu_seconds(server.pid().unwrap()) - server_before;
            let worker_cpu = cpu_seconds(worker.pid()) - worker_before;
            let [events, batches] = per_run(
                std::slice::from_ref(&worker),
                ["events_sent", "event_batches"],
            );
            println!(
                "{}",
                json!({"mode": "events", "sitting": sitting, "published": publish, "runs": runs,
                       "calls_per_run": calls, "runs_per_s": runs as f64 / wall.as_secs_f64(),
                       "wall_s": wall.as_secs_f64(), "server_cpu_s": server_cpu,
                       "worker_cpu_s": worker_cpu, "events_per_run": events,
                       "batches_per_run": batches})
            );
        }
    }
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
            // The command's parent is the guard that ends it with its worker; the guard's
            // parent is the worker.
            "echo \"$GOLATO_RUN_KEY {id} $GOLATO_TOOL_ATTEMPT $(ps -o ppid= -p $PPID | tr -d ' ') $(date +%s.%N)\" >> {}; flock -s {} true",
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

/// The floor: a bare Restate object whose handler does what a durable run's handler does with
/// its journal (reads the outcome's state, makes `entries` `ctx.run` entries one after another,
/// sets the outcome) and nothing of golato's: no agent, no tools, no inbox.
struct FloorObject {
    entries: usize,
    /// Calls to `FloorInbox.take`, as a run's two inbox steps make (0 for the bare floor).
    inbox_calls: usize,
}

/// What golato's inbox does at a step, bare: reads the queues, closes when ending.
struct FloorInbox;

#[restate_sdk::object(name = "FloorInbox")]
impl FloorInbox {
    #[handler]
    async fn take(
        &self,
        ctx: restate_sdk::prelude::ObjectContext<'_>,
        ending: restate_sdk::prelude::Json<bool>,
    ) -> Result<restate_sdk::prelude::Json<Option<String>>, restate_sdk::prelude::HandlerError>
    {
        use restate_sdk::prelude::*;
        let queued = ctx.get::<Json<Vec<String>>>("steering").await?;
        let Json(ending) = ending;
        if ending {
            let _ = ctx.get::<Json<Vec<String>>>("follow_ups").await?;
            ctx.set("closed", true);
        }
        Ok(Json(
            queued.and_then(|Json(queued)| queued.first().cloned()),
        ))
    }
}

#[restate_sdk::object(name = "FloorRun")]
impl FloorObject {
    #[handler]
    async fn run(
        &self,
        ctx: restate_sdk::prelude::ObjectContext<'_>,
        prompt: restate_sdk::prelude::Json<String>,
    ) -> Result<restate_sdk::prelude::Json<String>, restate_sdk::prelude::HandlerError> {
        use restate_sdk::prelude::*;
        if let Some(Json(outcome)) = ctx.get::<Json<String>>("outcome").await? {
            return Ok(Json(outcome));
        }
        let Json(prompt) = prompt;
        for step in 0..self.entries {
            let Json(_value) = ctx
                .run(move || async move { Ok(Json(json!({"entry": "done", "step": step}))) })
                .name(format!("step-{step}"))
                .await?;
            // The inbox steps come after the first batch and at the end, as in a run.
            let inbox_here = (self.inbox_calls >= 1 && step + 2 == self.entries)
                || (self.inbox_calls >= 2 && step + 1 == self.entries);
            if inbox_here {
                let _ = ctx
                    .object_client::<FloorInboxClient>(ctx.key().to_owned())
                    .take(Json(step + 1 == self.entries))
                    .call()
                    .await?;
            }
        }
        let outcome = format!("{prompt}: done");
        ctx.set("outcome", Json(outcome.clone()));
        Ok(Json(outcome))
    }
}

/// `--serve-floor PORT ENTRIES`: this process serves the floor object (a process of its own,
/// as a worker is, so that its CPU is measured apart from the client's).
fn serve_floor(port: u16, entries: usize, inbox_calls: usize) {
    use restate_sdk::prelude::*;
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .unwrap();
        HttpServer::new(
            Endpoint::builder()
                .bind(FloorObject {
                    entries,
                    inbox_calls,
                })
                .bind(FloorInbox)
                .build(),
        )
        .serve_with_cancel(listener, std::future::pending::<()>())
        .await;
    });
}

/// Submits `runs` floor invocations at once, as `golato submit` does a run: a call through the
/// ingress with an idempotency key, answered when the handler ends.
fn submit_floor(
    runtime: &tokio::runtime::Runtime,
    ingress: &str,
    prefix: &str,
    runs: usize,
) -> Duration {
    let client = reqwest::Client::new();
    let started = Instant::now();
    runtime.block_on(async {
        let tasks: Vec<_> = (0..runs)
            .map(|n| {
                let client = client.clone();
                let url = format!("{ingress}/FloorRun/{prefix}-{n}/run");
                let key = format!("{prefix}-{n}");
                tokio::spawn(async move {
                    let response = client
                        .post(url)
                        .header("idempotency-key", key)
                        .json(&"go")
                        .send()
                        .await
                        .unwrap();
                    assert!(response.status().is_success(), "{}", response.status());
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
    });
    started.elapsed()
}

/// The floor's runs/s and CPU, on a server of its own.
fn floor(
    runtime: &tokio::runtime::Runtime,
    runs: usize,
    entries: usize,
    inbox_calls: usize,
) -> serde_json::Value {
    let (wall, server_cpu, handler_cpu) = measure_served(
        runtime,
        &[
            "--serve-floor".to_owned(),
            String::new(),
            entries.to_string(),
            inbox_calls.to_string(),
        ],
        |ingress, prefix, count| submit_floor(runtime, ingress, prefix, count),
        runs,
    );
    json!({"mode": "floor", "runs": runs, "journal_entries_per_run": entries,
           "inbox_calls_per_run": inbox_calls,
           "runs_per_s": runs as f64 / wall.as_secs_f64(), "wall_s": wall.as_secs_f64(),
           "server_cpu_s": server_cpu, "handler_cpu_s": handler_cpu})
}

/// Serves this program with `arguments` (the second, the port, filled in) in a process of its
/// own, registers it with a fresh server, warms it with 20 runs, then times `runs` runs made by
/// `submit`: the wall time and the CPU seconds of the server and of the serving process.
fn measure_served(
    runtime: &tokio::runtime::Runtime,
    arguments: &[String],
    submit: impl Fn(&str, &str, usize) -> Duration,
    runs: usize,
) -> (Duration, f64, f64) {
    let server = Server::start();
    let port = restate::free_port();
    let mut arguments = arguments.to_vec();
    arguments[1] = port.to_string();
    let mut serving = std::process::Command::new(std::env::current_exe().unwrap())
        .args(&arguments)
        .spawn()
        .unwrap();
    runtime
        .block_on(async {
            for _ in 0..100 {
                if tokio::net::TcpStream::connect(("127.0.0.1", port))
                    .await
                    .is_ok()
                {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            golato_restate::register(&server.admin, &format!("http://127.0.0.1:{port}")).await
        })
        .unwrap();
    submit(&server.ingress, "warm", 20);
    let server_pid = server.pid().unwrap();
    let (server_before, serving_before) = (cpu_seconds(server_pid), cpu_seconds(serving.id()));
    let wall = submit(&server.ingress, "run", runs);
    let server_cpu = cpu_seconds(server_pid) - server_before;
    let serving_cpu = cpu_seconds(serving.id()) - serving_before;
    let _ = serving.kill();
    let _ = serving.wait();
    (wall, server_cpu, serving_cpu)
}

/// CPU seconds (user + system) process `pid` has used so far.
/// The peak resident memory of process `pid`, in KiB (`VmHWM`).
fn peak_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// `runs` runs submitted at once to one server and three workers: runs/s, each run's time from
/// its submission to its outcome (p50, p99, max), the server's and workers' CPU and peak
/// memory; then every outcome read back by its ID (nothing lost, nothing run twice: the
/// workers' "run ended" lines count each run once).
fn scale(runtime: &tokio::runtime::Runtime, runs: usize, calls: usize) {
    let dir = tempfile::tempdir().unwrap();
    let script = read_script(dir.path(), calls);
    let flags = [
        "--script",
        script.to_str().unwrap(),
        "--cwd",
        dir.path().to_str().unwrap(),
    ];
    let (server, workers) = cluster(runtime, dir.path(), 3, &flags);
    submit(runtime, &server.ingress, "warm", 20);
    let server_pid = server.pid().unwrap();
    let worker_cpu = || {
        workers
            .iter()
            .map(|worker| cpu_seconds(worker.pid()))
            .sum::<f64>()
    };
    let (server_before, workers_before) = (cpu_seconds(server_pid), worker_cpu());
    let client = Client::new(&server.ingress).unwrap();
    let started = Instant::now();
    let mut latencies: Vec<f64> = runtime.block_on(async {
        let tasks: Vec<_> = (0..runs)
            .map(|n| {
                let client = client.clone();
                tokio::spawn(async move {
                    let outcome = client.submit(&format!("scale-{n}"), "go").await.unwrap();
                    assert_eq!(outcome.error, None, "{}", outcome.run_id);
                    started.elapsed().as_secs_f64()
                })
            })
            .collect();
        let mut latencies = Vec::with_capacity(runs);
        for task in tasks {
            latencies.push(task.await.unwrap());
        }
        latencies
    });
    let wall = started.elapsed().as_secs_f64();
    let (server_cpu, workers_cpu) = (
        cpu_seconds(server_pid) - server_before,
        worker_cpu() - workers_before,
    );
    latencies.sort_by(f64::total_cmp);
    let at = |fraction: f64| {
        latencies[((latencies.len() as f64 * fraction) as usize).min(latencies.len() - 1)]
    };
    // Read back: the same ID gives the same run's outcome, run no more.
    let read_back = Instant::now();
    let answered = runtime.block_on(async {
        let tasks: Vec<_> = (0..runs)
            .map(|n| {
                let client = client.clone();
                tokio::spawn(async move {
                    let outcome = client.submit(&format!("scale-{n}"), "go").await.unwrap();
                    outcome.error.is_none()
                })
            })
            .collect();
        let mut answered = 0;
        for task in tasks {
            answered += usize::from(task.await.unwrap());
        }
        answered
    });
    let read_back_s = read_back.elapsed().as_secs_f64();
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
    println!(
        "{}",
        json!({"mode": "scale", "workers": 3, "runs": runs, "calls_per_run": calls,
               "runs_per_s": runs as f64 / wall, "wall_s": wall,
               "p50_s": at(0.5), "p99_s": at(0.99), "max_s": at(1.0),
               "server_cpu_s": server_cpu, "workers_cpu_s": workers_cpu,
               "server_peak_mib": peak_kib(server_pid) / 1024,
               "worker_peak_mib": workers.iter().map(|worker| peak_kib(worker.pid()) / 1024).collect::<Vec<_>>(),
               "read_back": answered, "read_back_s": read_back_s,
               "runs_ended_on_workers": ended, "of_which_warm": 20})
    );
    assert_eq!(answered, runs, "every outcome is read back");
    assert_eq!(ended, runs + 20, "every run ran once");
}

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

/// Serves a library worker (the same agent `golato serve --script` builds: the built-ins, the
/// scripted model) on `port`: on tokio's multi-threaded runtime with golato's own host, or
/// (`one_thread`) on one actix thread whose arbiter hosts the run actors too, so that the
/// handler and the run actor never wake each other across threads.
fn serve_golato(port: u16, dir: &Path, one_thread: bool) {
    let agent = move |host: Option<golato::Host>| {
        let script = Scripted::from_file(dir.join("reads.jsonl")).unwrap();
        let tools = golato::builtin::new(golato::builtin::Config {
            working_directory: dir.to_owned(),
            ..Default::default()
        })
        .unwrap();
        Agent::new(agent::Config {
            generator: Some(Arc::new(script)),
            tools,
            host,
            ..Default::default()
        })
        .unwrap()
    };
    let serve = |agent: Agent| async move {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .unwrap();
        golato_restate::Worker::new(agent)
            .serve(listener, std::future::pending::<()>())
            .await;
    };
    if one_thread {
        actix_rt::System::new().block_on(async move {
            let host = golato::embed::host_on_arbiters(
                vec![actix::Arbiter::current()],
                golato::HostConfig::default(),
            )
            .unwrap();
            serve(agent(Some(host))).await;
        });
    } else {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        runtime.block_on(serve(agent(None)));
    }
}

/// 300 runs on a library worker served by a process of its own (see [`serve_golato`]).
fn golato_worker(
    runtime: &tokio::runtime::Runtime,
    runs: usize,
    calls: usize,
    one_thread: bool,
) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    read_script(dir.path(), calls);
    let (wall, server_cpu, worker_cpu) = measure_served(
        runtime,
        &[
            "--serve-golato".to_owned(),
            String::new(),
            dir.path().display().to_string(),
            if one_thread { "one-thread" } else { "threads" }.to_owned(),
        ],
        |ingress, prefix, count| submit(runtime, ingress, prefix, count),
        runs,
    );
    json!({"mode": if one_thread { "golato, one thread" } else { "golato, threads" },
           "runs": runs, "calls_per_run": calls,
           "runs_per_s": runs as f64 / wall.as_secs_f64(), "wall_s": wall.as_secs_f64(),
           "server_cpu_s": server_cpu, "worker_cpu_s": worker_cpu})
}

fn main() {
    let arguments: Vec<String> = std::env::args().collect();
    if arguments.get(1).map(String::as_str) == Some("--serve-golato") {
        serve_golato(
            arguments[2].parse().unwrap(),
            Path::new(&arguments[3]),
            arguments[4] == "one-thread",
        );
        return;
    }
    if arguments.get(1).map(String::as_str) == Some("--serve-floor") {
        serve_floor(
            arguments[2].parse().unwrap(),
            arguments[3].parse().unwrap(),
            arguments[4].parse().unwrap(),
        );
        return;
    }
    let runs = argument("--runs", 300);
    let calls = argument("--calls", 8);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    if arguments.iter().any(|argument| argument == "--step-cost") {
        // The bare floor and a library worker on tokio's threads and on one actix thread,
        // alternately, three sittings.
        for _ in 0..3 {
            println!("{}", floor(&runtime, runs, calls + 4, 0));
            println!("{}", golato_worker(&runtime, runs, calls, false));
            println!("{}", golato_worker(&runtime, runs, calls, true));
        }
        return;
    }
    if arguments.iter().any(|argument| argument == "--floor-only") {
        // Golato's journal for a run of `calls` calls: input, turn 1, the batch's `Started`,
        // one entry per call, turn 2.
        println!("{}", floor(&runtime, runs, calls + 4, 0));
        println!("{}", floor(&runtime, runs, calls + 4, 2));
        return;
    }

    if arguments.iter().any(|argument| argument == "--scale") {
        scale(&runtime, runs, calls);
        return;
    }

    if arguments.iter().any(|argument| argument == "--events-only") {
        events_cost(&runtime, runs, calls, 3);
        return;
    }

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
        let [entries, bytes] = per_run(&workers, ["entries_written", "bytes_written"]);
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

    // The same journal shape on a bare handler, in the same sitting: the engine's own floor,
    // without and with the inbox's two calls.
    println!("{}", floor(&runtime, runs, calls + 4, 0));
    println!("{}", floor(&runtime, runs, calls + 4, 2));

    let (affected, delays) = kill_to_progress(&runtime, 100);
    let at = |q: f64| delays[((delays.len() as f64 - 1.0) * q).round() as usize];
    println!(
        "{}",
        json!({"mode": "kill", "workers": 3, "runs": 100, "affected_runs": affected,
               "kill_to_progress_s_median": at(0.5), "kill_to_progress_s_max": at(1.0)})
    );
}
