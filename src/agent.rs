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

mod admission;
mod batch_calls;
mod budget;
pub mod compaction;
mod config;
mod derived;
mod error;
pub mod event;
mod input;
mod interrupted;
mod output;
mod run;
mod run_actor;
mod tool_actor;
pub(crate) mod validation;

use std::fmt;
use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use golato_actors::Host;

use crate::generator::{Generator, Model};
use crate::hook::Hook;
use crate::journal::Journal;
use crate::message::{Message, Usage};
use crate::tool::{self, Execution, Tool, ToolDefinition};

pub use budget::Budget;
use compaction::{Compacted, Compaction, Summary};
pub use config::{Config, RunResult, DEFAULT_EVENT_BUFFER, DEFAULT_TOOL_TIMEOUT_GRACE};
pub use error::Error;
use event::Delivery;
pub use event::Event;
pub use input::Input;
pub use output::output_schema;
pub use run::{Events, NotDelivered, Run};

use run::Channel;
use run_actor::RunPlan;
use validation::Registry;

/// What every run of an agent shares.
#[derive(Clone)]
pub(crate) struct AgentInner {
    pub(crate) generator: Arc<dyn Generator>,
    pub(crate) model: Model,
    pub(crate) registry: Registry,
    pub(crate) definitions: Arc<[ToolDefinition]>,
    pub(crate) tool_execution: Execution,
    pub(crate) system_prompt: Option<String>,
    pub(crate) max_turns: Option<usize>,
    pub(crate) budget: Option<Budget>,
    /// The window in tokens, when known.
    pub(crate) context_window: Option<u64>,
    /// The compaction settings (also when off: `Agent::compact` uses them).
    pub(crate) compaction: Compaction,
    /// The tokens of the system prompt and tool definitions by the compaction's counter, the
    /// same for every request: counted once.
    pub(crate) prelude_tokens: u64,
    pub(crate) output: Option<output::OutputCheck>,
    pub(crate) event_buffer: usize,
    pub(crate) host: Host,
    pub(crate) hooks: Arc<[Arc<dyn Hook>]>,
    pub(crate) tool_timeout: Option<Duration>,
    pub(crate) tool_timeout_grace: Duration,
    pub(crate) max_parallel_calls: Option<NonZeroUsize>,
    /// Places for `max_concurrent_runs`, and the FIFO queue of waiting runs.
    pub(crate) admission: Option<Arc<admission::Admission>>,
    pub(crate) safe_to_replay: crate::journal::SafeToReplay,
}

/// Starts the run's actor on its host.
fn launch(plan: RunPlan) {
    let (host, channel) = (plan.agent.host.clone(), Arc::clone(&plan.channel));
    if let Err(error) = golato_actors::embed::start(&host, move |ctx| plan.into_actor(ctx)) {
        channel.finish(Err(Error::Host(error)));
    }
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
    /// The compaction settings when runs compact by themselves.
    pub(crate) fn automatic_compaction(&self) -> Option<&Compaction> {
        self.compaction.enabled.then_some(&self.compaction)
    }

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
        if let (
            Some(Budget {
                max_cost: Some(_), ..
            }),
            None,
        ) = (&config.budget, config.model.price)
        {
            return Err(Error::UnpricedBudget {
                model: config.model.id.clone(),
            });
        }
        if config.compaction.enabled {
            config
                .compaction
                .check()
                .map_err(|reason| Error::InvalidCompaction { reason })?;
        }
        let schemas = tool::compile(&config.tools)?;
        let output = config
            .output_schema
            .map(output::OutputCheck::compile)
            .transpose()
            .map_err(|reason| Error::InvalidOutputSchema { reason })?;
        let context_window = config
            .context_window
            .or_else(|| crate::generator::context_window(&config.model.id));
        let mut model = config.model;
        if let Some(output) = &output {
            model.output_schema = Some(std::sync::Arc::clone(&output.schema));
        }
        let host = match config.host {
            Some(host) => host,
            None => Host::global()?,
        };
        let definitions: Arc<[ToolDefinition]> =
            config.tools.iter().map(Tool::definition).collect();
        let prelude_tokens = config
            .compaction
            .counter
            .count_prelude(config.system_prompt.as_deref(), &definitions);
        Ok(Agent {
            inner: Arc::new(AgentInner {
                generator,
                model,
                registry: Registry::new(config.tools, schemas),
                definitions,
                tool_execution: config.tool_execution,
                system_prompt: config.system_prompt,
                max_turns: config.max_turns,
                budget: config.budget,
                context_window,
                prelude_tokens,
                compaction: config.compaction,
                output,
                event_buffer: config.event_buffer,
                host,
                hooks: config.hooks.into(),
                tool_timeout: config.tool_timeout,
                tool_timeout_grace: config.tool_timeout_grace,
                max_parallel_calls: config.max_parallel_calls,
                admission: config
                    .max_concurrent_runs
                    .map(|limit| admission::Admission::new(limit.get())),
                safe_to_replay: config.safe_to_replay,
            }),
        })
    }

    /// Starts a run and returns its handle at once; the run proceeds on the actor host whether or
    /// not the caller reads its events.
    ///
    /// Input that cannot be run (empty, or a transcript that cannot be continued) and a host
    /// that has shut down are reported as the run's outcome.
    pub fn start(&self, input: impl Into<Input>) -> Run {
        self.start_with(input.into(), None, None)
    }

    /// Starts a run whose every step goes through `journal` (see [`Journal`]): each turn's
    /// message and each call's result is recorded there, and a step the journal already holds
    /// is taken from it instead of asking the model or running the call again. Starting the
    /// same input again on the same journal picks the run up where the journal leaves off.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use golato::agent::{self, Agent};
    /// use golato::journal::MemoryJournal;
    /// use golato::generator::Scripted;
    /// use golato::message::{AssistantMessage, UserMessage};
    ///
    /// let agent = Agent::new(agent::Config {
    ///     generator: Some(Arc::new(Scripted::new([AssistantMessage::with_text("done")]))),
    ///     ..Default::default()
    /// })?;
    /// let journal = Arc::new(MemoryJournal::new());
    /// let result = agent.start_journaled(UserMessage::new("go"), journal.clone()).wait()?;
    /// assert_eq!(result.final_message.text(), "done");
    /// // The input, the turn, and where the run looked for follow-ups before it ended.
    /// assert_eq!(journal.keys(), ["input", "turn-1", "turn-1/inbox-end"]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn start_journaled(&self, input: impl Into<Input>, journal: Arc<dyn Journal>) -> Run {
        self.start_with(input.into(), Some(journal), None)
    }

    /// Starts a child run for the tool call of `parent` (a subagent): what it spends is counted
    /// for the parent's run as it goes, and it makes no request once what is left of the
    /// parent's budget (shared with the call's siblings) is spent.
    pub(crate) fn start_child(
        &self,
        input: impl Into<Input>,
        parent: crate::tool::ToolContext,
    ) -> Run {
        self.start_with(input.into(), None, Some(parent))
    }

    fn start_with(
        &self,
        input: Input,
        journal: Option<Arc<dyn Journal>>,
        parent: Option<crate::tool::ToolContext>,
    ) -> Run {
        let id = NEXT_RUN_ID.fetch_add(1, Ordering::Relaxed);
        let host = &self.inner.host;
        let channel = Channel::new(self.inner.event_buffer);
        let cancel = golato_actors::embed::shutdown_token(host).child_token();
        let run = Run::new(Arc::clone(&channel), cancel.clone(), id);
        let summary = input.summary.clone();
        let messages = match input.into_messages() {
            Ok(messages) => messages,
            Err(error) => {
                channel.finish(Err(error));
                return run;
            }
        };
        if !host.is_running() {
            channel.finish(Err(Error::Host(golato_actors::HostError::Stopped)));
            return run;
        }
        let span = tracing::info_span!("run", run_id = id);
        let mut plan = RunPlan {
            agent: Arc::clone(&self.inner),
            channel,
            cancel,
            messages: Arc::new(messages),
            _work: golato_actors::embed::track(host),
            admission: None,
            span,
            id,
            journal,
            summary,
            parent,
        };
        let Some(admission) = &self.inner.admission else {
            launch(plan);
            return run;
        };
        // Over `max_concurrent_runs`, the run joins the queue now (FIFO by `start` calls) and
        // waits on the runtime, holding only its plan, until a finishing run lets it in.
        match admission.admit() {
            Ok(permit) => {
                plan.admission = Some(permit);
                launch(plan);
            }
            Err(place) => {
                let cancel = plan.cancel.clone();
                host.spawn(async move {
                    tokio::select! {
                        biased;
                        () = cancel.cancelled() => plan.cancel_before_start(),
                        permit = place => match permit {
                            Ok(permit) => {
                                plan.admission = Some(permit);
                                launch(plan);
                            }
                            // The agent is gone with its queue; the plan's drop reports the
                            // run lost.
                            Err(_) => drop(plan),
                        },
                    }
                });
            }
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

    /// Replaces the oldest messages of `messages` by a summary the model writes (or
    /// `Compaction::summarizer`), keeping the recent ones word for word, and returns the
    /// shorter transcript: one to start a run from ([`Input`] takes it), or to store. Nothing
    /// is cut between a tool call and its result. A transcript too short to compact comes back
    /// as given, with `replaced` 0. It works whether or not automatic compaction is on (its
    /// settings apply).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use golato::agent::{self, Agent};
    /// use golato::generator::Scripted;
    /// use golato::message::{AssistantMessage, Message, UserMessage};
    ///
    /// let agent = Agent::new(agent::Config {
    ///     generator: Some(Arc::new(Scripted::new([AssistantMessage::with_text(
    ///         "The user asked about the weather in Paris.",
    ///     )]))),
    ///     ..Default::default()
    /// })?;
    /// let transcript = vec![
    ///     Message::User(UserMessage::new("What is the weather in Paris?")),
    ///     Message::Assistant(AssistantMessage::with_text("Sunny.")),
    ///     Message::User(UserMessage::new("And tomorrow?")),
    ///     Message::Assistant(AssistantMessage::with_text("Rain.")),
    /// ];
    /// # tokio::runtime::Runtime::new()?.block_on(async {
    /// let compacted = agent.compact(transcript).await?;
    /// assert_eq!(compacted.replaced, 3);
    /// assert_eq!(compacted.messages.len(), 2); // the summary, then "Rain."
    /// # Ok::<(), agent::Error>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Compaction`] (with the transcript as given) when the summary cannot be written.
    pub async fn compact(&self, messages: Vec<Message>) -> Result<Compacted, Error> {
        let inner = &self.inner;
        let settings = &inner.compaction;
        let prelude = inner.prelude_tokens;
        let counts = settings.measure(&messages);
        let tokens_before = prelude.saturating_add(compaction::total(&counts));
        let basis = inner
            .context_window
            .map_or(tokens_before, |window| window.min(tokens_before));
        let keep = (settings.keep_recent * basis as f64) as u64;
        let Some(cut) = compaction::choose_cut(&messages, &counts, keep) else {
            return Ok(Compacted {
                messages,
                summary: String::new(),
                replaced: 0,
                tokens_before,
                tokens_after: tokens_before,
                usage: Usage::default(),
            });
        };
        let budget_bytes = compaction::render_budget(inner.context_window, tokens_before, false);
        let rendered = compaction::render(&messages[..cut], budget_bytes);
        let (generator, model) = match &settings.summarizer {
            Some(summarizer) => (Arc::clone(&summarizer.generator), summarizer.model.clone()),
            None => (Arc::clone(&inner.generator), inner.model.clone()),
        };
        let summarized = inner
            .host
            .spawn(compaction::summarize(generator, model, rendered))
            .await;
        let (summary, usage) = match summarized {
            Ok(Ok(summarized)) => summarized,
            Ok(Err(error)) => {
                return Err(Error::Compaction {
                    reason: error.to_string(),
                    messages,
                })
            }
            Err(error) => {
                return Err(Error::Compaction {
                    reason: format!("the summarizer's task failed ({error})"),
                    messages,
                })
            }
        };
        let summary = compaction::summary_text(
            &compaction::facts(&messages[..cut], settings.counter.as_ref()),
            &summary,
        );
        let summary_message = Message::User(compaction::summary_message(&summary));
        let tokens_after = prelude
            .saturating_add(settings.counter.count_message(&summary_message))
            .saturating_add(compaction::total(&counts[cut..]));
        let mut compacted = Vec::with_capacity(messages.len() - cut + 1);
        compacted.push(summary_message);
        compacted.extend(messages.into_iter().skip(cut));
        Ok(Compacted {
            messages: compacted,
            summary,
            replaced: cut,
            tokens_before,
            tokens_after,
            usage,
        })
    }

    /// The model the agent's runs ask.
    pub fn model(&self) -> &Model {
        &self.inner.model
    }

    /// The model's context window in tokens: as configured, else as golato knows the model;
    /// `None` when neither says.
    pub fn context_window(&self) -> Option<u64> {
        self.inner.context_window
    }

    /// The tools the model may call, as sent to it.
    pub fn tool_definitions(&self) -> &[ToolDefinition] {
        &self.inner.definitions
    }
}
