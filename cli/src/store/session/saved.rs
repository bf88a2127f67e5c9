//! Reading sessions back: a saved session with its transcript (calls a stop cut off, steps in
//! call order), every session of the data directory, the one an ID or `--continue` names, and
//! a session cut back to before a prompt (undo).

use std::path::{Path, PathBuf};

use golato::message::{Message, StopReason, ToolCall};
use serde_json::{json, Value};

use super::*;
use crate::error::CliError;

/// A saved session, read back.
#[derive(Debug)]
pub(crate) struct Saved {
    pub(crate) header: Header,
    pub(crate) path: PathBuf,
    /// The transcript, tool results in their calls' order, a last answer cut short dropped.
    pub(crate) transcript: Vec<Message>,
    /// The last compaction, when it still fits the transcript.
    pub(crate) summary: Option<golato::agent::compaction::Summary>,
    /// When it was last written.
    pub(crate) modified: SystemTime,
    /// Its size when it was read, in bytes.
    pub(super) length: u64,
}

/// A session that could not be read: why, and what is known of it.
#[derive(Debug)]
pub(crate) struct Unreadable {
    pub(crate) error: CliError,
    /// Boxed: an error's size is kept small (clippy's `result_large_err`).
    pub(crate) header: Option<Box<Header>>,
    pub(crate) modified: SystemTime,
}

impl Unreadable {
    fn new(path: &Path, modified: SystemTime, why: String, header: Option<Header>) -> Unreadable {
        Unreadable {
            error: CliError::Failed(format!(
                "the session {} cannot be read: {why}",
                path.display()
            )),
            header: header.map(Box::new),
            modified,
        }
    }
}

impl Saved {
    /// Reads the session file at `path`.
    pub(crate) fn read(path: &Path) -> Result<Saved, CliError> {
        Saved::read_judged(path).map_err(|unreadable| unreadable.error)
    }

    fn read_judged(path: &Path) -> Result<Saved, Unreadable> {
        let modified = std::fs::metadata(path)
            .and_then(|metadata| metadata.modified())
            .unwrap_or(UNIX_EPOCH);
        let bytes = crate::bounded::read(path, crate::bounded::SESSION_LIMIT)
            .map_err(|why| Unreadable::new(path, modified, why.to_string(), None))?;
        Saved::from_bytes(path, &bytes, modified)
    }

    /// The session a file's `bytes` hold; `path` and `modified` are the file's.
    pub(crate) fn from_bytes(
        path: &Path,
        bytes: &[u8],
        modified: SystemTime,
    ) -> Result<Saved, Unreadable> {
        let id = path
            .file_stem()
            .map(|stem| stem.to_string_lossy().into_owned())
            .unwrap_or_default();
        let unreadable =
            |why: String, header: Option<Header>| Unreadable::new(path, modified, why, header);
        let judged = file::lines(bytes);
        let mut header: Header = judged
            .header
            .and_then(|header| serde_json::from_value(header).ok())
            .ok_or_else(|| unreadable("its first line is not a golato session's".into(), None))?;
        if header.golato_session != FORMAT {
            return Err(unreadable(
                format!(
                    "it is of format {}, this golato reads {FORMAT}",
                    header.golato_session
                ),
                Some(header),
            ));
        }
        let damaged = |line: usize, header: Header| {
            Unreadable {
            error: CliError::Failed(format!(
                "the session {id} is damaged at line {line} of {} (not a step golato wrote); `golato sessions repair {id}` keeps the steps before it and sets the rest aside, or start a new session",
                path.display()
            )),
            header: Some(Box::new(header)),
            modified,
        }
        };
        if let Some(line) = judged.damaged {
            return Err(damaged(line, header));
        }
        let mut steps = Vec::new();
        let mut summary = None;
        for (line, step) in judged.steps {
            if let Some(compaction) = step.get("compaction") {
                summary = serde_json::from_value(compaction.clone()).ok();
                continue;
            }
            // A note of what `golato undo` took back, a reviewer's decision: for people, not
            // the model.
            if step.get("undo").is_some() || step.get("review").is_some() {
                continue;
            }
            // The model chosen with `/model`: the session goes on with the last one.
            if let Some(model) = step.get("model").and_then(serde_json::Value::as_str) {
                header.model = Some(model.to_owned());
                continue;
            }
            match serde_json::from_value::<Message>(step["message"].clone()) {
                Ok(message) => steps.push(message),
                Err(_) => return Err(damaged(line, header)),
            }
        }
        let transcript = in_call_order(steps);
        Ok(Saved {
            header,
            path: path.to_owned(),
            summary: summary
                .filter(|summary: &golato::agent::compaction::Summary| summary.fits(&transcript)),
            transcript,
            modified,
            length: bytes.len() as u64,
        })
    }

    /// The first prompt's text.
    pub(crate) fn first_prompt(&self) -> String {
        self.transcript
            .iter()
            .find_map(|message| match message {
                Message::User(user) => Some(user.text()),
                _ => None,
            })
            .unwrap_or_default()
    }

    /// Assistant messages, one per turn.
    pub(crate) fn turns(&self) -> usize {
        self.transcript
            .iter()
            .filter(|message| matches!(message, Message::Assistant(_)))
            .count()
    }

    /// Gives the last message's calls that have no result (the run stopped while they ran) an
    /// error result saying so: a new prompt goes on from there (without one, they run again).
    pub(crate) fn close_cut_off_calls(&mut self) -> Vec<Message> {
        let Some(last_assistant) = self
            .transcript
            .iter()
            .rposition(|message| matches!(message, Message::Assistant(_)))
        else {
            return Vec::new();
        };
        let Message::Assistant(assistant) = &self.transcript[last_assistant] else {
            return Vec::new();
        };
        let answered: Vec<&str> = self.transcript[last_assistant..]
            .iter()
            .filter_map(|message| match message {
                Message::ToolResult(result) => Some(result.tool_call_id.as_str()),
                _ => None,
            })
            .collect();
        let closing: Vec<Message> = assistant
            .tool_calls
            .iter()
            .filter(|call| !answered.contains(&call.id.as_str()))
            .map(|call| {
                Message::ToolResult(golato::message::ToolResultMessage {
                    tool_call_id: call.id.clone(),
                    tool_name: call.name.clone(),
                    content: vec![golato::message::Content::text(
                        "This call did not finish: the run was stopped while it ran (Ctrl-C, a kill or a crash). It may have done part of its work.",
                    )],
                    details: None,
                    is_error: true,
                    attempt: None,
                })
            })
            .collect();
        // Where the results belong: right after the calls' other results.
        let at = self.transcript[last_assistant + 1..]
            .iter()
            .position(|message| !matches!(message, Message::ToolResult(_)))
            .map_or(self.transcript.len(), |offset| last_assistant + 1 + offset);
        self.transcript.splice(at..at, closing.iter().cloned());
        closing
    }

    /// Whether the model has answered and the session needs a new prompt to go on.
    pub(crate) fn answered(&self) -> bool {
        matches!(self.transcript.last(), Some(Message::Assistant(last)) if last.tool_calls.is_empty())
    }
}

/// Steps as saved (tool results in the order they finished; a steering message when it was
/// sent) as a transcript: each assistant message's results in its calls' order, then the
/// messages sent while they ran (where the run put them); a last answer cut short (cancelled,
/// failed) without tool calls dropped, so going on asks again.
fn in_call_order(steps: Vec<Message>) -> Vec<Message> {
    let mut transcript: Vec<Message> = Vec::with_capacity(steps.len());
    let mut results: Vec<golato::message::ToolResultMessage> = Vec::new();
    let mut waiting: Vec<Message> = Vec::new();
    let mut order: Vec<String> = Vec::new();
    let flush = |transcript: &mut Vec<Message>,
                 results: &mut Vec<golato::message::ToolResultMessage>,
                 waiting: &mut Vec<Message>,
                 order: &[String]| {
        results.sort_by_key(|result| {
            order
                .iter()
                .position(|id| *id == result.tool_call_id)
                .unwrap_or(usize::MAX)
        });
        transcript.extend(results.drain(..).map(Message::ToolResult));
        transcript.append(waiting);
    };
    for step in steps {
        match step {
            Message::ToolResult(result) => results.push(result),
            // Sent while the batch ran: it joins after the batch's results.
            Message::User(user) if results.len() < order.len() => {
                waiting.push(Message::User(user));
            }
            other => {
                flush(&mut transcript, &mut results, &mut waiting, &order);
                order = match &other {
                    Message::Assistant(assistant) => assistant
                        .tool_calls
                        .iter()
                        .map(|call| call.id.clone())
                        .collect(),
                    _ => Vec::new(),
                };
                transcript.push(other);
            }
        }
    }
    flush(&mut transcript, &mut results, &mut waiting, &order);
    if let Some(Message::Assistant(last)) = transcript.last() {
        if last.tool_calls.is_empty()
            && matches!(last.stop_reason, StopReason::Aborted | StopReason::Error)
        {
            transcript.pop();
        }
    }
    transcript
}

/// Every saved session, newest first, and the ones that could not be read.
pub(crate) fn all() -> Result<(Vec<Saved>, Vec<Unreadable>), CliError> {
    let dir = directory()?;
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Ok((Vec::new(), Vec::new()))
        }
        Err(error) => {
            return Err(CliError::Failed(format!(
                "could not read the sessions directory {}: {error}",
                dir.display()
            )))
        }
    };
    let (mut sessions, mut unreadable): (Vec<Saved>, Vec<Unreadable>) = (Vec::new(), Vec::new());
    for path in entries.flatten().map(|entry| entry.path()) {
        if path
            .extension()
            .is_some_and(|extension| extension == "jsonl")
        {
            match Saved::read_judged(&path) {
                Ok(saved) => sessions.push(saved),
                Err(problem) => unreadable.push(problem),
            }
        }
    }
    sessions.sort_by_key(|saved| std::cmp::Reverse(saved.modified));
    Ok((sessions, unreadable))
}

/// The session named `id`, or the newest one (in `cwd` when given). A newer session that could
/// not be read is an error, not a reason to go on with an older one.
pub(crate) fn find(id: Option<&str>, cwd: Option<&Path>) -> Result<Saved, CliError> {
    if let Some(id) = id {
        let (_, path) = named(id)?;
        return Saved::read(&path);
    }
    let cwd = cwd.map(|cwd| cwd.canonicalize().unwrap_or_else(|_| cwd.to_owned()));
    let here = |header: Option<&Header>| {
        cwd.as_ref()
            .is_none_or(|cwd| header.is_some_and(|header| header.cwd == *cwd))
    };
    let (sessions, unreadable) = all()?;
    let found = sessions.into_iter().find(|saved| here(Some(&saved.header)));
    if let Some(problem) = unreadable
        .into_iter()
        .filter(|problem| here(problem.header.as_deref()))
        .filter(|problem| {
            found
                .as_ref()
                .is_none_or(|found| problem.modified > found.modified)
        })
        .max_by_key(|problem| problem.modified)
    {
        return Err(problem.error);
    }
    found.ok_or_else(|| match &cwd {
        Some(cwd) => CliError::usage(format!(
            "no session to continue in {}; `golato sessions` lists them all",
            cwd.display()
        )),
        None => CliError::usage("no session saved yet"),
    })
}

/// The user messages of `saved` (prompts, steering, follow-ups), in order, each with the calls
/// the model made after it and before the next one.
pub(crate) fn prompts(saved: &Saved) -> Vec<(golato::message::UserMessage, Vec<ToolCall>)> {
    let mut prompts: Vec<(golato::message::UserMessage, Vec<ToolCall>)> = Vec::new();
    for message in &saved.transcript {
        match message {
            Message::User(user) => prompts.push((user.clone(), Vec::new())),
            Message::Assistant(answer) => {
                if let Some((_, calls)) = prompts.last_mut() {
                    calls.extend(answer.tool_calls.iter().cloned());
                }
            }
            _ => {}
        }
    }
    prompts
}

/// Cuts `saved` back to before its user message number `prompt` (1-based), writing `note` as
/// an `undo` line in its place; refused while another golato writes it or when it changed
/// since it was read.
pub(crate) fn cut_before(saved: &Saved, prompt: usize, note: Value) -> Result<(), CliError> {
    let id = &saved.header.id;
    let _lock = file::Lock::take(&saved.path, id)?;
    let failed = |error: std::io::Error| {
        CliError::Failed(format!(
            "could not cut the session {id} back ({}): {error}",
            saved.path.display()
        ))
    };
    let bytes = std::fs::read(&saved.path).map_err(failed)?;
    if bytes.len() as u64 != saved.length {
        return Err(CliError::Failed(format!(
            "the session {id} changed while it was being undone; try again"
        )));
    }
    let judged = file::lines(&bytes);
    let mut seen = 0;
    let cut_line = judged.steps.iter().find_map(|(line, step)| {
        let user = serde_json::from_value::<Message>(step["message"].clone())
            .is_ok_and(|message| matches!(message, Message::User(_)));
        seen += usize::from(user);
        (user && seen == prompt).then_some(*line)
    });
    let Some(cut_line) = cut_line else {
        return Err(CliError::usage(format!(
            "the session {id} has no prompt {prompt}"
        )));
    };
    // Everything before that line (line numbers are 1-based), then the note.
    let kept: usize = bytes
        .split_inclusive(|byte| *byte == b'\n')
        .take(cut_line - 1)
        .map(<[u8]>::len)
        .sum();
    let mut text = bytes[..kept].to_vec();
    text.extend_from_slice(json!({ "undo": note }).to_string().as_bytes());
    text.push(b'\n');
    let aside = saved.path.with_extension("jsonl.undo");
    std::fs::write(&aside, &text)
        .and_then(|()| std::fs::File::open(&aside)?.sync_all())
        .and_then(|()| std::fs::rename(&aside, &saved.path))
        .map_err(failed)
}
