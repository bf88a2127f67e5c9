//! Ctrl-C, SIGTERM, SIGHUP (the terminal closed) and SIGQUIT: the first cancels the run (started tools are waited for and bash process
//! groups killed, so nothing is left running); the second exits at once.

use tokio::signal::unix::{signal, SignalKind};

use crate::error::CliError;
pub(crate) use crate::error::Signal;

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

/// SIGINT or SIGTERM, which one.
#[cfg(feature = "durable")]
pub(crate) async fn interrupted() -> crate::interrupt::Signal {
    use crate::interrupt::Signal;
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut interrupt), Ok(mut terminate)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = interrupt.recv() => Signal::Interrupt,
        _ = terminate.recv() => Signal::Terminate,
    }
}
