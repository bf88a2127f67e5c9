//! OpenAI's Responses API (`POST /responses`, streamed): the decoder of its typed events and
//! the client. The API OpenAI's newer models and codex use; LM Studio and others serve it too.

use std::collections::HashMap;

use serde_json::{json, Value};

use crate::generator::assembly::Assembly;
use crate::generator::http::excerpt;
use crate::generator::{Delta, Error, ToolChoice};
use crate::message::{AssistantMessage, Content, Message, StopReason, ToolCall, Usage};

/// Assembles a streamed Responses API answer (one typed event per server-sent event:
/// `response.output_text.delta`, `response.function_call_arguments.delta`, …) into [`Delta`]s
/// and the final [`AssistantMessage`].
///
/// Text, reasoning (its summary or its full text, as the server sends it) and function calls
/// are read; a refusal becomes the message's text; `response.completed` gives the usage and
/// ends the stream, `response.incomplete` ends it cut (`StopReason::Length` for the output
/// limit), `response.failed` and `error` events are provider errors. A call whose arguments
/// arrive only whole (`…arguments.done`, as some servers send them) gets them then. Events it
/// does not know are ignored.
#[derive(Debug, Default)]
pub(crate) struct ResponsesStreamDecoder {
    parts: Assembly,
    /// Output item index → index of the call it is, for function-call items.
    calls_by_output: HashMap<u64, usize>,
    /// Why the response ended, once it did: `completed`, `incomplete` (with the reason).
    ended: Option<Ending>,
}

#[derive(Debug)]
enum Ending {
    Completed,
    Incomplete(String),
}

impl ResponsesStreamDecoder {
    /// Decodes the data of one event; returns the deltas it carries.
    ///
    /// # Errors
    /// [`Error::Provider`] for an `error` or `response.failed` event, [`Error::MalformedStream`]
    /// for data that is not a JSON object.
    pub(crate) fn decode(&mut self, data: &str) -> Result<Vec<Delta>, Error> {
        let data = data.trim();
        if data.is_empty() || data == "[DONE]" {
            return Ok(Vec::new());
        }
        let event: Value = serde_json::from_str(data).map_err(|error| Error::MalformedStream {
            reason: format!("an event is not JSON ({error}): {}", excerpt(data)),
        })?;
        let kind = event
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let text = |field: &str| {
            event
                .get(field)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let mut deltas = Vec::new();
        match kind {
            "response.created" | "response.in_progress" => self.read_response(&event),
            "response.output_text.delta" | "response.refusal.delta" => {
                let delta = text("delta");
                if !delta.is_empty() {
                    self.parts.text.push_str(&delta);
                    deltas.push(Delta::Text(delta));
                }
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                let delta = text("delta");
                if !delta.is_empty() {
                    self.parts.reasoning.push_str(&delta);
                    deltas.push(Delta::Reasoning(delta));
                }
            }
            "response.output_item.added" => {
                if let Some(delta) = self.start_call(&event) {
                    deltas.push(delta);
                }
            }
            // The provider's own web search: what it searched, once the search is done.
            "response.output_item.done" => {
                let item = event.get("item").unwrap_or(&Value::Null);
                if item.get("type").and_then(Value::as_str) == Some("web_search_call") {
                    let action = item.get("action").unwrap_or(&Value::Null);
                    let queries = action.get("query").into_iter().chain(
                        action
                            .get("queries")
                            .and_then(Value::as_array)
                            .into_iter()
                            .flatten(),
                    );
                    for query in queries.filter_map(Value::as_str) {
                        if !self
                            .parts
                            .web_search
                            .queries
                            .iter()
                            .any(|known| known == query)
                        {
                            self.parts.web_search.queries.push(query.to_owned());
                        }
                    }
                }
            }
            "response.output_text.annotation.added" => {
                let annotation = event.get("annotation").unwrap_or(&Value::Null);
                if annotation.get("type").and_then(Value::as_str) == Some("url_citation") {
                    let text = |key: &str| {
                        annotation
                            .get(key)
                            .and_then(Value::as_str)
                            .map(str::to_owned)
                    };
                    if let Some(url) = text("url") {
                        self.parts
                            .web_search
                            .cite(crate::message::Citation::new(url, text("title")));
                    }
                }
            }
            "response.function_call_arguments.delta" => {
                if let Some(index) = self.call_of(&event) {
                    let delta = text("delta");
                    if let Some(call) = self.parts.calls.get_mut(index) {
                        call.arguments.push_str(&delta);
                    }
                    deltas.push(Delta::ToolCall {
                        index,
                        id: None,
                        name: None,
                        arguments: delta,
                    });
                }
            }
            "response.function_call_arguments.done" => {
                // The whole arguments: what did not arrive as deltas arrives now.
                if let Some(index) = self.call_of(&event) {
                    let whole = text("arguments");
                    if let Some(call) = self.parts.calls.get_mut(index) {
                        if let Some(rest) = whole.strip_prefix(call.arguments.as_str()) {
                            if !rest.is_empty() {
                                deltas.push(Delta::ToolCall {
                                    index,
                                    id: None,
                                    name: None,
                                    arguments: rest.to_owned(),
                                });
                            }
                        }
                        call.arguments = whole;
                    }
                }
            }
            "response.completed" => {
                self.read_response(&event);
                self.ended = Some(Ending::Completed);
            }
            "response.incomplete" => {
                self.read_response(&event);
                let reason = event
                    .pointer("/response/incomplete_details/reason")
                    .and_then(Value::as_str)
                    .unwrap_or("unknown");
                self.ended = Some(Ending::Incomplete(reason.to_owned()));
            }
            "response.failed" => {
                return Err(provider_error(
                    event.pointer("/response/error").unwrap_or(&Value::Null),
                ))
            }
            "error" => return Err(provider_error(event.get("error").unwrap_or(&event))),
            _ => {}
        }
        Ok(deltas)
    }

    /// The model and the usage of a `response` object.
    fn read_response(&mut self, event: &Value) {
        let Some(response) = event.get("response") else {
            return;
        };
        if let Some(model) = response.get("model").and_then(Value::as_str) {
            self.parts.model = Some(model.to_owned());
        }
        if let Some(usage) = response.get("usage").filter(|usage| usage.is_object()) {
            self.parts.usage = usage_of(usage);
        }
    }

    /// A function-call output item starts a call.
    fn start_call(&mut self, event: &Value) -> Option<Delta> {
        let item = event.get("item")?;
        if item.get("type").and_then(Value::as_str) != Some("function_call") {
            return None;
        }
        let output = event.get("output_index").and_then(Value::as_u64)?;
        // The ID a result must name back is `call_id`; the item's own `id` only names it in
        // this stream.
        let id = item
            .get("call_id")
            .or_else(|| item.get("id"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let name = item
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let arguments = item
            .get("arguments")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let index = self.parts.calls.len();
        self.parts
            .calls
            .push(ToolCall::new(id.clone(), name.clone(), arguments.clone()));
        self.calls_by_output.insert(output, index);
        Some(Delta::ToolCall {
            index,
            id: Some(id),
            name: Some(name),
            arguments,
        })
    }

    fn call_of(&self, event: &Value) -> Option<usize> {
        let output = event.get("output_index").and_then(Value::as_u64)?;
        self.calls_by_output.get(&output).copied()
    }

    /// Whether the response said it ended (completed or incomplete).
    pub(crate) fn is_done(&self) -> bool {
        self.ended.is_some()
    }

    /// The assembled message.
    pub(crate) fn finish(self) -> AssistantMessage {
        let has_calls = !self.parts.calls.is_empty();
        let (stop_reason, error_message) = match &self.ended {
            Some(Ending::Incomplete(reason)) if reason == "max_output_tokens" => {
                (StopReason::Length, None)
            }
            Some(Ending::Incomplete(reason)) if reason == "content_filter" => (
                StopReason::Error,
                Some("the provider's content filter stopped the response".to_owned()),
            ),
            Some(Ending::Incomplete(reason)) => (
                StopReason::Error,
                Some(format!("the response ended incomplete ({reason})")),
            ),
            _ if has_calls => (StopReason::ToolCalls, None),
            _ => (StopReason::Stop, None),
        };
        self.parts.into_message(stop_reason, error_message)
    }
}

fn provider_error(error: &Value) -> Error {
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .map_or_else(|| error.to_string(), str::to_owned);
    Error::Provider {
        status: None,
        message,
    }
}

fn usage_of(usage: &Value) -> Usage {
    let number = |value: &Value, key: &str| value.get(key).and_then(Value::as_u64).unwrap_or(0);
    let cached = usage
        .get("input_tokens_details")
        .map_or(0, |details| number(details, "cached_tokens"));
    Usage {
        input_tokens: number(usage, "input_tokens").saturating_sub(cached),
        output_tokens: number(usage, "output_tokens"),
        cache_read_tokens: cached,
        cache_write_tokens: 0,
    }
}

/// A generator for OpenAI's Responses API (`{base_url}/responses`), streamed.
///
/// Nothing is stored on the provider's side (`store: false`): each request carries the whole
/// transcript, as with the other clients. Tool results go back as `function_call_output`
/// items, their images included. Retries and errors as [`OpenAiChat`](crate::generator::OpenAiChat).
///
/// ```no_run
/// use golato::generator::OpenAiResponses;
///
/// // OPENAI_BASE_URL (default https://api.openai.com/v1) and OPENAI_API_KEY.
/// let client = OpenAiResponses::from_env()?;
/// # Ok::<(), golato::generator::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct OpenAiResponses {
    /// The same endpoint, key and transport as the Chat Completions client; only the path, the
    /// body and the stream differ.
    endpoint: crate::generator::http::Endpoint,
}

impl OpenAiResponses {
    /// A client for `base_url` (such as `https://api.openai.com/v1`); `api_key` is sent as a
    /// bearer token when given.
    ///
    /// # Errors
    /// [`Error::Http`] if the HTTP client cannot be built.
    pub fn new(base_url: impl Into<String>, api_key: Option<String>) -> Result<Self, Error> {
        Ok(OpenAiResponses {
            endpoint: crate::generator::OpenAiChat::new(base_url, api_key)?.endpoint,
        })
    }

    /// A client configured by `OPENAI_BASE_URL` (default
    /// [`DEFAULT_BASE_URL`](crate::generator::openai::DEFAULT_BASE_URL)) and `OPENAI_API_KEY`
    /// (required for the default URL), as [`OpenAiChat::from_env`](crate::generator::OpenAiChat::from_env).
    ///
    /// # Errors
    /// [`Error::MissingApiKey`] for OpenAI's own URL without a key.
    pub fn from_env() -> Result<Self, Error> {
        Ok(OpenAiResponses {
            endpoint: crate::generator::OpenAiChat::from_env()?.endpoint,
        })
    }

    crate::generator::http::transport_settings!();
}

impl crate::generator::http::WireDecoder for ResponsesStreamDecoder {
    fn decode(&mut self, data: &str) -> Result<Vec<Delta>, Error> {
        ResponsesStreamDecoder::decode(self, data)
    }
    fn is_complete(&self) -> bool {
        self.is_done()
    }
    fn finish(self) -> AssistantMessage {
        ResponsesStreamDecoder::finish(self)
    }
}

impl crate::generator::Generator for OpenAiResponses {
    fn stream(&self, request: crate::generator::Request) -> crate::generator::EventStream {
        if let Some(refused) = crate::generator::http::refuse_unchosen_model(&request.model) {
            return refused;
        }
        let body = request_body(&request).to_string().into_bytes();
        self.endpoint
            .post::<ResponsesStreamDecoder>("responses", body)
    }
}

/// A user's or a tool's content as Responses input parts.
fn input_parts(content: &[Content], images_allowed: bool) -> Vec<Value> {
    content
        .iter()
        .map(|part| match part {
            Content::Text { text } => json!({"type": "input_text", "text": text}),
            Content::Image { mime_type, data } if images_allowed => {
                json!({"type": "input_image", "image_url": crate::generator::data_url(mime_type, data)})
            }
            Content::Image { .. } => json!({
                "type": "input_text",
                "text": crate::generator::IMAGE_LEFT_OUT,
            }),
        })
        .collect()
}

/// The Responses request for `request`.
pub(crate) fn request_body(request: &crate::generator::Request) -> Value {
    let images = request.model.supports_images;
    let mut input = Vec::new();
    for message in request.messages.iter() {
        match message {
            Message::User(user) => input.push(json!({
                "type": "message",
                "role": "user",
                "content": input_parts(&user.content, images),
            })),
            Message::Assistant(assistant) => {
                let text = assistant.text();
                if !text.is_empty() {
                    input.push(json!({
                        "type": "message",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": text}],
                    }));
                }
                for call in &assistant.tool_calls {
                    input.push(json!({
                        "type": "function_call",
                        "call_id": call.id,
                        "name": call.name,
                        "arguments": call.arguments,
                    }));
                }
            }
            Message::ToolResult(result) => {
                let only_text = result
                    .content
                    .iter()
                    .all(|part| matches!(part, Content::Text { .. }));
                let output = if only_text {
                    Value::String(result.text())
                } else {
                    Value::Array(input_parts(&result.content, images))
                };
                input.push(json!({
                    "type": "function_call_output",
                    "call_id": result.tool_call_id,
                    "output": output,
                }));
            }
        }
    }
    let mut body = json!({
        "model": request.model.id,
        "input": input,
        "stream": true,
        "store": false,
    });
    if let Some(system) = &request.system_prompt {
        body["instructions"] = system.clone().into();
    }
    if let Some(search) = &request.model.web_search {
        let mut tool = json!({"type": "web_search"});
        if !search.allowed_domains.is_empty() {
            tool["filters"] = json!({"allowed_domains": search.allowed_domains});
        }
        body["tools"] = json!([tool]);
    }
    if !request.tools.is_empty() {
        let tools = request.tools.iter().map(|tool| {
            json!({
                "type": "function",
                "name": tool.name,
                "description": tool.description,
                "parameters": tool.parameters,
            })
        });
        match body["tools"].as_array_mut() {
            Some(offered) => offered.extend(tools),
            None => body["tools"] = tools.collect(),
        }
        match &request.model.tool_choice {
            ToolChoice::Auto => {}
            ToolChoice::None => body["tool_choice"] = "none".into(),
            ToolChoice::Required => body["tool_choice"] = "required".into(),
            ToolChoice::Tool(name) => {
                body["tool_choice"] = json!({"type": "function", "name": name});
            }
        }
        if let Some(parallel) = request.model.parallel_tool_calls {
            body["parallel_tool_calls"] = parallel.into();
        }
    }
    if let Some(limit) = request.model.max_output_tokens {
        body["max_output_tokens"] = limit.into();
    }
    if let Some(schema) = &request.model.output_schema {
        body["text"] = serde_json::json!({
            "format": {"type": "json_schema", "name": "answer", "schema": **schema},
        });
    }
    if let Some(key) = crate::generator::cache::openai_key(request) {
        body["prompt_cache_key"] = key.into();
    }
    request.model.finish_body(&mut body);
    body
}
