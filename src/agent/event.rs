//! What a run reports while it happens.
//!
//! Every event serializes (serde) to one JSON object with a `"type"` naming its kind in
//! snake case (`run_start`, `tool_start`, `tool_end`, ...), the form `golato run --json` prints,
//! and reads back from it: a durable run's events travel as JSON to whoever watches it.

use serde::{Deserialize, Serialize};

use crate::generator::Delta;
use crate::hook::HookAction;
pub use crate::message::Delivery;
use crate::message::{AssistantMessage, ToolCall, ToolResultMessage, UserMessage};
use crate::tool::ToolResult;

/// Something that happened in a run, delivered live.
///
/// Order: `RunStart`; per turn `TurnStart`, `MessageStart`, `MessageUpdate`s, `MessageEnd`, then
/// for a message with tool calls the tool events of its batch, then `TurnEnd`; finally `RunEnd`.
/// Each tool call gets exactly one `ToolExecutionStart`, zero or more `ToolExecutionUpdate`s and
/// exactly one `ToolExecutionEnd`, invalid calls included. In a parallel batch every start comes
/// first, in source order (an invalid call's end right after its start), then the ends of the
/// executed calls in completion order; in a sequential batch each call's start, updates and end
/// come before the next call's start. When a turn's answer is cut short by cancellation or a
/// generator failure after some text or reasoning streamed in, that part is recorded (with
/// `StopReason::Aborted` or `StopReason::Error`) and gets its `MessageEnd` and `TurnEnd` before
/// `RunEnd`; with nothing streamed in, the turn ends with `RunEnd` alone. A turn whose request
/// was compacted has a `Compaction` between its `TurnStart` and its `MessageStart` (a request
/// the provider refused as too long: `MessageStart`, `Compaction`, `MessageStart` again).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Event {
    /// The run began.
    RunStart(RunStartEvent),
    /// A turn (one model request and the batch it asks for) began.
    TurnStart(TurnStartEvent),
    /// The model began answering.
    MessageStart(MessageStartEvent),
    /// More of the answer arrived.
    MessageUpdate(MessageUpdateEvent),
    /// The answer is complete.
    MessageEnd(MessageEndEvent),
    /// A tool call began (or, for an invalid call, is about to get its error result).
    #[serde(rename = "tool_start")]
    ToolExecutionStart(ToolExecutionStartEvent),
    /// A running tool published a partial result.
    #[serde(rename = "tool_update")]
    ToolExecutionUpdate(ToolExecutionUpdateEvent),
    /// A tool call has its result.
    #[serde(rename = "tool_end")]
    ToolExecutionEnd(ToolExecutionEndEvent),
    /// A hook blocked a call, rewrote its arguments, replaced its result, or failed. Comes
    /// between the call's start and end.
    ToolHook(ToolHookEvent),
    /// A message queued with `Run::steer` or `Run::follow_up` joined the transcript.
    UserMessage(UserMessageEvent),
    /// The next request's oldest messages were replaced by a summary (the transcript keeps
    /// them). Comes after the turn's `TurnStart`, before the `MessageStart` of the request it
    /// made fit; a request the provider refused as too long is followed by this event and
    /// another `MessageStart` of the same turn.
    Compaction(CompactionEvent),
    /// The turn's model request failed in a way worth trying again (no connection, HTTP 429 or
    /// 5xx) and is sent again after a wait. Comes after the turn's `MessageStart`, before any of
    /// the message's updates.
    Retry(RetryEvent),
    /// The turn is over.
    TurnEnd(TurnEndEvent),
    /// The run is over; `Run::wait` returns its outcome.
    RunEnd(RunEndEvent),
    /// An event of a child run that a tool call started (a subagent, see
    /// [`crate::subagent`]). Comes between that call's start and end.
    Subagent(SubagentEvent),
}

/// The run began.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RunStartEvent {
    /// The run's process-unique ID, as in its tracing span.
    pub run_id: u64,
}

/// A turn began.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TurnStartEvent {
    /// 1-based turn number within this run.
    pub turn: usize,
}

/// The model began answering.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct MessageStartEvent {
    /// The turn it answers.
    pub turn: usize,
}

/// More of the answer arrived.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct MessageUpdateEvent {
    /// The turn it answers.
    pub turn: usize,
    /// The fragments since the previous update: usually one; several, merged where they continue
    /// one another, when the consumer fell behind and updates were coalesced.
    pub deltas: Vec<Delta>,
}

/// The answer is complete.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct MessageEndEvent {
    /// The turn it answers.
    pub turn: usize,
    /// The whole message, as recorded in the transcript.
    pub message: AssistantMessage,
}

/// A tool call began.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolExecutionStartEvent {
    /// Position of the call in the assistant message.
    pub index: usize,
    /// The call.
    pub call: ToolCall,
}

/// A running tool published a partial result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolExecutionUpdateEvent {
    /// Position of the call in the assistant message.
    pub index: usize,
    /// The call.
    pub call: ToolCall,
    /// The newest partial result.
    pub partial_result: ToolResult,
}

/// A tool call has its result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolExecutionEndEvent {
    /// Position of the call in the assistant message.
    pub index: usize,
    /// The call.
    pub call: ToolCall,
    /// The result message, exactly as recorded and sent to the next request.
    pub result: ToolResultMessage,
}

/// A hook acted on a call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolHookEvent {
    /// Position of the call in the assistant message.
    pub index: usize,
    /// The call as the model sent it.
    pub call: ToolCall,
    /// What the hook did.
    pub action: HookAction,
}

/// A queued user message joined the transcript.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct UserMessageEvent {
    /// The turn after which it was delivered (0 before the first).
    pub turn: usize,
    /// The message, as recorded in the transcript.
    pub message: UserMessage,
    /// Steering or follow-up.
    pub delivery: Delivery,
}

/// A model request is sent again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RetryEvent {
    /// The turn whose request failed.
    pub turn: usize,
    /// Which retry, of how many, after how long, and why.
    #[serde(flatten)]
    pub retrying: crate::generator::Retrying,
}

/// A run compacted its context.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CompactionEvent {
    /// The turn whose request was compacted.
    pub turn: usize,
    /// Why.
    pub reason: super::compaction::CompactionReason,
    /// How many messages at the start of the transcript the summary now stands for in
    /// requests (an earlier summary's included).
    pub replaced: usize,
    /// The summary, as the model wrote it.
    pub summary: String,
    /// The estimated tokens of the request before and after.
    pub tokens_before: u64,
    /// See `tokens_before`.
    pub tokens_after: u64,
    /// What writing the summary used (counted in the run's usage).
    pub usage: crate::message::Usage,
}

/// The turn is over.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TurnEndEvent {
    /// 1-based turn number.
    pub turn: usize,
    /// The assistant message of the turn.
    pub message: AssistantMessage,
    /// Its tool results, in source order.
    pub tool_results: Vec<ToolResultMessage>,
    /// What the turn's request cost in US dollars (its tokens are `message.usage`), at the
    /// model's price; `None` for a model without one.
    pub cost: Option<f64>,
}

/// An event of a child run (or of a child's child), forwarded to its parent's events.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SubagentEvent {
    /// The IDs of the tool calls that started the child runs, from this run's call down to
    /// the run the event comes from: one ID for a child, two for a grandchild.
    pub path: Vec<String>,
    /// The child run's own event (never itself a `Subagent` event).
    pub event: Box<Event>,
}

impl SubagentEvent {
    /// `event` of the child run started by call `call_id`, flattened: an event a grandchild
    /// forwarded gets `call_id` in front of its path.
    pub fn of_child(call_id: &str, event: Event) -> SubagentEvent {
        match event {
            Event::Subagent(mut nested) => {
                nested.path.insert(0, call_id.to_owned());
                nested
            }
            event => SubagentEvent {
                path: vec![call_id.to_owned()],
                event: Box::new(event),
            },
        }
    }
}

/// The run is over.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RunEndEvent {
    /// `None` when the run ended normally, else the error's text (the error itself comes from
    /// `Run::wait`).
    pub error: Option<String>,
    /// Tokens used by all the run's requests.
    pub usage: crate::message::Usage,
    /// What they cost in US dollars, at the model's price; `None` for a model without one.
    pub cost: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{Content, Usage};

    /// Every kind of event reads back from the JSON it writes, unchanged.
    #[test]
    fn every_event_reads_back_from_its_json() {
        let call = ToolCall::new("call-1", "bash", r#"{"command":"ls"}"#);
        let message = AssistantMessage::with_tool_calls([call.clone()]);
        let result = ToolResultMessage {
            tool_call_id: "call-1".into(),
            tool_name: "bash".into(),
            content: vec![Content::text("a\nb")],
            details: Some(serde_json::json!({"exit_code": 0})),
            is_error: false,
            attempt: Some(2),
        };
        let events = [
            Event::RunStart(RunStartEvent { run_id: 7 }),
            Event::TurnStart(TurnStartEvent { turn: 1 }),
            Event::MessageStart(MessageStartEvent { turn: 1 }),
            Event::MessageUpdate(MessageUpdateEvent {
                turn: 1,
                deltas: vec![
                    Delta::Text("hé".into()),
                    Delta::Reasoning("why".into()),
                    Delta::ToolCall {
                        index: 0,
                        id: Some("call-1".into()),
                        name: None,
                        arguments: "{".into(),
                    },
                ],
            }),
            Event::MessageEnd(MessageEndEvent {
                turn: 1,
                message: message.clone(),
            }),
            Event::ToolExecutionStart(ToolExecutionStartEvent {
                index: 0,
                call: call.clone(),
            }),
            Event::ToolExecutionUpdate(ToolExecutionUpdateEvent {
                index: 0,
                call: call.clone(),
                partial_result: crate::tool::ToolResult::text("a"),
            }),
            Event::ToolHook(ToolHookEvent {
                index: 0,
                call: call.clone(),
                action: HookAction::Rewrote {
                    arguments: serde_json::json!({"command": "ls -a"}),
                },
            }),
            Event::ToolExecutionEnd(ToolExecutionEndEvent {
                index: 0,
                call,
                result: result.clone(),
            }),
            Event::UserMessage(UserMessageEvent {
                turn: 1,
                message: UserMessage::new("also this"),
                delivery: Delivery::Steer,
            }),
            Event::Compaction(CompactionEvent {
                turn: 2,
                reason: super::super::compaction::CompactionReason::Threshold,
                replaced: 3,
                summary: "so far".into(),
                tokens_before: 900,
                tokens_after: 100,
                usage: Usage::default(),
            }),
            Event::TurnEnd(TurnEndEvent {
                turn: 1,
                message,
                tool_results: vec![result],
                cost: Some(0.25),
            }),
            Event::Subagent(SubagentEvent::of_child(
                "task-1",
                Event::TurnStart(TurnStartEvent { turn: 1 }),
            )),
            Event::RunEnd(RunEndEvent {
                error: Some("cancelled".into()),
                usage: Usage::default(),
                cost: None,
            }),
        ];
        for event in events {
            let json = serde_json::to_string(&event).unwrap();
            let back: Event = serde_json::from_str(&json).unwrap();
            assert_eq!(back, event, "{json}");
        }
    }
}
