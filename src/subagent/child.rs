//! One child run: what a `task` call asks for ([`Child`]), the agent that runs it
//! ([`child_agent`]), how it ended ([`ChildOutcome`]), and where it runs ([`Runner`]: in this
//! process unless the configuration names another).

use std::sync::Arc;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

use super::{level_tool, Config, Level, Lineage, TOOL_NAME};
use crate::agent::{self, Agent, Budget, Event};
use crate::generator::Model;
use crate::hook::Hook;
use crate::message::{AssistantMessage, Message, Usage, UserMessage};
use crate::tool::{BoxError, Tool, ToolContext};

/// A child run as a `task` call asks for it: what [`child_agent`] builds its agent from, and
/// what a [`Runner`] that runs children elsewhere (a durable engine) sends there.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Child {
    /// The IDs of the `task` calls from the top run down to this child (its own call last).
    pub path: Vec<String>,
    /// How deep it runs: 1 for a child of the top run.
    pub depth: usize,
    /// The call's short description.
    pub description: String,
    /// The child's prompt.
    pub prompt: String,
    /// The tools it may use, by name; all of [`Config::tools`] when `None`.
    #[serde(default)]
    pub tools: Option<Vec<String>>,
    /// The model it asks, by ID; [`Config::model`] when `None`.
    #[serde(default)]
    pub model: Option<String>,
    /// What it may spend: what was left of its parent's budget.
    #[serde(default)]
    pub budget: Option<Budget>,
    /// The named agent it is ([`Config::agents`]), if the call named one.
    #[serde(default)]
    pub agent: Option<String>,
}

impl Child {
    /// A child at `depth` (1 under the top run) for the call path `path`, with `prompt`.
    pub fn new(path: Vec<String>, depth: usize, prompt: impl Into<String>) -> Child {
        Child {
            path,
            depth,
            description: String::new(),
            prompt: prompt.into(),
            tools: None,
            model: None,
            budget: None,
            agent: None,
        }
    }
}

/// How a child run ended, as a [`Runner`] reports it.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct ChildOutcome {
    /// Its transcript: its prompt, answers and tool results.
    pub messages: Vec<Message>,
    /// Its last message, when it ended normally.
    pub final_message: Option<AssistantMessage>,
    /// Why it did not end normally (cancelled, out of budget, the model failed...).
    pub error: Option<String>,
    /// Every token it used (its own children's included).
    pub usage: Usage,
    /// What they cost; `None` when a model involved has no price.
    pub cost: Option<f64>,
}

impl ChildOutcome {
    /// A child that ended normally with `final_message`, its transcript `messages`.
    pub fn finished(messages: Vec<Message>, final_message: AssistantMessage) -> ChildOutcome {
        ChildOutcome {
            messages,
            final_message: Some(final_message),
            ..ChildOutcome::default()
        }
    }

    /// A child that did not end normally, for `error`, its transcript so far `messages`.
    pub fn failed(messages: Vec<Message>, error: impl Into<String>) -> ChildOutcome {
        ChildOutcome {
            messages,
            error: Some(error.into()),
            ..ChildOutcome::default()
        }
    }

    /// The same outcome, having spent `usage` at `cost`.
    pub fn with_spent(mut self, usage: Usage, cost: Option<f64>) -> ChildOutcome {
        self.usage = usage;
        self.cost = cost;
        self
    }
}

/// Runs children somewhere other than in the parent's process: golato-restate's runs each as a
/// durable run of its own, keyed under its parent's. Without one ([`Config::runner`]), a child
/// is a run of this process, started by the call's tool actor.
pub trait Runner: Send + Sync + 'static {
    /// Runs `child` for the call of `ctx` to its end, and gives how it ended. While it runs,
    /// its events go to [`ToolContext::forward`]; when the call is cancelled
    /// ([`ToolContext::cancelled`]), so is the child. The `task` tool has checked the child
    /// against its configuration ([`check_child`]) before.
    ///
    /// # Errors
    /// The child could not be run (its engine cannot be reached): the call's error result.
    fn run(
        &self,
        child: Child,
        ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ChildOutcome, BoxError>>;

    /// Whether a journaled run runs a `task` call again after an interruption
    /// ([`Replay`](crate::tool::Replay)): `Safe` for a runner whose child outlives the call and
    /// is attached to again (golato-restate's durable children), `Once` (the default) for one
    /// whose second run would do the child's work again.
    fn replay(&self) -> crate::tool::Replay {
        crate::tool::Replay::Once
    }
}

/// Why a child's agent could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ChildError {
    /// The call named a tool the configuration does not give children.
    #[error("tools: {name:?} is not a tool a subagent may use; choose from: {known}")]
    UnknownTool {
        /// The name given.
        name: String,
        /// The tools a child may have, comma-separated.
        known: String,
    },
    /// The call named `task` for a child that may not start children.
    #[error("tools: a subagent at depth {depth} cannot start subagents of its own (the limit is {max}); leave {TOOL_NAME:?} out")]
    TooDeep {
        /// The child's depth.
        depth: usize,
        /// [`Config::max_depth`].
        max: usize,
    },
    /// The call named a model the configuration does not offer.
    #[error("model: {id:?} is not a model a subagent may ask; choose from: {known}")]
    UnknownModel {
        /// The ID given.
        id: String,
        /// The models a child may ask, comma-separated.
        known: String,
    },
    /// A child deeper than [`Config::max_depth`] (a runner sent a child this configuration
    /// would not have started).
    #[error("a subagent at depth {depth} is deeper than this configuration allows ({max}); give the workers the same subagent::Config::max_depth as the parent")]
    OutOfDepth {
        /// The child's depth.
        depth: usize,
        /// [`Config::max_depth`].
        max: usize,
    },
    /// The call named an agent the configuration does not have.
    #[error("agent: {name:?} is not an agent here; choose from: {known}")]
    UnknownAgent {
        /// The name given.
        name: String,
        /// The agents a call may name, comma-separated ("none" when there are none).
        known: String,
    },
    /// The agent refused its configuration.
    #[error("the subagent could not be made: {0}")]
    Agent(#[from] agent::Error),
}

/// What a child gets: its tools (without its own `task` tool), its model, and whether it may
/// start children of its own.
struct Chosen {
    tools: Vec<Tool>,
    model: Model,
    nests: bool,
    system_prompt: Option<String>,
}

/// Checks `child` against `config` as [`child_agent`] would, without making anything: the
/// tools and model it names are ones a child may have, and it is not too deep.
///
/// # Errors
/// [`ChildError`], naming what the call asked for and what it may choose from.
pub fn check_child(config: &Config, child: &Child) -> Result<(), ChildError> {
    choose(config, child).map(|_| ())
}

fn choose(config: &Config, child: &Child) -> Result<Chosen, ChildError> {
    if child.depth == 0 || child.depth > config.max_depth {
        return Err(ChildError::OutOfDepth {
            depth: child.depth,
            max: config.max_depth,
        });
    }
    let may_nest = child.depth < config.max_depth;
    let named = match &child.agent {
        None => None,
        Some(name) => Some(
            config
                .agents
                .iter()
                .find(|agent| &agent.name == name)
                .ok_or_else(|| ChildError::UnknownAgent {
                    name: name.clone(),
                    known: match config.agents.is_empty() {
                        true => "none".to_owned(),
                        false => config
                            .agents
                            .iter()
                            .map(|agent| agent.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", "),
                    },
                })?,
        ),
    };
    // A named agent's tools narrow what the children may have (its names the configuration
    // does not give are left out: it never gains a tool); the call may narrow further.
    let agent_tools: Option<Vec<String>> =
        named.and_then(|agent| agent.tools.clone()).map(|names| {
            names
                .into_iter()
                .filter(|name| {
                    name == TOOL_NAME || config.tools.iter().any(|tool| tool.name() == name)
                })
                .collect()
        });
    let requested: Option<Vec<String>> = match (&child.tools, agent_tools) {
        (None, agent) => agent,
        (Some(call), None) => Some(call.clone()),
        (Some(call), Some(agent)) => Some(
            call.iter()
                .filter(|name| agent.contains(name))
                .cloned()
                .collect(),
        ),
    };
    let known = || {
        let mut names: Vec<&str> = config.tools.iter().map(Tool::name).collect();
        if may_nest {
            names.push(TOOL_NAME);
        }
        names.join(", ")
    };
    let tools: Vec<Tool> = match &requested {
        None => config.tools.clone(),
        Some(names) => {
            let mut chosen = Vec::new();
            for name in names {
                match config.tools.iter().find(|tool| tool.name() == name) {
                    Some(tool) => chosen.push(tool.clone()),
                    None if name == TOOL_NAME && may_nest => {}
                    None if name == TOOL_NAME => {
                        return Err(ChildError::TooDeep {
                            depth: child.depth,
                            max: config.max_depth,
                        })
                    }
                    None => {
                        return Err(ChildError::UnknownTool {
                            name: name.clone(),
                            known: known(),
                        })
                    }
                }
            }
            chosen
        }
    };
    let wants_nesting = requested
        .as_ref()
        .is_none_or(|names| names.iter().any(|name| name == TOOL_NAME));
    let model_id = child
        .model
        .clone()
        .or_else(|| named.and_then(|agent| agent.model.clone()));
    let model = match &model_id {
        None => config.model.clone(),
        Some(id) => std::iter::once(&config.model)
            .chain(&config.models)
            .find(|model| &model.id == id)
            .cloned()
            .ok_or_else(|| ChildError::UnknownModel {
                id: id.clone(),
                known: std::iter::once(&config.model)
                    .chain(&config.models)
                    .map(|model| model.id.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            })?,
    };
    let system_prompt = match (named, &config.system_prompt) {
        (None, prompt) => prompt.clone(),
        (Some(agent), None) => Some(agent.instructions.clone()),
        (Some(agent), Some(prompt)) => Some(format!("{}\n\n{prompt}", agent.instructions)),
    };
    Ok(Chosen {
        tools,
        model,
        nests: may_nest && wants_nesting,
        system_prompt,
    })
}

/// The agent that runs `child` under `config`: the tools and model it names (a subset of what
/// `config` gives children), its budget, the configuration's hooks around its calls, and a
/// `task` tool of its own when it may nest. The `task` tool's own children are made with it,
/// and so is a durable child on the worker that runs it.
///
/// # Errors
/// [`ChildError`] when the child asks for what `config` does not give.
pub fn child_agent(config: &Arc<Config>, child: &Child) -> Result<Agent, ChildError> {
    let Chosen {
        mut tools,
        model,
        nests,
        system_prompt,
    } = choose(config, child)?;
    if nests {
        tools.push(level_tool(Arc::new(Level {
            config: Arc::clone(config),
            depth: child.depth + 1,
            path: child.path.clone(),
        })));
    }
    // The configuration's hooks, told which task call each of the child's calls comes under.
    let hooks: Vec<Arc<dyn Hook>> = config
        .hooks
        .iter()
        .map(|hook| {
            Arc::new(Lineage {
                inner: Arc::clone(hook),
                path: child.path.clone(),
            }) as Arc<dyn Hook>
        })
        .collect();
    Ok(Agent::new(agent::Config {
        generator: config.generator.clone(),
        model,
        tools,
        system_prompt,
        max_turns: config.max_turns,
        budget: Budget::tighter(child.budget, config.max_budget),
        hooks,
        max_parallel_calls: config.max_parallel_calls,
        tool_timeout: config.tool_timeout,
        host: config.host.clone(),
        safe_to_replay: config.safe_to_replay.clone(),
        ..Default::default()
    })?)
}

/// Runs `child` in this process: a run of its own, started here, its events forwarded to the
/// call's, cancelled with the call.
pub(super) async fn run_here(
    config: &Arc<Config>,
    child: &Child,
    ctx: &ToolContext,
) -> Result<ChildOutcome, BoxError> {
    let agent = child_agent(config, child)?;
    // What it spends is counted for the parent as it goes (shared with its siblings).
    let run = agent.start_child(UserMessage::new(child.prompt.clone()), ctx.clone());
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
    let (usage, cost) = spent.unwrap_or_default();
    Ok(match run.finish().await {
        Ok(result) => ChildOutcome::finished(result.messages, result.final_message),
        Err(error) => ChildOutcome::failed(
            error
                .messages()
                .map(<[Message]>::to_vec)
                .unwrap_or_default(),
            error.to_string(),
        ),
    }
    .with_spent(usage, cost))
}
