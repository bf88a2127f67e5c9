//! The transcripts of a session's subagents (`SESSION.tasks/`), written as their events arrive.

use golato::agent::Event;
use golato::message::Message;
use golato::subagent::TOOL_NAME;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};

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
        // A new file each time, never another child's: a name already there (a call ID the
        // model used again in a later prompt) gets a number.
        let name = file_name(&path);
        let mut attempt = 1;
        let file = loop {
            let numbered = match attempt {
                1 => name.clone(),
                n => format!("{}.{n}.jsonl", name.trim_end_matches(".jsonl")),
            };
            match std::fs::OpenOptions::new()
                .create_new(true)
                .append(true)
                .open(folder.join(numbered))
            {
                Err(error)
                    if error.kind() == std::io::ErrorKind::AlreadyExists && attempt < 1000 =>
                {
                    attempt += 1;
                }
                opened => break opened?,
            }
        };
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

/// The file of the child at `path` (its task calls' IDs from the parent down): the IDs made
/// safe and joined with `-` when that names the path exactly (`call_1-call_2.jsonl`); else
/// (an ID changed to be safe, `x.1` and `x_1`; a `-` in an ID; a name too long, as a deep
/// nesting makes) a shortened name with a hash of the exact path, so that distinct children
/// never share a file and no name passes the file system's 255 bytes.
fn file_name(path: &[String]) -> String {
    let safe: Vec<String> = path.iter().map(|id| file_safe(id)).collect();
    let joined = safe.join("-");
    let exact = path
        .iter()
        .zip(&safe)
        .all(|(id, safe)| id == safe && !id.contains('-'));
    if exact && joined.len() <= 120 {
        return format!("{joined}.jsonl");
    }
    // FNV-1a over the IDs, each ended by a 0 byte: stable across versions, unlike std's hasher.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in path.iter().flat_map(|id| id.bytes().chain([0])) {
        hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
    }
    let prefix: String = joined.chars().take(100).collect();
    format!("{prefix}-{hash:016x}.jsonl")
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

    #[test]
    fn distinct_children_never_share_a_file_and_names_stay_short() {
        let name =
            |ids: &[&str]| file_name(&ids.iter().map(|id| (*id).to_owned()).collect::<Vec<_>>());
        assert_eq!(name(&["call_1", "call_2"]), "call_1-call_2.jsonl");
        assert_ne!(name(&["x.1"]), name(&["x_1"]));
        assert_ne!(name(&["a-b"]), name(&["a", "b"]));
        let deep: Vec<String> = (0..100).map(|n| format!("call_{n:060}")).collect();
        let long = file_name(&deep);
        assert!(long.len() < 255, "{}", long.len());
        let mut other = deep;
        other[99].push('x');
        assert_ne!(file_name(&other), long);
    }
}
