//! Anthropic Messages: the streaming decoder (the HTTP client builds on it).

use serde_json::Value;

use super::openai::excerpt;
use super::{Delta, Error};
use crate::message::{AssistantMessage, Content, StopReason, ToolCall, Usage};

/// What a content block of the stream is.
#[derive(Debug)]
enum Block {
    Text,
    Thinking,
    /// A tool call: its position among the message's calls.
    ToolUse(usize),
    Other,
}

/// Assembles a streamed Messages response (the `data:` of each server-sent event) into
/// [`Delta`]s as they arrive and the final [`AssistantMessage`].
///
/// Pings and unknown event or block types are ignored; a tool call whose input never arrives (or
/// arrives as `""`) gets `{}`; thinking is kept apart from the text; an `error` event becomes
/// [`Error::Provider`].
#[derive(Debug, Default)]
pub struct MessagesStreamDecoder {
    text: String,
    reasoning: String,
    calls: Vec<ToolCall>,
    /// Block index → what it is.
    blocks: Vec<(u64, Block)>,
    stop_reason: Option<String>,
    usage: Usage,
    model: Option<String>,
    done: bool,
}

impl MessagesStreamDecoder {
    /// Decodes the data of one event; returns the deltas it carries.
    ///
    /// # Errors
    /// [`Error::Provider`] for an `error` event, [`Error::MalformedStream`] for data that is not
    /// JSON.
    pub fn decode(&mut self, data: &str) -> Result<Vec<Delta>, Error> {
        let data = data.trim();
        if data.is_empty() {
            return Ok(Vec::new());
        }
        let event: Value = serde_json::from_str(data).map_err(|error| Error::MalformedStream {
            reason: format!("an event is not JSON ({error}): {}", excerpt(data)),
        })?;
        let index = event.get("index").and_then(Value::as_u64);
        match event
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default()
        {
            "message_start" => {
                if let Some(message) = event.get("message") {
                    if let Some(model) = message.get("model").and_then(Value::as_str) {
                        self.model = Some(model.to_owned());
                    }
                    if let Some(usage) = message.get("usage") {
                        self.read_usage(usage);
                    }
                }
                Ok(Vec::new())
            }
            "content_block_start" => {
                Ok(self.start_block(index.unwrap_or(0), event.get("content_block")))
            }
            "content_block_delta" => Ok(self.block_delta(index.unwrap_or(0), event.get("delta"))),
            "message_delta" => {
                if let Some(reason) = event.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop_reason = Some(reason.to_owned());
                }
                if let Some(usage) = event.get("usage") {
                    self.read_usage(usage);
                }
                Ok(Vec::new())
            }
            "message_stop" => {
                self.done = true;
                Ok(Vec::new())
            }
            "error" => Err(Error::Provider {
                status: None,
                message: event
                    .pointer("/error/message")
                    .and_then(Value::as_str)
                    .map_or_else(|| event.to_string(), str::to_owned),
            }),
            _ => Ok(Vec::new()),
        }
    }

    fn read_usage(&mut self, usage: &Value) {
        let number = |key: &str| usage.get(key).and_then(Value::as_u64);
        if let Some(input) = number("input_tokens") {
            self.usage.input_tokens = input;
        }
        if let Some(output) = number("output_tokens") {
            self.usage.output_tokens = output;
        }
        if let Some(read) = number("cache_read_input_tokens") {
            self.usage.cache_read_tokens = read;
        }
        if let Some(written) = number("cache_creation_input_tokens") {
            self.usage.cache_write_tokens = written;
        }
    }

    fn start_block(&mut self, index: u64, block: Option<&Value>) -> Vec<Delta> {
        let kind = block
            .and_then(|b| b.get("type"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        let mut deltas = Vec::new();
        let block_kind = match kind {
            "text" => {
                if let Some(text) = block
                    .and_then(|b| b.get("text"))
                    .and_then(Value::as_str)
                    .filter(|t| !t.is_empty())
                {
                    self.text.push_str(text);
                    deltas.push(Delta::Text(text.to_owned()));
                }
                Block::Text
            }
            "thinking" => Block::Thinking,
            "tool_use" => {
                let field = |key: &str| {
                    block
                        .and_then(|b| b.get(key))
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned()
                };
                let call = self.calls.len();
                self.calls
                    .push(ToolCall::new(field("id"), field("name"), ""));
                deltas.push(Delta::ToolCall {
                    index: call,
                    id: Some(field("id")),
                    name: Some(field("name")),
                    arguments: String::new(),
                });
                Block::ToolUse(call)
            }
            _ => Block::Other,
        };
        self.blocks.push((index, block_kind));
        deltas
    }

    fn block_delta(&mut self, index: u64, delta: Option<&Value>) -> Vec<Delta> {
        let Some(delta) = delta else {
            return Vec::new();
        };
        let text_of = |key: &str| {
            delta
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let block = self
            .blocks
            .iter()
            .rev()
            .find(|(i, _)| *i == index)
            .map(|(_, block)| block);
        match (
            delta
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or_default(),
            block,
        ) {
            ("text_delta", _) => {
                let text = text_of("text");
                self.text.push_str(&text);
                vec![Delta::Text(text)]
            }
            ("thinking_delta", _) => {
                let thinking = text_of("thinking");
                self.reasoning.push_str(&thinking);
                vec![Delta::Reasoning(thinking)]
            }
            ("input_json_delta", Some(Block::ToolUse(call))) => {
                let call = *call;
                let fragment = text_of("partial_json");
                if let Some(tool_call) = self.calls.get_mut(call) {
                    tool_call.arguments.push_str(&fragment);
                }
                vec![Delta::ToolCall {
                    index: call,
                    id: None,
                    name: None,
                    arguments: fragment,
                }]
            }
            _ => Vec::new(),
        }
    }

    /// Whether `message_stop` was seen.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// The assembled message.
    pub fn finish(self) -> AssistantMessage {
        let has_calls = !self.calls.is_empty();
        let (stop_reason, error_message) = match self.stop_reason.as_deref() {
            Some("tool_use") => (StopReason::ToolCalls, None),
            Some("max_tokens" | "model_context_window_exceeded") => (StopReason::Length, None),
            Some("refusal") => (
                StopReason::Error,
                Some("the model refused to answer".to_owned()),
            ),
            _ if has_calls => (StopReason::ToolCalls, None),
            _ => (StopReason::Stop, None),
        };
        let tool_calls = self
            .calls
            .into_iter()
            .map(|mut call| {
                if call.arguments.trim().is_empty() {
                    call.arguments = "{}".to_owned();
                }
                call
            })
            .collect();
        AssistantMessage {
            content: if self.text.is_empty() {
                Vec::new()
            } else {
                vec![Content::text(self.text)]
            },
            reasoning: self.reasoning,
            tool_calls,
            stop_reason,
            usage: self.usage,
            model: self.model,
            error_message,
        }
    }
}
