//! `golato tool NAME JSON_ARGS [--cwd DIR]` (`-` for JSON_ARGS reads them from standard input): one call of a built-in tool through the whole
//! validation pipeline, its result printed as one JSON object:
//! `{"content":[...],"is_error":...,"details":...}`.
//!
//! Ctrl-C or SIGTERM cancels the call like any run: a bash command's whole process group is
//! killed, the result ("Command aborted") is printed, and the exit status is 130 or 143.

use std::io::Write;
use std::sync::Arc;

use golato::agent::{self, Agent, Input};
use golato::builtin;
use golato::message::{AssistantMessage, Content, Message, ToolCall, UserMessage};

use crate::args::ToolArgs;
use crate::error::{CliError, Exit};
use crate::interrupt::Signals;

pub(crate) async fn command(args: ToolArgs) -> Result<Exit, CliError> {
    let tools = builtin::new(builtin::Config {
        working_directory: args.cwd,
        // Every built-in, the optional search tools too: the call names the one it wants.
        // Not the background commands' readers: a command started by one `golato tool` would
        // end with it, and nothing is left for another to read.
        allowed_tool_names: Some(
            builtin::TOOL_NAMES
                .iter()
                .chain(&builtin::OPTIONAL_TOOL_NAMES)
                .filter(|name| !matches!(**name, "bash_output" | "bash_kill"))
                .map(|name| (*name).to_owned())
                .collect(),
        ),
        // The person typing is the one asking for the call: nothing is confined unless asked.
        sandbox: args
            .sandbox
            .policy(golato::sandbox::Mode::Off)
            .map_err(|error| CliError::usage(format!("--allow-domain/--deny-domain: {error}")))?,
        network_log: args
            .sandbox
            .network_log
            .as_deref()
            .map(crate::setup::network_log::open)
            .transpose()?,
        ..Default::default()
    })
    .map_err(crate::setup::tools::builtin_error)?;
    let json_args = if args.json_args == "-" {
        let mut read = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut read).map_err(|error| {
            CliError::usage(format!(
                "could not read the arguments from standard input: {error}"
            ))
        })?;
        read
    } else {
        args.json_args
    };
    // A model that asks for exactly this call, then ends the run.
    let script =
        crate::setup::one_call::OneCall::new(AssistantMessage::with_tool_calls([ToolCall::new(
            "cli", args.name, json_args,
        )]));
    let agent = Agent::new(agent::Config {
        generator: Some(Arc::new(script)),
        tools,
        ..Default::default()
    })
    .map_err(|error| CliError::Failed(error.to_string()))?;
    let mut signals = Signals::listen()?;
    let run = agent.start(Input::from(UserMessage::new("golato tool")));
    let cancel = run.cancellation_token();
    let finish = run.finish();
    tokio::pin!(finish);
    let mut interrupted = None;
    let outcome = loop {
        tokio::select! {
            outcome = &mut finish => break outcome,
            signal = signals.next() => {
                if interrupted.is_some() {
                    std::process::exit(i32::from(signal.exit_code()));
                }
                interrupted = Some(signal);
                cancel.cancel();
            }
        }
    };
    let messages = match outcome {
        Ok(result) => result.messages,
        Err(error) => match error.messages() {
            Some(messages) => messages.to_vec(),
            None => return Err(CliError::Failed(error.to_string())),
        },
    };
    let result = messages
        .into_iter()
        .find_map(|message| match message {
            Message::ToolResult(result) => Some(result),
            _ => None,
        })
        .ok_or_else(|| CliError::Failed("the run recorded no tool result".to_owned()))?;
    let printed = Printed {
        content: &result.content,
        is_error: result.is_error,
        details: result.details.as_ref(),
    };
    let mut stdout = std::io::stdout().lock();
    serde_json::to_writer(&mut stdout, &printed)
        .map_err(std::io::Error::from)
        .and_then(|()| writeln!(stdout))
        .map_err(|error| CliError::Failed(format!("could not print the result: {error}")))?;
    Ok(match interrupted {
        Some(signal) => Exit::Interrupted(signal),
        None if result.is_error => Exit::Failure,
        None => Exit::Success,
    })
}

/// What `golato tool` prints, fields in this order.
#[derive(serde::Serialize)]
struct Printed<'a> {
    content: &'a [Content],
    is_error: bool,
    details: Option<&'a serde_json::Value>,
}
