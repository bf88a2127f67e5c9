//! What a `task` call's result says besides the child's answer: the files it changed with
//! write, edit and captured commands, how many commands ran uncaptured, and the answer cut to
//! a bound.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::MAX_ANSWER_BYTES;
use crate::message::{Message, ToolResultMessage};

/// Most changed files listed in a call's result.
const MAX_CHANGES_LISTED: usize = 50;

/// What a child did, from its transcript: the files its writes and edits changed, the files
/// its captured commands changed (bash in the sandbox with checkpoints: its result's details
/// list them), and how many commands ran uncaptured.
pub(super) struct Report {
    edited: Listed,
    by_commands: Listed,
    captured: usize,
    uncaptured: usize,
}

/// Paths in the order first seen, each once.
#[derive(Default)]
struct Listed {
    paths: Vec<String>,
    seen: HashSet<String>,
}

impl Listed {
    fn add(&mut self, path: &str) {
        if self.seen.insert(path.to_owned()) {
            self.paths.push(path.to_owned());
        }
    }

    /// The first [`MAX_CHANGES_LISTED`] paths, comma-separated, `…` after them if there are more.
    fn names(&self) -> String {
        let listed = &self.paths[..self.paths.len().min(MAX_CHANGES_LISTED)];
        let more = match self.paths.len() > listed.len() {
            true => ", …",
            false => "",
        };
        format!("{}{more}", listed.join(", "))
    }
}

impl Report {
    pub(super) fn of(messages: &[Message]) -> Report {
        let results: HashMap<&str, &ToolResultMessage> = messages
            .iter()
            .filter_map(|message| match message {
                Message::ToolResult(result) => Some((result.tool_call_id.as_str(), result)),
                _ => None,
            })
            .collect();
        let mut report = Report {
            edited: Listed::default(),
            by_commands: Listed::default(),
            captured: 0,
            uncaptured: 0,
        };
        for message in messages {
            let Message::Assistant(answer) = message else {
                continue;
            };
            for call in &answer.tool_calls {
                let result = results.get(call.id.as_str());
                match call.name.as_str() {
                    "write" | "edit" if result.is_some_and(|result| !result.is_error) => {
                        let path = serde_json::from_str::<Value>(&call.arguments)
                            .ok()
                            .and_then(|arguments| {
                                arguments.get("path")?.as_str().map(str::to_owned)
                            });
                        if let Some(path) = path {
                            report.edited.add(&path);
                        }
                    }
                    "bash" => {
                        let details = result.and_then(|result| result.details.as_ref());
                        match crate::builtin::captured_changes(details) {
                            Some(changes) => {
                                report.captured += 1;
                                for change in changes {
                                    report.by_commands.add(&change.path.display().to_string());
                                }
                            }
                            None => report.uncaptured += 1,
                        }
                    }
                    _ => {}
                }
            }
        }
        report
    }

    pub(super) fn with_answer(&self, answer: &str) -> String {
        format!("{}{}", cut(answer), self.tail())
    }

    /// The lines after the answer: what changed.
    pub(super) fn tail(&self) -> String {
        let mut tail = String::new();
        if !self.edited.paths.is_empty() {
            tail.push_str(&format!(
                "\n\n[The subagent changed {} file(s) with write and edit: {}]",
                self.edited.paths.len(),
                self.edited.names()
            ));
        }
        if !self.by_commands.paths.is_empty() {
            let gap = if tail.is_empty() { "\n\n" } else { "\n" };
            tail.push_str(&format!(
                "{gap}[Its {} captured bash command(s) changed {} file(s): {}]",
                self.captured,
                self.by_commands.paths.len(),
                self.by_commands.names()
            ));
        }
        if self.uncaptured > 0 {
            tail.push_str(&format!(
                "\n[It ran {} bash command(s) outside the sandbox's capture; what they changed is not listed]",
                self.uncaptured
            ));
        }
        tail
    }
}

/// `text` cut to [`MAX_ANSWER_BYTES`] on a character boundary, with a note.
pub(super) fn cut(text: &str) -> String {
    if text.len() <= MAX_ANSWER_BYTES {
        return text.to_owned();
    }
    let mut end = MAX_ANSWER_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n[… the answer was cut at {MAX_ANSWER_BYTES} of its {} bytes]",
        &text[..end],
        text.len()
    )
}
