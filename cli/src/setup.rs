//! What builds an agent for a front end: the provider, instructions (AGENTS.md), skills, plan
//! mode, subagents, approvals, the session's hooks, the prompt's sources, signals and tracing.

pub(crate) mod agent;
pub(crate) mod approve;
pub(crate) mod custom_commands;
pub(crate) mod front_matter;
pub(crate) mod instructions;
pub(crate) mod kept_files;
pub(crate) mod named_agents;
pub(crate) mod network_log;
pub(crate) mod one_call;
pub(crate) mod plan_mode;
pub(crate) mod prompt;
pub(crate) mod provider;
pub(crate) mod remember;
pub(crate) mod reviewer;
pub(crate) mod reviewer_source;
pub(crate) mod session_hooks;
pub(crate) mod skills;
pub(crate) mod subagents;
pub(crate) mod tools;
pub(crate) mod trace;
