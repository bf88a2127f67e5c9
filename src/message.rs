//! The transcript: user, assistant and tool-result messages.
//!
//! Every type here is `serde` (de)serializable with stable field names, so a transcript can be
//! saved, sent to another process and resumed (see [`agent::Input::transcript`]). Messages are
//! tagged by `"role"` (`"user"`, `"assistant"`, `"tool_result"`), content parts by `"type"`
//! (`"text"`, `"image"`), and enums use `snake_case` names.
//!
//! ```
//! use golato::message::{Message, UserMessage};
//!
//! let message = Message::User(UserMessage::new("Which plan does C-100 use?"));
//! let json = serde_json::to_string(&message)?;
//! assert_eq!(json, r#"{"role":"user","content":[{"type":"text","text":"Which plan does C-100 use?"}]}"#);
//! # Ok::<(), serde_json::Error>(())
//! ```
//!
//! [`agent::Input::transcript`]: crate::agent::Input::transcript

mod text;

use serde::{Deserialize, Serialize};

pub use text::Text;

/// One message of a transcript.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// A prompt from the user.
    User(UserMessage),
    /// A model's answer, possibly with tool calls.
    Assistant(AssistantMessage),
    /// The result of one tool call.
    ToolResult(ToolResultMessage),
}

impl From<UserMessage> for Message {
    fn from(message: UserMessage) -> Self {
        Message::User(message)
    }
}

impl From<AssistantMessage> for Message {
    fn from(message: AssistantMessage) -> Self {
        Message::Assistant(message)
    }
}

impl From<ToolResultMessage> for Message {
    fn from(message: ToolResultMessage) -> Self {
        Message::ToolResult(message)
    }
}

/// A part of a message's content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Content {
    /// Plain text.
    Text {
        /// The text, shared: a clone of the part (an event, the transcript, a run's result)
        /// does not copy it.
        text: Text,
    },
    /// An image, base64-encoded.
    Image {
        /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
        mime_type: String,
        /// The image bytes in standard base64.
        data: String,
    },
}

impl Content {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        Content::Text {
            text: Text::from(text.into()),
        }
    }

    /// An image part from a MIME type and base64 data.
    pub fn image(mime_type: impl Into<String>, data: impl Into<String>) -> Self {
        Content::Image {
            mime_type: mime_type.into(),
            data: data.into(),
        }
    }

    /// The text of a text part, `None` for an image.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Content::Text { text } => Some(text),
            Content::Image { .. } => None,
        }
    }
}

/// Joins the text parts of `content` with newlines, skipping images.
pub(crate) fn joined_text(content: &[Content]) -> String {
    let mut parts = content.iter().filter_map(Content::as_text);
    let mut joined = parts.next().unwrap_or_default().to_owned();
    for part in parts {
        joined.push('\n');
        joined.push_str(part);
    }
    joined
}

/// A prompt from the user.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserMessage {
    /// Text and images.
    pub content: Vec<Content>,
}

impl UserMessage {
    /// A user message with one text part.
    pub fn new(text: impl Into<String>) -> Self {
        UserMessage {
            content: vec![Content::text(text)],
        }
    }

    /// The text parts joined with newlines.
    pub fn text(&self) -> String {
        joined_text(&self.content)
    }
}

/// Why the model stopped producing output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model finished its answer.
    #[default]
    Stop,
    /// The model asks for its tool calls to be run.
    ToolCalls,
    /// The output hit the token limit: the text, and any tool call's arguments, may be cut short.
    Length,
    /// The provider reported an error.
    Error,
    /// The request was cancelled.
    Aborted,
}

/// Tokens used by one model response.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens, excluding cache reads.
    #[serde(default)]
    pub input_tokens: u64,
    /// Generated tokens.
    #[serde(default)]
    pub output_tokens: u64,
    /// Prompt tokens read from the provider's cache.
    #[serde(default)]
    pub cache_read_tokens: u64,
    /// Prompt tokens written to the provider's cache.
    #[serde(default)]
    pub cache_write_tokens: u64,
}

impl Usage {
    /// Prompt tokens of every kind: input, cache reads and cache writes (saturating: a
    /// provider may report anything).
    pub fn prompt_tokens(&self) -> u64 {
        self.input_tokens
            .saturating_add(self.cache_read_tokens)
            .saturating_add(self.cache_write_tokens)
    }

    /// Every token counted: prompt and output (saturating).
    ///
    /// ```
    /// use golato::message::Usage;
    ///
    /// let usage = Usage { input_tokens: 10, output_tokens: 5, cache_read_tokens: 100, ..Default::default() };
    /// assert_eq!(usage.prompt_tokens(), 110);
    /// assert_eq!(usage.total_tokens(), 115);
    /// ```
    pub fn total_tokens(&self) -> u64 {
        self.prompt_tokens().saturating_add(self.output_tokens)
    }
}

/// Adds counts, saturating at `u64::MAX` (a provider may report absurd figures; they must not
/// wrap around or panic the run).
impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, other: Usage) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.cache_read_tokens = self
            .cache_read_tokens
            .saturating_add(other.cache_read_tokens);
        self.cache_write_tokens = self
            .cache_write_tokens
            .saturating_add(other.cache_write_tokens);
    }
}

/// A tool call requested by the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's ID for the call; the result message refers to it.
    pub id: String,
    /// The name of the tool to run.
    pub name: String,
    /// The arguments as raw JSON text, exactly as the model sent them (they may be invalid).
    pub arguments: String,
}

impl ToolCall {
    /// A call with the given ID, tool name and raw JSON arguments.
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
        }
    }
}

/// A model's answer.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct AssistantMessage {
    /// Text (and, for models that produce them, image) parts.
    #[serde(default)]
    pub content: Vec<Content>,
    /// Reasoning text, kept apart from the answer; empty for models that send none.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reasoning: String,
    /// Tool calls, in the order the model sent them (the source order of the batch).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// Why the model stopped.
    #[serde(default)]
    pub stop_reason: StopReason,
    /// Tokens used.
    #[serde(default)]
    pub usage: Usage,
    /// The model that produced it, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The provider's error text when `stop_reason` is [`StopReason::Error`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    /// What the provider's own web search did for this answer (the queries it ran, the
    /// pages the answer cites), when the model was given it
    /// ([`Model::web_search`](crate::generator::Model::web_search)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub web_search: Option<WebSearch>,
}

/// What a provider's web search did for an answer: kept with the message (in sessions and
/// `--json` events), never sent back to a model.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct WebSearch {
    /// The queries it ran, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub queries: Vec<String>,
    /// The pages the answer cites, each once, in the order first cited.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub citations: Vec<Citation>,
}

impl WebSearch {
    /// Whether it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.queries.is_empty() && self.citations.is_empty()
    }

    /// Adds `citation` unless its page is cited already.
    pub fn cite(&mut self, citation: Citation) {
        if !citation.url.is_empty() && !self.citations.iter().any(|known| known.url == citation.url)
        {
            self.citations.push(citation);
        }
    }
}

/// A page an answer cites.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Citation {
    /// Where the page is.
    pub url: String,
    /// Its title, when the provider gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The words cited, when the provider gave them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cited_text: Option<String>,
}

impl Citation {
    /// A citation of `url`, with its `title` when known.
    pub fn new(url: impl Into<String>, title: Option<String>) -> Citation {
        Citation {
            url: url.into(),
            title,
            cited_text: None,
        }
    }
}

impl AssistantMessage {
    /// A text answer that ends the run.
    pub fn with_text(text: impl Into<String>) -> Self {
        AssistantMessage {
            content: vec![Content::text(text)],
            stop_reason: StopReason::Stop,
            ..AssistantMessage::default()
        }
    }

    /// An answer that asks for `calls` to be run.
    pub fn with_tool_calls(calls: impl IntoIterator<Item = ToolCall>) -> Self {
        AssistantMessage {
            tool_calls: calls.into_iter().collect(),
            stop_reason: StopReason::ToolCalls,
            ..AssistantMessage::default()
        }
    }

    /// The text parts joined with newlines.
    pub fn text(&self) -> String {
        joined_text(&self.content)
    }
}

/// The result of one tool call, as recorded in the transcript and sent to the next request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResultMessage {
    /// The ID of the call this answers.
    pub tool_call_id: String,
    /// The name of the tool that was called (as the model spelled it).
    pub tool_name: String,
    /// Text and images for the model.
    #[serde(default)]
    pub content: Vec<Content>,
    /// Structured data for the application (not sent to the model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<serde_json::Value>,
    /// Whether the call failed; the model sees the text either way.
    #[serde(default)]
    pub is_error: bool,
    /// Set when the call ran more than once: the attempt that produced this result (2 for the
    /// first retry). Only a journaled (durable) run retries a call, when the process running
    /// it died before its result was recorded. Not sent to the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
}

impl ToolResultMessage {
    /// The text parts joined with newlines.
    pub fn text(&self) -> String {
        joined_text(&self.content)
    }
}

/// The part of a tool a model sees: name, description and JSON schema. Requests carry these
/// beside the transcript; `Tool::definition` makes one.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ToolDefinition {
    /// The tool's name.
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// JSON schema of the arguments (its root is an object schema).
    pub parameters: serde_json::Value,
}

/// How a queued user message reached the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Delivery {
    /// `Run::steer`: after the batch that was running, before the next model turn.
    Steer,
    /// `Run::follow_up`: when the run would otherwise have ended, so it went on.
    FollowUp,
}
