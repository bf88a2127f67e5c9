//! Context compaction: when the next request would outgrow the model's context window, the
//! oldest turns are summarized by a model and the request carries the summary in their place,
//! with the user's messages, the plan and the changed files kept word for word beside it
//! (`kept`).
//!
//! The transcript keeps everything; only what is sent changes. A request is
//! `[summary] + the recent messages`, cut before an assistant message so that a tool call and
//! its result are never separated (and the request still alternates user, assistant). A run
//! compacts when its estimate reaches `threshold` of the window, and once more, then retries,
//! when a provider refuses a request as too long. [`Agent::compact`](super::Agent::compact)
//! does it on demand.

mod kept;

use std::fmt;
use std::sync::Arc;

pub(crate) use kept::facts;
pub use kept::USER_MESSAGES_BUDGET;

use futures::StreamExt;

use crate::generator::{self, Generator, Model, Request, StreamEvent, ToolChoice};
use crate::message::{Content, Message, ToolDefinition, Usage, UserMessage};

/// How a summary message begins, so that a transcript compacted before is recognized (its
/// summary is summarized again with the turns after it, never kept beside a newer one).
pub const SUMMARY_HEADER: &str =
    "[Summary of the earlier conversation, written to fit the model's context window]";

/// The default share of the context window at which a run compacts.
pub const DEFAULT_THRESHOLD: f64 = 0.8;

/// The default share of the context window kept as recent messages, word for word.
pub const DEFAULT_KEEP_RECENT: f64 = 0.3;

/// What the summarizer is told.
const INSTRUCTIONS: &str = "You compact the transcript of an agent's run so that it can go on within its context window. \
The user's messages, the current plan and the files changed are kept word for word beside your summary, so do not repeat them. \
Write a summary that lets the agent continue the task without the rest of the transcript: decisions made and why, files and commands touched with what was found or changed (exact paths, names and values), \
errors met and how they were solved, and what remains to do. Keep facts, drop chatter. Answer with the summary alone.";

/// The most text of one tool result or call arguments given to the summarizer.
const MAX_PART_CHARS: usize = 4_000;

/// Counts the tokens of what a request sends, as the model would (or near enough).
///
/// golato compares the count with the context window before each request; the default,
/// [`EstimateTokens`], needs no tokenizer. A run corrects it with what the provider reports:
/// after an answer, the tokens its request counted plus the count of the messages since.
pub trait TokenCounter: Send + Sync + 'static {
    /// Tokens of one message of the transcript.
    fn count_message(&self, message: &Message) -> u64;

    /// Tokens of what precedes the transcript: the system prompt and the tool definitions.
    fn count_prelude(&self, system_prompt: Option<&str>, tools: &[ToolDefinition]) -> u64 {
        EstimateTokens.count_prelude(system_prompt, tools)
    }
}

/// A tokenizer-free estimate: a token per 4 bytes of text, 1,600 per image (a large image's
/// cost in OpenAI's and Anthropic's accounting), and a few per message for its framing. Close
/// for English and code; a model with another tokenizer may count up to half as many again,
/// which the default threshold leaves room for.
#[derive(Debug, Clone, Copy, Default)]
pub struct EstimateTokens;

const TOKENS_PER_IMAGE: u64 = 1_600;
const TOKENS_PER_MESSAGE: u64 = 4;

fn text_tokens(text: &str) -> u64 {
    (text.len() as u64).div_ceil(4)
}

fn content_tokens(content: &[Content]) -> u64 {
    content
        .iter()
        .map(|part| match part {
            Content::Text { text } => text_tokens(text),
            Content::Image { .. } => TOKENS_PER_IMAGE,
        })
        .sum()
}

impl TokenCounter for EstimateTokens {
    fn count_message(&self, message: &Message) -> u64 {
        TOKENS_PER_MESSAGE
            + match message {
                Message::User(user) => content_tokens(&user.content),
                Message::Assistant(assistant) => {
                    content_tokens(&assistant.content)
                        + text_tokens(&assistant.reasoning)
                        + assistant
                            .tool_calls
                            .iter()
                            .map(|call| {
                                TOKENS_PER_MESSAGE
                                    + text_tokens(&call.id)
                                    + text_tokens(&call.name)
                                    + text_tokens(&call.arguments)
                            })
                            .sum::<u64>()
                }
                Message::ToolResult(result) => {
                    text_tokens(&result.tool_call_id) + content_tokens(&result.content)
                }
            }
    }

    fn count_prelude(&self, system_prompt: Option<&str>, tools: &[ToolDefinition]) -> u64 {
        system_prompt.map_or(0, text_tokens)
            + tools
                .iter()
                .map(|tool| {
                    TOKENS_PER_MESSAGE
                        + text_tokens(&tool.name)
                        + text_tokens(&tool.description)
                        + text_tokens(&tool.parameters.to_string())
                })
                .sum::<u64>()
    }
}

/// A model that writes the summaries in place of the run's own (a cheaper one, say).
#[derive(Clone)]
pub struct Summarizer {
    /// Where the summary comes from.
    pub generator: Arc<dyn Generator>,
    /// The model to ask (its price counts toward the run's cost).
    pub model: Model,
}

impl fmt::Debug for Summarizer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Summarizer")
            .field("model", &self.model.id)
            .finish_non_exhaustive()
    }
}

/// When and how a run compacts its context (`agent::Config::compaction`).
///
/// On by default: a run whose window is known (`agent::Config::context_window`, or golato's
/// figure for the models it has prices for) compacts at [`DEFAULT_THRESHOLD`] of it, and any
/// run compacts once and retries when the provider refuses a request as too long.
///
/// ```
/// use golato::agent::{self, compaction::Compaction};
///
/// let config = agent::Config {
///     context_window: Some(32_000),
///     compaction: Compaction::default().with_threshold(0.7).with_keep_recent(0.2),
///     ..Default::default()
/// };
/// # let _ = config;
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct Compaction {
    /// Whether runs compact at all; off, a run that outgrows its window fails with the
    /// provider's error.
    pub enabled: bool,
    /// The share of the context window at which the next request is compacted first.
    pub threshold: f64,
    /// The share of the context window kept as recent messages, word for word (at least the
    /// last assistant message and what follows it is kept whatever its size).
    pub keep_recent: f64,
    /// The model that writes summaries; `None` asks the run's own.
    pub summarizer: Option<Summarizer>,
    /// How requests are counted; [`EstimateTokens`] by default.
    pub counter: Arc<dyn TokenCounter>,
}

impl Default for Compaction {
    fn default() -> Self {
        Compaction {
            enabled: true,
            threshold: DEFAULT_THRESHOLD,
            keep_recent: DEFAULT_KEEP_RECENT,
            summarizer: None,
            counter: Arc::new(EstimateTokens),
        }
    }
}

impl fmt::Debug for Compaction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Compaction")
            .field("enabled", &self.enabled)
            .field("threshold", &self.threshold)
            .field("keep_recent", &self.keep_recent)
            .field("summarizer", &self.summarizer)
            .finish_non_exhaustive()
    }
}

impl Compaction {
    /// No compaction.
    pub fn off() -> Compaction {
        Compaction {
            enabled: false,
            ..Compaction::default()
        }
    }

    /// Compacts when the next request reaches this share of the window (0 to 1).
    pub fn with_threshold(mut self, share: f64) -> Compaction {
        self.threshold = share;
        self
    }

    /// Keeps this share of the window as recent messages (0 to 1).
    pub fn with_keep_recent(mut self, share: f64) -> Compaction {
        self.keep_recent = share;
        self
    }

    /// Has summaries written by `model` through `generator`.
    pub fn with_summarizer(mut self, generator: Arc<dyn Generator>, model: Model) -> Compaction {
        self.summarizer = Some(Summarizer { generator, model });
        self
    }

    /// Counts requests with `counter`.
    pub fn with_counter(mut self, counter: Arc<dyn TokenCounter>) -> Compaction {
        self.counter = counter;
        self
    }

    /// Each message's tokens.
    pub(crate) fn measure(&self, messages: &[Message]) -> Vec<u64> {
        messages
            .iter()
            .map(|message| self.counter.count_message(message))
            .collect()
    }

    /// Says what is wrong with the settings, if anything.
    pub(crate) fn check(&self) -> Result<(), String> {
        let share = |value: f64| value > 0.0 && value <= 1.0;
        if !share(self.threshold) {
            return Err(format!(
                "threshold is {}; give a share of the window above 0 and at most 1 (the default is {DEFAULT_THRESHOLD})",
                self.threshold
            ));
        }
        if !share(self.keep_recent) || self.keep_recent >= self.threshold {
            return Err(format!(
                "keep_recent is {}; give a share of the window above 0 and below the threshold {} (the default is {DEFAULT_KEEP_RECENT})",
                self.keep_recent, self.threshold
            ));
        }
        Ok(())
    }
}

/// A transcript's compaction, carried from one run to the next: requests send `text` in
/// place of the transcript's first `replaces` messages. [`RunResult::summary`](super::RunResult::summary)
/// and [`CompactionEvent`](super::event::CompactionEvent) give it; [`Input::summary`](super::Input::summary)
/// takes it, so a conversation of many runs (a chat) does not summarize its history again at
/// every run.
///
/// ```
/// use golato::agent::{compaction::Summary, Input};
/// use golato::message::{AssistantMessage, Message, UserMessage};
///
/// let input = Input {
///     prompts: vec![UserMessage::new("And now?")],
///     transcript: vec![
///         Message::User(UserMessage::new("Fetch the pages.")),
///         Message::Assistant(AssistantMessage::with_text("Fetched.")),
///     ],
///     // The model sees the summary, then "Fetched.", then the prompt.
///     summary: Some(Summary::new("The user asked for the pages.", 1)),
/// };
/// # let _ = input;
/// ```
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct Summary {
    /// The summary, as the model wrote it.
    pub text: String,
    /// How many messages at the start of the transcript it stands for; the message at that
    /// index must be an assistant message (compaction cuts only there).
    pub replaces: usize,
}

impl Summary {
    /// A summary standing for the first `replaces` messages.
    pub fn new(text: impl Into<String>, replaces: usize) -> Summary {
        Summary {
            text: text.into(),
            replaces,
        }
    }

    /// Whether it can stand for the start of `transcript` (as [`Input::summary`](super::Input::summary)
    /// requires): it replaces at least one message, and an assistant message follows them.
    pub fn fits(&self, transcript: &[Message]) -> bool {
        self.check(transcript).is_ok()
    }

    /// Why it cannot stand for the start of `transcript`, if it cannot.
    pub(crate) fn check(&self, transcript: &[Message]) -> Result<(), String> {
        match transcript.get(self.replaces) {
            _ if self.replaces == 0 => Err("it replaces no message; leave Input::summary None instead".to_owned()),
            Some(Message::Assistant(_)) => Ok(()),
            Some(_) => Err(format!(
                "Input::summary replaces {} message(s), but message {} of the transcript is not an assistant message (a summary ends where an assistant message begins, so that no tool result loses its call); pass the Summary a run gave for this transcript",
                self.replaces, self.replaces
            )),
            None => Err(format!(
                "Input::summary replaces {} message(s), but the transcript has {}; pass the Summary a run gave for this transcript",
                self.replaces,
                transcript.len()
            )),
        }
    }
}

/// Why a run compacted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompactionReason {
    /// The next request would have reached the threshold of the context window.
    Threshold,
    /// The provider refused the request as too long; it is sent again, compacted.
    ContextTooLong,
    /// [`Agent::compact`](super::Agent::compact).
    Requested,
}

/// A transcript with its oldest messages replaced by a summary.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Compacted {
    /// The summary message, then the messages kept: what a request sends, and a transcript a
    /// run can go on from.
    pub messages: Vec<Message>,
    /// The summary's text (empty when nothing was replaced).
    pub summary: String,
    /// Messages of the given transcript the summary stands for (0: nothing could be
    /// compacted, `messages` is the transcript as given).
    pub replaced: usize,
    /// The estimated tokens of a request before and after.
    pub tokens_before: u64,
    /// See `tokens_before`.
    pub tokens_after: u64,
    /// What writing the summary used.
    pub usage: Usage,
}

/// The sum of token counts, saturating (a counter of the user's may return anything).
pub(crate) fn total(counts: &[u64]) -> u64 {
    counts
        .iter()
        .fold(0, |total: u64, count| total.saturating_add(*count))
}

/// Whether `message` is a summary golato wrote.
pub(crate) fn is_summary(message: &Message) -> bool {
    match message {
        Message::User(user) => {
            matches!(user.content.first(), Some(Content::Text { text }) if text.starts_with(SUMMARY_HEADER))
        }
        _ => false,
    }
}

/// The summary message for `summary`.
pub(crate) fn summary_message(summary: &str) -> UserMessage {
    UserMessage::new(format!("{SUMMARY_HEADER}\n\n{summary}"))
}

/// A summary's text: the facts kept word for word ([`facts`]), then the model's summary.
pub(crate) fn summary_text(facts: &str, summarized: &str) -> String {
    match facts.is_empty() {
        true => summarized.to_owned(),
        false => format!("{facts}\n\n{}\n{summarized}", kept::SUMMARIZED),
    }
}

/// Where to cut `messages` (the next request's, with their token counts): the index of the
/// first message kept. Cuts are only before an assistant message, after at least one message
/// that is not an earlier summary; the earliest cut whose tail fits `keep` tokens wins, else
/// the last one. `None` when there is no such cut.
pub(crate) fn choose_cut(messages: &[Message], counts: &[u64], keep: u64) -> Option<usize> {
    let start = usize::from(messages.first().is_some_and(is_summary));
    let mut tail: u64 = total(counts);
    let mut last = None;
    for (index, message) in messages.iter().enumerate() {
        if index > start && matches!(message, Message::Assistant(_)) {
            if tail <= keep {
                return Some(index);
            }
            last = Some(index);
        }
        tail = tail.saturating_sub(counts.get(index).copied().unwrap_or(0));
    }
    last
}

/// How many bytes of older messages the summarizer is given: half the window (at about 4
/// bytes a token), and after a refusal, half of the refused request, so that the summary's own
/// request fits where that one did not.
pub(crate) fn render_budget(window: Option<u64>, tokens_before: u64, refused: bool) -> usize {
    let by_window = window.map_or(400_000, |window| (window / 2).saturating_mul(4));
    let bytes = if refused {
        by_window.min(tokens_before.saturating_mul(2))
    } else {
        by_window
    };
    usize::try_from(bytes).unwrap_or(usize::MAX)
}

/// The older messages as one text for the summarizer, at most `max_bytes` long (the oldest
/// go first when it is over; an earlier summary is always kept).
pub(crate) fn render(older: &[Message], max_bytes: usize) -> String {
    let mut parts: Vec<String> = older.iter().map(render_message).collect();
    let mut total: usize = parts.iter().map(|part| part.len() + 2).sum();
    let first_droppable = usize::from(older.first().is_some_and(is_summary));
    // The oldest go first (never the earlier summary, never the newest message).
    let mut dropped = 0;
    while total > max_bytes && first_droppable + dropped + 1 < parts.len() {
        total -= parts[first_droppable + dropped].len() + 2;
        dropped += 1;
    }
    if dropped > 0 {
        parts.splice(
            first_droppable..first_droppable + dropped,
            [format!(
                "[{dropped} older message(s) left out: too long to summarize at once]"
            )],
        );
    }
    parts.join("\n\n")
}

fn render_message(message: &Message) -> String {
    match message {
        // Its facts are kept again from the transcript: the summarizer gets its summary.
        Message::User(user) if is_summary(message) => {
            let text = user.text();
            match text.split_once(kept::SUMMARIZED) {
                Some((_, summarized)) => format!("{SUMMARY_HEADER}\n\n{}", summarized.trim()),
                None => text,
            }
        }
        Message::User(user) => format!("User: {}", content_text(&user.content)),
        Message::Assistant(assistant) => {
            let mut text = format!("Assistant: {}", content_text(&assistant.content));
            for call in &assistant.tool_calls {
                text.push_str(&format!(
                    "\nAssistant called {} (call {}) with {}",
                    call.name,
                    call.id,
                    shortened(&call.arguments)
                ));
            }
            text
        }
        Message::ToolResult(result) => format!(
            "Result of {} (call {}){}: {}",
            result.tool_name,
            result.tool_call_id,
            if result.is_error { ", an error" } else { "" },
            shortened(&content_text(&result.content))
        ),
    }
}

fn content_text(content: &[Content]) -> String {
    let parts: Vec<&str> = content
        .iter()
        .map(|part| match part {
            Content::Text { text } => text.as_str(),
            Content::Image { .. } => "[image]",
        })
        .collect();
    parts.join("\n")
}

/// `text`, or its start and end around a note of what was left out.
fn shortened(text: &str) -> String {
    if text.len() <= MAX_PART_CHARS {
        return text.to_owned();
    }
    let half = MAX_PART_CHARS / 2;
    let head = floor_char_boundary(text, half);
    let tail = ceil_char_boundary(text, text.len() - half);
    format!(
        "{} […{} bytes left out…] {}",
        &text[..head],
        tail - head,
        &text[tail..]
    )
}

fn floor_char_boundary(text: &str, mut index: usize) -> usize {
    while !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

fn ceil_char_boundary(text: &str, mut index: usize) -> usize {
    while !text.is_char_boundary(index) {
        index += 1;
    }
    index
}

/// Why a summary could not be written.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SummaryError {
    #[error(transparent)]
    Generator(#[from] generator::Error),
    #[error("the summarizer answered with no text")]
    Empty,
    #[error("the run's journal could not keep the summary: {0}")]
    Unrecordable(String),
}

/// Asks `generator` for a summary of `rendered`.
pub(crate) async fn summarize(
    generator: Arc<dyn Generator>,
    model: Model,
    rendered: String,
) -> Result<(String, Usage), SummaryError> {
    let model = Model {
        tool_choice: ToolChoice::Auto,
        parallel_tool_calls: None,
        output_schema: None,
        // A summary is of the transcript, never of a search.
        web_search: None,
        ..model
    };
    let request = Request {
        model,
        system_prompt: Some(INSTRUCTIONS.to_owned()),
        messages: Arc::new(vec![Message::User(UserMessage::new(format!(
            "The transcript to summarize:\n\n{rendered}"
        )))]),
        tools: Arc::from(Vec::new()),
        compacted_turns: 0,
    };
    let mut stream = generator.stream(request);
    while let Some(item) = stream.next().await {
        if let StreamEvent::Done(message) = item? {
            let summary = message.text().trim().to_owned();
            if summary.is_empty() {
                return Err(SummaryError::Empty);
            }
            return Ok((summary, message.usage));
        }
    }
    Err(generator::Error::IncompleteStream.into())
}

#[cfg(test)]
mod tests;
