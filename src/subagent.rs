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
//!   spends counts against the parent's ([`ToolContext::spend`]);
//! - cancelling the parent cancels the call, which cancels the child and, through the same
//!   path, every grandchild;
//! - it may start children of its own only above [`Config::max_depth`] (2 by default: a child
//!   and a grandchild).
//!
//! The child's events reach the parent's as [`Event::Subagent`], tagged with the path of call
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

use crate::agent::{self, Agent, Event};
use crate::generator::{Generator, Model};
use crate::hook::Hook;
use crate::message::{Message, Usage, UserMessage};
use crate::tool::{BoxError, Tool, ToolContext, ToolResult};

/// The tool's name.
pub const TOOL_NAME: &str = "task";

/// How deep runs may nest by default: a child, and a child's child.
pub const DEFAULT_MAX_DEPTH: usize = 2;

/// Most bytes of a child's answer in the call's result; past it the answer is cut, with a note.
pub const MAX_ANSWER_BYTES: usize = 50 * 1024;

/// Most changed files listed in a call's result.
const MAX_CHANGES_LISTED: usize = 50;

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
/// [`agent::Config`].
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
}

fn level_tool(level: Arc<Level>) -> Tool {
    let nested = match level.depth < level.config.max_depth {
        true => " It may hand parts of its task to subagents of its own.",
        false => "",
    };
    let description = format!(
        "Hand a self-contained task to a subagent: a fresh agent with your tools (or the subset \
         named), which works on it alone and answers once. Its final answer (and the files it \
         changed) is the result. Several task calls in one message run in parallel. Give it \
         everything it needs in the prompt: it sees nothing of this conversation.{nested}"
    );
    Tool::typed(
        TOOL_NAME,
        description,
        move |ctx: ToolContext, args: TaskArgs| {
            let level = Arc::clone(&level);
            async move { run_child(&level, ctx, args).await }
        },
    )
}

async fn run_child(
    level: &Level,
    ctx: ToolContext,
    args: TaskArgs,
) -> Result<ToolResult, BoxError> {
    let config = &level.config;
    let mut path = level.path.clone();
    path.push(ctx.call().id.clone());
    let agent = child_agent(level, &path, &ctx, &args)?;
    tracing::debug!(depth = level.depth, description = %args.description, "subagent starting");
    let run = agent.start(UserMessage::new(args.prompt.clone()));
    let mut spent: Option<(Usage, Option<f64>)> = None;
    let mut cancelled = false;
    loop {
        tokio::select! {
            event = run.next_event() => match event {
                Some(event) => {
                    if let Event::RunEnd(end) = &event {
                        spent = Some((end.usage, end.cost));
                    }
                    ctx.forward(event);
                }
                None => break,
            },
            // The child's tools are cancelled with it, and wait for nothing of ours.
            () = ctx.cancelled(), if !cancelled => {
                cancelled = true;
                run.cancel();
            }
        }
    }
    let outcome = run.finish().await;
    if let Some((usage, cost)) = spent {
        ctx.spend(&usage, cost);
    }
    let (messages, error) = match &outcome {
        Ok(result) => (result.messages.as_slice(), None),
        Err(error) => (
            error.messages().unwrap_or_default(),
            Some(error.to_string()),
        ),
    };
    if let Some(sink) = &config.on_transcript {
        sink(&ChildTranscript {
            path: &path,
            description: &args.description,
            messages,
            error: error.as_deref(),
        });
    }
    let report = Report::of(messages);
    match (&outcome, error) {
        (Ok(result), _) => Ok(ToolResult::text(
            report.with_answer(&result.final_message.text()),
        )),
        (Err(_), error) => {
            let last = messages.iter().rev().find_map(|message| match message {
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
                error.unwrap_or_default(),
                report.tail()
            )
            .into())
        }
    }
}

/// The child's agent: the tools, model and budget the call may have.
fn child_agent(
    level: &Level,
    path: &[String],
    ctx: &ToolContext,
    args: &TaskArgs,
) -> Result<Agent, BoxError> {
    let config = &level.config;
    let may_nest = level.depth < config.max_depth;
    let known = || {
        let mut names: Vec<&str> = config.tools.iter().map(Tool::name).collect();
        if may_nest {
            names.push(TOOL_NAME);
        }
        names.join(", ")
    };
    let mut tools: Vec<Tool> = match &args.tools {
        None => config.tools.clone(),
        Some(names) => {
            let mut chosen = Vec::new();
            for name in names {
                match config.tools.iter().find(|tool| tool.name() == name) {
                    Some(tool) => chosen.push(tool.clone()),
                    None if name == TOOL_NAME && may_nest => {}
                    None if name == TOOL_NAME => {
                        return Err(format!(
                            "tools: a subagent at depth {} cannot start subagents of its own (the limit is {}); leave {TOOL_NAME:?} out",
                            level.depth, config.max_depth
                        )
                        .into())
                    }
                    None => {
                        return Err(format!(
                            "tools: {name:?} is not a tool a subagent may use; choose from: {}",
                            known()
                        )
                        .into())
                    }
                }
            }
            chosen
        }
    };
    let wants_nesting = args
        .tools
        .as_ref()
        .is_none_or(|names| names.iter().any(|name| name == TOOL_NAME));
    if may_nest && wants_nesting {
        tools.push(level_tool(Arc::new(Level {
            config: Arc::clone(config),
            depth: level.depth + 1,
            path: path.to_vec(),
        })));
    }
    let model = match &args.model {
        None => config.model.clone(),
        Some(id) => std::iter::once(&config.model)
            .chain(&config.models)
            .find(|model| &model.id == id)
            .cloned()
            .ok_or_else(|| {
                let ids: Vec<&str> = std::iter::once(&config.model)
                    .chain(&config.models)
                    .map(|model| model.id.as_str())
                    .collect();
                format!(
                    "model: {id:?} is not a model a subagent may ask; choose from: {}",
                    ids.join(", ")
                )
            })?,
    };
    // The parent's hooks, told which task call each of the child's calls comes under.
    let hooks: Vec<Arc<dyn Hook>> = config
        .hooks
        .iter()
        .map(|hook| {
            Arc::new(Lineage {
                inner: Arc::clone(hook),
                path: path.to_vec(),
            }) as Arc<dyn Hook>
        })
        .collect();
    Agent::new(agent::Config {
        generator: config.generator.clone(),
        model,
        tools,
        system_prompt: config.system_prompt.clone(),
        max_turns: config.max_turns,
        budget: ctx.budget_left(),
        hooks,
        max_parallel_calls: config.max_parallel_calls,
        tool_timeout: config.tool_timeout,
        host: config.host.clone(),
        ..Default::default()
    })
    .map_err(|error| format!("the subagent could not be made: {error}").into())
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

/// What a child did, from its transcript: the files its writes and edits changed, and how
/// many commands it ran.
struct Report {
    changed: Vec<String>,
    commands: usize,
}

impl Report {
    fn of(messages: &[Message]) -> Report {
        let succeeded = |id: &str| {
            messages.iter().any(|message| {
                matches!(message, Message::ToolResult(result)
                    if result.tool_call_id == id && !result.is_error)
            })
        };
        let mut report = Report {
            changed: Vec::new(),
            commands: 0,
        };
        for message in messages {
            let Message::Assistant(answer) = message else {
                continue;
            };
            for call in &answer.tool_calls {
                match call.name.as_str() {
                    "write" | "edit" if succeeded(&call.id) => {
                        let path = serde_json::from_str::<serde_json::Value>(&call.arguments)
                            .ok()
                            .and_then(|arguments| {
                                arguments.get("path")?.as_str().map(str::to_owned)
                            });
                        if let Some(path) = path.filter(|path| !report.changed.contains(path)) {
                            report.changed.push(path);
                        }
                    }
                    "bash" => report.commands += 1,
                    _ => {}
                }
            }
        }
        report
    }

    fn with_answer(&self, answer: &str) -> String {
        format!("{}{}", cut(answer), self.tail())
    }

    /// The lines after the answer: what changed.
    fn tail(&self) -> String {
        let mut tail = String::new();
        if !self.changed.is_empty() {
            let listed = &self.changed[..self.changed.len().min(MAX_CHANGES_LISTED)];
            tail.push_str(&format!(
                "\n\n[The subagent changed {} file(s) with write and edit: {}{}]",
                self.changed.len(),
                listed.join(", "),
                if self.changed.len() > listed.len() {
                    ", …"
                } else {
                    ""
                }
            ));
        }
        if self.commands > 0 {
            tail.push_str(&format!(
                "\n[It ran {} bash command(s); what they changed is not listed]",
                self.commands
            ));
        }
        tail
    }
}

/// `text` cut to [`MAX_ANSWER_BYTES`] on a character boundary, with a note.
fn cut(text: &str) -> String {
    if text.len() <= MAX_ANSWER_BYTES {
        return text.to_owned();
    }
    let mut end = MAX_ANSWER_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n[… the answer was cut at {MAX_ANSWER_BYTES} of its {} bytes]",
        &text[..end],
        text.len()
    )
}
