//! Anthropic Messages: the streaming decoder (the HTTP client builds on it).

use serde_json::Value;

use super::assembly::Assembly;
use super::http::excerpt;
use super::{Delta, Error, ToolChoice};
use crate::message::{AssistantMessage, Content, StopReason, ToolCall};

/// What a content block of the stream is.
#[derive(Debug)]
enum Block {
    Text,
    Thinking,
    /// A tool call: its position among the message's calls.
    ToolUse(usize),
    /// A call of one of the provider's own tools (its web search): its input as it streams.
    ServerToolUse(usize),
    Other,
}

/// Assembles a streamed Messages response (the `data:` of each server-sent event) into
/// [`Delta`]s as they arrive and the final [`AssistantMessage`].
///
/// Pings and unknown event or block types are ignored; a tool call whose input never arrives (or
/// arrives as `""`) gets `{}`; thinking is kept apart from the text; an `error` event becomes
/// [`Error::Provider`].
#[derive(Debug, Default)]
pub(crate) struct MessagesStreamDecoder {
    parts: Assembly,
    /// Block index → what it is.
    blocks: Vec<(u64, Block)>,
    stop_reason: Option<String>,
    done: bool,
    /// The inputs of the provider's own tool calls (web searches), as they streamed.
    server_inputs: Vec<String>,
}

impl MessagesStreamDecoder {
    /// Decodes the data of one event; returns the deltas it carries.
    ///
    /// # Errors
    /// [`Error::Provider`] for an `error` event, [`Error::MalformedStream`] for data that is not
    /// JSON.
    pub(crate) fn decode(&mut self, data: &str) -> Result<Vec<Delta>, Error> {
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
                        self.parts.model = Some(model.to_owned());
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
            self.parts.usage.input_tokens = input;
        }
        if let Some(output) = number("output_tokens") {
            self.parts.usage.output_tokens = output;
        }
        if let Some(read) = number("cache_read_input_tokens") {
            self.parts.usage.cache_read_tokens = read;
        }
        if let Some(written) = number("cache_creation_input_tokens") {
            self.parts.usage.cache_write_tokens = written;
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
                    self.parts.text.push_str(text);
                    deltas.push(Delta::Text(text.to_owned()));
                }
                for citation in block
                    .and_then(|b| b.get("citations"))
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    self.cite(citation);
                }
                Block::Text
            }
            "thinking" => Block::Thinking,
            "server_tool_use" => {
                let input = block
                    .and_then(|b| b.get("input"))
                    .filter(|input| input.as_object().is_some_and(|map| !map.is_empty()))
                    .map(Value::to_string)
                    .unwrap_or_default();
                self.server_inputs.push(input);
                Block::ServerToolUse(self.server_inputs.len() - 1)
            }
            "tool_use" => {
                let field = |key: &str| {
                    block
                        .and_then(|b| b.get(key))
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned()
                };
                let call = self.parts.calls.len();
                self.parts
                    .calls
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
                self.parts.text.push_str(&text);
                vec![Delta::Text(text)]
            }
            ("thinking_delta", _) => {
                let thinking = text_of("thinking");
                self.parts.reasoning.push_str(&thinking);
                vec![Delta::Reasoning(thinking)]
            }
            ("citations_delta", _) => {
                if let Some(citation) = delta.get("citation") {
                    self.cite(citation);
                }
                Vec::new()
            }
            ("input_json_delta", Some(Block::ServerToolUse(at))) => {
                let at = *at;
                if let Some(input) = self.server_inputs.get_mut(at) {
                    input.push_str(&text_of("partial_json"));
                }
                Vec::new()
            }
            ("input_json_delta", Some(Block::ToolUse(call))) => {
                let call = *call;
                let fragment = text_of("partial_json");
                if let Some(tool_call) = self.parts.calls.get_mut(call) {
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

    /// Keeps a text block's citation of a web search's page.
    fn cite(&mut self, citation: &Value) {
        let text = |key: &str| citation.get(key).and_then(Value::as_str).map(str::to_owned);
        if let Some(url) = text("url") {
            let mut cited = crate::message::Citation::new(url, text("title"));
            cited.cited_text = text("cited_text");
            self.parts.web_search.cite(cited);
        }
    }

    /// Whether `message_stop` was seen.
    pub(crate) fn is_done(&self) -> bool {
        self.done
    }

    /// Whether `message_delta` reported the stop reason.
    pub(crate) fn has_stop_reason(&self) -> bool {
        self.stop_reason.is_some()
    }

    /// The assembled message.
    pub(crate) fn finish(mut self) -> AssistantMessage {
        for input in std::mem::take(&mut self.server_inputs) {
            let query = serde_json::from_str::<Value>(&input)
                .ok()
                .and_then(|input| {
                    input
                        .get("query")
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                });
            if let Some(query) = query {
                self.parts.web_search.queries.push(query);
            }
        }
        let has_calls = !self.parts.calls.is_empty();
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
        self.parts.into_message(stop_reason, error_message)
    }
}

/// A generator for Anthropic's Messages API.
///
/// Streams; retries HTTP 429 and 5xx (including 529 overloaded) per its
/// [`RetryPolicy`](super::RetryPolicy), honouring `Retry-After`; other errors end the run with the
/// provider's message. Images of tool results go inside the `tool_result` content (or, for a model
/// without image input, a note says they were left out).
///
/// ```no_run
/// use golato::generator::Anthropic;
///
/// // ANTHROPIC_BASE_URL (default https://api.anthropic.com) and ANTHROPIC_API_KEY.
/// let client = Anthropic::from_env()?;
/// # Ok::<(), golato::generator::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Anthropic {
    endpoint: super::http::Endpoint,
}

/// Where Anthropic's API lives when `ANTHROPIC_BASE_URL` is not set.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// The output limit sent when the model sets none (the API requires one).
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

impl Anthropic {
    /// A client for `base_url` with `api_key`.
    ///
    /// # Errors
    /// [`Error::Http`] if the HTTP client cannot be built.
    pub fn new(base_url: impl Into<String>, api_key: impl Into<String>) -> Result<Self, Error> {
        Ok(Anthropic {
            endpoint: super::http::Endpoint::keyed(
                base_url.into(),
                api_key.into(),
                "x-api-key",
                &[("anthropic-version", "2023-06-01")],
            )?,
        })
    }

    /// A client configured by `ANTHROPIC_BASE_URL` (default [`DEFAULT_BASE_URL`]) and
    /// `ANTHROPIC_API_KEY`.
    ///
    /// # Errors
    /// [`Error::MissingApiKey`] without `ANTHROPIC_API_KEY`.
    pub fn from_env() -> Result<Self, Error> {
        let base_url =
            std::env::var("ANTHROPIC_BASE_URL").unwrap_or_else(|_| DEFAULT_BASE_URL.to_owned());
        let api_key = std::env::var("ANTHROPIC_API_KEY")
            .ok()
            .filter(|key| !key.is_empty())
            .ok_or(Error::MissingApiKey {
                variable: "ANTHROPIC_API_KEY",
            })?;
        Anthropic::new(base_url, api_key)
    }

    crate::generator::http::transport_settings!();
}

/// How the shared HTTP transport reads this provider's stream.
impl super::http::WireDecoder for MessagesStreamDecoder {
    fn decode(&mut self, data: &str) -> Result<Vec<Delta>, Error> {
        MessagesStreamDecoder::decode(self, data)
    }
    fn is_complete(&self) -> bool {
        self.is_done() || self.has_stop_reason()
    }
    fn finish(self) -> AssistantMessage {
        MessagesStreamDecoder::finish(self)
    }
}

impl super::Generator for Anthropic {
    fn stream(&self, request: super::Request) -> super::EventStream {
        if let Some(refused) = super::http::refuse_unchosen_model(&request.model) {
            return refused;
        }
        let body = request_body(&request).to_string().into_bytes();
        self.endpoint
            .post::<MessagesStreamDecoder>("v1/messages", body)
    }
}

fn parts(content: &[Content], images_allowed: bool) -> Vec<Value> {
    content
        .iter()
        .map(|part| match part {
            Content::Text { text } => serde_json::json!({"type": "text", "text": text}),
            Content::Image { mime_type, data } if images_allowed => {
                serde_json::json!({"type": "image", "source": {"type": "base64", "media_type": mime_type, "data": data}})
            }
            Content::Image { .. } => serde_json::json!({"type": "text", "text": super::IMAGE_LEFT_OUT}),
        })
        .collect()
}

/// The Messages request for `request`. Consecutive tool results go into one user message.
pub(crate) fn request_body(request: &super::Request) -> Value {
    use crate::message::Message;
    let images = request.model.supports_images;
    let mut messages: Vec<Value> = Vec::new();
    for message in request.messages.iter() {
        match message {
            Message::User(user) => messages
                .push(serde_json::json!({"role": "user", "content": parts(&user.content, images)})),
            Message::Assistant(assistant) => {
                let mut content = parts(&assistant.content, false);
                content.retain(|part| part["text"].as_str().is_none_or(|text| !text.is_empty()));
                for call in &assistant.tool_calls {
                    let input: Value = serde_json::from_str(&call.arguments)
                        .ok()
                        .filter(Value::is_object)
                        .unwrap_or_else(|| serde_json::json!({}));
                    content.push(serde_json::json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input}));
                }
                // The API rejects an empty message (an answer cut short before any text, say);
                // leaving it out changes nothing the model would read.
                if !content.is_empty() {
                    messages.push(serde_json::json!({"role": "assistant", "content": content}));
                }
            }
            Message::ToolResult(result) => {
                let block = serde_json::json!({
                    "type": "tool_result",
                    "tool_use_id": result.tool_call_id,
                    "content": parts(&result.content, images),
                    "is_error": result.is_error,
                });
                let continues_run = messages.last().is_some_and(|last| {
                    last["role"] == "user"
                        && last["content"]
                            .as_array()
                            .and_then(|c| c.last())
                            .is_some_and(|p| p["type"] == "tool_result")
                });
                match messages
                    .last_mut()
                    .and_then(|last| last["content"].as_array_mut())
                {
                    Some(content) if continues_run => content.push(block),
                    _ => messages.push(serde_json::json!({"role": "user", "content": [block]})),
                }
            }
        }
    }
    let mut body = serde_json::json!({
        "model": request.model.id,
        "max_tokens": request.model.max_output_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
        "messages": messages,
        "stream": true,
    });
    // No native structured output here: the instructions say it.
    let format = request.model.output_schema.as_ref().map(|schema| {
        format!("Your final answer must be a single JSON value, and nothing else, valid against this JSON Schema:\n{schema}")
    });
    match (&request.system_prompt, format) {
        (Some(system), Some(format)) => body["system"] = format!("{system}\n\n{format}").into(),
        (Some(system), None) => body["system"] = system.clone().into(),
        (None, Some(format)) => body["system"] = format.into(),
        (None, None) => {}
    }
    if let Some(search) = &request.model.web_search {
        let mut tool = serde_json::json!({"type": "web_search_20250305", "name": "web_search"});
        if !search.allowed_domains.is_empty() {
            tool["allowed_domains"] = search.allowed_domains.clone().into();
        }
        if let Some(uses) = search.max_uses {
            tool["max_uses"] = uses.into();
        }
        body["tools"] = serde_json::json!([tool]);
    }
    if !request.tools.is_empty() {
        let tools = request
            .tools
            .iter()
            .map(|tool| serde_json::json!({"name": tool.name, "description": tool.description, "input_schema": tool.parameters}));
        match body["tools"].as_array_mut() {
            Some(offered) => offered.extend(tools),
            None => body["tools"] = tools.collect(),
        }
        let mut choice = match &request.model.tool_choice {
            ToolChoice::Auto => serde_json::json!({"type": "auto"}),
            ToolChoice::None => serde_json::json!({"type": "none"}),
            ToolChoice::Required => serde_json::json!({"type": "any"}),
            ToolChoice::Tool(name) => serde_json::json!({"type": "tool", "name": name}),
        };
        // Anthropic says it the other way round, and not for `none`.
        if let (Some(parallel), false) = (
            request.model.parallel_tool_calls,
            request.model.tool_choice == ToolChoice::None,
        ) {
            choice["disable_parallel_tool_use"] = (!parallel).into();
        }
        // `auto` alone is the default and left out.
        if choice != serde_json::json!({"type": "auto"}) {
            body["tool_choice"] = choice;
        }
    }
    super::cache::mark_anthropic(request, &mut body);
    request.model.finish_body(&mut body);
    body
}
