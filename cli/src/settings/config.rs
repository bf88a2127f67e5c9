//! Configuration: defaults for the agent flags from TOML files, named profiles and
//! `--config KEY=VALUE` overrides; `golato config` shows what is in effect and where each value
//! comes from.
//!
//! Layers, each over the one before: the user's file (`$XDG_CONFIG_HOME/golato/config.toml`,
//! else `~/.config/golato/config.toml`; `GOLATO_CONFIG` names another), the project's
//! (`.golato/config.toml` in the working directory), the profile `--profile NAME` picks (a
//! `[profiles.NAME]` table of either file, the project's winning), `--config` overrides, and
//! last the flags themselves.

use std::path::{Path, PathBuf};

use golato::policy::CallPolicy;

use crate::error::CliError;
use crate::settings::file_settings::{
    entries, parse, setting_names, unknown_key, FileSettings, LspEntry, Profiles,
};

/// A layer: where it comes from, and what it sets.
#[derive(Debug)]
pub(crate) struct Layer {
    pub(crate) source: String,
    pub(crate) settings: FileSettings,
    /// What the layer set but may not, as `key = value`: see [`untrusted`].
    ignored: Vec<String>,
    /// Why it may not: its folder is not trusted, or is not the folder that was.
    why: Option<String>,

    /// Its rules and hooks (a project's allow rules and hooks only when its folder is trusted).
    pub(crate) policy: CallPolicy,
    /// What its Claude Code settings had that golato has no counterpart for, each with why.
    pub(crate) left_out: Vec<String>,
}

impl Layer {
    /// Whether the layer is a project's file in a folder not trusted.
    pub(crate) fn untrusted(&self) -> bool {
        self.why.is_some()
    }
}

/// A project's file (one a cloned repository brings along) may not loosen what the user's
/// safety rests on: turn the sandbox off or down, open the network or more writable
/// directories, approve without asking (`never`), start or reach MCP servers, send the provider's key
/// and the code to another server, or replace golato's instructions (`system`). Those settings are taken out of `settings` and returned,
/// as `key = value`; everything else (the model, limits, more denied paths)
/// stands. A user who wants one of them sets it in their own file or passes the flag.
pub(crate) fn untrusted(settings: &mut FileSettings) -> Vec<String> {
    let mut ignored = Vec::new();
    let mut drop = |key: &str, value: String| ignored.push(format!("{key} = {value}"));
    if let Some(mode) = settings.sandbox.take_if(|mode| mode != "read-only") {
        drop("sandbox", format!("{mode:?}"));
    }
    if let Some(allow) = settings.allow_network.take_if(|allow| *allow) {
        drop("allow_network", allow.to_string());
    }
    if let Some(writable) = settings.writable.take() {
        drop("writable", format!("{writable:?}"));
    }
    // More hosts widen the network; denied hosts and read-only methods narrow it and stand.
    if let Some(allow) = settings.allow_domain.take() {
        drop("allow_domain", format!("{allow:?}"));
    }
    if let Some(methods) = settings
        .network_methods
        .take_if(|methods| methods != "read")
    {
        drop("network_methods", format!("{methods:?}"));
    }
    // Where every connection is written is the user's choice of a file to write.
    if let Some(log) = settings.network_log.take() {
        drop("network_log", format!("{log:?}"));
    }
    // `edits` asks for commands: stricter than the sandboxed default `never`. (With a sandbox
    // the user turned off, the default is `ask`: `settings::resolve` keeps that.)
    if let Some(approve) = settings
        .approve
        .take_if(|approve| approve != "ask" && approve != "edits")
    {
        drop("approve", format!("{approve:?}"));
    }
    if let Some(mcp) = settings.mcp.take() {
        drop("mcp", format!("{mcp:?}"));
    }
    if let Some(urls) = settings.mcp_url.take() {
        drop("mcp_url", format!("{urls:?}"));
    }
    if let Some(url) = settings.base_url.take() {
        drop("base_url", format!("{url:?}"));
    }
    // Undo of commands is the user's to give up.
    if let Some(off) = settings.no_bash_checkpoints.take_if(|off| *off) {
        drop("no_bash_checkpoints", off.to_string());
    }
    // golato's own instructions, and what `@FILE` would read and send to the model, are the
    // user's: AGENTS.md, which the project may bring, needs trust too.
    if let Some(system) = settings.system.take() {
        drop("system", format!("{system:?}"));
    }
    // What decides a project's own calls is not the project's to write.
    if let Some(policy) = settings.reviewer_policy.take() {
        drop("reviewer_policy", format!("{policy:?}"));
    }
    // A linter, as a server, is a program the project would start.
    if let Some(linters) = settings.lint.take() {
        drop("lint", format!("{linters:?}"));
    }
    // A language server is a program the project would start: `lsp = false` stands.
    if let Some(servers) = settings
        .lsp
        .take_if(|lsp| matches!(lsp, LspEntry::Servers(_)))
    {
        drop("lsp", format!("{servers:?}"));
    }
    ignored
}

/// The project's configuration file in `cwd`.
pub(crate) fn project_file(cwd: &Path) -> PathBuf {
    cwd.join(".golato/config.toml")
}

/// The user's configuration file.
pub(crate) fn user_file() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("GOLATO_CONFIG") {
        return Some(PathBuf::from(path));
    }
    std::env::var_os("XDG_CONFIG_HOME")
        .filter(|dir| !dir.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".config")))
        .map(|dir| dir.join("golato/config.toml"))
}

/// A file's settings and profiles; nothing when it does not exist.
fn read(path: &Path, cwd: &Path) -> Result<Option<(FileSettings, Profiles, CallPolicy)>, CliError> {
    let text = match crate::bounded::read_text(path, crate::bounded::CONFIG_LIMIT) {
        Ok(text) => text,
        Err(crate::bounded::Unreadable::Missing) => return Ok(None),
        Err(error) => {
            return Err(CliError::usage(format!(
                "cannot read the configuration {}: {error}",
                path.display()
            )))
        }
    };
    let (settings, profiles) = parse(&text).map_err(|error| {
        CliError::usage(format!(
            "the configuration {} is not valid: {error}; fix or remove that line (golato reads no configuration until it is valid)",
            path.display()
        ))
    })?;
    let mut policy = CallPolicy::new();
    policy.add_toml(&text, path, cwd).map_err(|error| {
        CliError::usage(format!(
            "{error}; fix or remove that line (`golato config` shows the rules in effect)"
        ))
    })?;
    Ok(Some((settings, profiles, policy)))
}

/// Whether a project's own file may take full effect, when its folder's standing does not
/// settle it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Trusting {
    /// `--trust`: this run trusts the folder (nothing is remembered).
    Given,
    /// A person is at the terminal: an undecided folder whose file would loosen safety is
    /// asked about once, and the answer remembered.
    Ask,
    /// Nobody to ask: only a folder trusted before counts.
    Remembered,
}

/// Whether the project file in `cwd`, with `settings` and `profiles`, takes full effect; when it
/// does not, why, as the ignored line says it.
fn project_trust(
    cwd: &Path,
    source: &str,
    settings: &FileSettings,
    profiles: &Profiles,
    policy: &CallPolicy,
    trusting: Trusting,
) -> Result<Result<(), String>, CliError> {
    if trusting == Trusting::Given {
        return Ok(Ok(()));
    }
    let folder = crate::settings::trust::Folder::at(cwd)?;
    let shown = crate::view::shown::visible(&folder.path.display().to_string()).into_owned();
    let untrusted_text =
        format!("this folder is not trusted; `golato trust {shown}` trusts it (or pass --trust)");
    match folder.standing()? {
        crate::settings::trust::Standing::Trusted => Ok(Ok(())),
        crate::settings::trust::Standing::Replaced => Ok(Err(format!(
            "this is not the folder trusted at {shown} (it was moved, or replaced since); `golato trust {shown}` trusts this one"
        ))),
        // Said once, in one line, by `resolve`: the person already knows.
        crate::settings::trust::Standing::Distrusted => {
            Ok(Err(crate::settings::trust::SAID_NO.to_owned()))
        }
        crate::settings::trust::Standing::Unknown => {
            let marked = changes(settings, profiles, policy);
            let loosens = marked.iter().any(|(_, dangerous)| *dangerous);
            if trusting != Trusting::Ask || !loosens {
                return Ok(Err(untrusted_text));
            }
            let at_stake = crate::settings::trust_question::AtStake {
                config: Some((source.to_owned(), marked)),
                ..crate::settings::trust_question::AtStake::project(cwd)
            };
            let trusted = crate::settings::trust_question::ask(&folder, &at_stake)?;
            Ok(if trusted { Ok(()) } else { Err(crate::settings::trust::SAID_NO.to_owned()) })
        }
    }
}

/// What a project's file would set, `key = value` (a profile's prefixed with its table), each
/// marked when trusting the folder is what lets it through.
fn changes(
    settings: &FileSettings,
    profiles: &Profiles,
    policy: &CallPolicy,
) -> Vec<(String, bool)> {
    let mut marked = Vec::new();
    let sections = std::iter::once((String::new(), settings)).chain(
        profiles
            .iter()
            .map(|(name, settings)| (format!("[profiles.{name}] "), settings)),
    );
    for (prefix, settings) in sections {
        let dangerous = untrusted(&mut settings.clone());
        for (key, value) in entries(settings) {
            let line = format!("{key} = {value}");
            marked.push((format!("{prefix}{line}"), dangerous.contains(&line)));
        }
    }
    for rule in policy.rules.iter() {
        let loosens = rule.decision == golato::policy::Decision::Allow;
        marked.push((format!("{} {}", rule.decision, rule.text), loosens));
    }
    for hook in &policy.hooks {
        marked.push((format!("hook {} {}", hook.event, hook.command), true));
    }
    for rule in policy.replay_safe.iter() {
        marked.push((format!("durable safe {}", rule.text), true));
    }
    marked
}

/// The layers in order, lowest first: the project's file (what its folder's trust allows),
/// the user's, the profile's (project, then user), then `--config`. The user's own file always
/// wins over a project's.
pub(super) fn layers(
    cwd: &Path,
    profile: Option<&str>,
    overrides: &[String],
    trusting: Trusting,
) -> Result<Vec<Layer>, CliError> {
    let mut layers = Vec::new();
    let mut profiles: Vec<(String, Result<(), String>, Profiles)> = Vec::new();
    if let Some((layer, trust, file_profiles)) = project_layer(cwd, trusting)? {
        profiles.push((layer.source.clone(), trust, file_profiles));
        layers.push(layer);
    }
    if let Some(path) = user_file() {
        if let Some((settings, file_profiles, policy)) = read(&path, cwd)? {
            let source = path.display().to_string();
            layers.push(Layer {
                source: source.clone(),
                settings,
                ignored: Vec::new(),
                why: None,
                policy,
                left_out: Vec::new(),
            });
            profiles.push((source, Ok(()), file_profiles));
        }
    }
    let user_claude = claude_home().map(|home| home.join("settings.json"));
    let (policy, left_out) = claude_policy(user_claude.as_slice(), cwd)?;
    if let (Some(policy), Some(path)) = (policy, &user_claude) {
        layers.push(Layer {
            source: path.display().to_string(),
            settings: FileSettings::default(),
            ignored: Vec::new(),
            why: None,
            policy,
            left_out,
        });
    }
    if let Some(name) = profile {
        let mut found = false;
        for (source, trust, file_profiles) in &profiles {
            if let Some(settings) = file_profiles.get(name) {
                found = true;
                let mut settings = settings.clone();
                let ignored = match trust {
                    Ok(()) => Vec::new(),
                    Err(_) => untrusted(&mut settings),
                };
                layers.push(Layer {
                    source: format!("profile {name} in {source}"),
                    settings,
                    ignored,
                    why: trust.clone().err(),
                    policy: CallPolicy::new(),
                    left_out: Vec::new(),
                });
            }
        }
        if !found {
            let known: Vec<&str> = profiles
                .iter()
                .flat_map(|(_, _, file_profiles)| file_profiles.keys().map(String::as_str))
                .collect();
            return Err(CliError::usage(format!(
                "--profile {name}: no such profile; the configuration files define: {}",
                if known.is_empty() {
                    "none".to_owned()
                } else {
                    known.join(", ")
                }
            )));
        }
    }
    for entry in overrides {
        let (key, value) = entry.split_once('=').ok_or_else(|| {
            CliError::usage(format!(
                "--config {entry}: give KEY=VALUE, such as --config model=gpt-4o"
            ))
        })?;
        // A TOML value (a number, true, a list), else the text itself.
        let value: toml::Value = toml::from_str::<toml::Table>(&format!("v = {value}"))
            .ok()
            .and_then(|mut table| table.remove("v"))
            .unwrap_or_else(|| toml::Value::String(value.to_owned()));
        let key = key.trim();
        if !setting_names().contains(&key) {
            return Err(CliError::usage(format!(
                "--config {entry}: {}",
                unknown_key(key, false)
            )));
        }
        let mut table = toml::Table::new();
        table.insert(key.to_owned(), value);
        let settings = toml::Value::Table(table)
            .try_into::<FileSettings>()
            .map_err(|error| CliError::usage(format!("--config {entry}: {}", error.message())))?;
        layers.push(Layer {
            source: format!("--config {entry}"),
            settings,
            ignored: Vec::new(),
            why: None,
            policy: CallPolicy::new(),
            left_out: Vec::new(),
        });
    }
    Ok(layers)
}

/// The project's layer: its `.golato/config.toml`, and the rules and hooks of Claude Code's
/// `.claude/settings.json` and `.claude/settings.local.json` beside it, all under the folder's
/// trust; with that trust and the file's profiles. Nothing when none of the files exists.
#[allow(clippy::type_complexity)]
fn project_layer(
    cwd: &Path,
    trusting: Trusting,
) -> Result<Option<(Layer, Result<(), String>, Profiles)>, CliError> {
    let project = project_file(cwd);
    let toml = read(&project, cwd)?;
    let claude_files = [
        cwd.join(".claude/settings.json"),
        cwd.join(".claude/settings.local.json"),
    ];
    let (claude, left_out) = claude_policy(&claude_files, cwd)?;
    let source = match (&toml, &claude) {
        (None, None) => return Ok(None),
        (Some(_), _) => project.display().to_string(),
        (None, Some(_)) => claude_files
            .iter()
            .find(|file| file.exists())
            .unwrap_or(&claude_files[0])
            .display()
            .to_string(),
    };
    let (mut settings, file_profiles, mut policy) = toml.unwrap_or_default();
    policy.extend(claude.unwrap_or_default());
    let trust = project_trust(cwd, &source, &settings, &file_profiles, &policy, trusting)?;
    let ignored = match &trust {
        Ok(()) => Vec::new(),
        Err(_) => {
            let mut ignored = untrusted(&mut settings);
            ignored.extend(policy.untrusted());
            ignored
        }
    };
    let layer = Layer {
        source,
        settings,
        ignored,
        why: trust.clone().err(),
        policy,
        left_out,
    };
    Ok(Some((layer, trust, file_profiles)))
}

/// Claude Code's configuration folder: `CLAUDE_CONFIG_DIR`, else `~/.claude`.
pub(crate) fn claude_home() -> Option<PathBuf> {
    std::env::var_os("CLAUDE_CONFIG_DIR")
        .filter(|dir| !dir.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".claude")))
}

/// The rules and hooks of the Claude Code settings `files` that exist (none: `None`), and what
/// they had that golato leaves out, each naming its file.
fn claude_policy(
    files: &[PathBuf],
    cwd: &Path,
) -> Result<(Option<CallPolicy>, Vec<String>), CliError> {
    let mut policy = None;
    let mut left_out = Vec::new();
    for file in files {
        if std::fs::symlink_metadata(file).is_err() {
            continue;
        }
        let read = policy
            .get_or_insert_with(CallPolicy::new)
            .add_claude_file(file, cwd)
            .map_err(|error| {
                CliError::usage(format!(
                    "{error}; fix the file, or move it aside for golato to run"
                ))
            })?;
        left_out.extend(
            read.into_iter()
                .map(|why| format!("{why} in {}", file.display())),
        );
    }
    Ok((policy, left_out))
}

/// The one line that names what golato left out of a layer's Claude Code settings (a tool, a
/// hook event or field it has no counterpart for), with why.
pub(crate) fn left_out_text(layer: &Layer) -> Option<String> {
    (!layer.left_out.is_empty()).then(|| {
        format!(
            "read Claude Code's settings; golato has no counterpart for {}",
            layer.left_out.join("; ")
        )
    })
}

/// The one line that says what a project's file set but may not, and how to let it.
pub(crate) fn ignored_text(layer: &Layer) -> Option<String> {
    // The person said no to the folder: `resolve` says so in one line.
    if layer.ignored.is_empty() || layer.why.as_deref() == Some(crate::settings::trust::SAID_NO) {
        return None;
    }
    let user = user_file().map_or_else(
        || "your user configuration".to_owned(),
        |path| path.display().to_string(),
    );
    Some(format!(
        "ignored {} from {}: {}. A project's file in a folder not trusted may not loosen the sandbox, approvals or network, start commands, redirect the API key or replace golato's instructions; you can also set them in {user} or pass the flags",
        layer.ignored.join(", "),
        layer.source,
        layer.why.as_deref().unwrap_or("this folder is not trusted"),
    ))
}
