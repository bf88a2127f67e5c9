//! Ctrl-C, SIGTERM, SIGHUP (the terminal closed) and SIGQUIT: the first cancels the run (started tools are waited for and bash process
//! groups killed, so nothing is left running); the second exits at once.

use tokio::signal::unix::{signal, SignalKind};

use crate::CliError;

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

/// Listens for SIGINT, SIGTERM, SIGHUP and SIGQUIT from the moment it is made: the default
/// action (dying at once, leaving tools' processes behind under init) no longer applies.
#[derive(Debug)]
pub(crate) struct Signals {
    interrupt: tokio::signal::unix::Signal,
    terminate: tokio::signal::unix::Signal,
    hangup: tokio::signal::unix::Signal,
    quit: tokio::signal::unix::Signal,
}

impl Signals {
    pub(crate) fn listen() -> Result<Signals, CliError> {
        let listen = |kind| {
            signal(kind).map_err(|error| {
                CliError::Failed(format!(
                    "could not listen for Ctrl-C, SIGTERM, SIGHUP and SIGQUIT: {error}"
                ))
            })
        };
        Ok(Signals {
            interrupt: listen(SignalKind::interrupt())?,
            terminate: listen(SignalKind::terminate())?,
            hangup: listen(SignalKind::hangup())?,
            quit: listen(SignalKind::quit())?,
        })
    }

    /// The next signal.
    ///
    /// # Cancel safety
    /// Cancel safe, as tokio's `Signal::recv`.
    pub(crate) async fn next(&mut self) -> Signal {
        tokio::select! {
            _ = self.interrupt.recv() => Signal::Interrupt,
            _ = self.terminate.recv() => Signal::Terminate,
            _ = self.hangup.recv() => Signal::Hangup,
            _ = self.quit.recv() => Signal::Quit,
        }
    }
}
