//! What an agent is made of ([`Config`]) and what a finished run gives back ([`RunResult`]).

use std::fmt;
use std::num::NonZeroUsize;
use std::sync::Arc;
use std::time::Duration;

use golato_actors::Host;

use super::budget::Budget;
use super::compaction::{Compaction, Summary};
use crate::generator::{Generator, Model};
use crate::hook::Hook;
use crate::message::{AssistantMessage, Message, Usage};
use crate::tool::{Execution, Tool};

/// Events buffered for a slow consumer before its pending updates start to be coalesced.
pub const DEFAULT_EVENT_BUFFER: usize = 256;

/// How long a timed-out tool function has to stop after it is cancelled before it is abandoned.
pub const DEFAULT_TOOL_TIMEOUT_GRACE: Duration = Duration::from_secs(5);

/// How to build an [`Agent`](super::Agent).
#[derive(Clone)]
pub struct Config {
    /// Where assistant messages come from. Required.
    pub generator: Option<Arc<dyn Generator>>,
    /// The model to ask.
    pub model: Model,
    /// The tools the model may call; their schemas are compiled once, by [`Agent::new`](super::Agent::new).
    pub tools: Vec<Tool>,
    /// `Parallel` (the default) runs the calls of a batch concurrently; `Sequential` runs every
    /// batch one call at a time. A batch with a call of a `Sequential` tool is sequential
    /// either way.
    pub tool_execution: Execution,
    /// Instructions sent before the transcript with every request.
    pub system_prompt: Option<String>,
    /// Most model requests one run may make; `None` (the default) sets no limit. When a run
    /// needs one more, it ends with [`Error::MaxTurns`](super::Error::MaxTurns) carrying the transcript.
    pub max_turns: Option<usize>,
    /// A JSON Schema the final answer must satisfy ([`output_schema`](super::output_schema) makes one from a type);
    /// `None` (the default) takes any answer. Compiled by [`Agent::new`](super::Agent::new); providers that can
    /// are asked for it natively; the answer is validated anyway, and one that fails gets one
    /// more turn with what was wrong before the run fails with [`Error::InvalidOutput`](super::Error::InvalidOutput). The
    /// value is in [`RunResult::output`].
    pub output_schema: Option<serde_json::Value>,
    /// What one run may spend (tokens, money); `None` (the default) sets no limit. A run that
    /// reaches it ends after the batch it is in, with [`Error::Budget`](super::Error::Budget) carrying the transcript.
    pub budget: Option<Budget>,
    /// The model's context window in tokens; `None` (the default) takes the figure golato
    /// knows for the model ([`context_window`](crate::generator::context_window)), and for a
    /// model it has none for, only a provider's "too long" refusal makes a run compact.
    pub context_window: Option<u64>,
    /// When and how runs compact their context to fit the window (on by default; see
    /// [`Compaction`]).
    pub compaction: Compaction,
    /// Events buffered for a consumer that falls behind before pending updates are coalesced
    /// (lifecycle events are never dropped). Default [`DEFAULT_EVENT_BUFFER`].
    pub event_buffer: usize,
    /// The actor host runs are started on; `None` uses [`Host::global`].
    pub host: Option<Host>,
    /// Code that runs around every valid tool call, in order (see [`crate::hook`]). None by
    /// default.
    pub hooks: Vec<Arc<dyn Hook>>,
    /// How long one tool call may run unless its tool sets its own (`Tool::with_timeout`);
    /// `None` (the default) sets no limit. A call past it is cancelled and gets an error result
    /// saying it timed out. bash's own `timeout` argument keeps its meaning inside that.
    pub tool_timeout: Option<Duration>,
    /// How long a timed-out function has to return after it is cancelled before it is
    /// abandoned. Default [`DEFAULT_TOOL_TIMEOUT_GRACE`].
    pub tool_timeout_grace: Duration,
    /// At most this many calls of one parallel batch run at once; the others start, in source
    /// order, as running ones end (each call's start event comes when it starts). `None` (the
    /// default) runs every call of a batch at once.
    pub max_parallel_calls: Option<NonZeroUsize>,
    /// At most this many runs of this agent (and its clones) proceed at once; a run started
    /// beyond it waits, in FIFO order, holding only its input, and can be cancelled while it
    /// waits. `None` (the default) sets no limit.
    pub max_concurrent_runs: Option<NonZeroUsize>,
    /// Calls of `once` tools ([`Replay`](crate::tool::Replay)) that a journaled run may run
    /// again after an interruption, by rule. Empty by default: each tool's own class decides.
    pub safe_to_replay: crate::journal::SafeToReplay,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            generator: None,
            model: Model::default(),
            tools: Vec::new(),
            tool_execution: Execution::Parallel,
            system_prompt: None,
            max_turns: None,
            budget: None,
            context_window: None,
            compaction: Compaction::default(),
            output_schema: None,
            event_buffer: DEFAULT_EVENT_BUFFER,
            host: None,
            hooks: Vec::new(),
            tool_timeout: None,
            tool_timeout_grace: DEFAULT_TOOL_TIMEOUT_GRACE,
            max_parallel_calls: None,
            max_concurrent_runs: None,
            safe_to_replay: crate::journal::SafeToReplay::default(),
        }
    }
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Config")
            .field(
                "generator",
                &self.generator.as_ref().map(|_| "dyn Generator"),
            )
            .field("model", &self.model)
            .field("tools", &self.tools)
            .field("tool_execution", &self.tool_execution)
            .field("system_prompt", &self.system_prompt)
            .field("max_turns", &self.max_turns)
            .field("budget", &self.budget)
            .field("context_window", &self.context_window)
            .field("compaction", &self.compaction)
            .field("output_schema", &self.output_schema)
            .field("event_buffer", &self.event_buffer)
            .field("hooks", &self.hooks.len())
            .field("tool_timeout", &self.tool_timeout)
            .field("tool_timeout_grace", &self.tool_timeout_grace)
            .field("max_parallel_calls", &self.max_parallel_calls)
            .field("max_concurrent_runs", &self.max_concurrent_runs)
            .field("safe_to_replay", &self.safe_to_replay)
            .finish_non_exhaustive()
    }
}

/// A finished run.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RunResult {
    /// The last assistant message: the answer, or the message whose batch terminated the run.
    pub final_message: AssistantMessage,
    /// The whole transcript, including the input's transcript and prompts.
    pub messages: Vec<Message>,
    /// Tokens used by this run's requests.
    pub usage: Usage,
    /// What they cost in US dollars, at the model's price; `None` when it has none.
    pub cost: Option<f64>,
    /// The final answer as JSON, valid against `Config::output_schema` (when one is set).
    pub output: Option<serde_json::Value>,
    /// How requests sent the transcript at the end, when the run (or its input) compacted it:
    /// give it to the next run's [`Input::summary`](super::Input::summary) to go on from the same view.
    pub summary: Option<Summary>,
    /// Model requests made by this run.
    pub turns: usize,
}
