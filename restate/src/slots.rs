//! What a run's inbox and the run itself exchange: the posted message, the slot promise it
//! completes (`post-0`, `post-1`, …, or the run's own close), and what the inbox asks the run
//! workflow to deliver. Kept apart from both so each can use it from below.

use golato::message::UserMessage;

/// A message posted to a run.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct Post {
    pub(crate) text: String,
    pub(crate) follow_up: bool,
}

/// What completes a slot's promise.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(tag = "slot", rename_all = "snake_case")]
pub(crate) enum Slot {
    /// A message for the run.
    Post { text: String, follow_up: bool },
    /// The run ended here: this slot and every later one is refused.
    Closed,
}

impl Slot {
    /// The message a post slot holds, and whether it is a follow-up.
    pub(crate) fn message(self) -> Option<(UserMessage, bool)> {
        match self {
            Slot::Post { text, follow_up } => Some((UserMessage::new(text), follow_up)),
            Slot::Closed => None,
        }
    }
}

/// The promise of slot `n`.
pub(crate) fn slot_name(n: u64) -> String {
    format!("post-{n}")
}

/// What the inbox asks the run workflow to deliver.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct Delivery {
    pub(crate) slot: u64,
    pub(crate) post: Post,
}
