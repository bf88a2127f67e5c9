//! The `golato` command line.
//!
//! `golato tool NAME JSON_ARGS [--cwd DIR]` makes one call of a built-in tool through the whole
//! validation pipeline and prints the result as one JSON object:
//! `{"content":[...],"is_error":...,"details":...}`. Exit status: 0 for a successful result, 1
//! for an error result, 2 for a usage error.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, Subcommand};
use golato::agent::{self, Agent, Input};
use golato::builtin;
use golato::generator::Scripted;
use golato::message::{AssistantMessage, Message, ToolCall, UserMessage};

/// Runs LLM agents with the read, bash, edit and write tools. These tools are not a sandbox.
#[derive(Debug, Parser)]
#[command(name = "golato", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Calls one built-in tool through the validation pipeline and prints the result as JSON.
    Tool {
        /// The tool: read, bash, edit or write.
        name: String,
        /// The arguments, a JSON object, e.g. '{"path": "README.md"}'.
        json_args: String,
        /// Directory relative paths resolve against (default: the current directory).
        #[arg(long, default_value = ".")]
        cwd: PathBuf,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Tool {
            name,
            json_args,
            cwd,
        } => match call_tool(name, json_args, cwd) {
            Ok(is_error) => ExitCode::from(u8::from(is_error)),
            Err(error) => {
                eprintln!("golato: {error}");
                ExitCode::from(2)
            }
        },
    }
}

/// Runs the call and prints its result; returns whether it is an error result.
fn call_tool(
    name: String,
    arguments: String,
    cwd: PathBuf,
) -> Result<bool, Box<dyn std::error::Error>> {
    let tools = builtin::new(builtin::Config {
        working_directory: cwd,
        ..Default::default()
    })?;
    // A scripted model that asks for exactly this call, then ends the run.
    let script = Scripted::new([
        AssistantMessage::with_tool_calls([ToolCall::new("cli", name, arguments)]),
        AssistantMessage::with_text(""),
    ]);
    let agent = Agent::new(agent::Config {
        generator: Some(Arc::new(script)),
        tools,
        ..Default::default()
    })?;
    let result = agent
        .start(Input::from(UserMessage::new("golato tool")))
        .wait()?;
    let tool_result = result
        .messages
        .into_iter()
        .find_map(|message| match message {
            Message::ToolResult(tool_result) => Some(tool_result),
            _ => None,
        })
        .ok_or("the run recorded no tool result")?;
    let printed = Printed {
        content: &tool_result.content,
        is_error: tool_result.is_error,
        details: tool_result.details.as_ref(),
    };
    let mut stdout = std::io::stdout().lock();
    serde_json::to_writer(&mut stdout, &printed)?;
    writeln!(stdout)?;
    Ok(tool_result.is_error)
}

/// What `golato tool` prints, fields in this order.
#[derive(serde::Serialize)]
struct Printed<'a> {
    content: &'a [golato::message::Content],
    is_error: bool,
    details: Option<&'a serde_json::Value>,
}
