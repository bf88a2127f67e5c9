//! The documentation page's second example: the built-in tools plus a custom tool, run to the
//! end with `Agent::run`.
//!
//! The model is the offline `Scripted` generator, which asks for `bash ls`; the tools really
//! run, in the directory given as the first argument (default: the current directory):
//!
//! ```text
//! cargo run -p golato --example using_builtin_tools -- path/to/project
//! ```
//!
//! These tools are not a sandbox: `bash` runs with this process's permissions and environment.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use golato::agent::{self, Agent, Input};
use golato::builtin;
use golato::generator::Scripted;
use golato::message::{AssistantMessage, Message, ToolCall, UserMessage};

mod support;
use support::lookup_tool;

fn scripted_model() -> Scripted {
    Scripted::new([
        AssistantMessage::with_tool_calls([ToolCall::new("call-1", "bash", r#"{"command":"ls"}"#)]),
        AssistantMessage::with_text("Those are the files at the top of the project."),
    ])
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let workspace: PathBuf = std::env::args()
        .nth(1)
        .unwrap_or_else(|| ".".to_owned())
        .into();
    run(&workspace, &mut std::io::stdout().lock()).await
}

/// The example proper, writing the tool's output and the answer to `out` (the tests read it).
pub(crate) async fn run(workspace: &Path, out: &mut impl Write) -> anyhow::Result<()> {
    let tools = builtin::new(builtin::Config {
        working_directory: workspace.into(),
        custom_tools: vec![lookup_tool()],
        ..Default::default()
    })?;

    let assistant = Agent::new(agent::Config {
        generator: Some(Arc::new(scripted_model())),
        tools,
        ..Default::default()
    })?;

    let result = assistant
        .run(Input {
            prompts: vec![UserMessage::new("What files are in this project?")],
            ..Default::default()
        })
        .await?;

    for message in &result.messages {
        if let Message::ToolResult(tool_result) = message {
            writeln!(out, "{}:\n{}", tool_result.tool_name, tool_result.text())?;
        }
    }
    writeln!(out, "{}", result.final_message.text())?;
    Ok(())
}
