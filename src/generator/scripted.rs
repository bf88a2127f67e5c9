//! A generator that replays assistant messages given in advance.

use std::path::Path;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;

use super::{Delta, Error, EventStream, Generator, Request, StreamEvent};
use crate::message::{AssistantMessage, Content, Message, StopReason, ToolCall, Usage};

/// Replays a script of assistant messages: it answers a request with entry *n*, where *n* is the
/// number of assistant messages already in the request's transcript, and fails with
/// [`Error::ScriptExhausted`] past the end.
///
/// Being stateless per request, one `Scripted` serves any number of concurrent runs, and a run
/// resumed from a saved transcript continues the script where it stopped. Text streams word by
/// word and each tool call as one fragment, so observers see `MessageUpdate` events as they
/// would with a real provider.
///
/// # Script files
/// [`Scripted::from_file`] reads a JSON array of entries, or JSONL (one entry per line; blank
/// lines are skipped). An entry is an [`AssistantMessage`] in its serde form, with two
/// conveniences: `"text": "..."` for a single text part, and `arguments` given either as the raw
/// JSON string or as any JSON value. `stop_reason` defaults to `tool_calls` when the entry has
/// calls and to `stop` otherwise. An entry may also carry `tool_results`, the results its calls
/// got when it was recorded (`golato run --record` writes them, `golato run --script` compares a
/// replay against them); the generator ignores them.
///
/// ```json
/// {"tool_calls": [{"id": "call-1", "name": "lookup_customer", "arguments": {"customer_id": "C-100"}}]}
/// {"text": "C-100 is on the Pro plan."}
/// ```
///
/// ```
/// use golato::generator::Scripted;
/// use golato::message::{AssistantMessage, ToolCall};
///
/// let script = Scripted::new([
///     AssistantMessage::with_tool_calls([ToolCall::new("call-1", "lookup_customer", r#"{"customer_id":"C-100"}"#)]),
///     AssistantMessage::with_text("C-100 is on the Pro plan."),
/// ]);
/// assert_eq!(script.len(), 2);
/// ```
#[derive(Debug, Clone)]
pub struct Scripted {
    entries: Arc<[AssistantMessage]>,
}

/// The largest script file [`Scripted::from_file`] reads: 256 MiB.
pub const MAX_SCRIPT_BYTES: u64 = 256 * 1024 * 1024;

impl Scripted {
    /// A script of the given messages, in order.
    pub fn new(entries: impl IntoIterator<Item = AssistantMessage>) -> Self {
        Scripted {
            entries: entries.into_iter().collect(),
        }
    }

    /// Loads a script from a JSON (array) or JSONL file.
    ///
    /// # Errors
    /// [`Error::ReadScript`] when the file cannot be read, [`Error::InvalidScript`] naming the
    /// entry that is not an assistant message.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, Error> {
        use std::io::Read as _;
        use std::os::unix::fs::OpenOptionsExt as _;
        let path = path.as_ref();
        let failed = |source| Error::ReadScript {
            path: path.to_owned(),
            source,
        };
        // A regular file, opened without blocking (a FIFO would hold the caller) and read with a
        // bound (a runaway file must not be read without end).
        let mut text = String::new();
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
            .open(path)
            .and_then(|file| {
                if file.metadata()?.is_file() {
                    Ok(file)
                } else {
                    Err(std::io::Error::new(
                        std::io::ErrorKind::InvalidInput,
                        "it is not a regular file (a device, a FIFO or a directory)",
                    ))
                }
            })
            .and_then(|file| {
                // Sized once: growing by doubling would hold two buffers of a long script.
                let size = file.metadata()?.len().min(MAX_SCRIPT_BYTES + 1);
                text.reserve_exact(usize::try_from(size).unwrap_or(0));
                file.take(MAX_SCRIPT_BYTES + 1).read_to_string(&mut text)
            })
            .map_err(failed)?;
        if text.len() as u64 > MAX_SCRIPT_BYTES {
            return Err(failed(std::io::Error::new(
                std::io::ErrorKind::FileTooLarge,
                format!(
                    "it is larger than {} MiB, more than a script may be",
                    MAX_SCRIPT_BYTES / (1024 * 1024)
                ),
            )));
        }
        Scripted::parse(&text, &path.display().to_string())
    }

    /// Parses a script from JSON (array) or JSONL text.
    ///
    /// # Errors
    /// [`Error::InvalidScript`] naming the entry that is not an assistant message.
    pub fn from_json(text: &str) -> Result<Self, Error> {
        Scripted::parse(text, "<inline>")
    }

    fn parse(text: &str, origin: &str) -> Result<Self, Error> {
        let invalid = |entry: usize, reason: String| Error::InvalidScript {
            origin: origin.to_owned(),
            entry,
            reason,
        };
        let entries: Vec<(usize, Value)> = if text.trim_start().starts_with('[') {
            let values: Vec<Value> =
                serde_json::from_str(text).map_err(|error| invalid(1, error.to_string()))?;
            values
                .into_iter()
                .enumerate()
                .map(|(i, v)| (i + 1, v))
                .collect()
        } else {
            text.lines()
                .enumerate()
                .filter(|(_, line)| !line.trim().is_empty())
                .map(|(i, line)| {
                    serde_json::from_str(line)
                        .map(|value| (i + 1, value))
                        .map_err(|error| invalid(i + 1, error.to_string()))
                })
                .collect::<Result<_, _>>()?
        };
        let messages = entries
            .into_iter()
            .map(|(number, value)| {
                serde_json::from_value::<ScriptEntry>(value)
                    .map(ScriptEntry::into_message)
                    .map_err(|error| invalid(number, error.to_string()))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Scripted::new(messages))
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the script has no entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptEntry {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    content: Vec<Content>,
    #[serde(default)]
    reasoning: String,
    #[serde(default)]
    tool_calls: Vec<ScriptCall>,
    #[serde(default)]
    stop_reason: Option<StopReason>,
    #[serde(default)]
    usage: Usage,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    error_message: Option<String>,
    /// What the tools returned when the script was recorded (`golato run --record`): the
    /// command line compares a replay against it; the generator ignores it.
    #[serde(default, rename = "tool_results")]
    _tool_results: Option<serde::de::IgnoredAny>,
    /// What the recording was made with (`golato run --record`: the prompt): the command line
    /// replays with it; the generator ignores it.
    #[serde(default, rename = "recorded")]
    _recorded: Option<serde::de::IgnoredAny>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptCall {
    id: String,
    name: String,
    #[serde(default)]
    arguments: Option<Value>,
}

impl ScriptEntry {
    fn into_message(self) -> AssistantMessage {
        let mut content = self.content;
        if let Some(text) = self.text {
            content.push(Content::text(text));
        }
        let tool_calls: Vec<ToolCall> = self
            .tool_calls
            .into_iter()
            .map(|call| {
                let arguments = match call.arguments {
                    None => "{}".to_owned(),
                    Some(Value::String(raw)) => raw,
                    Some(value) => value.to_string(),
                };
                ToolCall::new(call.id, call.name, arguments)
            })
            .collect();
        let stop_reason = self.stop_reason.unwrap_or(if tool_calls.is_empty() {
            StopReason::Stop
        } else {
            StopReason::ToolCalls
        });
        AssistantMessage {
            content,
            reasoning: self.reasoning,
            tool_calls,
            stop_reason,
            usage: self.usage,
            model: self.model,
            error_message: self.error_message,
            web_search: None,
        }
    }
}

/// Streams `message` as a provider would: reasoning, then the text word by word, then each tool
/// call as one fragment, then the message itself. Each item is made when it is polled, so a
/// replay allocates no list of them up front.
struct Replay {
    message: Option<AssistantMessage>,
    step: Step,
}

enum Step {
    Reasoning,
    Text { part: usize, offset: usize },
    Call(usize),
    Done,
}

impl Iterator for Replay {
    type Item = Result<StreamEvent, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let message = self.message.as_ref()?;
            let delta = match self.step {
                Step::Reasoning => {
                    self.step = Step::Text { part: 0, offset: 0 };
                    if message.reasoning.is_empty() {
                        continue;
                    }
                    Delta::Reasoning(message.reasoning.clone())
                }
                Step::Text { part, offset } => {
                    let Some(content) = message.content.get(part) else {
                        self.step = Step::Call(0);
                        continue;
                    };
                    let rest = content.as_text().and_then(|text| text.get(offset..));
                    let Some(rest) = rest.filter(|rest| !rest.is_empty()) else {
                        self.step = Step::Text {
                            part: part + 1,
                            offset: 0,
                        };
                        continue;
                    };
                    let word = rest.find(' ').map_or(rest.len(), |space| space + 1);
                    self.step = Step::Text {
                        part,
                        offset: offset + word,
                    };
                    Delta::Text(rest[..word].to_owned())
                }
                Step::Call(index) => {
                    let Some(call) = message.tool_calls.get(index) else {
                        self.step = Step::Done;
                        continue;
                    };
                    self.step = Step::Call(index + 1);
                    Delta::ToolCall {
                        index,
                        id: Some(call.id.clone()),
                        name: Some(call.name.clone()),
                        arguments: call.arguments.clone(),
                    }
                }
                Step::Done => {
                    return self
                        .message
                        .take()
                        .map(|message| Ok(StreamEvent::Done(message)))
                }
            };
            return Some(Ok(StreamEvent::Delta(delta)));
        }
    }
}

impl Generator for Scripted {
    fn stream(&self, request: Request) -> EventStream {
        let answered = request
            .messages
            .iter()
            .filter(|message| matches!(message, Message::Assistant(_)))
            .count()
            + request.compacted_turns;
        match self.entries.get(answered) {
            Some(message) => {
                let mut message = message.clone();
                message
                    .model
                    .get_or_insert_with(|| request.model.id.clone());
                Box::pin(futures::stream::iter(Replay {
                    message: Some(message),
                    step: Step::Reasoning,
                }))
            }
            None => Box::pin(futures::stream::iter([Err(Error::ScriptExhausted {
                requested: answered + 1,
                available: self.entries.len(),
            })])),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]

    use std::sync::Arc;

    use futures::StreamExt;

    use super::*;
    use crate::generator::Model;

    #[test]
    fn a_replay_streams_reasoning_words_and_calls_then_the_message() {
        let mut message = AssistantMessage::with_tool_calls([
            ToolCall::new("c1", "first", "{}"),
            ToolCall::new("c2", "second", r#"{"n":1}"#),
        ]);
        message.reasoning = "think".to_owned();
        message.content = vec![
            Content::text("a  b"),
            Content::image("image/png", "AAAA"),
            Content::text(""),
            Content::text("c"),
        ];
        let request = Request {
            model: Model::new("m"),
            system_prompt: None,
            messages: Arc::new(Vec::new()),
            tools: Arc::from(Vec::new()),
            compacted_turns: 0,
        };
        let items: Vec<_> =
            futures::executor::block_on(Scripted::new([message.clone()]).stream(request).collect());
        let mut deltas = Vec::new();
        let mut done = None;
        for item in items {
            match item.unwrap() {
                StreamEvent::Delta(delta) => deltas.push(delta),
                StreamEvent::Done(message) => done = Some(message),
                StreamEvent::Retrying(retrying) => panic!("a script never retries: {retrying:?}"),
            }
        }
        let call = |index: usize, id: &str, name: &str, arguments: &str| Delta::ToolCall {
            index,
            id: Some(id.to_owned()),
            name: Some(name.to_owned()),
            arguments: arguments.to_owned(),
        };
        assert_eq!(
            deltas,
            [
                Delta::Reasoning("think".to_owned()),
                Delta::Text("a ".to_owned()),
                Delta::Text(" ".to_owned()),
                Delta::Text("b".to_owned()),
                Delta::Text("c".to_owned()),
                call(0, "c1", "first", "{}"),
                call(1, "c2", "second", r#"{"n":1}"#),
            ]
        );
        message.model = Some("m".to_owned());
        assert_eq!(done, Some(message));
    }
}
