//! The `golato` command line.
//!
//! - `golato run [OPTIONS] PROMPT`: an agent with the built-in tools in a directory, against a
//!   real model (OpenAI-compatible or Anthropic) or a recorded one (`--script`), with live output.
//! - `golato demo`: the bundled demo workspace, copied to a fresh directory and fixed there by a
//!   recorded session; no key or network needed.
//! - `golato tool NAME JSON_ARGS`: one call of a built-in tool through the whole validation
//!   pipeline, its result printed as JSON.
//!
//! Exit status: 0 when the run ended normally (for `tool`: a successful result), 1 for an error
//! outcome (a generator failure, `--max-turns` reached; for `tool`: an error result), 2 for a
//! usage error, 130 after Ctrl-C and 143 after SIGTERM.

mod args;
mod demo;
mod interrupt;
mod json;
mod live;
mod provider;
mod record;
mod report;
mod run;
mod tool;
mod trace;

use std::process::ExitCode;

use clap::Parser;

use args::{Cli, Command};

/// How the program ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Exit {
    /// The run ended normally (or the tool's result was a success).
    Success,
    /// The run ended with an error outcome (or the tool's result was an error).
    Failure,
    /// The command line or its inputs were wrong; nothing ran.
    Usage,
    /// A signal cancelled the run; the code is 128 + the signal number.
    Interrupted(interrupt::Signal),
}

impl From<Exit> for ExitCode {
    fn from(exit: Exit) -> ExitCode {
        ExitCode::from(exit.code())
    }
}

impl Exit {
    pub(crate) fn code(self) -> u8 {
        match self {
            Exit::Success => 0,
            Exit::Failure => 1,
            Exit::Usage => 2,
            Exit::Interrupted(signal) => signal.exit_code(),
        }
    }
}

/// Why a command could not run at all. Both kinds print one line on stderr.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CliError {
    /// A flag, a file or the environment is wrong: exit 2, before anything runs.
    #[error("{0}")]
    Usage(String),
    /// Something failed after the run began (writing output, a recording): exit 1.
    #[error("{0}")]
    Failed(String),
}

impl CliError {
    pub(crate) fn usage(message: impl Into<String>) -> CliError {
        CliError::Usage(message.into())
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // The CLI's own work (signals, reading events, drawing) is light: one thread is enough. The
    // agents run on golato's own host either way.
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("golato: could not start the async runtime: {error}");
            return Exit::Failure.into();
        }
    };
    let outcome = runtime.block_on(async move {
        match cli.command {
            Command::Run(args) => run::command(args).await,
            Command::Demo(args) => demo::command(args).await,
            Command::Tool(args) => tool::command(args).await,
        }
    });
    match outcome {
        Ok(exit) => exit.into(),
        Err(error) => {
            eprintln!("golato: {error}");
            match error {
                CliError::Usage(_) => Exit::Usage.into(),
                CliError::Failed(_) => Exit::Failure.into(),
            }
        }
    }
}
