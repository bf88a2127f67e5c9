//! `--trace`: every actor message on stderr, as the span it was handled in (actor, message,
//! `mailbox_wait_us`, `queue_depth`), nested run → turn → batch → call, with how long handling
//! took: `golato::observe`'s layer. `RUST_LOG` filters it as usual; the default is
//! `golato=debug`.

use std::io::Write;

use golato::observe;
use indicatif::MultiProgress;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

use crate::error::CliError;

/// Installs the subscriber: golato's observe layer, writing through `bars` when spinners are
/// drawn, so a trace line never lands inside a spinner.
pub(crate) fn install(bars: Option<MultiProgress>) -> Result<(), CliError> {
    let filter = observe::env_filter().map_err(|error| match error {
        observe::Error::InvalidFilter { .. } => CliError::usage(error.to_string()),
        other => CliError::Failed(other.to_string()),
    })?;
    tracing_subscriber::registry()
        .with(observe::layer_with(
            filter,
            TraceWriter { bars },
            colours_on_stderr(),
        ))
        .try_init()
        .map_err(|error| {
            CliError::Failed(format!("could not install the tracing subscriber: {error}"))
        })
}

/// Colours only on a terminal, and never with `NO_COLOR` set.
fn colours_on_stderr() -> bool {
    use std::io::IsTerminal;
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none()
}

/// Makes one [`TraceLine`] per trace event.
#[derive(Clone)]
struct TraceWriter {
    bars: Option<MultiProgress>,
}

impl<'a> MakeWriter<'a> for TraceWriter {
    type Writer = TraceLine;

    fn make_writer(&'a self) -> TraceLine {
        TraceLine {
            bars: self.bars.clone(),
            text: Vec::new(),
        }
    }
}

/// One formatted trace event, written to stderr whole when dropped.
struct TraceLine {
    bars: Option<MultiProgress>,
    text: Vec<u8>,
}

impl Write for TraceLine {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.text.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for TraceLine {
    fn drop(&mut self) {
        let write = || {
            let _ = std::io::stderr().lock().write_all(&self.text);
        };
        match &self.bars {
            Some(bars) => bars.suspend(write),
            None => write(),
        }
    }
}
