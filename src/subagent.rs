//! Subagents: a `task` tool whose calls run child agents.
//!
//! A call of the `task` tool is a tool call like any other: its tool actor, under the batch
//! supervisor, starts a child run (a run actor of its own) with the call's prompt and waits
//! for it; several `task` calls of one batch run in parallel, within the parent's caps. The
//! child's final answer is the call's result, with a bounded list of what it changed. What the
//! child may do is never more than the parent may:
//!
//! - its tools are the ones [`Config::tools`] lists (the parent's own, so the same sandbox),
//!   or the subset the call names, and the parent's hooks (approvals, rules) run around every
//!   call it makes;
//! - its budget is what is left of the parent's ([`ToolContext::budget_left`]), and what it
//!   spends counts against the parent's as it goes ([`ToolContext::spend`], each answer of its
//!   model), so parallel children draw from one budget: none makes a request once what the
//!   parent has left is spent (each may overshoot by the one request it had in flight);
//! - cancelling the parent cancels the call, which cancels the child and, through the same
//!   path, every grandchild;
//! - it may start children of its own only above [`Config::max_depth`] (2 by default: a child
//!   and a grandchild).
//!
//! Each call becomes a [`Child`] (what it asked for: prompt, tool subset, model, budget), run
//! in this process by default, or by the [`Config::runner`] (golato-restate's runs each child
//! of a durable run as a durable run of its own); [`child_agent`] makes a child's agent from
//! the configuration either way.
//!
//! The child's events reach the parent's as [`Event::Subagent`](crate::agent::Event::Subagent), tagged with the path of call
//! IDs from the parent down. Its whole transcript goes to [`Config::on_transcript`] when it
//! ends (the command line saves it beside the parent's session).
//!
//! ```
//! use golato::generator::Scripted;
//! use golato::message::AssistantMessage;
//! use golato::{builtin, subagent};
//! use std::sync::Arc;
//!
//! let tools = builtin::new(builtin::Config::default())?;
//! let task = subagent::tool(subagent::Config {
//!     generator: Some(Arc::new(Scripted::new([AssistantMessage::with_text("done")]))),
//!     tools: tools.clone(),
//!     ..Default::default()
//! })?;
//! assert_eq!(task.name(), "task");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt;
use std::num::NonZeroUsize;
use std::sync::Arc;
use std::time::Duration;

use golato_actors::Host;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::generator::{Generator, Model};
use crate::hook::Hook;
use crate::message::Message;
use crate::tool::{BoxError, Tool, ToolContext, ToolResult};

mod child;
mod report;

pub use child::{check_child, child_agent, Child, ChildError, ChildOutcome, Runner};
use report::{cut, Report};

/// The tool's name.
pub const TOOL_NAME: &str = "task";

/// How deep runs may nest by default: a child, and a child's child.
pub const DEFAULT_MAX_DEPTH: usize = 2;

/// Most bytes of a child's answer in the call's result; past it the answer is cut, with a note.
pub const MAX_ANSWER_BYTES: usize = 50 * 1024;

/// A child run's transcript when it ended.
#[derive(Debug)]
#[non_exhaustive]
pub struct ChildTranscript<'a> {
    /// The IDs of the `task` calls from the top run down to this child.
    pub path: &'a [String],
    /// The call's short description.
    pub description: &'a str,
    /// The child's transcript: its prompt, answers and tool results.
    pub messages: &'a [Message],
    /// Why it did not end normally, if it did not.
    pub error: Option<&'a str>,
}

/// Where child transcripts go.
pub type TranscriptSink = Arc<dyn Fn(&ChildTranscript<'_>) + Send + Sync>;

/// How the `task` tool runs its children. Build it with `..Default::default()`, as
/// [`agent::Config`](crate::agent::Config).
#[derive(Clone)]
pub struct Config {
    /// Where the children's answers come from. Required.
    pub generator: Option<Arc<dyn Generator>>,
    /// The model children ask unless a call names another of [`Config::models`].
    pub model: Model,
    /// Other models a call may name (by ID) for its child.
    pub models: Vec<Model>,
    /// The tools a child may have: all of them, or the subset a call names. Give the parent's
    /// own tools (not a wider set), so a child works under the same sandbox.
    pub tools: Vec<Tool>,
    /// The children's system prompt.
    pub system_prompt: Option<String>,
    /// Hooks around every call a child makes: the parent's, so its approvals and rules hold.
    pub hooks: Vec<Arc<dyn Hook>>,
    /// How deep runs may nest: the parent is at 0, its children at 1. A child at this depth
    /// gets no `task` tool. Default [`DEFAULT_MAX_DEPTH`].
    pub max_depth: usize,
    /// Most model requests of one child; `None`: no limit but the budget.
    pub max_turns: Option<usize>,
    /// At most this many calls of one of a child's batches at once.
    pub max_parallel_calls: Option<NonZeroUsize>,
    /// How long one of a child's calls may run.
    pub tool_timeout: Option<Duration>,
    /// The actor host children run on; `None` uses [`Host::global`].
    pub host: Option<Host>,
    /// Told every child's transcript when it ends.
    pub on_transcript: Option<TranscriptSink>,
    /// Where children run; `None`: in this process, each a run started by its call's tool
    /// actor. golato-restate's `DurableChildren` runs each as a durable run of its own.
    pub runner: Option<Arc<dyn Runner>>,
    /// The most any child may spend, whatever it is made with: a child is given what is left
    /// of its parent's budget, and a [`Child`] that comes from elsewhere (a durable worker's,
    /// through the server's ingress) gets no more than this. Give the parent's own budget.
    pub max_budget: Option<crate::agent::Budget>,
    /// Calls of a child's `once` tools that may run again after an interruption (a durable
    /// child's worker died); give the parent's
    /// [`agent::Config::safe_to_replay`](crate::agent::Config::safe_to_replay).
    pub safe_to_replay: crate::journal::SafeToReplay,
    /// Agents a call may name (`"agent": "reviewer"`): each described to the model by its
    /// description, run with its own instructions, tools (never more than [`Config::tools`])
    /// and model. A durable worker is given the same, so a durable child finds its agent.
    pub agents: Vec<NamedAgent>,
}

/// An agent a `task` call may name: its instructions, and what it works with.
///
/// ```
/// use golato::subagent::NamedAgent;
///
/// let reviewer = NamedAgent::new("reviewer", "Reviews a change for bugs", "You review code.")
///     .with_tools(["read", "grep"]);
/// assert_eq!(reviewer.tools.as_deref(), Some(&["read".to_owned(), "grep".to_owned()][..]));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct NamedAgent {
    /// What a call names it by.
    pub name: String,
    /// When to use it, as the model reads it in the `task` tool's description.
    pub description: String,
    /// Its system prompt, before the children's own ([`Config::system_prompt`]).
    pub instructions: String,
    /// The tools it works with, by name (those of [`Config::tools`] only); all of the
    /// children's when `None`.
    pub tools: Option<Vec<String>>,
    /// The model it asks, by ID (one of [`Config::model`] and [`Config::models`]); the
    /// children's when `None`.
    pub model: Option<String>,
}

impl NamedAgent {
    /// An agent named `name`, chosen by `description`, with its `instructions`.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        instructions: impl Into<String>,
    ) -> NamedAgent {
        NamedAgent {
            name: name.into(),
            description: description.into(),
            instructions: instructions.into(),
            tools: None,
            model: None,
        }
    }

    /// The same agent working with only `tools`.
    #[must_use]
    pub fn with_tools(mut self, tools: impl IntoIterator<Item = impl Into<String>>) -> NamedAgent {
        self.tools = Some(tools.into_iter().map(Into::into).collect());
        self
    }

    /// The same agent asking `model`.
    #[must_use]
    pub fn with_model(mut self, model: impl Into<String>) -> NamedAgent {
        self.model = Some(model.into());
        self
    }
}

impl Default for Config {
    fn default() -> Config {
        Config {
            generator: None,
            model: Model::default(),
            models: Vec::new(),
            tools: Vec::new(),
            system_prompt: None,
            hooks: Vec::new(),
            max_depth: DEFAULT_MAX_DEPTH,
            max_turns: None,
            max_parallel_calls: None,
            tool_timeout: None,
            host: None,
            on_transcript: None,
            runner: None,
            max_budget: None,
            safe_to_replay: crate::journal::SafeToReplay::default(),
            agents: Vec::new(),
        }
    }
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Config")
            .field("model", &self.model.id)
            .field(
                "tools",
                &self.tools.iter().map(Tool::name).collect::<Vec<_>>(),
            )
            .field("max_depth", &self.max_depth)
            .field("max_turns", &self.max_turns)
            .field("runner", &self.runner.is_some())
            .finish_non_exhaustive()
    }
}

/// Why [`tool`] could not make the tool.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// `Config::generator` is `None`.
    #[error("subagent::Config has no generator; set it to the parent's (or another) generator")]
    NoGenerator,
    /// `Config::max_depth` is 0: no child could run.
    #[error("subagent::Config::max_depth is 0, so no child could run; give 1 or more (default {DEFAULT_MAX_DEPTH})")]
    NoDepth,
    /// A tool of `Config::tools` is itself called `task`.
    #[error("subagent::Config::tools holds a tool named {TOOL_NAME:?}; leave it out (children get theirs by depth)")]
    TaskAmongTools,
}

/// The `task` tool: each call runs a child agent (see the [module docs](self)).
///
/// # Errors
///
/// [`Error`] when the configuration cannot run a child.
pub fn tool(config: Config) -> Result<Tool, Error> {
    if config.generator.is_none() {
        return Err(Error::NoGenerator);
    }
    if config.max_depth == 0 {
        return Err(Error::NoDepth);
    }
    if config.tools.iter().any(|tool| tool.name() == TOOL_NAME) {
        return Err(Error::TaskAmongTools);
    }
    Ok(level_tool(Arc::new(Level {
        config: Arc::new(config),
        depth: 1,
        path: Vec::new(),
    })))
}

/// One level of nesting: the depth of the runs its tool starts, and the calls above them.
struct Level {
    config: Arc<Config>,
    depth: usize,
    path: Vec<String>,
}

/// Arguments of `task`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct TaskArgs {
    /// A few words saying what the subagent does (shown to the user).
    description: String,
    /// The whole task: the subagent sees nothing else of this conversation, so say everything
    /// it needs (files, goals, what to report back).
    prompt: String,
    /// The tools the subagent may use, a subset of yours; all of them when left out.
    tools: Option<Vec<String>>,
    /// The model the subagent asks, when not yours.
    model: Option<String>,
    /// A named agent to run (its instructions, tools and model), as listed in this tool's
    /// description.
    agent: Option<String>,
}

fn level_tool(level: Arc<Level>) -> Tool {
    let nested = match level.depth < level.config.max_depth {
        true => " It may hand parts of its task to subagents of its own.",
        false => "",
    };
    let mut description = format!(
        "Hand a self-contained task to a subagent: a fresh agent with your tools (or the subset \
         named), which works on it alone and answers once. Its final answer (and the files it \
         changed) is the result. Several task calls in one message run in parallel. Give it \
         everything it needs in the prompt: it sees nothing of this conversation.{nested}"
    );
    if !level.config.agents.is_empty() {
        description.push_str(
            "\n\nNamed agents (give \"agent\": NAME to run one; use one when the task matches its description):",
        );
        for agent in &level.config.agents {
            description.push_str(&format!(
                "\n- {}: {}",
                agent.name,
                agent.description.replace('\n', " ")
            ));
        }
    }
    // A child run in this process would do its work again; a durable child is attached to.
    let replay = level
        .config
        .runner
        .as_ref()
        .map_or(crate::tool::Replay::Once, |runner| runner.replay());
    Tool::typed(
        TOOL_NAME,
        description,
        move |ctx: ToolContext, args: TaskArgs| {
            let level = Arc::clone(&level);
            async move { run_child(&level, ctx, args).await }
        },
    )
    .with_replay(replay)
}

async fn run_child(
    level: &Level,
    ctx: ToolContext,
    args: TaskArgs,
) -> Result<ToolResult, BoxError> {
    let config = &level.config;
    let mut path = level.path.clone();
    path.push(ctx.call().id.clone());
    let child = Child {
        path,
        depth: level.depth,
        description: args.description,
        prompt: args.prompt,
        tools: args.tools,
        model: args.model,
        budget: ctx.budget_left(),
        agent: args.agent,
    };
    tracing::debug!(depth = child.depth, description = %child.description, "subagent starting");
    let outcome = match &config.runner {
        Some(runner) => {
            check_child(config, &child)?;
            let outcome = runner.run(child.clone(), ctx.clone()).await?;
            // A child run elsewhere reports what it spent when it ends.
            ctx.spend(&outcome.usage, outcome.cost);
            outcome
        }
        // One run here spent for the parent as it went.
        None => child::run_here(config, &child, &ctx).await?,
    };
    if let Some(sink) = &config.on_transcript {
        sink(&ChildTranscript {
            path: &child.path,
            description: &child.description,
            messages: &outcome.messages,
            error: outcome.error.as_deref(),
        });
    }
    let report = Report::of(&outcome.messages);
    match (&outcome.final_message, &outcome.error) {
        (Some(answer), None) => Ok(ToolResult::text(report.with_answer(&answer.text()))),
        (_, error) => {
            let last = outcome
                .messages
                .iter()
                .rev()
                .find_map(|message| match message {
                    Message::Assistant(answer) if !answer.text().trim().is_empty() => {
                        Some(answer.text())
                    }
                    _ => None,
                });
            let said = last.map_or_else(String::new, |text| {
                format!("\n\nIts last words:\n{}", cut(&text))
            });
            Err(format!(
                "the subagent did not finish: {}{}{said}",
                error.as_deref().unwrap_or("it gave no answer"),
                report.tail()
            )
            .into())
        }
    }
}

/// One of the parent's hooks, around a child's calls: it sees the task calls above the child
/// in [`HookContext::path`](crate::hook::HookContext::path).
struct Lineage {
    inner: Arc<dyn Hook>,
    path: Vec<String>,
}

impl Lineage {
    fn placed(&self, mut ctx: crate::hook::HookContext) -> crate::hook::HookContext {
        ctx.path = self.path.clone();
        ctx
    }
}

impl Hook for Lineage {
    fn before_tool_call(
        &self,
        ctx: crate::hook::HookContext,
    ) -> futures::future::BoxFuture<'static, Result<crate::hook::BeforeToolCall, BoxError>> {
        self.inner.before_tool_call(self.placed(ctx))
    }

    fn before_compaction(
        &self,
        ctx: crate::hook::CompactionContext,
    ) -> futures::future::BoxFuture<'static, ()> {
        self.inner.before_compaction(ctx)
    }

    fn after_tool_call(
        &self,
        ctx: crate::hook::HookContext,
        result: ToolResult,
    ) -> futures::future::BoxFuture<'static, Result<crate::hook::AfterToolCall, BoxError>> {
        self.inner.after_tool_call(self.placed(ctx), result)
    }
}
