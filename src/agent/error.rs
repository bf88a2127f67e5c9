//! Why an agent could not be built, or why a run did not end normally.

use crate::message::Message;
use crate::{generator, tool};

/// Why an agent could not be built, or why a run did not end normally.
///
/// Tool failures are not errors here: they are error results the model sees. A run that does not
/// end normally carries its transcript so far ([`Error::messages`]), so nothing that happened is
/// lost and the run can be resumed from it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// `agent::Config::generator` was `None`.
    #[error("no generator configured; set agent::Config::generator to a model client or a Scripted generator")]
    NoGenerator,
    /// A tool cannot be registered.
    #[error(transparent)]
    InvalidTool(#[from] tool::Error),
    /// The actor host could not be reached.
    #[error(transparent)]
    Host(#[from] golato_actors::HostError),
    /// The input has neither prompts nor a transcript.
    #[error("the input is empty; give at least one prompt in agent::Input::prompts, or a transcript to resume")]
    EmptyInput,
    /// The transcript cannot be continued as given.
    #[error("the transcript cannot be continued: {reason}")]
    NotContinuable {
        /// What is wrong and what to do.
        reason: String,
    },
    /// The run was cancelled. Started tools were waited for; calls that never started got error
    /// results.
    #[error("the run was cancelled")]
    Cancelled {
        /// The transcript up to the cancellation. An answer cut short ends it, with what had
        /// streamed in (text and reasoning, no tool calls) and `StopReason::Aborted`.
        messages: Vec<Message>,
    },
    /// The generator failed (after its own retries).
    #[error("the generator failed: {source}")]
    Generator {
        /// What the generator said.
        #[source]
        source: generator::Error,
        /// The transcript up to the failure. An answer cut short ends it, with what had
        /// streamed in (text and reasoning, no tool calls), `StopReason::Error` and the error's
        /// text.
        messages: Vec<Message>,
    },
    /// The run reached its `agent::Config::budget` (after a batch, before the next request).
    #[error("the run reached its budget: {reached}; raise agent::Config::budget or resume from the transcript")]
    Budget {
        /// Which limit, with what was spent.
        reached: String,
        /// The transcript so far.
        messages: Vec<Message>,
    },
    /// The final answer did not satisfy `agent::Config::output_schema`, also after one more
    /// turn that said what was wrong.
    #[error("the final answer does not satisfy the output schema: {reason}")]
    InvalidOutput {
        /// What is wrong with the last answer.
        reason: String,
        /// The transcript, both answers included.
        messages: Vec<Message>,
    },
    /// `agent::Config::output_schema` does not compile.
    #[error("agent::Config::output_schema is not a valid JSON Schema: {reason}")]
    InvalidOutputSchema {
        /// What the schema compiler said.
        reason: String,
    },
    /// `agent::Config::compaction` has settings out of range.
    #[error("agent::Config::compaction is not usable: {reason}")]
    InvalidCompaction {
        /// Which setting, and what to give.
        reason: String,
    },
    /// The transcript had to be compacted to go on (it outgrew the context window, or the
    /// provider refused it as too long) and the summary could not be written.
    #[error("the run's context had to be compacted and the summary could not be written: {reason}; give agent::Config::compaction a summarizer that works, a larger context window, or resume from the transcript")]
    Compaction {
        /// What the summarizer said (and, after a refusal, what the provider said).
        reason: String,
        /// The transcript so far, whole.
        messages: Vec<Message>,
    },
    /// A money budget for a model without a price.
    #[error("agent::Config::budget limits the cost, but the model {model:?} has no price golato knows; give one with Model::with_price, or limit tokens instead")]
    UnpricedBudget {
        /// The model's ID.
        model: String,
    },
    /// The run reached `agent::Config::max_turns` and needed another turn.
    #[error("the run reached its limit of {limit} turn(s); raise agent::Config::max_turns or resume from the transcript")]
    MaxTurns {
        /// The limit.
        limit: usize,
        /// The transcript so far.
        messages: Vec<Message>,
    },
    /// The run's actor stopped before the run ended (the host is shutting down).
    #[error("the run's actor stopped before the run ended (the actor host is shutting down); resume from the transcript on a running host")]
    Lost {
        /// The transcript so far.
        messages: Vec<Message>,
    },
    /// The run's journal failed (`Agent::start_journaled`); the transcript so far is kept.
    #[error("{source}")]
    Journal {
        /// What the journal said.
        #[source]
        source: crate::journal::Error,
        /// The transcript so far.
        messages: Vec<Message>,
    },
    /// The run's actor crashed (panicked). Only this run ends; others go on.
    #[error("the run's actor crashed (a panic on the actor thread; the log has its message); the transcript so far is kept, so the run can be resumed from it")]
    Crashed {
        /// The transcript so far.
        messages: Vec<Message>,
    },
}

impl Error {
    /// The transcript so far, for the errors that end a started run.
    pub fn messages(&self) -> Option<&[Message]> {
        match self {
            Error::Cancelled { messages }
            | Error::Generator { messages, .. }
            | Error::MaxTurns { messages, .. }
            | Error::Budget { messages, .. }
            | Error::InvalidOutput { messages, .. }
            | Error::Compaction { messages, .. }
            | Error::Lost { messages }
            | Error::Journal { messages, .. }
            | Error::Crashed { messages } => Some(messages),
            _ => None,
        }
    }
}
