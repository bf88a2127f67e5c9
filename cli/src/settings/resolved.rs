//! The settings a run is assembled from, resolved once: the configuration files' layers (as
//! the folder's trust allows), `--profile` and `--config`, then the flags, with the working
//! directory made canonical before anything is resolved against it.
//!
//! Three stages stay apart, as in codex: what the files say ([`file_settings::FileSettings`]), what
//! the command line overrides (the clap types in `crate::args`, which never leave the command
//! that parsed them), and the one [`Settings`] everything in `setup/` and the front ends reads.

use std::num::{NonZeroU32, NonZeroU64, NonZeroUsize};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::ValueEnum as _;
use golato::policy::CallPolicy;

use super::config::{self, Trusting};
use super::file_settings::{self, FileSettings};
use crate::args::{AgentArgs, Approve, McpCommand, ProviderKind, ReasoningEffort};
use crate::error::CliError;

/// The sandbox of `golato run` and `golato serve` when neither the flags nor the files choose
/// one: the model's commands may change the project and temporary files, nothing else, and
/// reach no network.
pub(crate) const DEFAULT_SANDBOX: golato::sandbox::Mode = golato::sandbox::Mode::WorkspaceWrite;

/// Everything an agent is built from, resolved: the working directory is canonical (rules,
/// trust, sessions and checkpoints all resolve against the same path however `-C` or a
/// client named it), the rules are parsed against it, and the sandbox policy is complete.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    /// The working directory, canonical.
    pub(crate) cwd: PathBuf,
    /// Whether the working directory's project may take full effect: `--trust`, or a folder
    /// trusted before (or just now, when the person was asked).
    pub(crate) trusted: bool,
    /// The person said not to trust the folder, and a line said what that leaves unread: no
    /// other line repeats it.
    pub(crate) said_no: bool,
    /// The model's API, when chosen.
    pub(crate) provider: Option<ProviderKind>,
    /// The model ID, when chosen.
    pub(crate) model: Option<String>,
    /// The API's base URL, when chosen.
    pub(crate) base_url: Option<String>,
    /// Sampling temperature.
    pub(crate) temperature: Option<f64>,
    /// The most tokens one answer may have.
    pub(crate) max_output_tokens: Option<NonZeroU32>,
    /// How hard a reasoning model thinks.
    pub(crate) reasoning_effort: Option<ReasoningEffort>,
    /// The provider's own web search, and the domains it may search (none: every domain).
    pub(crate) web_search: Option<Vec<String>>,
    /// Who reviews calls under `--approve auto`.
    pub(crate) reviewer: ReviewerSettings,
    /// Instructions replacing golato's: the text, or `@FILE`.
    pub(crate) system: Option<String>,
    /// Tell the model nothing of its environment and read no AGENTS.md.
    pub(crate) no_project_instructions: bool,
    /// The language servers golato may start for diagnostics after edits, in order of
    /// preference; `None`: off (`--no-lsp`, `lsp = false`).
    pub(crate) lsp: Option<Vec<golato::diagnostics::ServerSpec>>,
    /// Linters run on changed files (`[lint.NAME]`), with or without language servers.
    pub(crate) linters: Vec<golato::diagnostics::LinterSpec>,
    /// The JSON Schema file the final answer must match.
    pub(crate) output_schema: Option<PathBuf>,
    /// A recorded model to replay instead of a provider.
    pub(crate) script: Option<PathBuf>,
    /// The model is asked elsewhere (`golato acp --restate`: by the durable workers), so this
    /// process needs no provider, nor its key.
    pub(crate) model_elsewhere: bool,
    /// Only these tools.
    pub(crate) tools: Option<Vec<String>>,
    /// Never these tools.
    pub(crate) exclude: Vec<String>,
    /// Plan mode.
    pub(crate) plan: bool,
    /// How deep subagents may nest.
    pub(crate) task_depth: Option<NonZeroUsize>,
    /// A batch's calls one after another.
    pub(crate) sequential: bool,
    /// At most this many calls of a batch at once.
    pub(crate) max_parallel: Option<NonZeroUsize>,
    /// At most this many background commands at once (0: bash runs nothing in the background).
    pub(crate) max_background: Option<usize>,
    /// A call running longer is cancelled.
    pub(crate) tool_timeout: Option<Duration>,
    /// The run ends once it has used this many tokens.
    pub(crate) max_tokens: Option<NonZeroU64>,
    /// The run ends once it has cost this many dollars.
    pub(crate) max_cost: Option<f64>,
    /// The model's context window, when given.
    pub(crate) context_window: Option<NonZeroU64>,
    /// Never summarize older turns.
    pub(crate) no_compact: bool,
    /// The most model requests a run may make.
    pub(crate) max_turns: Option<NonZeroUsize>,
    /// MCP servers as command lines.
    pub(crate) mcp: Vec<String>,
    /// MCP servers as a program, arguments and environment (the files' tables, ACP clients').
    pub(crate) mcp_commands: Vec<McpCommand>,
    /// MCP servers at streamable HTTP URLs.
    pub(crate) mcp_url: Vec<String>,
    /// How long each MCP server may take to start.
    pub(crate) mcp_timeout: Option<Duration>,
    /// What bash, read, write and edit may touch.
    pub(crate) sandbox: golato::sandbox::Policy,
    /// Where every connection of sandboxed commands is appended as a JSON line (--network-log).
    pub(crate) network_log: Option<std::path::PathBuf>,
    /// Whether sandboxed commands run through a capturing overlay (undo covers them).
    pub(crate) bash_checkpoints: bool,
    /// Which calls ask first, when chosen (the default depends on the sandbox and terminal).
    pub(crate) approve: Option<Approve>,
    /// What resolving said about the folder's configuration (settings a project's file may
    /// not set): printed on stderr, and kept for a client that does not read it (ACP).
    pub(crate) notes: Vec<String>,
    /// The rules and hooks of the files and the flags.
    pub(crate) policy: CallPolicy,
    /// Where the file tools take and put text instead of the disk (an ACP client's buffers).
    pub(crate) text_files: Option<Arc<dyn golato::builtin::TextFiles>>,
}

impl Settings {
    /// Whether the sandbox confines the tools.
    pub(crate) fn sandboxed(&self) -> bool {
        self.sandbox.mode != golato::sandbox::Mode::Off
    }

    /// `--max-tokens` and `--max-cost`.
    pub(crate) fn budget(&self) -> Option<golato::agent::Budget> {
        let mut budget = golato::agent::Budget::default();
        if let Some(tokens) = self.max_tokens {
            budget = budget.with_max_tokens(tokens.get());
        }
        if let Some(dollars) = self.max_cost {
            budget = budget.with_max_cost(dollars);
        }
        (budget != golato::agent::Budget::default()).then_some(budget)
    }

    /// What a new session notes of the model it starts with, to reach it again: provider,
    /// model and base URL; nothing for a scripted model (no API, model or server to keep).
    pub(crate) fn model_origin(&self) -> Vec<(&'static str, Option<String>)> {
        if self.script.is_some() {
            return Vec::new();
        }
        vec![
            ("provider", self.provider.map(|kind| kind.name().to_owned())),
            ("model", self.model.clone()),
            ("base_url", self.base_url.clone()),
        ]
    }
}

/// Resolves the flags of a command with the configuration of their working directory; `ask`
/// says whether a person at the terminal may be asked to trust the folder.
///
/// # Errors
/// A working directory that does not exist or is not a folder, a configuration file that is
/// not valid, a rule that does not parse: each names what to change.
pub(crate) fn resolve(mut args: AgentArgs, ask: bool) -> Result<Settings, CliError> {
    args.cwd = canonical_directory(&args.cwd)?;
    // Known before a question could be asked: a "no" given now was said by the question.
    let said_no = super::trust::said_no_line(&args.cwd, args.settings.trust);
    let (policy, approve_untrusted, mut notes) = apply(&mut args, ask)?;
    if let Some(line) = &said_no {
        eprintln!("golato: {line}");
        notes.push(line.clone());
    }
    // Before this start, or by answering its question now.
    let said_no = said_no.is_some() || super::trust::said_no(&args.cwd, args.settings.trust);
    let trusted = super::trust::trusted(&args.cwd, args.settings.trust);
    let sandbox = args
        .sandbox
        .policy(DEFAULT_SANDBOX)
        .map_err(|error| CliError::usage(format!("--allow-domain/--deny-domain: {error}")))?;
    // An untrusted project's `edits` is stricter than the sandboxed default (`never`), looser
    // than the default with the sandbox off (`ask` on a terminal): then the default stands.
    let default = Approve::default_for(sandbox.mode != golato::sandbox::Mode::Off, ask);
    if approve_untrusted && default == Approve::Ask && args.approve == Some(Approve::Edits) {
        let note = "ignored approve = \"edits\" from this folder's .golato/config.toml: with the sandbox off it would let edits through that would otherwise be asked about, and the folder is not trusted".to_owned();
        eprintln!("golato: {note}");
        notes.push(note);
        args.approve = None;
    }
    Ok(Settings {
        cwd: args.cwd,
        trusted,
        said_no,
        provider: args.provider,
        model: args.model,
        base_url: args.base_url,
        temperature: args.temperature,
        max_output_tokens: args.max_output_tokens,
        reasoning_effort: args.reasoning_effort,
        web_search: args
            .web_search
            .then(|| search_domains(&args.sandbox.allow_domain)),
        reviewer: ReviewerSettings {
            model: args.reviewer_model,
            provider: args.reviewer_provider,
            base_url: args.reviewer_base_url,
            timeout: args.reviewer_timeout,
            max_tokens: args.reviewer_max_tokens,
            policy: args.reviewer_policy,
        },
        system: args.system,
        no_project_instructions: args.no_project_instructions,
        linters: args.linters,
        lsp: (!args.no_lsp).then(|| {
            let mut servers = args.lsp_servers;
            servers.extend(golato::diagnostics::ServerSpec::builtin());
            servers
        }),
        output_schema: args.output_schema,
        script: args.script,
        model_elsewhere: false,
        tools: args.tools,
        exclude: args.exclude,
        plan: args.plan,
        task_depth: args.task_depth,
        sequential: args.sequential,
        max_parallel: args.max_parallel,
        max_background: args.max_background,
        tool_timeout: args.tool_timeout,
        max_tokens: args.max_tokens,
        max_cost: args.max_cost,
        context_window: args.context_window,
        no_compact: args.no_compact,
        max_turns: args.max_turns,
        mcp: args.mcp,
        mcp_commands: args.mcp_commands,
        mcp_url: args.mcp_url,
        mcp_timeout: args.mcp_timeout,
        network_log: args.sandbox.network_log.clone(),
        sandbox,
        bash_checkpoints: !args.sandbox.no_bash_checkpoints,
        approve: args.approve,
        notes,
        policy,
        text_files: None,
    })
}

/// Who reviews calls under `--approve auto`: flags only (a project's file cannot choose the
/// model that decides what its own calls may do).
#[derive(Debug, Clone)]
pub(crate) struct ReviewerSettings {
    pub(crate) model: Option<String>,
    pub(crate) provider: Option<crate::args::ProviderKind>,
    pub(crate) base_url: Option<String>,
    pub(crate) timeout: std::time::Duration,
    pub(crate) max_tokens: u64,
    /// The person's policy, as given (`@FILE` read when the reviewer is made).
    pub(crate) policy: Option<String>,
}

/// The domains a provider's web search may search, from `--allow-domain`'s patterns: hosts
/// (a `*.` and a port taken off, a preset's hosts), never an address.
fn search_domains(allowed: &[String]) -> Vec<String> {
    let mut domains: Vec<String> = Vec::new();
    for pattern in allowed {
        let hosts: Vec<String> = match pattern.trim().strip_prefix('@') {
            Some(preset) => golato::sandbox::network::PRESETS
                .iter()
                .filter(|(name, _)| *name == preset)
                .flat_map(|(_, hosts)| hosts.iter().map(|host| (*host).to_owned()))
                .collect(),
            None => {
                let host = pattern.trim().trim_start_matches("*.");
                let host = match host.rsplit_once(':') {
                    Some((name, port)) if port.parse::<u16>().is_ok() && !name.contains(':') => {
                        name
                    }
                    _ => host,
                };
                vec![host.to_owned()]
            }
        };
        for host in hosts {
            let address = host
                .trim_matches(|c| c == '[' || c == ']')
                .parse::<std::net::IpAddr>()
                .is_ok();
            if !address && !host.is_empty() && !domains.contains(&host) {
                domains.push(host);
            }
        }
    }
    domains
}

/// `dir` made canonical (links and `.`/`..` resolved), or why it cannot be worked in.
pub(crate) fn canonical_directory(dir: &std::path::Path) -> Result<PathBuf, CliError> {
    let shown = || crate::view::shown::visible(&dir.display().to_string()).into_owned();
    let canonical = dir.canonicalize().map_err(|error| {
        CliError::usage(format!(
            "cannot work in {}: {error}; give -C a folder that exists",
            shown()
        ))
    })?;
    if !canonical.is_dir() {
        return Err(CliError::usage(format!(
            "cannot work in {}: it is not a folder; give -C a folder",
            shown()
        )));
    }
    Ok(canonical)
}

/// Fills the flags not given from the configuration, and returns the rules and hooks of the
/// files and the flags; `ask` says whether a person at the terminal can be asked to trust the
/// folder.
///
/// Also says whether the approval mode in effect is an untrusted project's.
fn apply(args: &mut AgentArgs, ask: bool) -> Result<(CallPolicy, bool, Vec<String>), CliError> {
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
fn flag_rules(args: &AgentArgs) -> Result<CallPolicy, CliError> {
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
fn fill(args: &mut AgentArgs, settings: &FileSettings, source: &str) -> Result<(), CliError> {
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
fn fill_sandbox(
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
fn mcp_servers(entries: &[file_settings::McpEntry]) -> (Vec<String>, Vec<McpCommand>) {
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

/// The layers `golato config` and `golato hooks` show: a folder is never asked about there.
pub(crate) fn shown_layers(args: &crate::args::ConfigArgs) -> Result<Vec<config::Layer>, CliError> {
    let trusting = match args.settings.trust {
        true => Trusting::Given,
        false => Trusting::Remembered,
    };
    // Rules are listed as a run here resolves them: against the canonical folder.
    let cwd = canonical_directory(&args.cwd)?;
    config::layers(
        &cwd,
        args.settings.profile.as_deref(),
        &args.settings.config,
        trusting,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::Command;

    /// Each key a configuration file takes: a TOML value, and the flag of the same name with a
    /// value for it (`None`: a switch).
    const KEYS: &[(&str, &str, Option<&str>)] = &[
        ("provider", "\"anthropic\"", Some("openai")),
        ("model", "\"m\"", Some("n")),
        (
            "base_url",
            "\"http://127.0.0.1:1/v1\"",
            Some("http://127.0.0.1:2/v1"),
        ),
        ("system", "\"be brief\"", Some("be long")),
        ("tools", "[\"read\"]", Some("bash")),
        ("exclude", "[\"bash\"]", Some("read")),
        ("sequential", "true", None),
        ("max_parallel", "3", Some("4")),
        ("max_background", "3", Some("4")),
        ("tool_timeout", "5.0", Some("6")),
        ("max_turns", "3", Some("4")),
        ("context_window", "1000", Some("2000")),
        ("no_compact", "true", None),
        ("web_search", "true", None),
        ("reviewer_policy", "\"no force pushes\"", Some("x")),
        ("max_tokens", "100", Some("200")),
        ("max_cost", "1.5", Some("2.5")),
        ("mcp", "[\"server --stdio\"]", Some("other")),
        (
            "mcp_url",
            "[\"http://127.0.0.1:3/mcp\"]",
            Some("http://127.0.0.1:4/mcp"),
        ),
        ("sandbox", "\"read-only\"", Some("off")),
        ("allow_network", "true", None),
        ("allow_domain", "[\"@crates\"]", Some("@npm")),
        ("deny_domain", "[\"a.test\"]", Some("b.test")),
        ("network_methods", "\"read\"", Some("all")),
        ("network_log", "\"/tmp/n.jsonl\"", Some("/tmp/m.jsonl")),
        ("writable", "[\"/srv\"]", Some("/opt")),
        ("deny_read", "[\"/srv\"]", Some("/opt")),
        ("no_bash_checkpoints", "true", None),
        ("approve", "\"edits\"", Some("never")),
        ("temperature", "0.5", Some("0.7")),
        ("max_output_tokens", "100", Some("200")),
        ("reasoning_effort", "\"high\"", Some("low")),
        // `lsp = false` is the flag --no-lsp (`[lsp.NAME]` tables add servers, no flag).
        ("lsp", "false", None),
        // Tables of linters: no flag.
        (
            "lint",
            "{ ruff = { command = [\"ruff\"], extensions = [\"py\"], format = \"gcc\" } }",
            None,
        ),
    ];

    fn run_flags(extra: &[&str]) -> AgentArgs {
        let line = ["golato", "run", "prompt"]
            .iter()
            .chain(extra)
            .map(Into::into)
            .collect();
        match crate::parse_from(line).map(|cli| cli.command) {
            Ok(Command::Run(run)) => run.agent,
            other => panic!("not a run: {other:?}"),
        }
    }

    fn file_setting(key: &str, value: &str) -> FileSettings {
        file_settings::parse(&format!("{key} = {value}"))
            .unwrap_or_else(|error| panic!("{key} = {value}: {error}"))
            .0
    }

    /// A renamed flag or key cannot silently stop being settable from a file: every key a file
    /// takes is listed above, sets its flag when the flag is not given, and yields to it when
    /// it is.
    #[test]
    fn every_file_key_sets_the_flag_of_its_name_unless_the_flag_is_given() {
        let mut listed: Vec<&str> = KEYS.iter().map(|(key, ..)| *key).collect();
        listed.sort_unstable();
        let mut fields = crate::settings::file_settings::setting_names().to_vec();
        fields.sort_unstable();
        assert_eq!(listed, fields, "KEYS lists every key of FileSettings");
        for (key, value, flag_value) in KEYS {
            let settings = file_setting(key, value);
            let mut args = run_flags(&[]);
            let before = format!("{args:?}");
            fill(&mut args, &settings, "a test").unwrap();
            assert_ne!(before, format!("{args:?}"), "{key} = {value} set nothing");
            if *key == "lint" {
                continue;
            }

            let (flag, field) = match *key {
                "lsp" => ("--no-lsp".to_owned(), "no_lsp"),
                key => (format!("--{}", key.replace('_', "-")), key),
            };
            let mut given = vec![flag.as_str()];
            given.extend(flag_value);
            let mut args = run_flags(&given);
            assert!(
                args.given.contains(field),
                "{flag} is noted as given under {field}"
            );
            let before = format!("{args:?}");
            fill(&mut args, &settings, "a test").unwrap();
            if *key == "deny_read" || *key == "deny_domain" {
                // Denials add up: a file's join the flag's.
                assert_ne!(before, format!("{args:?}"), "deny_read adds up");
            } else {
                assert_eq!(before, format!("{args:?}"), "{flag} given lost to the file");
            }
        }
    }
}
