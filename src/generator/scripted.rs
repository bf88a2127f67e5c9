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
/// calls and to `stop` otherwise.
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
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| Error::ReadScript {
            path: path.to_owned(),
            source,
        })?;
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
        }
    }
}

/// The deltas a provider would have streamed for `message`.
fn deltas_of(message: &AssistantMessage) -> Vec<Delta> {
    let mut deltas = Vec::new();
    if !message.reasoning.is_empty() {
        deltas.push(Delta::Reasoning(message.reasoning.clone()));
    }
    for text in message.content.iter().filter_map(Content::as_text) {
        deltas.extend(
            text.split_inclusive(' ')
                .map(|word| Delta::Text(word.to_owned())),
        );
    }
    deltas.extend(
        message
            .tool_calls
            .iter()
            .enumerate()
            .map(|(index, call)| Delta::ToolCall {
                index,
                id: Some(call.id.clone()),
                name: Some(call.name.clone()),
                arguments: call.arguments.clone(),
            }),
    );
    deltas
}

impl Generator for Scripted {
    fn stream(&self, request: Request) -> EventStream {
        let answered = request
            .messages
            .iter()
            .filter(|message| matches!(message, Message::Assistant(_)))
            .count();
        let items: Vec<Result<StreamEvent, Error>> = match self.entries.get(answered) {
            Some(message) => {
                let mut message = message.clone();
                message
                    .model
                    .get_or_insert_with(|| request.model.id.clone());
                let mut items: Vec<_> = deltas_of(&message)
                    .into_iter()
                    .map(|delta| Ok(StreamEvent::Delta(delta)))
                    .collect();
                items.push(Ok(StreamEvent::Done(message)));
                items
            }
            None => vec![Err(Error::ScriptExhausted {
                requested: answered + 1,
                available: self.entries.len(),
            })],
        };
        Box::pin(futures::stream::iter(items))
    }
}
