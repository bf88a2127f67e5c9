//! `--json`: one JSON object per line for every event, the last line the outcome. The schema is
//! documented in the README ("JSON lines"); every object has a `"type"`, and fields are only
//! ever added, never renamed or removed.

use std::io::Write;

use golato::agent::{Delivery, Event};
use golato::generator::Delta;
use golato::hook::HookAction;
use golato::tool::ToolResult;
use serde_json::{json, Value};

use crate::interrupt::Signal;
use crate::record::Mismatch;
use crate::report::{Ending, View};

/// The JSON lines view.
#[derive(Debug, Default)]
pub(crate) struct JsonLines {
    /// The turn the tool events belong to (tool events do not carry it).
    turn: usize,
}

impl JsonLines {
    fn emit(&self, line: Value) {
        let mut out = std::io::stdout().lock();
        // A closed stdout (the reader left) must not stop the run.
        let _ = serde_json::to_writer(&mut out, &line)
            .map_err(std::io::Error::from)
            .and_then(|()| out.write_all(b"\n"))
            .and_then(|()| out.flush());
    }
}

impl View for JsonLines {
    fn event(&mut self, event: &Event) {
        let line = match event {
            Event::RunStart(start) => json!({"type": "run_start", "run_id": start.run_id}),
            Event::TurnStart(start) => {
                self.turn = start.turn;
                json!({"type": "turn_start", "turn": start.turn})
            }
            Event::MessageStart(start) => json!({"type": "message_start", "turn": start.turn}),
            Event::MessageUpdate(update) => json!({
                "type": "message_update",
                "turn": update.turn,
                "deltas": update.deltas.iter().map(delta).collect::<Vec<_>>(),
            }),
            Event::MessageEnd(end) => {
                json!({"type": "message_end", "turn": end.turn, "message": end.message})
            }
            Event::ToolExecutionStart(start) => json!({
                "type": "tool_start",
                "turn": self.turn,
                "index": start.index,
                "call": start.call,
            }),
            Event::ToolExecutionUpdate(update) => json!({
                "type": "tool_update",
                "turn": self.turn,
                "index": update.index,
                "call_id": update.call.id,
                "tool_name": update.call.name,
                "partial_result": partial(&update.partial_result),
            }),
            Event::ToolExecutionEnd(end) => json!({
                "type": "tool_end",
                "turn": self.turn,
                "index": end.index,
                "call_id": end.call.id,
                "tool_name": end.call.name,
                "result": end.result,
            }),
            Event::ToolHook(hook) => json!({
                "type": "tool_hook",
                "turn": self.turn,
                "index": hook.index,
                "call_id": hook.call.id,
                "tool_name": hook.call.name,
                "action": hook_action(&hook.action),
            }),
            Event::UserMessage(message) => json!({
                "type": "user_message",
                "turn": message.turn,
                "delivery": match message.delivery {
                    Delivery::Steer => "steer",
                    Delivery::FollowUp => "follow_up",
                },
                "message": message.message,
            }),
            Event::TurnEnd(end) => json!({
                "type": "turn_end",
                "turn": end.turn,
                "tool_results": end.tool_results.len(),
            }),
            Event::RunEnd(end) => json!({"type": "run_end", "error": end.error}),
            // `Event` is non-exhaustive: a kind this version does not know is still a line.
            other => json!({"type": "other", "debug": format!("{other:?}")}),
        };
        self.emit(line);
    }

    fn mismatch(&mut self, mismatch: &Mismatch) {
        self.emit(json!({
            "type": "replay_mismatch",
            "turn": mismatch.turn,
            "index": mismatch.index,
            "call_id": mismatch.call_id,
            "tool_name": mismatch.tool_name,
            "difference": mismatch.difference,
        }));
    }

    fn interrupted(&mut self, signal: Signal) {
        self.emit(json!({"type": "interrupted", "signal": signal.name()}));
    }

    fn end(&mut self, ending: &Ending<'_>) {
        let tally = ending.tally;
        self.emit(json!({
            "type": "outcome",
            "status": ending.status(),
            "exit_code": ending.exit.code(),
            "error": ending.error,
            "final_text": ending.final_text,
            "turns": tally.turns,
            "tool_calls": tally.tool_calls,
            "tool_errors": tally.tool_errors,
            "replay_mismatches": tally.replay_mismatches,
            "usage": tally.usage,
            "wall_ms": u64::try_from(ending.wall.as_millis()).unwrap_or(u64::MAX),
            "workspace": ending.workspace,
        }));
    }

    fn abandon(&mut self) {}
}

fn delta(delta: &Delta) -> Value {
    match delta {
        Delta::Text(text) => json!({"kind": "text", "text": text}),
        Delta::Reasoning(text) => json!({"kind": "reasoning", "text": text}),
        Delta::ToolCall {
            index,
            id,
            name,
            arguments,
        } => json!({
            "kind": "tool_call",
            "index": index,
            "id": id,
            "name": name,
            "arguments": arguments,
        }),
    }
}

fn hook_action(action: &HookAction) -> Value {
    match action {
        HookAction::Blocked { reason } => json!({"kind": "blocked", "reason": reason}),
        HookAction::Rewrote { arguments } => json!({"kind": "rewrote", "arguments": arguments}),
        HookAction::ReplacedResult => json!({"kind": "replaced_result"}),
        HookAction::Failed { error } => json!({"kind": "failed", "error": error}),
        other => json!({"kind": "other", "debug": format!("{other:?}")}),
    }
}

fn partial(result: &ToolResult) -> Value {
    json!({
        "content": result.content,
        "details": result.details,
        "is_error": result.is_error,
    })
}
