//! Policy in files: allow, ask and deny rules, and command hooks, read from the same TOML the
//! command line reads (`.golato/config.toml`, the user's `config.toml`), and applied through
//! one [`Hook`](crate::hook::Hook).
//!
//! ```toml
//! [rules]
//! allow = ["bash(git status*)", "bash(cargo test:*)", "read"]
//! ask = ["bash(git push:*)"]
//! deny = ["bash(rm -rf*)", "read(**/.env)", "edit(**/.env)"]
//!
//! [[hooks.PostToolUse]]
//! matcher = "edit|write"
//! command = "cargo fmt"
//! timeout = 30
//! ```
//!
//! A rule is `tool` or `tool(pattern)`. A bash pattern is a glob matched against each simple
//! command of the line (`git status && rm -rf ~` is two; `$(…)`, backticks, `bash -c` and
//! wrappers such as `sudo` are looked into); `cmd:*` is a prefix of whole words. A read, edit
//! or write pattern is a path glob, relative to the workspace or absolute (`*` stays in a
//! folder, `**` crosses them); `edit(…)` holds for `write` too. Any other tool (an MCP tool,
//! `github_*`) takes no pattern. A deny beats an ask beats an allow, whichever layer each comes
//! from; what no rule decides falls to the caller's default ([`Approver::default_decision`]).
//!
//! Hooks are [Claude Code's command hooks](command_hook): a hook script written for Claude
//! Code's `PreToolUse` or `PostToolUse` runs unchanged (its matcher may say `Bash` or `bash`).
//!
//! ```no_run
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! let dir = std::path::Path::new("/srv/project");
//! // The project's rules and hooks, as the command line reads them in a trusted folder.
//! let policy = golato::policy::load(dir)?;
//! let (_session, watched) = tokio::sync::watch::channel(golato::policy::HookSession {
//!     cwd: dir.to_owned(),
//!     ..Default::default()
//! });
//! let hook = Arc::new(policy).hook(None, watched);
//! let config = golato::agent::Config { hooks: vec![hook], ..Default::default() };
//! # let _ = config;
//! # Ok(()) }
//! ```

mod claude;
pub mod command_hook;
mod gate;
mod rules;
mod shell;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

pub use command_hook::{CommandHook, HookDecision, HookEvent, HookExit, HookOutput, HookSession};
pub use gate::{Approval, Approver, RAN_WITH_KEY};
pub use rules::{Decision, Rule, Rules, Verdict};

/// Where a rule or a hook was written: a file and its line, or a flag.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Source {
    /// A line of a file.
    File {
        /// The file.
        path: PathBuf,
        /// The line, from 1.
        line: usize,
    },
    /// A command-line flag, a built-in default, or code.
    Named(String),
}

impl Source {
    /// Line `line` of the file at `path`.
    pub fn file(path: impl Into<PathBuf>, line: usize) -> Source {
        Source::File {
            path: path.into(),
            line,
        }
    }

    /// A flag (`--deny`), a default, or code.
    pub fn flag(name: impl Into<String>) -> Source {
        Source::Named(name.into())
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::File { path, line } => write!(f, "{} line {line}", path.display()),
            Source::Named(name) => f.write_str(name),
        }
    }
}

/// A policy file that cannot be used: what is wrong and where.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A rule, a hook or the file's shape is wrong.
    #[error("{at}: {message}")]
    Invalid {
        /// Where.
        at: Source,
        /// What is wrong and what to write instead.
        message: String,
    },
    /// The file cannot be read.
    #[error("cannot read the policy in {path}: {reason}")]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
}

/// How much of a policy file is read at most.
pub const FILE_LIMIT: u64 = 1024 * 1024;

/// What governs tool calls: allow, ask and deny rules and command hooks, from any number of
/// files and flags. (What a command may touch is the sandbox's [`Policy`](crate::sandbox::Policy).)
#[derive(Debug, Clone, Default)]
pub struct CallPolicy {
    /// The allow, ask and deny rules.
    pub rules: Rules,
    /// The command hooks, in the order configured.
    pub hooks: Vec<CommandHook>,
    /// `[durable] safe`: calls a journaled run may run again after an interruption although
    /// their tool runs calls at most once (see
    /// [`SafeToReplay`](crate::journal::SafeToReplay)); held as allow rules.
    pub replay_safe: Rules,
}

#[derive(Debug, Deserialize)]
struct PolicyFile {
    rules: Option<Spanned<RuleLists>>,
    hooks: Option<Spanned<BTreeMap<String, Vec<Spanned<HookEntry>>>>>,
    durable: Option<DurableLists>,
}

/// `[durable]`: what a durable run may do again.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DurableLists {
    #[serde(default)]
    safe: Vec<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleLists {
    #[serde(default)]
    allow: Vec<Spanned<String>>,
    #[serde(default)]
    ask: Vec<Spanned<String>>,
    #[serde(default)]
    deny: Vec<Spanned<String>>,
}

/// One `[[hooks.EVENT]]` entry: a command of its own, or (as Claude Code's settings write
/// them) a matcher with a list of command hooks.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct HookEntry {
    matcher: Option<String>,
    command: Option<String>,
    /// Seconds.
    timeout: Option<f64>,
    hooks: Option<Vec<NestedHook>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NestedHook {
    #[serde(rename = "type")]
    kind: String,
    command: String,
    timeout: Option<f64>,
}

impl HookEntry {
    /// The commands the entry configures, each with its timeout in seconds.
    fn commands(
        self,
        event: HookEvent,
        source: &Source,
    ) -> Result<Vec<(String, Option<f64>)>, Error> {
        let invalid = |message: String| Error::Invalid {
            at: source.clone(),
            message,
        };
        match (self.command, self.hooks) {
            (Some(command), None) => Ok(vec![(command, self.timeout)]),
            (None, Some(nested)) if self.timeout.is_none() => nested
                .into_iter()
                .map(|hook| match hook.kind.as_str() {
                    "command" => Ok((hook.command, hook.timeout)),
                    kind => Err(invalid(format!(
                        "the {event} hook is of type {kind:?}; golato runs type \"command\" hooks"
                    ))),
                })
                .collect(),
            _ => Err(invalid(format!(
                "the {event} hook needs a command (command = \"…\"), or hooks = [{{ type = \"command\", command = \"…\" }}] as Claude Code writes them, not both"
            ))),
        }
    }
}

/// A hook's timeout in seconds as a duration: above 0 and at most a day.
fn seconds(
    timeout: Option<f64>,
    event: HookEvent,
    source: &Source,
) -> Result<Option<Duration>, Error> {
    match timeout {
        None => Ok(None),
        Some(seconds) if seconds.is_finite() && seconds > 0.0 && seconds <= 86_400.0 => {
            Ok(Some(Duration::from_secs_f64(seconds)))
        }
        Some(seconds) => Err(Error::Invalid {
            at: source.clone(),
            message: format!(
                "the {event} hook's timeout {seconds} is not a number of seconds above 0 and at most 86400"
            ),
        }),
    }
}

/// The line (from 1) of byte `offset` in `text`.
fn line_at(text: &str, offset: usize) -> usize {
    let before = text.get(..offset).unwrap_or(text);
    before.matches('\n').count() + 1
}

impl CallPolicy {
    /// No rules, no hooks.
    pub fn new() -> CallPolicy {
        CallPolicy::default()
    }

    /// Adds the `[rules]`, `[hooks]` and `[durable]` tables of a TOML file's `text` (other keys are left to
    /// whoever reads the rest of it); `path` names the file in errors, `cwd` is the workspace
    /// relative path patterns start from.
    ///
    /// # Errors
    /// A table of the wrong shape, a malformed rule or hook, an unknown event: named by file
    /// and line.
    pub fn add_toml(&mut self, text: &str, path: &Path, cwd: &Path) -> Result<(), Error> {
        let at = |offset: usize| Source::file(path, line_at(text, offset));
        let file: PolicyFile = toml::from_str(text).map_err(|error| Error::Invalid {
            at: at(error.span().map_or(0, |span| span.start)),
            message: format!(
                "{}; see the rules and hooks in the README's Policy section",
                error.message().trim()
            ),
        })?;
        if let Some(lists) = file.rules {
            let lists = lists.into_inner();
            for (decision, list) in [
                (Decision::Allow, lists.allow),
                (Decision::Ask, lists.ask),
                (Decision::Deny, lists.deny),
            ] {
                for rule in list {
                    let source = at(rule.span().start);
                    self.rules.add(decision, rule.get_ref(), source, cwd)?;
                }
            }
        }
        for rule in file.durable.map(|durable| durable.safe).unwrap_or_default() {
            let source = at(rule.span().start);
            self.replay_safe
                .add(Decision::Allow, rule.get_ref(), source, cwd)?;
        }
        if let Some(hooks) = file.hooks {
            let table_at = at(hooks.span().start);
            for (event_name, entries) in hooks.into_inner() {
                let event = HookEvent::from_name(&event_name).ok_or_else(|| Error::Invalid {
                    at: table_at.clone(),
                    message: format!(
                        "hooks.{event_name} is not an event; the events are {}",
                        HookEvent::ALL.map(HookEvent::name).join(", ")
                    ),
                })?;
                for entry in entries {
                    let source = at(entry.span().start);
                    let entry = entry.into_inner();
                    let matcher = entry.matcher.clone();
                    let commands = entry.commands(event, &source)?;
                    self.add_hooks(event, matcher.as_deref(), commands, &source)?;
                }
            }
        }
        Ok(())
    }

    /// Adds a hook of `event` for each of `commands` (with its timeout in seconds).
    fn add_hooks(
        &mut self,
        event: HookEvent,
        matcher: Option<&str>,
        commands: Vec<(String, Option<f64>)>,
        source: &Source,
    ) -> Result<(), Error> {
        for (command, timeout) in commands {
            let timeout = seconds(timeout, event, source)?;
            self.hooks.push(CommandHook::new(
                event,
                matcher,
                &command,
                timeout,
                source.clone(),
            )?);
        }
        Ok(())
    }

    /// Reads the `[rules]` and `[hooks]` of the TOML file at `path` (a regular file, at most
    /// [`FILE_LIMIT`] bytes); nothing when it does not exist.
    ///
    /// # Errors
    /// As [`CallPolicy::add_toml`], and when the file cannot be read.
    pub fn add_file(&mut self, path: &Path, cwd: &Path) -> Result<(), Error> {
        let Some(text) = read_regular(path)? else {
            return Ok(());
        };
        self.add_toml(&text, path, cwd)
    }

    /// Takes out what only a trusted file may bring (allow rules, hooks and `[durable] safe`:
    /// they loosen safety or run commands) and returns them, as `golato config` names them.
    pub fn untrusted(&mut self) -> Vec<String> {
        let mut removed = Vec::new();
        self.rules.retain(|rule| {
            let allow = rule.decision == Decision::Allow;
            if allow {
                removed.push(format!("allow {}", rule.text));
            }
            !allow
        });
        removed.extend(
            self.hooks
                .drain(..)
                .map(|hook| format!("hook {} {}", hook.event, hook.command)),
        );
        self.replay_safe.retain(|rule| {
            removed.push(format!("durable safe {}", rule.text));
            false
        });
        removed
    }

    /// Adds `other`'s rules and hooks after this one's.
    pub fn extend(&mut self, other: CallPolicy) {
        self.rules.extend(other.rules);
        self.hooks.extend(other.hooks);
        self.replay_safe.extend(other.replay_safe);
    }

    /// The command hooks for `event` that run for `subject` (a tool's name, a session's
    /// source, a compaction's trigger; `""` for events about neither).
    pub fn hooks_for<'a>(
        &'a self,
        event: HookEvent,
        subject: &'a str,
    ) -> impl Iterator<Item = &'a CommandHook> + 'a {
        self.hooks
            .iter()
            .filter(move |hook| hook.event == event && hook.matches(subject))
    }

    /// Runs the `event` hooks for `subject` one after another, with `fields` added to the
    /// session's input, and gathers what they decide: the first block wins (later hooks do not
    /// run), contexts and notes add up.
    pub async fn fire(
        &self,
        event: HookEvent,
        subject: &str,
        session: &HookSession,
        fields: serde_json::Value,
    ) -> HookDecision {
        let mut gathered = HookDecision::default();
        let input = session.input(event, fields);
        for hook in self.hooks_for(event, subject) {
            let decision = hook.run(&input, &session.cwd).await.decision(hook);
            let join = |into: &mut Option<String>, more: Option<String>| {
                if let Some(more) = more {
                    *into = Some(match into.take() {
                        Some(before) => format!("{before}\n{more}"),
                        None => more,
                    });
                }
            };
            join(&mut gathered.note, decision.note);
            join(&mut gathered.context, decision.context);
            if decision.block.is_some() {
                gathered.block = decision.block;
                break;
            }
        }
        gathered
    }

    /// Each hook as one line: event, matcher, command, timeout, and where it was configured.
    pub fn describe_hooks(&self) -> Vec<String> {
        self.hooks.iter().map(command_hook::describe).collect()
    }
}

/// The text of the regular file at `path`, read without blocking and with a bound; `None` when
/// it does not exist.
fn read_regular(path: &Path) -> Result<Option<String>, Error> {
    use std::io::Read as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let unreadable = |reason: String| Error::Unreadable {
        path: path.to_owned(),
        reason,
    };
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags((rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOCTTY).bits() as i32)
        .open(path)
    {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(unreadable(error.to_string())),
    };
    let metadata = file
        .metadata()
        .map_err(|error| unreadable(error.to_string()))?;
    if !metadata.is_file() {
        return Err(unreadable("it is not a regular file".into()));
    }
    let mut bytes = Vec::new();
    file.take(FILE_LIMIT + 1)
        .read_to_end(&mut bytes)
        .map_err(|error| unreadable(error.to_string()))?;
    if bytes.len() as u64 > FILE_LIMIT {
        return Err(unreadable(format!(
            "it is larger than {FILE_LIMIT} bytes, more than golato reads of a policy"
        )));
    }
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| unreadable("it is not UTF-8 text".into()))
}

/// The rules and hooks of the project in `dir`: its `.golato/config.toml`, relative patterns
/// from `dir`. Loading it is trusting it: its allow rules and hooks apply.
///
/// # Errors
/// As [`CallPolicy::add_file`].
pub fn load(dir: &Path) -> Result<CallPolicy, Error> {
    let mut policy = CallPolicy::new();
    policy.add_file(&dir.join(".golato/config.toml"), dir)?;
    Ok(policy)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn hooks(text: &str) -> Result<Vec<String>, String> {
        let mut policy = CallPolicy::new();
        policy
            .add_toml(text, Path::new("config.toml"), Path::new("/w"))
            .map_err(|error| error.to_string())?;
        Ok(policy.describe_hooks())
    }

    #[test]
    fn hooks_read_flat_or_nested_as_claude_code_writes_them() {
        let flat = hooks("[[hooks.PostToolUse]]\nmatcher = \"Edit\"\ncommand = \"fmt\"\n").unwrap();
        let nested = hooks(
            "[[hooks.PostToolUse]]\nmatcher = \"Edit\"\nhooks = [{ type = \"command\", command = \"fmt\" }, { type = \"command\", command = \"lint\", timeout = 5 }]\n",
        )
        .unwrap();
        assert_eq!(
            flat,
            ["PostToolUse [Edit] fmt (timeout 60 s)  # config.toml line 1"]
        );
        assert_eq!(
            nested,
            [
                "PostToolUse [Edit] fmt (timeout 60 s)  # config.toml line 1",
                "PostToolUse [Edit] lint (timeout 5 s)  # config.toml line 1"
            ]
        );
        for (text, said) in [
            ("[[hooks.Stop]]\nmatcher = \"x\"\n", "needs a command"),
            ("[[hooks.Stop]]\ncommand = \"a\"\nhooks = []\n", "not both"),
            (
                "[[hooks.Stop]]\nhooks = [{ type = \"prompt\", command = \"a\" }]\n",
                "type \"prompt\"",
            ),
            (
                "\n\n[[hooks.Stop]]\ncommand = \"a\"\ntimeout = 0\n",
                "line 3",
            ),
        ] {
            let error = hooks(text).unwrap_err();
            assert!(error.contains(said), "{text}: {error}");
        }
    }
}
