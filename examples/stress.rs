//! R concurrent runs × K trivial calls on one host: throughput and memory at scale.
//!
//! Every run gets the same script from the offline model: turn 1 is K calls of an `echo` tool
//! (schema `{value: string}`), turn 2 is a text answer. All runs are started at once; each
//! outcome is checked as it arrives (K results, in source order, each echoing its own call's
//! value) and then dropped, and the program exits non-zero if any run went wrong.
//!
//! With `--parked`, every call waits inside its tool until all R × K calls are in; the resident
//! memory is read at that moment, and `rss_per_parked_run` is what one run with its K calls in
//! flight costs (resident memory then, less the memory before any run started, over R).
//!
//! It prints one JSON line: runs/s, calls/s, wall time, peak RSS (and, parked, the RSS per
//! parked run), and the latency of a run (from the moment all were started to its outcome: p50,
//! p99). Build it in release mode; see BENCHMARKS.md for the figures. `--arbiters` and
//! `--workers` set the host's actor threads and tool worker threads (`HostConfig`; both default
//! to one per core), `--tool-tasks` where the echo tool's task runs (`HostConfig::tool_tasks`:
//! `run-thread`, the default, or `workers`), to try what suits a machine.
//!
//! With the `dhat-heap` feature the heap is counted by dhat instead (far slower, so the speeds
//! mean nothing): parked, the line adds the heap bytes and blocks one parked run holds, and
//! `dhat-heap.json` (viewable with dhat's `dh_view.html`) is the heap at the moment all calls
//! are in, by allocation site.
//!
//! ```text
//! cargo run --release -p golato --example stress -- [--runs 10000] [--calls 8] [--parked] \
//!     [--arbiters N] [--workers N] [--tool-tasks run-thread|workers]
//! cargo run --release -p golato --example stress --features dhat-heap -- --parked
//! cargo run --release -p golato --example stress --features bench-glibc    # or bench-mimalloc
//! ```

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use futures::stream::{FuturesUnordered, StreamExt};
use golato::agent::{self, Agent, RunResult};
use golato::generator::Scripted;
use golato::message::{AssistantMessage, Message, ToolCall, UserMessage};
use golato::tool::{Tool, ToolContext, ToolResult};
use golato::{Host, HostConfig, ToolTasks};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use tokio::sync::Notify;

#[cfg(feature = "dhat-heap")]
#[global_allocator]
static ALLOCATOR: dhat::Alloc = dhat::Alloc;

// jemalloc unless the run measures another (BENCHMARKS.md, "The allocator").
#[cfg(not(any(
    feature = "dhat-heap",
    feature = "bench-glibc",
    feature = "bench-mimalloc"
)))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[cfg(all(feature = "bench-mimalloc", not(feature = "dhat-heap")))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Which allocator this build runs on, for the line it prints.
const ALLOCATOR_NAME: &str = if cfg!(feature = "dhat-heap") {
    "dhat"
} else if cfg!(feature = "bench-mimalloc") {
    "mimalloc"
} else if cfg!(feature = "bench-glibc") {
    "glibc"
} else {
    "jemalloc"
};

/// The heap profile, written (and the counting stopped) when every parked call is in, or at
/// the end.
#[cfg(feature = "dhat-heap")]
static PROFILER: std::sync::Mutex<Option<dhat::Profiler>> = std::sync::Mutex::new(None);

/// What the heap holds now: bytes and blocks (zeros without the `dhat-heap` feature).
fn heap() -> (u64, u64) {
    #[cfg(feature = "dhat-heap")]
    {
        let stats = dhat::HeapStats::get();
        (stats.curr_bytes as u64, stats.curr_blocks as u64)
    }
    #[cfg(not(feature = "dhat-heap"))]
    (0, 0)
}

/// Stops counting and writes `dhat-heap.json` (nothing without the `dhat-heap` feature).
fn write_heap_profile() {
    #[cfg(feature = "dhat-heap")]
    if let Ok(mut profiler) = PROFILER.lock() {
        drop(profiler.take());
    }
}

const USAGE: &str = "usage: stress [--runs N] [--calls K] [--parked] [--arbiters N] [--workers N] [--tool-tasks run-thread|workers] [--console off|on|reading|stalled]";

/// The actor console during the stress: what it costs (BENCHMARKS.md, "The actor console").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Console {
    /// Off (the default): no entries at all.
    Off,
    /// On, recording, nobody watching.
    On,
    /// On, served, a viewer reading every update as it comes (at 4 a second).
    Reading,
    /// On, served, a viewer that reads the first snapshot and then nothing.
    Stalled,
}

pub(crate) struct Options {
    pub(crate) runs: usize,
    pub(crate) calls: usize,
    pub(crate) parked: bool,
    /// The host's actor threads; `None`: `HostConfig`'s default.
    pub(crate) arbiters: Option<usize>,
    /// The host's tool worker threads; `None`: `HostConfig`'s default.
    pub(crate) workers: Option<usize>,
    /// Where the echo tool's task runs.
    pub(crate) tool_tasks: ToolTasks,
    pub(crate) console: Console,
}

/// The options from the command line's arguments (without the program's name).
pub(crate) fn options(args: impl IntoIterator<Item = String>) -> Result<Options, String> {
    let mut options = Options {
        runs: 10_000,
        calls: 8,
        parked: false,
        arbiters: None,
        workers: None,
        tool_tasks: ToolTasks::default(),
        console: Console::Off,
    };
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let count = |name: &str, value: Option<String>| -> Result<usize, String> {
            let value = value.ok_or_else(|| format!("{name} needs a number; {USAGE}"))?;
            match value.parse::<usize>() {
                Ok(n) if n > 0 => Ok(n),
                _ => Err(format!(
                    "{name} takes a whole number above 0, not {value:?}"
                )),
            }
        };
        match arg.as_str() {
            "--runs" => options.runs = count("--runs", args.next())?,
            "--calls" => options.calls = count("--calls", args.next())?,
            "--parked" => options.parked = true,
            "--arbiters" => options.arbiters = Some(count("--arbiters", args.next())?),
            "--workers" => options.workers = Some(count("--workers", args.next())?),
            "--tool-tasks" => {
                options.tool_tasks = match args.next().as_deref() {
                    Some("run-thread") => ToolTasks::RunThread,
                    Some("workers") => ToolTasks::Workers,
                    other => {
                        return Err(format!(
                            "--tool-tasks takes run-thread or workers, not {other:?}; {USAGE}"
                        ))
                    }
                }
            }
            "--console" => {
                options.console = match args.next().as_deref() {
                    Some("off") => Console::Off,
                    Some("on") => Console::On,
                    Some("reading") => Console::Reading,
                    Some("stalled") => Console::Stalled,
                    other => {
                        return Err(format!(
                            "--console takes off, on, reading or stalled, not {other:?}; {USAGE}"
                        ))
                    }
                }
            }
            "-h" | "--help" => return Err(USAGE.to_owned()),
            other => return Err(format!("unknown argument {other:?}; {USAGE}")),
        }
    }
    Ok(options)
}

/// Holds every parked call until the last one is in, and reads memory at that moment.
pub(crate) struct Park {
    expected: usize,
    arrived: AtomicUsize,
    all_in: Notify,
    rss_kib_when_all_in: OnceLock<u64>,
    heap_when_all_in: OnceLock<(u64, u64)>,
}

impl Park {
    async fn wait(&self) {
        let all_in = self.all_in.notified();
        tokio::pin!(all_in);
        // Registered before counting, so the last arrival's wake-up cannot be missed.
        all_in.as_mut().enable();
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 == self.expected {
            let _ = self.rss_kib_when_all_in.set(memory().rss_kib);
            let _ = self.heap_when_all_in.set(heap());
            write_heap_profile();
            self.all_in.notify_waiters();
        } else {
            all_in.await;
        }
    }
}

#[derive(Deserialize, JsonSchema)]
struct EchoArgs {
    value: String,
}

pub(crate) fn echo_tool(park: Option<Arc<Park>>) -> Tool {
    Tool::typed(
        "echo",
        "Answers with its value.",
        move |_ctx: ToolContext, args: EchoArgs| {
            let park = park.clone();
            async move {
                if let Some(park) = park {
                    park.wait().await;
                }
                Ok(ToolResult::text(args.value))
            }
        },
    )
}

pub(crate) fn script(calls: usize) -> Scripted {
    let calls = (0..calls).map(|i| {
        ToolCall::new(
            format!("call-{i}"),
            "echo",
            json!({ "value": format!("v{i}") }).to_string(),
        )
    });
    Scripted::new([
        AssistantMessage::with_tool_calls(calls),
        AssistantMessage::with_text("done"),
    ])
}

/// The `p`th percentile of `latencies`, in milliseconds.
fn percentile(latencies: &mut [std::time::Duration], p: usize) -> f64 {
    latencies.sort_unstable();
    let at = (latencies.len() * p / 100).min(latencies.len().saturating_sub(1));
    latencies
        .get(at)
        .map_or(0.0, |latency| latency.as_secs_f64() * 1000.0)
}

/// Says what is wrong with a run's transcript, if anything: user, K calls, K results in source
/// order, answer.
pub(crate) fn check(result: &RunResult, calls: usize) -> Result<(), String> {
    let messages = &result.messages;
    if messages.len() != calls + 3 {
        return Err(format!(
            "{} messages instead of {}",
            messages.len(),
            calls + 3
        ));
    }
    for (i, message) in messages[2..2 + calls].iter().enumerate() {
        let Message::ToolResult(result) = message else {
            return Err(format!("message {} is not a tool result", i + 2));
        };
        let (id, value) = (format!("call-{i}"), format!("v{i}"));
        if result.tool_call_id != id || result.is_error || result.text() != value {
            return Err(format!(
                "result {i} is {:?} for {:?} (error: {}); expected {value:?} for {id:?}",
                result.text(),
                result.tool_call_id,
                result.is_error
            ));
        }
    }
    if result.final_message.text() != "done" {
        return Err(format!(
            "the answer is {:?}, not \"done\"",
            result.final_message.text()
        ));
    }
    Ok(())
}

struct Memory {
    rss_kib: u64,
    peak_kib: u64,
}

/// This process's resident memory now and at its peak, from `/proc/self/status` (Linux); zeros
/// elsewhere.
fn memory() -> Memory {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    };
    Memory {
        rss_kib: field("VmRSS:"),
        peak_kib: field("VmHWM:"),
    }
}

fn main() -> ExitCode {
    let options = match options(std::env::args().skip(1)) {
        Ok(options) => options,
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::from(2);
        }
    };
    #[cfg(feature = "dhat-heap")]
    if let Ok(mut profiler) = PROFILER.lock() {
        *profiler = Some(dhat::Profiler::new_heap());
    }
    let outcome = stress(&options);
    write_heap_profile();
    match outcome {
        Ok(report) => {
            println!("{report}");
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("stress: {message}");
            ExitCode::FAILURE
        }
    }
}

/// A viewer of the stress's console, on a thread of its own.
struct Viewer {
    stop: Arc<AtomicBool>,
    updates: Arc<AtomicUsize>,
    bytes: Arc<AtomicUsize>,
}

/// Connects to the console at `addr` and reads every update (`Reading`) or only the first two
/// lines (`Stalled`, leaving the rest unread in the socket).
fn viewer(addr: &golato::host::console::ConsoleAddr, mode: Console) -> Viewer {
    use std::io::BufRead as _;
    let viewer = Viewer {
        stop: Arc::default(),
        updates: Arc::default(),
        bytes: Arc::default(),
    };
    let golato::host::console::ConsoleAddr::Tcp(socket) = addr else {
        return viewer;
    };
    let Ok(stream) = std::net::TcpStream::connect(socket) else {
        return viewer;
    };
    let (stop, updates, bytes) = (
        Arc::clone(&viewer.stop),
        Arc::clone(&viewer.updates),
        Arc::clone(&viewer.bytes),
    );
    std::thread::spawn(move || {
        let mut reader = std::io::BufReader::new(stream);
        let mut line = String::new();
        while !stop.load(Ordering::Relaxed) {
            line.clear();
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(read) => {
                    bytes.fetch_add(read, Ordering::Relaxed);
                    if updates.fetch_add(1, Ordering::Relaxed) >= 1 && mode == Console::Stalled {
                        // Holds the connection open, reading nothing more.
                        while !stop.load(Ordering::Relaxed) {
                            std::thread::park_timeout(std::time::Duration::from_millis(50));
                        }
                        return;
                    }
                }
            }
        }
    });
    viewer
}

/// Runs the stress and returns its report, or what went wrong.
pub(crate) fn stress(options: &Options) -> Result<serde_json::Value, String> {
    let Options {
        runs,
        calls,
        parked,
        arbiters,
        workers,
        tool_tasks,
        console,
    } = *options;
    let park = parked.then(|| {
        Arc::new(Park {
            expected: runs * calls,
            arrived: AtomicUsize::new(0),
            all_in: Notify::new(),
            rss_kib_when_all_in: OnceLock::new(),
            heap_when_all_in: OnceLock::new(),
        })
    });
    let defaults = HostConfig::default();
    let host_config = HostConfig {
        arbiters: arbiters.unwrap_or(defaults.arbiters),
        worker_threads: workers.or(defaults.worker_threads),
        tool_tasks,
        console: (console != Console::Off).then(|| golato::host::console::ConsoleConfig {
            listen: matches!(console, Console::Reading | Console::Stalled)
                .then(|| golato::host::console::ConsoleAddr::Tcp(([127, 0, 0, 1], 0).into())),
            ..Default::default()
        }),
        ..defaults
    };
    // `None` workers means one per core, as tokio counts them.
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    let (arbiters, workers) = (
        host_config.arbiters,
        host_config.worker_threads.unwrap_or(cores),
    );
    let host = Host::new(host_config).map_err(|e| e.to_string())?;
    let viewer = host.console_addr().map(|addr| viewer(&addr, console));
    let agent = Agent::new(agent::Config {
        generator: Some(Arc::new(script(calls))),
        tools: vec![echo_tool(park.clone())],
        host: Some(host),
        ..Default::default()
    })
    .map_err(|e| e.to_string())?;

    let before = memory();
    let heap_before = heap();
    let started = Instant::now();
    let mut pending: FuturesUnordered<_> = (0..runs)
        .map(|_| agent.run(UserMessage::new("echo")))
        .collect();
    let mut failures = 0usize;
    let mut first_failure = None;
    let mut latencies = Vec::with_capacity(runs);
    futures::executor::block_on(async {
        while let Some(outcome) = pending.next().await {
            latencies.push(started.elapsed());
            let verdict = outcome
                .map_err(|e| e.to_string())
                .and_then(|result| check(&result, calls));
            if let Err(why) = verdict {
                failures += 1;
                first_failure.get_or_insert(why);
            }
        }
    });
    let wall = started.elapsed().as_secs_f64();
    let after = memory();
    let viewer = viewer.map(|viewer| {
        viewer.stop.store(true, Ordering::Relaxed);
        (
            viewer.updates.load(Ordering::Relaxed),
            viewer.bytes.load(Ordering::Relaxed),
        )
    });
    if let Some(why) = first_failure {
        return Err(format!(
            "{failures} of {runs} runs went wrong; the first: {why}"
        ));
    }

    let mut report = json!({
        "allocator": ALLOCATOR_NAME,
        "runs": runs,
        "calls_per_run": calls,
        "parked": parked,
        "wall_s": wall,
        "runs_per_s": runs as f64 / wall,
        "calls_per_s": (runs * calls) as f64 / wall,
        "peak_rss_mib": after.peak_kib as f64 / 1024.0,
        "arbiters": arbiters,
        "workers": workers,
        "tool_tasks": match tool_tasks {
            ToolTasks::Workers => "workers",
            _ => "run-thread",
        },
        "run_latency_ms": { "p50": percentile(&mut latencies, 50), "p99": percentile(&mut latencies, 99) },
        "console": format!("{console:?}").to_lowercase(),
    });
    if let Some((updates, bytes)) = viewer {
        report["viewer_updates"] = json!(updates);
        report["viewer_mib"] = json!(bytes as f64 / (1024.0 * 1024.0));
    }
    if let Some(park) = park {
        let all_in = park.rss_kib_when_all_in.get().copied().unwrap_or(0);
        report["rss_per_parked_run_kib"] =
            json!(all_in.saturating_sub(before.rss_kib) as f64 / runs as f64);
        if cfg!(feature = "dhat-heap") {
            let (bytes, blocks) = park.heap_when_all_in.get().copied().unwrap_or_default();
            report["heap_bytes_per_parked_run"] =
                json!(bytes.saturating_sub(heap_before.0) as f64 / runs as f64);
            report["heap_blocks_per_parked_run"] =
                json!(blocks.saturating_sub(heap_before.1) as f64 / runs as f64);
        }
    }
    Ok(report)
}
