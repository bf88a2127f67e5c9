//! Plan mode (`--plan`, `/plan`, ACP's `plan` mode): the model looks (read-only sandbox, no
//! edit or write, no MCP servers) and keeps a plan with `update_plan`; nothing changes until
//! the person accepts the plan and the normal agent carries it out.

use std::sync::Arc;

use golato::agent::{self, Agent};
use golato::generator::{Generator, Model};
use golato::hook::Hook;

use crate::error::CliError;
use crate::settings::Settings;

/// The tools of plan mode.
const PLAN_TOOLS: [&str; 6] = ["read", "bash", "grep", "find", "ls", "update_plan"];

/// What the model is told in plan mode, after the system prompt.
pub(crate) const INSTRUCTIONS: &str = "# Plan mode\nYou are in plan mode: look at the project (read, search, run read-only commands; nothing can be changed now) and work out a plan. Send it with update_plan, every step pending, then answer with a short summary. The user reads the plan and accepts it before anything changes; until then, refine the plan when asked.";

/// What the normal agent is told when the person accepts the plan.
pub(crate) const ACCEPTED: &str = "The plan is accepted. Carry it out now, step by step.";

/// `settings` as plan mode has them: the read-only sandbox, the plan tools, no MCP servers or
/// subagents.
pub(crate) fn planning(settings: &Settings) -> Settings {
    let mut planned = settings.clone();
    planned.plan = true;
    planned.sandbox.mode = golato::sandbox::Mode::ReadOnly;
    planned.tools = Some(PLAN_TOOLS.iter().map(|name| (*name).to_owned()).collect());
    planned.exclude.clear();
    planned.mcp.clear();
    planned.mcp_url.clear();
    planned.mcp_commands.clear();
    planned
}

/// What it takes to make the plan-mode agent of a run later (on `/plan`): the run's generator,
/// model, hooks and instructions.
pub(crate) struct PlanMode {
    pub(crate) generator: Arc<dyn Generator>,
    pub(crate) hooks: Vec<Arc<dyn Hook>>,
    pub(crate) system_prompt: Option<String>,
    pub(crate) settings: Settings,
}

impl PlanMode {
    /// The plan-mode agent, asking `model`.
    pub(crate) fn agent(&self, model: Model) -> Result<Agent, CliError> {
        let tools = crate::setup::tools::builtin_tools(
            &self.settings,
            Vec::new(),
            None,
            None,
            None,
            Vec::new(),
        )?;
        Agent::new(agent::Config {
            generator: Some(Arc::clone(&self.generator)),
            model,
            tools,
            system_prompt: Some(with_instructions(self.system_prompt.as_deref())),
            hooks: self.hooks.clone(),
            max_turns: self.settings.max_turns.map(usize::from),
            tool_timeout: self.settings.tool_timeout,
            ..Default::default()
        })
        .map_err(|error| CliError::Failed(error.to_string()))
    }
}

/// `system` followed by plan mode's instructions.
pub(crate) fn with_instructions(system: Option<&str>) -> String {
    match system {
        Some(system) => format!("{system}\n\n{INSTRUCTIONS}"),
        None => INSTRUCTIONS.to_owned(),
    }
}
