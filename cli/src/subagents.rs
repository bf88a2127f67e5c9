//! `--tools …,task`: the command line's subagent tool, and where its children's transcripts
//! are kept (beside the parent's session, removed with it).

use std::io::Write as _;
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use golato::generator::{Generator, Model};
use golato::hook::Hook;
use golato::policy::HookSession;
use golato::subagent::{self, ChildTranscript, TOOL_NAME};
use golato::Tool;
use serde_json::json;

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
    pub(crate) session: tokio::sync::watch::Receiver<HookSession>,
}

/// The `task` tool for a run with `parent`'s generator, model, tools, instructions and hooks
/// (so the sandbox, rules and approvals of the parent hold for every child).
pub(crate) fn tool(args: &AgentArgs, parent: Parent<'_>) -> Result<Tool, CliError> {
    let session = parent.session;
    subagent::tool(subagent::Config {
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
        on_transcript: Some(Arc::new(move |child: &ChildTranscript<'_>| {
            let transcript = session.borrow().transcript_path.clone();
            if transcript.as_os_str().is_empty() {
                return;
            }
            if let Err(error) = save(&transcript, child) {
                eprintln!(
                    "golato: the transcript of subagent {} is not saved: {error}",
                    child.path.join("/")
                );
            }
        })),
        ..Default::default()
    })
    .map_err(|error| CliError::Failed(error.to_string()))
}

/// The folder of a session's subagent transcripts.
pub(crate) fn folder(session: &Path) -> PathBuf {
    session.with_extension("tasks")
}

/// Writes a child's transcript as `FOLDER/ID[-ID…].jsonl`: a first line describing it, then
/// one message a line (whole, or not at all: written aside, then renamed in).
fn save(session: &Path, child: &ChildTranscript<'_>) -> std::io::Result<()> {
    let folder = folder(session);
    std::fs::create_dir_all(&folder)?;
    let name: Vec<String> = child.path.iter().map(|id| file_safe(id)).collect();
    let path = folder.join(format!("{}.jsonl", name.join("-")));
    let mut text = json!({
        "golato_subagent": 1,
        "path": child.path,
        "description": child.description,
        "error": child.error,
    })
    .to_string();
    text.push('\n');
    for message in child.messages {
        text.push_str(&json!({ "message": message }).to_string());
        text.push('\n');
    }
    let aside = path.with_extension("jsonl.new");
    let mut file = std::fs::File::create(&aside)?;
    file.write_all(text.as_bytes())?;
    file.sync_data()?;
    std::fs::rename(&aside, &path)
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
