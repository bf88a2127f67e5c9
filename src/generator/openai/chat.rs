//! OpenAI-compatible Chat Completions: the streaming decoder (the HTTP client builds on it).

use serde_json::Value;

use crate::generator::http::Endpoint;
use crate::generator::openai::DEFAULT_BASE_URL;

use crate::generator::assembly::Assembly;
use crate::generator::{Delta, Error, ToolChoice};
use crate::message::{AssistantMessage, Content, StopReason, ToolCall, Usage};

/// Assembles a streamed Chat Completions response (`chat.completion.chunk` objects, the `data:`
/// of each server-sent event) into [`Delta`]s as they arrive and the final [`AssistantMessage`].
///
/// It is lenient with the servers that speak this dialect (OpenAI, Ollama, vLLM, llama.cpp,
/// LM Studio, OpenRouter, Groq, DeepSeek, xAI): unknown fields are ignored; `data: [DONE]` is
/// optional; a tool call without an `index` continues the last call unless it brings a new ID;
/// arguments may come in fragments or whole; reasoning (`reasoning_content` or `reasoning`) is kept
/// apart from the text; a `stop` (or missing) finish reason after tool calls means `ToolCalls`.
#[derive(Debug, Default)]
pub(crate) struct ChatStreamDecoder {
    parts: Assembly,
    finish_reason: Option<String>,
    done: bool,
}

impl ChatStreamDecoder {
    /// Decodes the data of one event; returns the deltas it carries.
    ///
    /// # Errors
    /// [`Error::Provider`] for an error object in the stream, [`Error::MalformedStream`] for
    /// data that is not JSON.
    pub(crate) fn decode(&mut self, data: &str) -> Result<Vec<Delta>, Error> {
        let data = data.trim();
        if data.is_empty() {
            return Ok(Vec::new());
        }
        if data == "[DONE]" {
            self.done = true;
            return Ok(Vec::new());
        }
        let chunk: Value = serde_json::from_str(data).map_err(|error| Error::MalformedStream {
            reason: format!(
                "a chunk is not JSON ({error}): {}",
                crate::generator::http::excerpt(data)
            ),
        })?;
        if let Some(error) = chunk.get("error") {
            return Err(Error::Provider {
                status: None,
                message: error
                    .get("message")
                    .and_then(Value::as_str)
                    .map_or_else(|| error.to_string(), str::to_owned),
            });
        }
        if let Some(model) = chunk.get("model").and_then(Value::as_str) {
            self.parts.model = Some(model.to_owned());
        }
        if let Some(usage) = chunk.get("usage").filter(|usage| usage.is_object()) {
            self.parts.usage = usage_of(usage);
        }
        let mut deltas = Vec::new();
        let choices = chunk.get("choices").and_then(Value::as_array);
        // One choice is asked for; a server that sends more gets its first one read.
        let Some(choice) = choices.and_then(|choices| choices.first()) else {
            return Ok(deltas);
        };
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            if !reason.is_empty() {
                self.finish_reason = Some(reason.to_owned());
            }
        }
        let Some(delta) = choice.get("delta") else {
            return Ok(deltas);
        };
        for key in ["reasoning_content", "reasoning"] {
            if let Some(reasoning) = delta
                .get(key)
                .and_then(Value::as_str)
                .filter(|r| !r.is_empty())
            {
                self.parts.reasoning.push_str(reasoning);
                deltas.push(Delta::Reasoning(reasoning.to_owned()));
            }
        }
        if let Some(text) = delta
            .get("content")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
        {
            self.parts.text.push_str(text);
            deltas.push(Delta::Text(text.to_owned()));
        }
        for call in delta
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            deltas.push(self.tool_call_fragment(call));
        }
        Ok(deltas)
    }

    fn tool_call_fragment(&mut self, fragment: &Value) -> Delta {
        let id = fragment
            .get("id")
            .and_then(Value::as_str)
            .filter(|id| !id.is_empty());
        let function = fragment.get("function");
        let name = function
            .and_then(|f| f.get("name"))
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty());
        let arguments = match function.and_then(|f| f.get("arguments")) {
            Some(Value::String(text)) => text.clone(),
            Some(Value::Null) | None => String::new(),
            Some(whole) => whole.to_string(),
        };
        let index = match fragment.get("index").and_then(Value::as_u64) {
            Some(index) => usize::try_from(index)
                .unwrap_or(usize::MAX)
                .min(self.parts.calls.len()),
            // No index: a new ID starts a call, anything else continues the last one.
            None => match (id, self.parts.calls.last()) {
                (Some(id), Some(last)) if last.id != id => self.parts.calls.len(),
                (_, Some(_)) => self.parts.calls.len() - 1,
                (_, None) => 0,
            },
        };
        if index == self.parts.calls.len() {
            self.parts.calls.push(ToolCall::new("", "", ""));
        }
        if let Some(call) = self.parts.calls.get_mut(index) {
            if let Some(id) = id {
                id.clone_into(&mut call.id);
            }
            if let Some(name) = name {
                name.clone_into(&mut call.name);
            }
            call.arguments.push_str(&arguments);
        }
        Delta::ToolCall {
            index,
            id: id.map(str::to_owned),
            name: name.map(str::to_owned),
            arguments,
        }
    }

    /// Whether `data: [DONE]` was seen.
    pub(crate) fn is_done(&self) -> bool {
        self.done
    }

    /// Whether a choice reported its finish reason.
    pub(crate) fn has_finish_reason(&self) -> bool {
        self.finish_reason.is_some()
    }

    /// The assembled message.
    pub(crate) fn finish(self) -> AssistantMessage {
        let has_calls = !self.parts.calls.is_empty();
        let (stop_reason, error_message) = match self.finish_reason.as_deref() {
            Some("tool_calls" | "function_call") => (StopReason::ToolCalls, None),
            Some("length" | "max_tokens") => (StopReason::Length, None),
            Some("content_filter") => (
                StopReason::Error,
                Some("the provider's content filter stopped the response".to_owned()),
            ),
            _ if has_calls => (StopReason::ToolCalls, None),
            _ => (StopReason::Stop, None),
        };
        self.parts.into_message(stop_reason, error_message)
    }
}

fn number(value: &Value, key: &str) -> u64 {
    value.get(key).and_then(Value::as_u64).unwrap_or(0)
}

fn usage_of(usage: &Value) -> Usage {
    let cached = usage
        .get("prompt_tokens_details")
        .map_or(0, |details| number(details, "cached_tokens"));
    Usage {
        input_tokens: number(usage, "prompt_tokens").saturating_sub(cached),
        output_tokens: number(usage, "completion_tokens"),
        cache_read_tokens: cached,
        cache_write_tokens: 0,
    }
}

/// A generator for any OpenAI-compatible Chat Completions endpoint: OpenAI, Ollama, vLLM,
/// llama.cpp server, LM Studio, OpenRouter.
///
/// Streams with `stream_options.include_usage`; retries HTTP 429 and 5xx per its
/// [`RetryPolicy`](crate::generator::RetryPolicy) (honouring `Retry-After`); other errors end the run with
/// the provider's message. Tool messages are text-only in this API, so the images of a run of
/// tool results follow it in one user message (or, for a model without image input, a note says
/// they were left out).
///
/// ```no_run
/// use golato::generator::OpenAiChat;
///
/// // OPENAI_BASE_URL (default https://api.openai.com/v1) and OPENAI_API_KEY.
/// let client = OpenAiChat::from_env()?;
/// # Ok::<(), golato::generator::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct OpenAiChat {
    pub(super) endpoint: Endpoint,
}

impl OpenAiChat {
    /// A client for `base_url` (such as `http://localhost:11434/v1` for Ollama); `api_key` is
    /// sent as a bearer token when given.
    ///
    /// # Errors
    /// [`Error::Http`] if the HTTP client cannot be built.
    pub fn new(base_url: impl Into<String>, api_key: Option<String>) -> Result<Self, Error> {
        Ok(OpenAiChat {
            endpoint: Endpoint::bearer(base_url.into(), api_key)?,
        })
    }

    /// A client configured by `OPENAI_BASE_URL` (default [`DEFAULT_BASE_URL`]) and
    /// `OPENAI_API_KEY` (required for the default URL; local servers may need none).
    ///
    /// # Errors
    /// [`Error::MissingApiKey`] for OpenAI's own URL without a key.
    pub fn from_env() -> Result<Self, Error> {
        let base_url =
            std::env::var("OPENAI_BASE_URL").unwrap_or_else(|_| DEFAULT_BASE_URL.to_owned());
        let api_key = std::env::var("OPENAI_API_KEY")
            .ok()
            .filter(|key| !key.is_empty());
        if api_key.is_none() && base_url.trim_end_matches('/') == DEFAULT_BASE_URL {
            return Err(Error::MissingApiKey {
                variable: "OPENAI_API_KEY",
            });
        }
        OpenAiChat::new(base_url, api_key)
    }

    /// The models the server lists (`GET {base_url}/models`, as OpenAI and the servers
    /// compatible with it answer: Ollama, vLLM, llama.cpp, LM Studio), by ID, sorted; within
    /// ten seconds and 4 MiB.
    ///
    /// # Errors
    /// The server could not be reached, answered with an error, or not with a list of models.
    pub async fn models(&self) -> Result<Vec<String>, Error> {
        let listed = self
            .endpoint
            .get_json(
                "models",
                4 * 1024 * 1024,
                std::time::Duration::from_secs(10),
            )
            .await?;
        let Some(data) = listed["data"].as_array() else {
            return Err(Error::Http {
                reason: "the server's model list has no `data` array".to_owned(),
                source: None,
            });
        };
        let mut ids: Vec<String> = data
            .iter()
            .filter_map(|model| model["id"].as_str().map(str::to_owned))
            .collect();
        ids.sort();
        ids.dedup();
        Ok(ids)
    }

    crate::generator::http::transport_settings!();
}

/// How the shared HTTP transport reads this provider's stream.
impl crate::generator::http::WireDecoder for ChatStreamDecoder {
    fn decode(&mut self, data: &str) -> Result<Vec<Delta>, Error> {
        ChatStreamDecoder::decode(self, data)
    }
    fn is_complete(&self) -> bool {
        self.is_done() || self.has_finish_reason()
    }
    fn finish(self) -> AssistantMessage {
        ChatStreamDecoder::finish(self)
    }
}

impl crate::generator::Generator for OpenAiChat {
    fn stream(&self, request: crate::generator::Request) -> crate::generator::EventStream {
        if let Some(refused) = crate::generator::http::refuse_unchosen_model(&request.model) {
            return refused;
        }
        let body = request_body(&request).to_string().into_bytes();
        self.endpoint
            .post::<ChatStreamDecoder>("chat/completions", body)
    }
}

/// The Chat Completions request for `request`.
pub(crate) fn request_body(request: &crate::generator::Request) -> Value {
    use crate::message::Message;
    let mut messages = Vec::new();
    if let Some(system) = &request.system_prompt {
        messages.push(serde_json::json!({"role": "system", "content": system}));
    }
    // Images of the current run of tool results, sent after it in one user message.
    let mut pending_images: Vec<Value> = Vec::new();
    let flush = |messages: &mut Vec<Value>, images: &mut Vec<Value>| {
        if !images.is_empty() {
            let mut parts = vec![
                serde_json::json!({"type": "text", "text": "Images returned by the tool calls above:"}),
            ];
            parts.append(images);
            messages.push(serde_json::json!({"role": "user", "content": parts}));
        }
    };
    for message in request.messages.iter() {
        if !matches!(message, Message::ToolResult(_)) {
            flush(&mut messages, &mut pending_images);
        }
        match message {
            Message::User(user) => messages.push(serde_json::json!({"role": "user", "content": content_parts(&user.content, request.model.supports_images)})),
            Message::Assistant(assistant) => {
                let mut entry = serde_json::json!({"role": "assistant", "content": assistant.text()});
                if !assistant.tool_calls.is_empty() {
                    entry["tool_calls"] = assistant
                        .tool_calls
                        .iter()
                        .map(|call| serde_json::json!({"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}))
                        .collect();
                }
                messages.push(entry);
            }
            Message::ToolResult(result) => {
                let images: Vec<Value> = result
                    .content
                    .iter()
                    .filter_map(|part| match part {
                        Content::Image { mime_type, data } => Some(serde_json::json!({"type": "image_url", "image_url": {"url": crate::generator::data_url(mime_type, data)}})),
                        Content::Text { .. } => None,
                    })
                    .collect();
                let mut text = result.text();
                if !images.is_empty() && !request.model.supports_images {
                    text.push_str(&format!("\n[{} image(s) left out: the model does not accept images]", images.len()));
                } else {
                    pending_images.extend(images);
                }
                messages.push(serde_json::json!({"role": "tool", "tool_call_id": result.tool_call_id, "content": text}));
            }
        }
    }
    flush(&mut messages, &mut pending_images);
    let mut body = serde_json::json!({
        "model": request.model.id,
        "messages": messages,
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    if !request.tools.is_empty() {
        body["tools"] = request
            .tools
            .iter()
            .map(|tool| serde_json::json!({"type": "function", "function": {"name": tool.name, "description": tool.description, "parameters": tool.parameters}}))
            .collect();
        // `auto`, the default, is left out: some compatible servers know no tool_choice.
        match &request.model.tool_choice {
            ToolChoice::Auto => {}
            ToolChoice::None => body["tool_choice"] = "none".into(),
            ToolChoice::Required => body["tool_choice"] = "required".into(),
            ToolChoice::Tool(name) => {
                body["tool_choice"] =
                    serde_json::json!({"type": "function", "function": {"name": name}});
            }
        }
        if let Some(parallel) = request.model.parallel_tool_calls {
            body["parallel_tool_calls"] = parallel.into();
        }
    }
    if let Some(limit) = request.model.max_output_tokens {
        body["max_tokens"] = limit.into();
    }
    if let Some(schema) = &request.model.output_schema {
        body["response_format"] = serde_json::json!({
            "type": "json_schema",
            "json_schema": {"name": "answer", "schema": **schema},
        });
    }
    if let Some(key) = crate::generator::cache::openai_key(request) {
        body["prompt_cache_key"] = key.into();
    }
    request.model.finish_body(&mut body);
    body
}

fn content_parts(content: &[Content], images_allowed: bool) -> Value {
    if let [Content::Text { text }] = content {
        return Value::String(text.to_string());
    }
    content
        .iter()
        .map(|part| match part {
            Content::Text { text } => serde_json::json!({"type": "text", "text": text}),
            Content::Image { mime_type, data } if images_allowed => {
                serde_json::json!({"type": "image_url", "image_url": {"url": crate::generator::data_url(mime_type, data)}})
            }
            Content::Image { .. } => serde_json::json!({"type": "text", "text": crate::generator::IMAGE_LEFT_OUT}),
        })
        .collect()
}
