//! What a `task` call's result says besides the child's answer: the files it changed with
//! write and edit, how many commands it ran, and the answer cut to a bound.

use super::MAX_ANSWER_BYTES;
use crate::message::Message;

/// Most changed files listed in a call's result.
const MAX_CHANGES_LISTED: usize = 50;

/// What a child did, from its transcript: the files its writes and edits changed, and how
/// many commands it ran.
pub(super) struct Report {
    changed: Vec<String>,
    commands: usize,
}

impl Report {
    pub(super) fn of(messages: &[Message]) -> Report {
        let succeeded = |id: &str| {
            messages.iter().any(|message| {
                matches!(message, Message::ToolResult(result)
                    if result.tool_call_id == id && !result.is_error)
            })
        };
        let mut report = Report {
            changed: Vec::new(),
            commands: 0,
        };
        for message in messages {
            let Message::Assistant(answer) = message else {
                continue;
            };
            for call in &answer.tool_calls {
                match call.name.as_str() {
                    "write" | "edit" if succeeded(&call.id) => {
                        let path = serde_json::from_str::<serde_json::Value>(&call.arguments)
                            .ok()
                            .and_then(|arguments| {
                                arguments.get("path")?.as_str().map(str::to_owned)
                            });
                        if let Some(path) = path.filter(|path| !report.changed.contains(path)) {
                            report.changed.push(path);
                        }
                    }
                    "bash" => report.commands += 1,
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
        if !self.changed.is_empty() {
            let listed = &self.changed[..self.changed.len().min(MAX_CHANGES_LISTED)];
            tail.push_str(&format!(
                "\n\n[The subagent changed {} file(s) with write and edit: {}{}]",
                self.changed.len(),
                listed.join(", "),
                if self.changed.len() > listed.len() {
                    ", …"
                } else {
                    ""
                }
            ));
        }
        if self.commands > 0 {
            tail.push_str(&format!(
                "\n[It ran {} bash command(s); what they changed is not listed]",
                self.commands
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
