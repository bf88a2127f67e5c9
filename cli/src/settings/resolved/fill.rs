//! The flags not given, filled from the configuration's layers (each over the one before, the
//! flags last), and the rules and hooks of the files and the flags.

use clap::ValueEnum as _;
use golato::policy::CallPolicy;

use super::super::config::{self, Trusting};
use super::super::file_settings::{self, FileSettings};
use crate::args::{AgentArgs, McpCommand, ProviderKind, ReasoningEffort};
use crate::error::CliError;

/// Fills the flags not given from the configuration, and returns the rules and hooks of the
/// files and the flags; `ask` says whether a person at the terminal can be asked to trust the
/// folder.
///
/// Also says whether the approval mode in effect is an untrusted project's.
pub(super) fn apply(
    args: &mut AgentArgs,
    ask: bool,
) -> Result<(CallPolicy, bool, Vec<String>), CliError> {
    let trusting = match (args.settings.trust, ask) {
        (true, _) => Trusting::Given,
        (false, true) => Trusting::Ask,
        (false, false) => Trusting::Remembered,
    };
    let layers = config::layers(
        &args.cwd,
        args.settings.profile.as_deref(),
        &args.settings.config,
        trusting,
    )?;
    let mut policy = CallPolicy::new();
    let approve_given = args.approve.is_some();
    let mut approve_untrusted = false;
    let mut notes = Vec::new();
    for layer in layers {
        if let Some(text) = config::ignored_text(&layer) {
            eprintln!("golato: {text}");
            notes.push(text);
        }
        if let Some(text) = config::left_out_text(&layer) {
            eprintln!("golato: {text}");
            notes.push(text);
        }
        if !approve_given && layer.settings.approve.is_some() {
            approve_untrusted = layer.untrusted();
        }
        fill(args, &layer.settings, &layer.source)?;
        policy.extend(layer.policy);
    }
    policy.extend(flag_rules(args)?);
    Ok((policy, approve_untrusted, notes))
}

/// The rules of `--allow`, `--ask` and `--deny`.
pub(super) fn flag_rules(args: &AgentArgs) -> Result<CallPolicy, CliError> {
    use golato::policy::{Decision, Source};
    let mut policy = CallPolicy::new();
    for (decision, flag, rules) in [
        (Decision::Allow, "--allow", &args.allow_rules),
        (Decision::Ask, "--ask", &args.ask_rules),
        (Decision::Deny, "--deny", &args.deny_rules),
    ] {
        for rule in rules {
            policy
                .rules
                .add(decision, rule, Source::flag(flag), &args.cwd)
                .map_err(|error| CliError::usage(error.to_string()))?;
        }
    }
    Ok(policy)
}

/// Sets what `settings` sets, but never a flag given on the command line. Layers are applied
/// lowest first, so each overrides the ones before it.
pub(super) fn fill(
    args: &mut AgentArgs,
    settings: &FileSettings,
    source: &str,
) -> Result<(), CliError> {
    let invalid = |key: &str, why: String| CliError::usage(format!("{key} in {source}: {why}"));
    let given = &args.given;
    macro_rules! set {
        ($field:ident, $value:expr) => {
            if !given.contains(stringify!($field)) {
                args.$field = $value;
            }
        };
    }
    if let Some(provider) = &settings.provider {
        let kind = ProviderKind::from_str(provider, true).map_err(|_| {
            invalid(
                "provider",
                format!("{provider:?} is not openai, anthropic or openai-responses"),
            )
        })?;
        set!(provider, Some(kind));
    }
    if let Some(model) = &settings.model {
        set!(model, Some(model.clone()));
    }
    if let Some(base_url) = &settings.base_url {
        set!(base_url, Some(base_url.clone()));
    }
    if let Some(system) = &settings.system {
        set!(system, Some(system.clone()));
    }
    if let Some(tools) = &settings.tools {
        set!(tools, Some(tools.clone()));
    }
    if let Some(exclude) = &settings.exclude {
        set!(exclude, exclude.clone());
    }
    if let Some(sequential) = settings.sequential {
        set!(sequential, sequential);
    }
    if let Some(max_parallel) = settings.max_parallel {
        let value = std::num::NonZeroUsize::new(max_parallel)
            .ok_or_else(|| invalid("max_parallel", "it must be at least 1".into()))?;
        set!(max_parallel, Some(value));
    }
    if let Some(max_background) = settings.max_background {
        set!(max_background, Some(max_background));
    }
    if let Some(seconds) = settings.tool_timeout {
        let value = crate::args::positive_seconds(&seconds.to_string())
            .map_err(|why| invalid("tool_timeout", why))?;
        set!(tool_timeout, Some(value));
    }
    if let Some(max_turns) = settings.max_turns {
        let value = std::num::NonZeroUsize::new(max_turns)
            .ok_or_else(|| invalid("max_turns", "it must be at least 1".into()))?;
        set!(max_turns, Some(value));
    }
    if let Some(tokens) = settings.context_window {
        let value = std::num::NonZeroU64::new(tokens)
            .ok_or_else(|| invalid("context_window", "it must be at least 1".into()))?;
        set!(context_window, Some(value));
    }
    if let Some(no_compact) = settings.no_compact {
        set!(no_compact, no_compact);
    }
    if let Some(web_search) = settings.web_search {
        set!(web_search, web_search);
    }
    if let Some(policy) = &settings.reviewer_policy {
        set!(reviewer_policy, Some(policy.clone()));
    }
    match &settings.lsp {
        Some(file_settings::LspEntry::On(on)) => set!(no_lsp, !on),
        Some(file_settings::LspEntry::Servers(servers)) => {
            for (name, server) in servers {
                if server.command.is_empty() || server.extensions.is_empty() {
                    return Err(invalid(
                        &format!("lsp.{name}"),
                        "it needs a command and the extensions it serves (command = [\"pyright-langserver\", \"--stdio\"], extensions = [\"py\"])".into(),
                    ));
                }
                let mut spec = golato::diagnostics::ServerSpec::new(
                    name.clone(),
                    server.command.clone(),
                    server.extensions.clone(),
                );
                spec.root_markers = server.root_markers.clone();
                // A later layer's server of the same name replaces an earlier one's.
                args.lsp_servers.retain(|kept| kept.name != *name);
                args.lsp_servers.insert(0, spec);
            }
        }
        None => {}
    }
    for (name, linter) in settings.lint.iter().flatten() {
        if linter.command.is_empty() || linter.extensions.is_empty() {
            return Err(invalid(
                &format!("lint.{name}"),
                "it needs a command and the extensions it checks (command = [\"ruff\", \"check\", \"--no-cache\", \"--output-format\", \"concise\", \"--stdin-filename\", \"{file}\", \"-\"], extensions = [\"py\"], format = \"gcc\")".into(),
            ));
        }
        args.linters.retain(|kept| kept.name != *name);
        args.linters.push(golato::diagnostics::LinterSpec::new(
            name.clone(),
            linter.command.clone(),
            linter.extensions.clone(),
            linter.format,
        ));
    }
    if let Some(tokens) = settings.max_tokens {
        let value = std::num::NonZeroU64::new(tokens)
            .ok_or_else(|| invalid("max_tokens", "it must be at least 1".into()))?;
        set!(max_tokens, Some(value));
    }
    if let Some(dollars) = settings.max_cost {
        let value =
            crate::args::dollars(&dollars.to_string()).map_err(|why| invalid("max_cost", why))?;
        set!(max_cost, Some(value));
    }
    if let Some(entries) = &settings.mcp {
        let (lines, servers) = mcp_servers(entries);
        set!(mcp, lines);
        set!(mcp_commands, servers);
    }
    if let Some(urls) = &settings.mcp_url {
        set!(mcp_url, urls.clone());
    }
    if let Some(approve) = &settings.approve {
        let value = crate::args::Approve::from_str(approve, true)
            .map_err(|_| invalid("approve", format!("{approve:?} is not ask, edits or never")))?;
        set!(approve, Some(value));
    }
    if let Some(temperature) = settings.temperature {
        let value = crate::args::temperature(&temperature.to_string())
            .map_err(|why| invalid("temperature", why))?;
        set!(temperature, Some(value));
    }
    if let Some(tokens) = settings.max_output_tokens {
        let value = std::num::NonZeroU32::new(tokens)
            .ok_or_else(|| invalid("max_output_tokens", "it must be at least 1".into()))?;
        set!(max_output_tokens, Some(value));
    }
    if let Some(effort) = &settings.reasoning_effort {
        let value = ReasoningEffort::from_str(effort, true).map_err(|_| {
            invalid(
                "reasoning_effort",
                format!("{effort:?} is not low, medium or high"),
            )
        })?;
        set!(reasoning_effort, Some(value));
    }
    fill_sandbox(args, settings, source)
}

/// The sandbox's settings of a layer (see [`fill`]).
pub(super) fn fill_sandbox(
    args: &mut AgentArgs,
    settings: &FileSettings,
    source: &str,
) -> Result<(), CliError> {
    let invalid = |key: &str, why: String| CliError::usage(format!("{key} in {source}: {why}"));
    let given = &args.given;
    if let Some(mode) = &settings.sandbox {
        let mode: golato::sandbox::Mode = mode
            .parse()
            .map_err(|error: golato::sandbox::UnknownMode| invalid("sandbox", error.to_string()))?;
        if !given.contains("sandbox") {
            args.sandbox.sandbox = Some(mode);
        }
    }
    if let Some(allow) = settings.allow_network {
        if !given.contains("allow_network") {
            args.sandbox.allow_network = allow;
        }
    }
    if let Some(writable) = &settings.writable {
        if !given.contains("writable") {
            args.sandbox.writable = writable.clone();
        }
    }
    if let Some(allow) = &settings.allow_domain {
        if !given.contains("allow_domain") {
            args.sandbox.allow_domain = allow.clone();
        }
    }
    // Denied domains add up, as denied paths do.
    if let Some(deny) = &settings.deny_domain {
        args.sandbox.deny_domain.extend(deny.iter().cloned());
    }
    if let Some(methods) = &settings.network_methods {
        if methods != "all" && methods != "read" {
            return Err(invalid(
                "network_methods",
                format!("{methods:?} is not all or read"),
            ));
        }
        if !given.contains("network_methods") {
            args.sandbox.network_methods = Some(methods.clone());
        }
    }
    if let Some(log) = &settings.network_log {
        if !given.contains("network_log") {
            args.sandbox.network_log = Some(log.clone());
        }
    }
    // Denials add up: a later layer (a project's) cannot take back one an earlier one made,
    // and `--deny-read` adds to the files' rather than replacing them.
    if let Some(deny_read) = &settings.deny_read {
        args.sandbox.deny_read.extend(deny_read.iter().cloned());
    }
    if let Some(off) = settings.no_bash_checkpoints {
        if !given.contains("no_bash_checkpoints") {
            args.sandbox.no_bash_checkpoints = off;
        }
    }
    Ok(())
}

/// A layer's MCP servers: the command lines, and the tables with their arguments and
/// environment.
pub(super) fn mcp_servers(entries: &[file_settings::McpEntry]) -> (Vec<String>, Vec<McpCommand>) {
    let mut lines = Vec::new();
    let mut servers = Vec::new();
    for entry in entries {
        match entry {
            file_settings::McpEntry::Line(line) => lines.push(line.clone()),
            file_settings::McpEntry::Table { command, args, env } => servers.push(McpCommand {
                program: command.clone(),
                args: args.clone(),
                env: env.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            }),
        }
    }
    (lines, servers)
}
