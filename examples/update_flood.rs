//! A tool that publishes partial results far faster than anyone reads them: the memory a run
//! holds stays bounded (the gate coalesces a call's updates at the source, the run's channel
//! coalesces them again), whatever the count.
//!
//! ```text
//! cargo run --release -p golato --example update_flood -- [UPDATES] [events|wait]
//! ```
//!
//! Sends UPDATES (default 1,000,000) updates of 1 KiB from one call; `events` starts the run
//! and reads no event until it has ended, `wait` (the default) uses `Run::wait`. Prints one
//! JSON line with the updates sent, the events seen and the peak RSS.

use std::process::ExitCode;
use std::sync::Arc;

use golato::agent::{self, Agent, Event};
use golato::generator::Scripted;
use golato::message::{AssistantMessage, ToolCall, UserMessage};
use golato::tool::{Tool, ToolContext, ToolResult};
use serde_json::json;

fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let updates: usize = match args.next().map(|a| a.parse()) {
        None => 1_000_000,
        Some(Ok(n)) => n,
        Some(Err(_)) => {
            eprintln!("usage: update_flood [UPDATES] [events|wait]");
            return ExitCode::FAILURE;
        }
    };
    let read_events_late = args.next().as_deref() == Some("events");
    let (flooded, flood_done) = std::sync::mpsc::channel::<()>();
    let flooded = std::sync::Mutex::new(flooded);
    let flood = Tool::blocking(
        "flood",
        "Publishes many partial results.",
        json!({"type": "object"}),
        move |ctx: ToolContext, _| {
            let chunk = "x".repeat(1024);
            for n in 0..updates {
                ctx.update(ToolResult::text(format!("{n} {chunk}")));
            }
            let _ = flooded.lock().map(|done| done.send(()));
            Ok(ToolResult::text("flooded"))
        },
    );
    let agent = match Agent::new(agent::Config {
        generator: Some(Arc::new(Scripted::new([
            AssistantMessage::with_tool_calls([ToolCall::new("c1", "flood", "{}")]),
            AssistantMessage::with_text("done"),
        ]))),
        tools: vec![flood],
        ..Default::default()
    }) {
        Ok(agent) => agent,
        Err(error) => {
            eprintln!("{error}");
            return ExitCode::FAILURE;
        }
    };
    let run = agent.start(UserMessage::new("flood"));
    let (outcome, events) = if read_events_late {
        // No event is read until the tool has sent its last update.
        let _ = flood_done.recv();
        let updates_seen = run
            .events()
            .filter(|event| matches!(event, Event::ToolExecutionUpdate(_)))
            .count();
        (run.wait(), updates_seen)
    } else {
        (run.wait(), 0)
    };
    let ok = outcome.is_ok();
    println!(
        "{}",
        json!({
            "updates": updates,
            "mode": if read_events_late { "events" } else { "wait" },
            "ok": ok,
            "update_events_seen": events,
            "peak_rss_mib": peak_rss_kib() as f64 / 1024.0,
        })
    );
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
