//! Generators: where assistant messages come from.
//!
//! A [`Generator`] answers one [`Request`] (system prompt, transcript, tool definitions, model)
//! with a stream of [`StreamEvent`]s: [`Delta`]s as the text and tool-call fragments arrive, then
//! one [`StreamEvent::Done`] with the whole [`AssistantMessage`]. The agent turns the deltas into
//! `MessageUpdate` events while the message streams in, so a provider client only has to parse
//! its wire format into this stream.
//!
//! [`Scripted`] replays assistant messages given in advance (tests, demos, record and replay).

pub mod anthropic;
mod assembly;
mod cache;
pub(crate) mod http;
pub mod openai;
mod price;
mod scripted;
pub(crate) mod sse;

use std::path::PathBuf;
use std::sync::Arc;

use futures::stream::BoxStream;

use crate::message::{AssistantMessage, Message, ToolDefinition};

pub use anthropic::Anthropic;
pub use cache::PromptCache;
pub use http::{
    causes, RetryPolicy, DEFAULT_IDLE_TIMEOUT, MAX_ERROR_BODY_BYTES, MAX_EVENT_BYTES,
    MAX_MESSAGE_BYTES,
};
pub use openai::{OpenAiChat, OpenAiResponses};
pub use price::{context_window, known_models, Price};
pub use scripted::{Scripted, MAX_SCRIPT_BYTES};

/// The model to ask, what it can do, and how to ask it.
///
/// The options are sent to every provider in its own terms (a provider that has no such
/// setting gets none); `None` leaves a setting to the provider.
///
/// ```
/// use golato::generator::{Model, ToolChoice};
///
/// let model = Model::new("gpt-4.1-mini")
///     .with_temperature(0.2)
///     .with_max_output_tokens(2_000)
///     .with_tool_choice(ToolChoice::Required)
///     .with_parallel_tool_calls(false)
///     .with_extra("top_p", serde_json::json!(0.9));
/// assert_eq!(model.temperature, Some(0.2));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Model {
    /// The provider's model ID, such as `gpt-4o-mini`.
    pub id: String,
    /// Whether the model accepts image input (tool results with images).
    pub supports_images: bool,
    /// The most tokens one response may have; `None` leaves it to the provider (Anthropic,
    /// which requires one, gets 4,096).
    pub max_output_tokens: Option<u32>,
    /// Sampling temperature; `None` leaves it to the provider.
    pub temperature: Option<f64>,
    /// Whether the model may, must or must not call tools (sent only with tools).
    pub tool_choice: ToolChoice,
    /// Whether one message may call several tools; `None` leaves it to the provider (sent
    /// only with tools).
    pub parallel_tool_calls: Option<bool>,
    /// More top-level fields of the request body, passed through as they are; a field named
    /// here replaces the one golato would send (the wire format is then yours to keep valid).
    pub extra: serde_json::Map<String, serde_json::Value>,
    /// Prompt caching: Anthropic's cache breakpoints, OpenAI's `prompt_cache_key` (on by
    /// default; see [`PromptCache`]).
    pub prompt_cache: PromptCache,
    /// What its tokens cost ([`Price::known`] for the ID by default; `None` for a model
    /// golato has no price for: its cost is unknown, never taken as zero).
    pub price: Option<Price>,
    /// A JSON Schema the final answer must satisfy, asked of the provider in its own terms
    /// (set by `Agent::new` from `agent::Config::output_schema`, which also validates it).
    pub output_schema: Option<Arc<serde_json::Value>>,
    /// The provider's own web search, offered to the model beside the tools (Anthropic's
    /// `web_search` server tool, the Responses API's `web_search`); `None` (the default): not
    /// offered. What it searched and cites comes back in
    /// [`AssistantMessage::web_search`](crate::message::AssistantMessage::web_search).
    /// OpenAI's Chat Completions has none; its client sends nothing for it.
    pub web_search: Option<WebSearchTool>,
}

/// The provider's web search as a model is offered it.
///
/// ```
/// use golato::generator::{Model, WebSearchTool};
///
/// let model = Model::new("claude-sonnet-4-5")
///     .with_web_search(WebSearchTool::default().with_allowed_domains(["docs.rs"]));
/// assert_eq!(model.web_search.unwrap().allowed_domains, ["docs.rs"]);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct WebSearchTool {
    /// Only these domains are searched (and their subdomains); all when empty.
    pub allowed_domains: Vec<String>,
    /// The most searches in one answer, where the provider takes a limit (Anthropic).
    pub max_uses: Option<u32>,
}

impl WebSearchTool {
    /// The same, searching only `domains`.
    #[must_use]
    pub fn with_allowed_domains(
        mut self,
        domains: impl IntoIterator<Item = impl Into<String>>,
    ) -> WebSearchTool {
        self.allowed_domains = domains.into_iter().map(Into::into).collect();
        self
    }

    /// The same, with at most `uses` searches per answer.
    #[must_use]
    pub fn with_max_uses(mut self, uses: u32) -> WebSearchTool {
        self.max_uses = Some(uses);
        self
    }
}

/// Whether the model may, must or must not call tools.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum ToolChoice {
    /// The model decides (every provider's default).
    #[default]
    Auto,
    /// No tool calls.
    None,
    /// At least one tool call.
    Required,
    /// A call of this tool.
    Tool(String),
}

impl Model {
    /// A model with the given ID, accepting images, with every option left to the provider.
    pub fn new(id: impl Into<String>) -> Self {
        Model {
            id: id.into(),
            supports_images: true,
            max_output_tokens: None,
            temperature: None,
            tool_choice: ToolChoice::Auto,
            parallel_tool_calls: None,
            extra: serde_json::Map::new(),
            prompt_cache: PromptCache::default(),
            price: None,
            output_schema: None,
            web_search: None,
        }
        .priced()
    }

    /// The model with golato's known price for its ID (none for an unknown model).
    fn priced(mut self) -> Self {
        self.price = Price::known(&self.id);
        self
    }

    /// Sets the model's price (for a model golato has none for, or to correct one).
    pub fn with_price(mut self, price: Price) -> Self {
        self.price = Some(price);
        self
    }

    /// Sets how requests ask for prompt caching (on by default).
    pub fn with_prompt_cache(mut self, cache: PromptCache) -> Self {
        self.prompt_cache = cache;
        self
    }

    /// Offers the provider's own web search ([`Model::web_search`]).
    pub fn with_web_search(mut self, search: WebSearchTool) -> Self {
        self.web_search = Some(search);
        self
    }

    /// Sets the sampling temperature.
    pub fn with_temperature(mut self, temperature: f64) -> Self {
        self.temperature = Some(temperature);
        self
    }

    /// Sets the most tokens one response may have.
    pub fn with_max_output_tokens(mut self, tokens: u32) -> Self {
        self.max_output_tokens = Some(tokens);
        self
    }

    /// Sets whether the model may, must or must not call tools.
    pub fn with_tool_choice(mut self, choice: ToolChoice) -> Self {
        self.tool_choice = choice;
        self
    }

    /// Allows or forbids several tool calls in one message.
    pub fn with_parallel_tool_calls(mut self, allowed: bool) -> Self {
        self.parallel_tool_calls = Some(allowed);
        self
    }

    /// Adds a field to the request body, as it is.
    pub fn with_extra(mut self, field: impl Into<String>, value: serde_json::Value) -> Self {
        self.extra.insert(field.into(), value);
        self
    }

    /// Adds the options every provider shares to `body`: the extra fields last, so that they
    /// win.
    pub(crate) fn finish_body(&self, body: &mut serde_json::Value) {
        if let Some(temperature) = self.temperature {
            body["temperature"] = temperature.into();
        }
        if let Some(object) = body.as_object_mut() {
            for (field, value) in &self.extra {
                object.insert(field.clone(), value.clone());
            }
        }
    }
}

impl Default for Model {
    fn default() -> Self {
        Model::new("scripted")
    }
}

/// One request for the next assistant message.
#[derive(Debug, Clone)]
pub struct Request {
    /// The model to ask.
    pub model: Model,
    /// Instructions that precede the transcript.
    pub system_prompt: Option<String>,
    /// The transcript so far: a snapshot shared with the run, so asking costs no copy.
    pub messages: Arc<Vec<Message>>,
    /// The tools the model may call.
    pub tools: Arc<[ToolDefinition]>,
    /// How many assistant messages of the run's transcript the summary at the start of
    /// `messages` stands for (0 unless the run compacted its context): a generator that counts
    /// the turns before a request, as [`Scripted`] does, adds them.
    pub compacted_turns: usize,
}

/// A fragment of the message being generated.
///
/// Serializes as an object with a `"kind"` (`text`, `reasoning`, `tool_call`): text and
/// reasoning carry a `"text"`, a tool-call fragment its fields.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", from = "DeltaForm")]
pub enum Delta {
    /// More answer text.
    Text(#[serde(serialize_with = "as_text")] String),
    /// More reasoning text, kept apart from the answer.
    Reasoning(#[serde(serialize_with = "as_text")] String),
    /// A fragment of tool call number `index` (0-based, in the message's call order).
    ToolCall {
        /// Which call of the message this fragment belongs to.
        index: usize,
        /// The call's ID, on the fragment that carries it.
        id: Option<String>,
        /// The tool's name, on the fragment that carries it.
        name: Option<String>,
        /// More of the raw JSON arguments.
        arguments: String,
    },
}

/// How a [`Delta`] reads back: its text variants serialize as `{"kind": "text", "text": ...}`,
/// which a newtype variant of an internally tagged enum cannot deserialize from by itself.
#[derive(serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum DeltaForm {
    Text {
        text: String,
    },
    Reasoning {
        text: String,
    },
    ToolCall {
        index: usize,
        id: Option<String>,
        name: Option<String>,
        arguments: String,
    },
}

impl From<DeltaForm> for Delta {
    fn from(form: DeltaForm) -> Delta {
        match form {
            DeltaForm::Text { text } => Delta::Text(text),
            DeltaForm::Reasoning { text } => Delta::Reasoning(text),
            DeltaForm::ToolCall {
                index,
                id,
                name,
                arguments,
            } => Delta::ToolCall {
                index,
                id,
                name,
                arguments,
            },
        }
    }
}

/// What a provider client sends in place of an image the model does not accept.
const IMAGE_LEFT_OUT: &str = "[image left out: the model does not accept images]";

/// An image as the `data:` URL the OpenAI APIs take.
fn data_url(mime_type: &str, data: &str) -> String {
    format!("data:{mime_type};base64,{data}")
}

/// Serializes a text fragment as `{"text": ...}`, beside the enum's `"kind"` tag.
fn as_text<S: serde::Serializer>(text: &str, serializer: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut map = serializer.serialize_map(Some(1))?;
    map.serialize_entry("text", text)?;
    map.end()
}

impl Delta {
    /// Appends `next` to `self` when both continue the same piece of the message, returning
    /// `next` back when they do not.
    pub(crate) fn merge(&mut self, next: Delta) -> Option<Delta> {
        match (self, next) {
            (Delta::Text(text), Delta::Text(more))
            | (Delta::Reasoning(text), Delta::Reasoning(more)) => {
                text.push_str(&more);
                None
            }
            (
                Delta::ToolCall {
                    index,
                    id,
                    name,
                    arguments,
                },
                Delta::ToolCall {
                    index: next_index,
                    id: next_id,
                    name: next_name,
                    arguments: more,
                },
            ) if *index == next_index
                && (next_id.is_none() || *id == next_id)
                && (next_name.is_none() || *name == next_name) =>
            {
                arguments.push_str(&more);
                None
            }
            (_, next) => Some(next),
        }
    }
}

/// An item of a generator's stream.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum StreamEvent {
    /// A fragment, as it arrives.
    Delta(Delta),
    /// The whole message; the stream ends after it.
    Done(AssistantMessage),
    /// The request failed in a way worth trying again (no connection, HTTP 429 or 5xx), and
    /// will be sent again after a wait: the agent reports it as
    /// [`Event::Retry`](crate::agent::Event::Retry), so that a person sees why nothing comes.
    Retrying(Retrying),
}

/// A request about to be sent again: which retry this is, of how many, after how long, and
/// why the last attempt failed.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Retrying {
    /// This retry's number, from 1.
    pub attempt: u32,
    /// How many retries the policy allows.
    pub retries: u32,
    /// The wait before it, in milliseconds.
    pub wait_ms: u64,
    /// Why the attempt before it failed (`HTTP 503`, `connection refused`).
    pub reason: String,
}

/// The stream a generator returns: deltas, then exactly one `Done`, or an error that ends it.
pub type EventStream = BoxStream<'static, Result<StreamEvent, Error>>;

/// A source of assistant messages.
///
/// Implementations must be cheap to share: one generator serves every run of an agent,
/// concurrently. The stream is polled on its run's actor thread (so it must not block) and
/// dropped when the run is cancelled.
pub trait Generator: Send + Sync + 'static {
    /// Streams the answer to `request`.
    fn stream(&self, request: Request) -> EventStream;
}

impl Error {
    /// Whether the provider refused the request as longer than the model's context window
    /// (OpenAI's `context_length_exceeded`, Anthropic's "prompt is too long", HTTP 413, and the
    /// wordings of compatible servers). A run compacts its context and retries once on it.
    ///
    /// ```
    /// use golato::generator::Error;
    ///
    /// let refused = Error::Provider {
    ///     status: Some(400),
    ///     message: "prompt is too long: 210000 tokens > 200000 maximum".into(),
    /// };
    /// assert!(refused.is_context_too_long());
    /// ```
    pub fn is_context_too_long(&self) -> bool {
        let Error::Provider { status, message } = self else {
            return false;
        };
        if *status == Some(413) {
            return true;
        }
        let message = message.to_lowercase();
        [
            "context_length_exceeded",
            "context length",
            "context window",
            "context size",
            "prompt is too long",
            "too many tokens",
            "maximum context",
            "input is too long",
        ]
        .iter()
        .any(|phrase| message.contains(phrase))
    }
}

/// Why a generator could not produce a message.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A [`Scripted`] generator was asked for more messages than its script has.
    #[error(
        "the script has {available} assistant message(s) but the run asked for message #{requested}; \
         add entries to the script, or make its last entry a message without tool calls so the run ends"
    )]
    ScriptExhausted {
        /// 1-based number of the message asked for.
        requested: usize,
        /// Entries in the script.
        available: usize,
    },
    /// A script file could not be read.
    #[error("could not read the script {path}: {source}")]
    ReadScript {
        /// The file.
        path: PathBuf,
        /// What the file system said.
        #[source]
        source: std::io::Error,
    },
    /// A script entry is not an assistant message.
    #[error("script {origin}, entry {entry}: {reason}; each entry must be an assistant message such as {{\"text\": \"...\"}} or {{\"tool_calls\": [{{\"id\": \"1\", \"name\": \"read\", \"arguments\": {{}}}}]}}")]
    InvalidScript {
        /// The file, or `<inline>`.
        origin: String,
        /// 1-based entry (line, for JSONL) number.
        entry: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// The stream ended without a final message.
    #[error("the generator's stream ended without a final message; the provider closed the response early")]
    IncompleteStream,
    /// The generator panicked.
    #[error("the generator panicked: {message}")]
    Panicked {
        /// The panic message.
        message: String,
    },
    /// The provider answered with an error.
    #[error("the provider answered with an error{}: {message}", status.map(|s| format!(" (HTTP {s})")).unwrap_or_default())]
    Provider {
        /// The HTTP status, when the error came as a response rather than in the stream.
        status: Option<u16>,
        /// The provider's own message.
        message: String,
    },
    /// The HTTP request failed, or the response stream broke.
    ///
    /// Its text already names the root cause (say, "Connection refused"); `source()` gives the
    /// HTTP client's error itself, for a caller that inspects it.
    #[error("{reason}; check the base URL and the network, then retry")]
    Http {
        /// What failed, with its causes.
        reason: String,
        /// The HTTP client's error, when there is one.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
    /// The response stream sent nothing of the answer for the idle timeout (keep-alive
    /// comments and events that carry no part of the answer do not count).
    #[error("the provider's stream sent nothing of the answer for {seconds} s (keep-alive comments and empty events do not count); it is treated as broken (raise the idle timeout for slow models)")]
    IdleTimeout {
        /// The idle timeout.
        seconds: f64,
    },
    /// The provider accepted the request but sent no response (not even its headers) within
    /// the idle timeout.
    #[error("the provider accepted the request but sent no response within {seconds} s; it is treated as down (check the base URL, or raise the idle timeout for a slow proxy)")]
    NoResponse {
        /// The idle timeout.
        seconds: f64,
    },
    /// Part of a response was larger than golato takes: an event, the message, or an error
    /// body read to its limit without ending.
    #[error("the provider sent {what} of more than {limit} bytes, more than golato takes; the response was dropped (no model answer is this large: check that the base URL is a model API)")]
    TooLarge {
        /// What was too large.
        what: &'static str,
        /// The limit, in bytes.
        limit: usize,
    },
    /// A successful response that is not an event stream (an HTML page, a JSON document).
    #[error("the server did not answer with an event stream: its content type is {content_type:?} and its body begins {start:?}; check that the base URL is the API's (for example https://api.openai.com/v1)")]
    NotAnEventStream {
        /// The response's `Content-Type`.
        content_type: String,
        /// The first bytes of its body, as text.
        start: String,
    },
    /// A provider was asked with no model chosen (the request names the placeholder of an
    /// agent configured without one).
    #[error("no model chosen: the request names {id:?}; set agent::Config::model to one of the provider's models (for example Model::new(\"gpt-4o-mini\"))")]
    NoModel {
        /// The model ID the request named.
        id: String,
    },
    /// An API key is required and was not given.
    #[error("no API key: set {variable} or pass one to the client")]
    MissingApiKey {
        /// The environment variable that would hold it.
        variable: &'static str,
    },
    /// The stream is not in the provider's format.
    #[error("the provider's stream is malformed: {reason}")]
    MalformedStream {
        /// What was wrong.
        reason: String,
    },
}

// The streaming decoders against recorded provider streams (`tests/fixtures/llm/`), whole and
// cut at every kind of byte boundary; the decoders are private, so these are unit tests.
#[cfg(test)]
mod stream_tests;
