//! Record and replay: `--record FILE` writes what the model said, one script entry per turn,
//! and what the tools returned (`tool_results`, which `Scripted` ignores); `--script FILE`
//! replays the entries and compares the tools' new results with the recorded ones.
//!
//! A line is written (and flushed) as each turn ends, so an interrupted run leaves every turn it
//! finished, the cut-short one included, in the file.

use crate::view::report::Mismatch;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use golato::agent::event::TurnEndEvent;
use golato::message::{AssistantMessage, Content, ToolResultMessage};
use serde_json::Value;

use crate::error::CliError;

/// Writes a run's turns as a script.
#[derive(Debug)]
pub(crate) struct Recorder {
    path: PathBuf,
    file: File,
    /// The prompt, written with the first entry (so a replay needs none).
    prompt: Option<String>,
}

impl Recorder {
    /// Creates (or truncates) the file before the run starts, so a bad path is a usage error.
    /// `prompt` goes with the first entry.
    pub(crate) fn create(path: &Path, prompt: Option<String>) -> Result<Recorder, CliError> {
        let file = File::create(path).map_err(|error| {
            CliError::usage(format!(
                "cannot write the recording to {}: {error}; give --record a path in a writable directory",
                path.display()
            ))
        })?;
        Ok(Recorder {
            path: path.to_owned(),
            file,
            prompt,
        })
    }

    /// Appends the turn as one script entry.
    pub(crate) fn record(&mut self, turn: &TurnEndEvent) -> Result<(), CliError> {
        let mut entry = entry(&turn.message, &turn.tool_results);
        if let (Some(prompt), Value::Object(fields)) = (self.prompt.take(), &mut entry) {
            fields.insert("recorded".into(), serde_json::json!({ "prompt": prompt }));
        }
        let mut line = entry.to_string();
        line.push('\n');
        self.file
            .write_all(line.as_bytes())
            .and_then(|()| self.file.flush())
            .map_err(|error| {
                CliError::Failed(format!(
                    "could not write turn {} to the recording {}: {error}",
                    turn.turn,
                    self.path.display()
                ))
            })
    }
}

/// The script entry of one turn: the assistant message in its serde form, plus the results.
fn entry(message: &AssistantMessage, results: &[ToolResultMessage]) -> Value {
    let mut entry = serde_json::to_value(message).unwrap_or(Value::Null);
    if let (Value::Object(fields), false) = (&mut entry, results.is_empty()) {
        let results = serde_json::to_value(results).unwrap_or(Value::Null);
        fields.insert("tool_results".to_owned(), results);
    }
    entry
}

/// The tool results a script recorded, turn by turn (`None` for an entry without them, such as a
/// hand-written one: nothing to compare).
#[derive(Debug, Default)]
pub(crate) struct Recording {
    turns: Vec<Option<Vec<ToolResultMessage>>>,
    /// The prompt the recording was made with, when it says.
    pub(crate) prompt: Option<String>,
}

impl Recording {
    /// Reads the `tool_results` of each entry of a script (JSON array or JSONL, as `Scripted`
    /// reads it). The entries themselves were checked by `Scripted` already.
    pub(crate) fn parse(text: &str, origin: &Path) -> Result<Recording, CliError> {
        let invalid = |entry: usize, error: String| {
            CliError::usage(format!(
                "script {}, entry {entry}: {error}; fix the file (or re-record it with --record)",
                origin.display()
            ))
        };
        let entries: Vec<(usize, Value)> = if text.trim_start().starts_with('[') {
            let values: Vec<Value> =
                serde_json::from_str(text).map_err(|error| invalid(1, error.to_string()))?;
            values.into_iter().zip(1..).map(|(v, n)| (n, v)).collect()
        } else {
            let mut entries = Vec::new();
            for (line, number) in text.lines().zip(1..) {
                if line.trim().is_empty() {
                    continue;
                }
                let value = serde_json::from_str(line)
                    .map_err(|error| invalid(number, error.to_string()))?;
                entries.push((number, value));
            }
            entries
        };
        let prompt = entries
            .first()
            .and_then(|(_, first)| first["recorded"]["prompt"].as_str())
            .map(str::to_owned);
        let turns = entries
            .into_iter()
            .map(|(number, mut value)| match value.get_mut("tool_results") {
                None => Ok(None),
                Some(results) => serde_json::from_value(results.take())
                    .map(Some)
                    .map_err(|error| invalid(number, format!("tool_results: {error}"))),
            })
            .collect::<Result<_, _>>()?;
        Ok(Recording { turns, prompt })
    }

    /// Compares a replayed turn's results with the recorded ones.
    pub(crate) fn compare(&self, turn: &TurnEndEvent) -> Vec<Mismatch> {
        let Some(Some(recorded)) = turn
            .turn
            .checked_sub(1)
            .and_then(|index| self.turns.get(index))
        else {
            return Vec::new();
        };
        let count = recorded.len().max(turn.tool_results.len());
        (0..count)
            .filter_map(|index| {
                let replayed = turn.tool_results.get(index);
                let difference = match (recorded.get(index), replayed) {
                    (Some(recorded), Some(replayed)) => difference(recorded, replayed)?,
                    (Some(_), None) => "recorded a result, the replay has none".to_owned(),
                    (None, Some(_)) => "the replay has a result the recording lacks".to_owned(),
                    (None, None) => return None,
                };
                let named = replayed.or(recorded.get(index));
                Some(Mismatch {
                    turn: turn.turn,
                    index,
                    call_id: named.map(|r| r.tool_call_id.clone()).unwrap_or_default(),
                    tool_name: named.map(|r| r.tool_name.clone()).unwrap_or_default(),
                    difference,
                })
            })
            .collect()
    }
}

/// How `replayed` differs from `recorded`, or `None` when it does not.
fn difference(recorded: &ToolResultMessage, replayed: &ToolResultMessage) -> Option<String> {
    let kind = |is_error: bool| if is_error { "an error" } else { "a success" };
    if recorded.is_error != replayed.is_error {
        return Some(format!(
            "recorded {}, the replay got {}: {}",
            kind(recorded.is_error),
            kind(replayed.is_error),
            first_line(&replayed.text())
        ));
    }
    if recorded.content == replayed.content {
        return None;
    }
    let (old, new) = (recorded.text(), replayed.text());
    if old == new {
        let images = |content: &[Content]| {
            content
                .iter()
                .filter(|part| matches!(part, Content::Image { .. }))
                .count()
        };
        return Some(format!(
            "the images differ (recorded {}, the replay got {})",
            images(&recorded.content),
            images(&replayed.content)
        ));
    }
    let mut old_lines = old.lines();
    let mut new_lines = new.lines();
    let mut number = 1;
    loop {
        match (old_lines.next(), new_lines.next()) {
            (Some(a), Some(b)) if a == b => number += 1,
            (a, b) => {
                return Some(format!(
                    "line {number}: recorded {:?}, the replay got {:?}",
                    clip(a.unwrap_or("(nothing)")),
                    clip(b.unwrap_or("(nothing)"))
                ))
            }
        }
    }
}

fn first_line(text: &str) -> String {
    clip(text.lines().next().unwrap_or_default())
}

/// At most 80 characters of `text`.
fn clip(text: &str) -> String {
    const LIMIT: usize = 80;
    match text.char_indices().nth(LIMIT) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use golato::message::Content;

    fn result(text: &str, is_error: bool) -> ToolResultMessage {
        ToolResultMessage {
            tool_call_id: "c1".into(),
            tool_name: "bash".into(),
            content: vec![Content::text(text)],
            details: None,
            is_error,
            attempt: None,
        }
    }

    #[test]
    fn the_first_differing_line_is_named() {
        let found = difference(&result("a\nb\nc", false), &result("a\nB\nc", false)).unwrap();
        assert_eq!(found, r#"line 2: recorded "b", the replay got "B""#);
        assert_eq!(difference(&result("a", false), &result("a", false)), None);
        let found = difference(&result("ok", false), &result("boom", true)).unwrap();
        assert_eq!(found, "recorded a success, the replay got an error: boom");
    }

    #[test]
    fn a_recorded_entry_round_trips_through_the_parser() {
        let message =
            AssistantMessage::with_tool_calls([golato::message::ToolCall::new("c1", "bash", "{}")]);
        let line = entry(&message, &[result("out", false)]).to_string();
        let recording = Recording::parse(&line, Path::new("x.jsonl")).unwrap();
        assert_eq!(recording.turns, vec![Some(vec![result("out", false)])]);
        // Scripted reads the same line as the same message.
        let script = golato::generator::Scripted::from_json(&line).unwrap();
        assert_eq!(script.len(), 1);
    }
}
