//! The agent: asks the generator for the next message, validates and runs its tool calls, records
//! one result per call in source order, and loops until a message has no calls (or a batch asks
//! to terminate).
//!
//! ```text
//! model returns calls
//!   → Agent checks IDs, names, JSON, and schemas
//!   → Agent runs the batch
//!   → Agent records ordered result messages
//!   → Agent requests the next turn when the batch continues
//! ```
//!
//! Each run is an actor on golato's own actor host, so [`Agent::start`] works from a plain
//! `fn main`, any tokio runtime or an actix system; the caller reads live [`Event`]s and then
//! the outcome from the returned [`Run`].
//!
//! ```
//! use std::sync::Arc;
//! use golato::agent::{self, Agent, Event, Input};
//! use golato::generator::Scripted;
//! use golato::message::{AssistantMessage, ToolCall, UserMessage};
//! use golato::tool::{Tool, ToolResult};
//! use serde_json::json;
//!
//! let lookup = Tool::new(
//!     "lookup_customer",
//!     "Looks up a customer's plan.",
//!     json!({"type": "object", "properties": {"customer_id": {"type": "string"}}, "required": ["customer_id"]}),
//!     |_ctx, _args| async { Ok(ToolResult::text("Pro")) },
//! );
//! let generator = Scripted::new([
//!     AssistantMessage::with_tool_calls([ToolCall::new("1", "lookup_customer", r#"{"customer_id":"C-100"}"#)]),
//!     AssistantMessage::with_text("C-100 uses the Pro plan."),
//! ]);
//! let assistant = Agent::new(agent::Config {
//!     generator: Some(Arc::new(generator)),
//!     tools: vec![lookup],
//!     ..Default::default()
//! })?;
//! let run = assistant.start(Input::from(UserMessage::new("Which plan does C-100 use?")));
//! for event in run.events() {
//!     if let Event::ToolExecutionEnd(end) = event {
//!         assert_eq!(end.result.text(), "Pro");
//!     }
//! }
//! assert_eq!(run.wait()?.final_message.text(), "C-100 uses the Pro plan.");
//! # Ok::<(), golato::agent::Error>(())
//! ```

mod calls;
mod error;
mod event;
mod run;
mod run_actor;

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use golato_actors::Host;

use crate::generator::{Generator, Model};
use crate::message::{AssistantMessage, Message, StopReason, Usage, UserMessage};
use crate::tool::{self, Execution, Tool, ToolDefinition};

pub use error::Error;
pub use event::{
    Event, MessageEndEvent, MessageStartEvent, MessageUpdateEvent, RunEndEvent, RunStartEvent,
    ToolExecutionEndEvent, ToolExecutionStartEvent, ToolExecutionUpdateEvent, TurnEndEvent,
    TurnStartEvent,
};
pub use run::{Events, Run};

use calls::Registry;
use run::Channel;
use run_actor::RunPlan;

/// Events buffered for a slow consumer before its pending updates start to be coalesced.
pub const DEFAULT_EVENT_BUFFER: usize = 256;

/// How to build an [`Agent`].
#[derive(Clone)]
pub struct Config {
    /// Where assistant messages come from. Required.
    pub generator: Option<Arc<dyn Generator>>,
    /// The model to ask.
    pub model: Model,
    /// The tools the model may call; their schemas are compiled once, by [`Agent::new`].
    pub tools: Vec<Tool>,
    /// `Parallel` (the default) runs the calls of a batch concurrently; `Sequential` runs every
    /// batch one call at a time. A batch with a call of a `Sequential` tool is sequential
    /// either way.
    pub tool_execution: Execution,
    /// Instructions sent before the transcript with every request.
    pub system_prompt: Option<String>,
    /// Most model requests one run may make; `None` (the default) sets no limit. When a run
    /// needs one more, it ends with [`Error::MaxTurns`] carrying the transcript.
    pub max_turns: Option<usize>,
    /// Events buffered for a consumer that falls behind before pending updates are coalesced
    /// (lifecycle events are never dropped). Default [`DEFAULT_EVENT_BUFFER`].
    pub event_buffer: usize,
    /// The actor host runs are started on; `None` uses [`Host::global`].
    pub host: Option<Host>,
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
            event_buffer: DEFAULT_EVENT_BUFFER,
            host: None,
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
            .field("event_buffer", &self.event_buffer)
            .finish_non_exhaustive()
    }
}

/// What a run starts from: new prompts, and optionally an earlier transcript to continue.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Input {
    /// Prompts appended after the transcript.
    pub prompts: Vec<UserMessage>,
    /// An earlier run's transcript (from [`RunResult::messages`] or [`Error::messages`]),
    /// possibly saved and loaded in another process. A transcript ending in an assistant
    /// message with unanswered tool calls continues by running those calls; one ending in tool
    /// results or a user message continues by asking the generator.
    pub transcript: Vec<Message>,
}

impl From<UserMessage> for Input {
    fn from(prompt: UserMessage) -> Self {
        Input {
            prompts: vec![prompt],
            transcript: Vec::new(),
        }
    }
}

impl Input {
    /// The messages the run starts with, or why they cannot be continued.
    fn into_messages(self) -> Result<Vec<Message>, Error> {
        let no_prompts = self.prompts.is_empty();
        let mut messages = self.transcript;
        messages.extend(self.prompts.into_iter().map(Message::User));
        match messages.last() {
            None => Err(Error::EmptyInput),
            Some(Message::Assistant(last)) if no_prompts => {
                let pending =
                    run_actor::pending_calls(&messages).map_or(0, |(_, calls)| calls.len());
                let cut_short = matches!(last.stop_reason, StopReason::Aborted | StopReason::Error);
                if pending == 0 && cut_short {
                    Err(Error::NotContinuable {
                        reason: format!(
                            "it ends with an answer cut short (stop reason {:?}); add a prompt to agent::Input::prompts (for example, asking the model to go on), or drop that message from the transcript to ask again",
                            last.stop_reason
                        ),
                    })
                } else if pending == 0 {
                    Err(Error::NotContinuable {
                        reason: format!(
                            "it ends with an assistant message without tool calls (stop reason {:?}), so the model has already answered; add a prompt to agent::Input::prompts",
                            last.stop_reason
                        ),
                    })
                } else {
                    Ok(messages)
                }
            }
            Some(_) => Ok(messages),
        }
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
    /// Model requests made by this run.
    pub turns: usize,
}

/// What every run of an agent shares.
pub(crate) struct AgentInner {
    pub(crate) generator: Arc<dyn Generator>,
    pub(crate) model: Model,
    pub(crate) registry: Registry,
    pub(crate) definitions: Arc<[ToolDefinition]>,
    pub(crate) tool_execution: Execution,
    pub(crate) system_prompt: Option<String>,
    pub(crate) max_turns: Option<usize>,
    pub(crate) event_buffer: usize,
    pub(crate) host: Host,
}

/// An agent: a generator, a model and tools. Cheap to clone and share; separate runs execute
/// concurrently and share no mutable state (beyond the path locks of built-in tools).
#[derive(Clone)]
pub struct Agent {
    inner: Arc<AgentInner>,
}

impl fmt::Debug for Agent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Agent")
            .field("model", &self.inner.model)
            .field("tools", &self.inner.registry_names())
            .finish_non_exhaustive()
    }
}

impl AgentInner {
    fn registry_names(&self) -> Vec<&str> {
        self.definitions
            .iter()
            .map(|tool| tool.name.as_str())
            .collect()
    }
}

static NEXT_RUN_ID: AtomicU64 = AtomicU64::new(1);

impl Agent {
    /// Builds an agent, compiling every tool's schema once.
    ///
    /// # Errors
    /// [`Error::NoGenerator`] without a generator; [`Error::InvalidTool`] for a blank or
    /// duplicate tool name, or a schema that does not compile or whose root is not an object;
    /// [`Error::Host`] when the actor host cannot start.
    pub fn new(config: Config) -> Result<Agent, Error> {
        let generator = config.generator.ok_or(Error::NoGenerator)?;
        let schemas = tool::compile(&config.tools)?;
        let host = match config.host {
            Some(host) => host,
            None => Host::global()?,
        };
        let definitions = config.tools.iter().map(Tool::definition).collect();
        Ok(Agent {
            inner: Arc::new(AgentInner {
                generator,
                model: config.model,
                registry: Registry::new(config.tools, schemas),
                definitions,
                tool_execution: config.tool_execution,
                system_prompt: config.system_prompt,
                max_turns: config.max_turns,
                event_buffer: config.event_buffer,
                host,
            }),
        })
    }

    /// Starts a run and returns its handle at once; the run proceeds on the actor host whether or
    /// not the caller reads its events.
    ///
    /// Input that cannot be run (empty, or a transcript that cannot be continued) and a host
    /// that has shut down are reported as the run's outcome.
    pub fn start(&self, input: impl Into<Input>) -> Run {
        let id = NEXT_RUN_ID.fetch_add(1, Ordering::Relaxed);
        let host = &self.inner.host;
        let channel = Channel::new(self.inner.event_buffer);
        let cancel = host.shutdown_token().child_token();
        let run = Run::new(Arc::clone(&channel), cancel.clone(), id);
        let messages = match input.into().into_messages() {
            Ok(messages) => messages,
            Err(error) => {
                channel.finish(Err(error));
                return run;
            }
        };
        let span = tracing::info_span!("run", run_id = id);
        let plan = RunPlan {
            agent: Arc::clone(&self.inner),
            channel: Arc::clone(&channel),
            cancel,
            messages: Arc::new(messages),
            _work: host.track(),
            span,
            id,
        };
        if let Err(error) = host.start(move |ctx| plan.into_actor(ctx)) {
            channel.finish(Err(Error::Host(error)));
        }
        run
    }

    /// Runs to the end and returns the outcome, without observing events.
    ///
    /// # Errors
    /// As [`Run::wait`].
    ///
    /// # Cancel safety
    /// Dropping the future cancels the run (started tools are still waited for, in the
    /// background).
    pub async fn run(&self, input: impl Into<Input>) -> Result<RunResult, Error> {
        self.start(input).finish().await
    }

    /// The tools the model may call, as sent to it.
    pub fn tool_definitions(&self) -> &[ToolDefinition] {
        &self.inner.definitions
    }
}
