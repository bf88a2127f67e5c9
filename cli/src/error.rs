//! How the command line ends, and why a command could not run: the ground floor every room
//! may use (lib.rs only parses and dispatches).

use std::process::ExitCode;

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
    Interrupted(Signal),
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

/// A signal that interrupts a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Signal {
    /// Ctrl-C.
    Interrupt,
    /// `kill`'s default.
    Terminate,
    /// The terminal was closed.
    Hangup,
    /// Ctrl-\\.
    Quit,
}

impl Signal {
    /// The shell's convention: 128 + the signal number.
    pub(crate) fn exit_code(self) -> u8 {
        match self {
            Signal::Interrupt => 130,
            Signal::Terminate => 143,
            Signal::Hangup => 129,
            Signal::Quit => 131,
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Signal::Interrupt => "SIGINT",
            Signal::Terminate => "SIGTERM",
            Signal::Hangup => "SIGHUP",
            Signal::Quit => "SIGQUIT",
        }
    }
}
