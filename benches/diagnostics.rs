//! What diagnostics after edits cost a call: the time from an `edit` call's start to its result
//! with pyright warm (each edit breaks or fixes a type, so every other result carries a new
//! error) against the same edits without diagnostics, p50 and p99; the first edit apart (it
//! starts the server); and the memory of the running server, counted apart from golato's.
//!
//! `GOLATO_PYRIGHT=target/pyright/node_modules/.bin/pyright-langserver cargo bench -p golato
//! --bench diagnostics` (`.ci/run` installs pyright 1.1.407 there: `npm install --prefix
//! target/pyright pyright@1.1.407`).

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use golato::agent::{self, Agent, Event};
use golato::diagnostics::{Config, Diagnostics, ServerSpec};
use golato::generator::Scripted;
use golato::message::{AssistantMessage, ToolCall};
use serde_json::json;

const EDITS: usize = 60;

fn edits() -> Vec<AssistantMessage> {
    let mut turns: Vec<AssistantMessage> = (0..EDITS)
        .map(|n| {
            let (old, new) = match n % 2 {
                0 => ("return x * 2", "return x.upper()"),
                _ => ("return x.upper()", "return x * 2"),
            };
            AssistantMessage::with_tool_calls([ToolCall {
                id: format!("e{n}"),
                name: "edit".into(),
                arguments: json!({"path": "calc.py", "edits": [{"oldText": old, "newText": new}]})
                    .to_string(),
            }])
        })
        .collect();
    turns.push(AssistantMessage::with_text("done"));
    turns
}

/// Each edit's time from start to result, in order.
async fn run(with: Option<&Diagnostics>, root: &std::path::Path) -> Vec<Duration> {
    let agent = Agent::new(agent::Config {
        generator: Some(Arc::new(Scripted::new(edits()))),
        tools: golato::builtin::new(golato::builtin::Config {
            working_directory: root.into(),
            ..Default::default()
        })
        .unwrap(),
        hooks: with.map(Diagnostics::hook).into_iter().collect(),
        ..Default::default()
    })
    .unwrap();
    let run = agent.start(golato::message::UserMessage::new("edit"));
    let mut started = Instant::now();
    let mut times = Vec::new();
    while let Some(event) = run.next_event().await {
        match event {
            Event::ToolExecutionStart(_) => started = Instant::now(),
            Event::ToolExecutionEnd(end) => {
                assert!(!end.result.is_error, "{}", end.result.text());
                times.push(started.elapsed());
            }
            _ => {}
        }
    }
    run.finish().await.unwrap();
    times
}

fn percentile(times: &[Duration], p: f64) -> Duration {
    let mut sorted = times.to_vec();
    sorted.sort();
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// Resident memory in KiB of every process whose command line names pyright.
fn pyright_rss_kib() -> u64 {
    let mut total = 0;
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        if !String::from_utf8_lossy(&cmdline).contains("pyright") {
            continue;
        }
        let status = std::fs::read_to_string(entry.path().join("status")).unwrap_or_default();
        total += status
            .lines()
            .find_map(|line| line.strip_prefix("VmRSS:"))
            .and_then(|kib| kib.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .unwrap_or(0);
    }
    total
}

fn own_peak_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|kib| kib.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn main() {
    let Ok(pyright) = std::env::var("GOLATO_PYRIGHT") else {
        eprintln!("set GOLATO_PYRIGHT to pyright-langserver (see this file's docs)");
        std::process::exit(2);
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::Builder::new()
        .prefix("golato-bench-")
        .tempdir()
        .unwrap();
    let root = dir.path().canonicalize().unwrap();
    let source = "def double(x: int) -> int:\n    return x * 2\n";
    std::fs::write(root.join("calc.py"), source).unwrap();
    let without = runtime.block_on(run(None, &root));
    std::fs::write(root.join("calc.py"), source).unwrap();
    let mut config = Config::new(&root);
    config.servers = vec![ServerSpec::new(
        "pyright",
        [pyright, "--stdio".into()],
        ["py"],
    )];
    let diagnostics = Diagnostics::new(config);
    let with = runtime.block_on(run(Some(&diagnostics), &root));
    let server_kib = pyright_rss_kib();
    let warm = &with[1..];
    println!("{EDITS} edits of a 2-line Python file, each breaking or fixing a type:");
    println!(
        "  without diagnostics: p50 {:.2} ms, p99 {:.2} ms",
        percentile(&without[1..], 0.5).as_secs_f64() * 1e3,
        percentile(&without[1..], 0.99).as_secs_f64() * 1e3
    );
    println!(
        "  with pyright warm:   p50 {:.2} ms, p99 {:.2} ms",
        percentile(warm, 0.5).as_secs_f64() * 1e3,
        percentile(warm, 0.99).as_secs_f64() * 1e3
    );
    println!(
        "  first edit (starts the server): {:.0} ms",
        with[0].as_secs_f64() * 1e3
    );
    println!(
        "  pyright resident: {:.1} MiB; this process's peak: {:.1} MiB",
        server_kib as f64 / 1024.0,
        own_peak_kib() as f64 / 1024.0
    );
    println!("  notes: {:?}", diagnostics.notes());
}
