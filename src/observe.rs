//! Watching golato work: every actor message as a `tracing` span, in one line of setup.
//!
//! Every message an actor of golato handles is handled inside a span named `actor_message`
//! with the fields `actor` (the receiving actor type), `message_type`,
//! `mailbox_wait_us` (how long it waited in the mailbox) and `queue_depth` (how many messages
//! still waited behind it). Spans nest run → turn → batch → call, the model request is a
//! `generate` span, and a tool call a `call` span, both with OpenTelemetry's GenAI field names
//! (`gen_ai.operation.name`, `gen_ai.tool.name`, `gen_ai.tool.call.id`,
//! `gen_ai.request.model`, `gen_ai.usage.input_tokens`, `gen_ai.usage.output_tokens`).
//! They are `DEBUG` spans under the `golato` target, so they cost one level check each when
//! nobody listens.
//!
//! [`init`] installs a subscriber that prints each span when it closes, with how long it was
//! busy and idle:
//!
//! ```text
//! 2026-12-03T10:27:18.872976Z DEBUG run{run_id=1}:turn{turn=1}:actor_message{actor="RunActor" message_type="BatchReport<CallOutcome>" mailbox_wait_us=41 queue_depth=0}: close time.busy=19.8µs time.idle=3.1µs
//! ```
//!
//! With the `otel` feature, `otel` turns the same spans into OpenTelemetry spans (GenAI
//! semantic conventions) and exports them over OTLP.
//!
//! An application with its own subscriber adds [`layer`] to it instead:
//!
//! ```
//! use tracing_subscriber::layer::SubscriberExt;
//!
//! let subscriber = tracing_subscriber::registry().with(golato::observe::layer());
//! let _guard = tracing::subscriber::set_default(subscriber);
//! ```

#[cfg(feature = "otel")]
pub mod otel;

use std::io::IsTerminal;

use tracing::Subscriber;
use tracing_subscriber::fmt::format::FmtSpan;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

/// The filter [`layer`] uses, and [`init`] uses when `RUST_LOG` is not set: golato's spans
/// and events at `DEBUG` and above.
pub const DEFAULT_FILTER: &str = "golato=debug";

/// Why [`init`] or [`env_filter`] could not do what was asked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// `RUST_LOG` is set to something that is not a filter.
    #[error(
        "RUST_LOG={directives:?} is not a valid filter ({reason}); try RUST_LOG={DEFAULT_FILTER}"
    )]
    InvalidFilter {
        /// What `RUST_LOG` held.
        directives: String,
        /// What the parser said.
        reason: String,
    },
    /// The process already has a global subscriber.
    #[error("a global tracing subscriber is already installed; add golato::observe::layer() to it instead of calling init")]
    AlreadyInstalled,
}

/// A layer printing golato's spans to standard error as they close (coloured on a terminal
/// unless `NO_COLOR` is set), filtered to [`DEFAULT_FILTER`] whatever the rest of the
/// subscriber lets through.
pub fn layer<S>() -> impl Layer<S> + Send + Sync + 'static
where
    S: Subscriber + for<'span> LookupSpan<'span>,
{
    let colours = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    layer_with(EnvFilter::new(DEFAULT_FILTER), std::io::stderr, colours)
}

/// [`layer`] with your filter and writer (a file, a buffer, a pipe), with ANSI colours or not.
pub fn layer_with<S, W>(
    filter: EnvFilter,
    writer: W,
    colours: bool,
) -> impl Layer<S> + Send + Sync + 'static
where
    S: Subscriber + for<'span> LookupSpan<'span>,
    W: for<'writer> MakeWriter<'writer> + Send + Sync + 'static,
{
    tracing_subscriber::fmt::layer()
        .with_span_events(FmtSpan::CLOSE)
        .with_target(false)
        .with_ansi(colours)
        .with_writer(writer)
        .with_filter(filter)
}

/// `RUST_LOG` as a filter when it is set, else [`DEFAULT_FILTER`].
///
/// # Errors
/// [`Error::InvalidFilter`] when `RUST_LOG` does not parse.
pub fn env_filter() -> Result<EnvFilter, Error> {
    match std::env::var("RUST_LOG") {
        Ok(directives) if !directives.trim().is_empty() => {
            EnvFilter::try_new(&directives).map_err(|error| Error::InvalidFilter {
                directives,
                reason: error.to_string(),
            })
        }
        _ => Ok(EnvFilter::new(DEFAULT_FILTER)),
    }
}

/// Installs a global subscriber that prints golato's spans (and anything else `RUST_LOG`
/// lets through; by default [`DEFAULT_FILTER`]) to standard error: the one line to watch a
/// run's actors at work.
///
/// # Errors
/// [`Error::InvalidFilter`] for an unparsable `RUST_LOG`;
/// [`Error::AlreadyInstalled`] when the process already has a global subscriber.
pub fn init() -> Result<(), Error> {
    let colours = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    tracing_subscriber::registry()
        .with(layer_with(env_filter()?, std::io::stderr, colours))
        .try_init()
        .map_err(|_| Error::AlreadyInstalled)
}
