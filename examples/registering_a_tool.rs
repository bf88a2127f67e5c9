//! The documentation page's first example: register a `lookup_customer` tool and watch it run.
//!
//! The model is the offline `Scripted` generator, so this runs anywhere:
//!
//! ```text
//! cargo run -p golato --example registering_a_tool
//! ```

use std::io::Write;
use std::sync::Arc;

use golato::agent::{self, Agent, Event, Input};
use golato::generator::Model;
use golato::message::UserMessage;

mod support;
use support::{lookup_script, lookup_tool};

fn main() -> anyhow::Result<()> {
    run(&mut std::io::stdout().lock())
}

/// The example proper, writing what the page prints to `out` (the tests read it).
pub(crate) fn run(out: &mut impl Write) -> anyhow::Result<()> {
    let assistant = Agent::new(agent::Config {
        // What a real model would answer: one call, then the final text.
        generator: Some(Arc::new(lookup_script())),
        model: Model::new("scripted-demo"),
        tools: vec![lookup_tool()],
        ..Default::default()
    })?;

    let run = assistant.start(Input {
        prompts: vec![UserMessage::new("Which plan does C-100 use?")],
        ..Default::default()
    });

    for event in run.events() {
        match event {
            Event::ToolExecutionStart(event) => {
                writeln!(out, "[start] {} {}", event.call.name, event.call.arguments)?
            }
            Event::ToolExecutionUpdate(event) => writeln!(
                out,
                "[update] {} parts={}",
                event.call.name,
                event.partial_result.content.len()
            )?,
            Event::ToolExecutionEnd(event) => writeln!(
                out,
                "[end] {} error={} result={:?}",
                event.call.name,
                event.result.is_error,
                event.result.text()
            )?,
            _ => {}
        }
    }

    let result = run.wait()?;
    writeln!(out, "{}", result.final_message.text())?;
    Ok(())
}
