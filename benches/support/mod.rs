//! Shared pieces of the benches: trivial tools, scripts and memory readings.
#![allow(dead_code, unreachable_pub, clippy::expect_used)]

pub mod floor;

use std::sync::Arc;

use golato::agent::{self, Agent, Input};
use golato::generator::Scripted;
use golato::message::{AssistantMessage, ToolCall, UserMessage};
use golato::tool::{Tool, ToolResult};
use golato::Host;
use serde_json::{json, Value};

/// The schema every trivial tool uses.
pub fn schema() -> Value {
    json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})
}

/// A tool that does nothing but answer.
pub fn trivial_tool() -> Tool {
    Tool::new("noop", "Does nothing.", schema(), |_ctx, _args| async {
        Ok(ToolResult::text("ok"))
    })
}

/// One message with `calls` trivial calls, then a final answer.
pub fn script(calls: usize) -> Scripted {
    let calls =
        (0..calls).map(|i| ToolCall::new(format!("call-{i}"), "noop", format!("{{\"n\":{i}}}")));
    Scripted::new([
        AssistantMessage::with_tool_calls(calls),
        AssistantMessage::with_text("done"),
    ])
}

/// An agent with the trivial tool on `host`.
pub fn agent(calls: usize, host: Host) -> Agent {
    Agent::new(agent::Config {
        generator: Some(Arc::new(script(calls))),
        tools: vec![trivial_tool()],
        host: Some(host),
        ..Default::default()
    })
    .expect("bench agent builds")
}

/// Answers like [`script`] but without streaming: each answer is one `Done`, as from a
/// provider that sends whole messages. It separates the runtime's cost from the cost of
/// replaying deltas that nobody reads.
pub struct Canned(Vec<AssistantMessage>);

impl Canned {
    /// Answers the `n`th request of a run with `answers[n]`.
    pub fn new(answers: Vec<AssistantMessage>) -> Canned {
        Canned(answers)
    }
}

impl golato::generator::Generator for Canned {
    fn stream(&self, request: golato::generator::Request) -> golato::generator::EventStream {
        use futures::StreamExt;
        let answered = request
            .messages
            .iter()
            .filter(|m| matches!(m, golato::message::Message::Assistant(_)))
            .count();
        let message = self.0.get(answered).cloned().unwrap_or_default();
        futures::stream::once(async move { Ok(golato::generator::StreamEvent::Done(message)) })
            .boxed()
    }
}

/// An agent like [`agent`] whose generator sends whole messages ([`Canned`]).
pub fn canned_agent(calls: usize, host: Host) -> Agent {
    let calls =
        (0..calls).map(|i| ToolCall::new(format!("call-{i}"), "noop", format!("{{\"n\":{i}}}")));
    let generator = Canned(vec![
        AssistantMessage::with_tool_calls(calls),
        AssistantMessage::with_text("done"),
    ]);
    Agent::new(agent::Config {
        generator: Some(Arc::new(generator)),
        tools: vec![trivial_tool()],
        host: Some(host),
        ..Default::default()
    })
    .expect("bench agent builds")
}

/// The prompt every bench run starts from.
pub fn input() -> Input {
    Input::from(UserMessage::new("go"))
}

/// Peak resident memory of this process so far, in MiB (Linux; 0 elsewhere).
pub fn peak_rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|line| line.starts_with("VmHWM:"))
                .and_then(|line| line.split_whitespace().nth(1))
                .and_then(|kib| kib.parse::<f64>().ok())
        })
        .map_or(0.0, |kib| kib / 1024.0)
}

/// The sandbox's helper: the small `golato-sandbox` binary of the command line's crate, built
/// beside this bench (`cargo bench --workspace` builds it; alone: `cargo build --release -p
/// golato-cli --bin golato-sandbox`).
pub fn sandbox_helper() -> std::path::PathBuf {
    let bench = std::env::current_exe().unwrap();
    let helper = bench
        .parent()
        .and_then(|deps| deps.parent())
        .unwrap()
        .join("golato-sandbox");
    assert!(
        helper.is_file(),
        "{} is missing: cargo build --release -p golato-cli --bin golato-sandbox",
        helper.display()
    );
    helper
}
