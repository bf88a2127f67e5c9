//! Command hooks: programs of the user's, run at points of a run with the event as JSON on
//! standard input, whose exit status and output decide, as Claude Code's hooks do.
//!
//! Exit 0 goes on (standard output may hold a JSON decision); exit 2 blocks, and standard error
//! says why; any other status, a signal, a timeout or a hook that cannot start is a note for the
//! user and the run goes on. A hook runs outside any sandbox (it is the user's own code, from a
//! file they trusted), in the working directory, in a process group of its own that is killed
//! whole when it times out.

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use regex::Regex;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWriteExt as _};

use super::{Error, Source};

/// How long a hook may run when its entry names no timeout.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// How much of a hook's standard output, and of its standard error, is kept; the rest is read
/// and dropped, so a hook that floods its output neither blocks nor fills memory.
pub const OUTPUT_LIMIT: usize = 64 * 1024;

/// When a hook runs. The names are Claude Code's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum HookEvent {
    /// Before a tool call runs: it may block it, allow it without a question, ask, or rewrite
    /// its arguments.
    PreToolUse,
    /// After a tool call has its result: it may add to what the model reads.
    PostToolUse,
    /// A prompt is about to be sent: it may block it or add context.
    UserPromptSubmit,
    /// The model has answered and the run would end: exit 2 sends it on with the reason.
    Stop,
    /// A session starts or goes on: it may add context.
    SessionStart,
    /// A session ends.
    SessionEnd,
    /// The transcript is about to be compacted.
    PreCompact,
    /// Something waits for the user (a question on the terminal).
    Notification,
}

impl HookEvent {
    /// Every event, in the order above.
    pub const ALL: [HookEvent; 8] = [
        HookEvent::PreToolUse,
        HookEvent::PostToolUse,
        HookEvent::UserPromptSubmit,
        HookEvent::Stop,
        HookEvent::SessionStart,
        HookEvent::SessionEnd,
        HookEvent::PreCompact,
        HookEvent::Notification,
    ];

    /// The event's name as files and the hook's input write it (`PreToolUse`).
    pub fn name(self) -> &'static str {
        match self {
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::Stop => "Stop",
            HookEvent::SessionStart => "SessionStart",
            HookEvent::SessionEnd => "SessionEnd",
            HookEvent::PreCompact => "PreCompact",
            HookEvent::Notification => "Notification",
        }
    }

    /// The event named `name`.
    pub fn from_name(name: &str) -> Option<HookEvent> {
        HookEvent::ALL
            .into_iter()
            .find(|event| event.name() == name)
    }
}

impl fmt::Display for HookEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One hook: when, for what, which command, for how long, and where it was configured.
#[derive(Debug, Clone)]
pub struct CommandHook {
    /// When it runs.
    pub event: HookEvent,
    /// Which tool calls it runs for (a regex on the whole tool name; golato's names and Claude
    /// Code's, `Bash` for `bash`, both match); every call when `None`. For `SessionStart` it
    /// matches the source (`startup`, `resume`), for `PreCompact` the trigger (`manual`,
    /// `auto`).
    pub matcher: Option<String>,
    matcher_regex: Option<Regex>,
    /// The command, run by `sh -c`.
    pub command: String,
    /// How long it may run.
    pub timeout: Duration,
    /// Where it was configured.
    pub source: Source,
}

/// How a hook's run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookExit {
    /// It exited with this status.
    Code(i32),
    /// A signal ended it.
    Signal(i32),
    /// It ran past its timeout and was killed.
    TimedOut,
    /// It could not be started.
    NotStarted(String),
}

/// What a hook's run gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookOutput {
    /// How it ended.
    pub exit: HookExit,
    /// Its standard output, at most [`OUTPUT_LIMIT`] bytes.
    pub stdout: String,
    /// Its standard error, at most [`OUTPUT_LIMIT`] bytes.
    pub stderr: String,
}

/// The Claude Code name of a golato built-in, which matchers written for Claude Code use.
pub(crate) fn claude_name(tool: &str) -> Option<&'static str> {
    match tool {
        "bash" => Some("Bash"),
        "read" => Some("Read"),
        "edit" => Some("Edit"),
        "write" => Some("Write"),
        _ => None,
    }
}

impl CommandHook {
    /// A hook for `event` running `command`; `matcher` as [`CommandHook::matcher`] says
    /// (`None`, `""` and `"*"` match everything).
    ///
    /// # Errors
    /// The matcher is not a valid regex, the command is empty, or the timeout is zero; the
    /// error names `source`.
    pub fn new(
        event: HookEvent,
        matcher: Option<&str>,
        command: &str,
        timeout: Option<Duration>,
        source: Source,
    ) -> Result<CommandHook, Error> {
        let invalid = |message: String| Error::Invalid {
            at: source.clone(),
            message,
        };
        if command.trim().is_empty() {
            return Err(invalid(format!(
                "the {event} hook has an empty command; give the program to run"
            )));
        }
        if timeout == Some(Duration::ZERO) {
            return Err(invalid(format!(
                "the {event} hook's timeout is 0; give seconds above 0 (the default is {} s)",
                DEFAULT_TIMEOUT.as_secs()
            )));
        }
        let matcher = matcher.filter(|text| !matches!(text.trim(), "" | "*"));
        let matcher_regex = matcher
            .map(|text| {
                Regex::new(&format!("^(?:{text})$")).map_err(|error| {
                    invalid(format!(
                        "the {event} hook's matcher {text:?} is not a regex: {error}"
                    ))
                })
            })
            .transpose()?;
        Ok(CommandHook {
            event,
            matcher: matcher.map(str::to_owned),
            matcher_regex,
            command: command.to_owned(),
            timeout: timeout.unwrap_or(DEFAULT_TIMEOUT),
            source,
        })
    }

    /// Whether it runs for `subject` (a tool's name, a session's source, a compaction's
    /// trigger).
    pub fn matches(&self, subject: &str) -> bool {
        let Some(regex) = &self.matcher_regex else {
            return true;
        };
        regex.is_match(subject) || claude_name(subject).is_some_and(|name| regex.is_match(name))
    }

    /// Runs the command in `cwd` with `input` on its standard input, to its end or its timeout.
    pub async fn run(&self, input: &Value, cwd: &Path) -> HookOutput {
        let started = tokio::process::Command::new("sh")
            .arg("-c")
            .arg(&self.command)
            .current_dir(cwd)
            .env("GOLATO_PROJECT_DIR", cwd)
            // Scripts written for Claude Code find the project there.
            .env("CLAUDE_PROJECT_DIR", cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true)
            .spawn();
        let mut child = match started {
            Ok(child) => child,
            Err(error) => {
                return HookOutput {
                    exit: HookExit::NotStarted(error.to_string()),
                    stdout: String::new(),
                    stderr: String::new(),
                }
            }
        };
        let group = child.id();
        let stdin = child.stdin.take();
        let stdout = child.stdout.take();
        let stderr = child.stderr.take();
        let text = serde_json::to_vec(input).unwrap_or_default();
        let feed = async move {
            if let Some(mut stdin) = stdin {
                // A hook that does not read its input is not an error.
                let _ = stdin.write_all(&text).await;
            }
        };
        let waited = tokio::time::timeout(self.timeout, async {
            let ((), out, err, status) =
                tokio::join!(feed, bounded(stdout), bounded(stderr), child.wait());
            (out, err, status)
        })
        .await;
        match waited {
            Ok((stdout, stderr, status)) => {
                use std::os::unix::process::ExitStatusExt as _;
                let exit = match status {
                    Ok(status) => match (status.code(), status.signal()) {
                        (Some(code), _) => HookExit::Code(code),
                        (None, Some(signal)) => HookExit::Signal(signal),
                        (None, None) => HookExit::Code(-1),
                    },
                    Err(error) => HookExit::NotStarted(error.to_string()),
                };
                HookOutput {
                    exit,
                    stdout,
                    stderr,
                }
            }
            Err(_) => {
                // The whole group: a hook's own children go with it.
                if let Some(group) = group.and_then(|id| rustix::process::Pid::from_raw(id as i32))
                {
                    let _ =
                        rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
                }
                HookOutput {
                    exit: HookExit::TimedOut,
                    stdout: String::new(),
                    stderr: String::new(),
                }
            }
        }
    }
}

/// Reads `pipe` to its end, keeping at most [`OUTPUT_LIMIT`] bytes.
async fn bounded(pipe: Option<impl AsyncRead + Unpin>) -> String {
    let Some(mut pipe) = pipe else {
        return String::new();
    };
    let mut kept = Vec::new();
    let mut buffer = [0u8; 8192];
    loop {
        match pipe.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(count) => {
                let room = OUTPUT_LIMIT.saturating_sub(kept.len());
                kept.extend_from_slice(&buffer[..count.min(room)]);
            }
        }
    }
    String::from_utf8_lossy(&kept).into_owned()
}

/// What a hook's run decides, read as Claude Code reads it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HookDecision {
    /// Exit 2, `decision: "block"`, `permissionDecision: "deny"` or `continue: false`: with the
    /// reason for the model.
    pub block: Option<String>,
    /// `permissionDecision: "allow"` (or the old `decision: "approve"`): no question is asked.
    pub allow: bool,
    /// `permissionDecision: "ask"`: a person must say yes, with the reason shown.
    pub ask: Option<String>,
    /// `updatedInput`: the call's arguments to use instead.
    pub updated_input: Option<Value>,
    /// `additionalContext`, or for `UserPromptSubmit` and `SessionStart` plain standard output:
    /// text for the model.
    pub context: Option<String>,
    /// For the user: a hook that failed, timed out or printed something it should not
    /// (`systemMessage` too).
    pub note: Option<String>,
}

impl HookOutput {
    /// What the run of `hook` decides. A block's reason ends by naming the hook and where it is
    /// configured, so that whoever reads the call's result knows what stopped it.
    pub fn decision(&self, hook: &CommandHook) -> HookDecision {
        let name = format!(
            "the {} hook `{}` ({})",
            hook.event, hook.command, hook.source
        );
        let mut decision = self.judged(hook, &name);
        if let Some(reason) = &mut decision.block {
            if !reason.contains(&name) {
                reason.push_str(&format!("\n(blocked by {name})"));
            }
        }
        decision
    }

    fn judged(&self, hook: &CommandHook, name: &str) -> HookDecision {
        let mut decision = HookDecision::default();
        match &self.exit {
            HookExit::Code(0) => {}
            HookExit::Code(2) => {
                let reason = self.stderr.trim();
                decision.block = Some(if reason.is_empty() {
                    format!("{name} blocked this without a reason")
                } else {
                    reason.to_owned()
                });
                return decision;
            }
            HookExit::Code(code) => {
                decision.note = Some(format!(
                    "{name} failed (exit {code}){}; going on",
                    said(&self.stderr)
                ));
                return decision;
            }
            HookExit::Signal(signal) => {
                decision.note = Some(format!(
                    "{name} was ended by signal {signal}{}; going on",
                    said(&self.stderr)
                ));
                return decision;
            }
            HookExit::TimedOut => {
                decision.note = Some(format!(
                    "{name} ran past its {} s timeout and was killed; going on",
                    hook.timeout.as_secs_f64()
                ));
                return decision;
            }
            HookExit::NotStarted(error) => {
                decision.note = Some(format!("{name} could not start: {error}; going on"));
                return decision;
            }
        }
        let stdout = self.stdout.trim();
        if stdout.is_empty() {
            return decision;
        }
        let Ok(Value::Object(json)) = serde_json::from_str::<Value>(stdout) else {
            if matches!(
                hook.event,
                HookEvent::UserPromptSubmit | HookEvent::SessionStart
            ) {
                decision.context = Some(stdout.to_owned());
            } else if stdout.starts_with('{') {
                decision.note = Some(format!(
                    "{name} printed output that is not a JSON object; it was ignored"
                ));
            }
            return decision;
        };
        let text = |value: Option<&Value>| value.and_then(Value::as_str).map(str::to_owned);
        let specific = json.get("hookSpecificOutput");
        let field = |key: &str| specific.and_then(|specific| specific.get(key));
        let reason = text(json.get("reason"));
        if json.get("continue") == Some(&Value::Bool(false)) {
            decision.block = Some(
                text(json.get("stopReason"))
                    .or(reason.clone())
                    .unwrap_or_else(|| format!("{name} stopped this")),
            );
        }
        match json.get("decision").and_then(Value::as_str) {
            Some("block") => {
                decision.block = Some(reason.unwrap_or_else(|| format!("{name} blocked this")));
            }
            Some("approve") => decision.allow = true,
            _ => {}
        }
        let why = text(field("permissionDecisionReason"));
        match field("permissionDecision").and_then(Value::as_str) {
            Some("deny") => {
                decision.block = Some(why.unwrap_or_else(|| format!("{name} denied this call")));
            }
            Some("allow") => decision.allow = true,
            Some("ask") => {
                decision.ask = Some(why.unwrap_or_else(|| format!("{name} asks")));
            }
            _ => {}
        }
        decision.updated_input = field("updatedInput").cloned();
        decision.context = text(field("additionalContext"));
        decision.note = text(json.get("systemMessage"));
        decision
    }
}

/// `: what it said` when a hook wrote to standard error.
fn said(stderr: &str) -> String {
    let stderr = stderr.trim();
    if stderr.is_empty() {
        return String::new();
    }
    let cut: String = stderr.chars().take(500).collect();
    format!(": {cut}")
}

/// Where a hook configured in a file runs from, shown in `golato hooks`.
pub(crate) fn describe(hook: &CommandHook) -> String {
    format!(
        "{} {}{} (timeout {} s)  # {}",
        hook.event,
        hook.matcher
            .as_deref()
            .map_or_else(String::new, |matcher| format!("[{matcher}] ")),
        hook.command,
        hook.timeout.as_secs_f64(),
        hook.source
    )
}

/// The data of a run every hook's input carries.
#[derive(Debug, Clone, Default)]
pub struct HookSession {
    /// The session's ID (empty when none is saved).
    pub session_id: String,
    /// Where the transcript is saved (empty when it is not).
    pub transcript_path: PathBuf,
    /// The working directory.
    pub cwd: PathBuf,
}

impl HookSession {
    /// The input of an `event` hook: the session's fields, the event's name, and `fields`.
    pub fn input(&self, event: HookEvent, fields: Value) -> Value {
        let mut input = serde_json::json!({
            "session_id": self.session_id,
            "transcript_path": self.transcript_path,
            "cwd": self.cwd,
            "hook_event_name": event.name(),
        });
        if let (Value::Object(input), Value::Object(fields)) = (&mut input, fields) {
            input.extend(fields);
        }
        input
    }
}
