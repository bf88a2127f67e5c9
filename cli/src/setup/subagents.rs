//! `--tools …,task`: the command line's subagent tool, and where its children's transcripts
//! are kept (beside the parent's session, removed with it).

use std::num::NonZeroUsize;
use std::sync::Arc;

use golato::generator::{Generator, Model};
use golato::hook::Hook;
use golato::subagent::{self};
use golato::Tool;

use crate::error::CliError;
use crate::settings::Settings;

/// What the children are made of: the parent's.
pub(crate) struct Parent<'a> {
    pub(crate) generator: Arc<dyn Generator>,
    pub(crate) model: Model,
    pub(crate) tools: &'a [Tool],
    pub(crate) system_prompt: Option<String>,
    pub(crate) hooks: Vec<Arc<dyn Hook>>,
}

/// What the `task` tool's children are made of for a run with `parent`'s generator, model,
/// tools, instructions and hooks (so the sandbox, rules and approvals of the parent hold for
/// every child); `runner` runs them elsewhere (a durable worker's children are durable runs).
pub(crate) fn config(
    settings: &Settings,
    parent: Parent<'_>,
    runner: Option<Arc<dyn subagent::Runner>>,
) -> subagent::Config {
    // The agents people keep; their warnings are `golato agents`' to say.
    let agents: Vec<subagent::NamedAgent> =
        crate::setup::named_agents::gather(&settings.cwd, settings.trusted)
            .agents
            .into_iter()
            .map(|(agent, _)| agent)
            .collect();
    // An agent's model is asked through the session's provider.
    let mut models: Vec<Model> = Vec::new();
    for id in agents.iter().filter_map(|agent| agent.model.as_deref()) {
        if id != parent.model.id && !models.iter().any(|model| model.id == id) {
            models.push(crate::setup::provider::model_named(settings, id));
        }
    }
    subagent::Config {
        agents,
        models,
        generator: Some(parent.generator),
        model: parent.model,
        tools: parent.tools.to_vec(),
        system_prompt: parent.system_prompt,
        hooks: parent.hooks,
        max_depth: settings
            .task_depth
            .map_or(subagent::DEFAULT_MAX_DEPTH, NonZeroUsize::get),
        max_turns: settings.max_turns.map(usize::from),
        max_parallel_calls: settings.max_parallel,
        tool_timeout: settings.tool_timeout,
        max_budget: settings.budget(),
        runner,
        safe_to_replay: golato::journal::SafeToReplay::with_rules(
            settings.policy.replay_safe.clone(),
            settings.cwd.clone(),
        ),
        ..Default::default()
    }
}

/// The `task` tool of `config`.
pub(crate) fn tool(config: subagent::Config) -> Result<Tool, CliError> {
    subagent::tool(config).map_err(|error| CliError::Failed(error.to_string()))
}
