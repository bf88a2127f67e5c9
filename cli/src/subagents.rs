//! `--tools …,task`: the command line's subagent tool, and where its children's transcripts
//! are kept (beside the parent's session, removed with it).

use std::io::Write as _;
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use std::collections::HashMap;

use golato::agent::Event;
use golato::generator::{Generator, Model};
use golato::hook::Hook;
use golato::message::Message;
use golato::subagent::{self, TOOL_NAME};
use golato::Tool;
use serde_json::{json, Value};

use crate::args::AgentArgs;
use crate::CliError;

/// Whether `--tools` names `task` (and `--exclude` does not): subagents are opt-in.
pub(crate) fn wanted(args: &AgentArgs) -> bool {
    args.tools
        .as_ref()
        .is_some_and(|names| names.iter().any(|name| name == TOOL_NAME))
        && !args.exclude.iter().any(|name| name == TOOL_NAME)
}

/// `names` without `task`, which is not a built-in.
pub(crate) fn without_task(names: &[String]) -> Vec<String> {
    names
        .iter()
        .filter(|name| *name != TOOL_NAME)
        .cloned()
        .collect()
}

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
    args: &AgentArgs,
    parent: Parent<'_>,
    runner: Option<Arc<dyn subagent::Runner>>,
) -> subagent::Config {
    subagent::Config {
        generator: Some(parent.generator),
        model: parent.model,
        tools: parent.tools.to_vec(),
        system_prompt: parent.system_prompt,
        hooks: parent.hooks,
        max_depth: args
            .task_depth
            .map_or(subagent::DEFAULT_MAX_DEPTH, NonZeroUsize::get),
        max_turns: args.max_turns.map(usize::from),
        max_parallel_calls: args.max_parallel,
        tool_timeout: args.tool_timeout,
        max_budget: crate::run::budget(args),
        runner,
        ..Default::default()
    }
}

/// The `task` tool of `config`.
pub(crate) fn tool(config: subagent::Config) -> Result<Tool, CliError> {
    subagent::tool(config).map_err(|error| CliError::Failed(error.to_string()))
}

/// The folder of a session's subagent transcripts.
pub(crate) fn folder(session: &Path) -> PathBuf {
    session.with_extension("tasks")
}

/// The transcripts of a session's subagents, written as their events arrive: each child's
/// file (`FOLDER/ID[-ID…].jsonl`) gets a first line describing it, its prompt, then each of its
/// answers, tool results and joined messages, synced one by one as the session's own lines
/// are, so a golato killed mid-child keeps what the child did so far.
#[derive(Debug, Default)]
pub(crate) struct Transcripts {
    files: HashMap<Vec<String>, std::fs::File>,
    /// Why writing stopped, told once.
    failed: bool,
}

impl Transcripts {
    /// Saves what `event` adds to a child's transcript, for the session at `session`: a
    /// `task` call's start (of this run, or of a child) begins a child's file.
    pub(crate) fn save_event(&mut self, session: &Path, event: &Event) {
        let (path, event) = match event {
            Event::Subagent(nested) => (nested.path.clone(), &*nested.event),
            Event::ToolExecutionStart(_) => (Vec::new(), event),
            _ => return,
        };
        let written = match event {
            Event::ToolExecutionStart(start) if start.call.name == TOOL_NAME => {
                let mut child = path;
                child.push(start.call.id.clone());
                self.begin(session, child, &start.call.arguments)
            }
            Event::MessageEnd(end) if !path.is_empty() => self.line(
                &path,
                &json!({ "message": Message::Assistant(end.message.clone()) }),
            ),
            Event::ToolExecutionEnd(end) if !path.is_empty() => self.line(
                &path,
                &json!({ "message": Message::ToolResult(end.result.clone()) }),
            ),
            Event::UserMessage(joined) if !path.is_empty() => self.line(
                &path,
                &json!({ "message": Message::User(joined.message.clone()) }),
            ),
            Event::RunEnd(end) if !path.is_empty() => {
                let written = self.line(&path, &json!({ "end": { "error": end.error } }));
                self.files.remove(&path);
                written
            }
            _ => Ok(()),
        };
        if let Err(error) = written {
            if !self.failed {
                self.failed = true;
                eprintln!("golato: a subagent's transcript is not saved: {error}");
            }
        }
    }

    fn begin(&mut self, session: &Path, path: Vec<String>, arguments: &str) -> std::io::Result<()> {
        let arguments: Value = serde_json::from_str(arguments).unwrap_or(Value::Null);
        let folder = folder(session);
        std::fs::create_dir_all(&folder)?;
        let name: Vec<String> = path.iter().map(|id| file_safe(id)).collect();
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(folder.join(format!("{}.jsonl", name.join("-"))))?;
        self.files.insert(path.clone(), file);
        self.line(
            &path,
            &json!({
                "golato_subagent": 1,
                "path": path,
                "description": arguments["description"],
            }),
        )?;
        let prompt = arguments["prompt"].as_str().unwrap_or_default();
        self.line(
            &path,
            &json!({ "message": Message::User(golato::message::UserMessage::new(prompt)) }),
        )
    }

    fn line(&mut self, path: &[String], value: &Value) -> std::io::Result<()> {
        let Some(file) = self.files.get_mut(path) else {
            return Ok(());
        };
        let mut line = value.to_string();
        line.push('\n');
        file.write_all(line.as_bytes())?;
        file.sync_data()
    }
}

/// A call ID as a file name: letters, digits, `_` and `-` kept, anything else `_`, at most 64
/// characters (IDs come from the provider).
fn file_safe(id: &str) -> String {
    let safe: String = id
        .chars()
        .take(64)
        .map(
            |c| match c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                true => c,
                false => '_',
            },
        )
        .collect();
    match safe.is_empty() {
        true => "call".to_owned(),
        false => safe,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn call_ids_become_safe_file_names() {
        assert_eq!(file_safe("call_AbC-1"), "call_AbC-1");
        assert_eq!(file_safe("../../etc/passwd"), "______etc_passwd");
        assert_eq!(file_safe(""), "call");
        assert_eq!(file_safe(&"x".repeat(500)).len(), 64);
    }
}
