//! The settings a run is assembled from, resolved once: the configuration files' layers (as
//! the folder's trust allows), `--profile` and `--config`, then the flags, with the working
//! directory made canonical before anything is resolved against it.
//!
//! Three stages stay apart, as in codex: what the files say ([`file_settings::FileSettings`]), what
//! the command line overrides (the clap types in `crate::args`, which never leave the command
//! that parsed them), and the one [`Settings`] everything in `setup/` and the front ends reads.

mod fill;

use std::num::{NonZeroU32, NonZeroU64, NonZeroUsize};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use fill::apply;
use golato::policy::CallPolicy;

use super::config::{self, Trusting};
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
mod tests;
