//! Watching the actors: `golato::observe::init()` prints every actor message golato handles
//! as a span (actor, message type, mailbox wait, queue depth), nested run → turn → batch →
//! call, with how long it took. `RUST_LOG` filters it (default `golato=debug`).
//!
//! ```text
//! cargo run -p golato --example tracing
//! RUST_LOG=golato=debug,golato_actors=off cargo run -p golato --example tracing
//! ```

use std::sync::Arc;

use golato::agent::{self, Agent};
use golato::generator::Scripted;
use golato::message::{AssistantMessage, ToolCall, UserMessage};

mod support;
use support::lookup_tool;

fn main() -> anyhow::Result<()> {
    golato::observe::init()?;
    println!("{}", run()?);
    Ok(())
}

/// One run with two parallel calls; returns the final answer.
pub(crate) fn run() -> anyhow::Result<String> {
    let assistant = Agent::new(agent::Config {
        generator: Some(Arc::new(Scripted::new([
            AssistantMessage::with_tool_calls([
                ToolCall::new("call-1", "lookup_customer", r#"{"customer_id":"C-100"}"#),
                ToolCall::new("call-2", "lookup_customer", r#"{"customer_id":"C-200"}"#),
            ]),
            AssistantMessage::with_text("C-100 is on Pro; C-200 is not a customer."),
        ]))),
        tools: vec![lookup_tool()],
        ..Default::default()
    })?;
    let run = assistant.start(UserMessage::new("Which plans do C-100 and C-200 use?"));
    // Reading events makes the model's deltas reach the run actor as messages too.
    run.events().for_each(drop);
    Ok(run.wait()?.final_message.text())
}
