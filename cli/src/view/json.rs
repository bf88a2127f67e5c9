//! `--json`: one JSON object per line for every event, the last line the outcome. The schema is
//! documented in the README ("JSON lines"); every object has a `"type"`, and fields are only
//! ever added, never renamed or removed.

use std::io::Write;

use golato::agent::Event;
use serde_json::{json, Value};

use crate::interrupt::Signal;
use crate::view::report::Mismatch;
use crate::view::report::{Ending, View};

/// The JSON lines view.
#[derive(Debug, Default)]
pub(crate) struct JsonLines {
    /// The turn the tool events belong to (tool events do not carry it).
    turn: usize,
    /// What the run uses, added to `run_start`.
    header: Option<Value>,
    /// The number of the event being written, for a durable run's events.
    seq: Option<u64>,
}

impl JsonLines {
    pub(crate) fn with_header(header: Option<&crate::view::header::Header>) -> JsonLines {
        JsonLines {
            turn: 0,
            header: header.map(crate::view::header::Header::fields),
            seq: None,
        }
    }

    /// `event` with its number in a durable run's stream (`"seq"`).
    #[cfg_attr(not(feature = "durable"), allow(dead_code))]
    pub(crate) fn numbered(&mut self, seq: u64, event: &Event) {
        self.seq = Some(seq);
        self.event(event);
        self.seq = None;
    }

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
        if let Event::TurnStart(start) = event {
            self.turn = start.turn;
        }
        let plain = !matches!(
            event,
            Event::RunStart(_)
                | Event::ToolExecutionStart(_)
                | Event::ToolExecutionUpdate(_)
                | Event::ToolExecutionEnd(_)
                | Event::ToolHook(_)
        );
        if plain && self.seq.is_none() {
            // Written as it is, without a copy as a JSON value first: a long answer is held
            // once more at most while its line is written.
            let mut out = std::io::stdout().lock();
            let _ = serde_json::to_writer(&mut out, event)
                .map_err(std::io::Error::from)
                .and_then(|()| out.write_all(b"\n"))
                .and_then(|()| out.flush());
            return;
        }
        // The library's own form of the event, plus what a reader of a flat stream needs: the
        // turn a tool event belongs to, and the call's ID and tool name at the top level.
        let mut line = serde_json::to_value(event)
            .unwrap_or_else(|error| json!({"type": "unserializable", "error": error.to_string()}));
        if let (Event::RunStart(_), Some(Value::Object(header)), Some(fields)) =
            (event, &self.header, line.as_object_mut())
        {
            fields.extend(header.clone());
        }
        let call = match event {
            Event::ToolExecutionStart(start) => Some(&start.call),
            Event::ToolExecutionUpdate(update) => Some(&update.call),
            Event::ToolExecutionEnd(end) => Some(&end.call),
            Event::ToolHook(hook) => Some(&hook.call),
            _ => None,
        };
        if let (Some(seq), Some(fields)) = (self.seq, line.as_object_mut()) {
            fields.insert("seq".into(), seq.into());
        }
        if let (Some(call), Some(fields)) = (call, line.as_object_mut()) {
            fields.insert("turn".into(), self.turn.into());
            fields.insert("call_id".into(), call.id.clone().into());
            fields.insert("tool_name".into(), call.name.clone().into());
        }
        // Which attempt produced a result, always: a reader of the flat stream tells a call a
        // durable run ran again (its worker died mid-call) without looking inside the result.
        if let (Event::ToolExecutionEnd(end), Some(fields)) = (event, line.as_object_mut()) {
            fields.insert("attempt".into(), end.result.attempt.unwrap_or(1).into());
        }
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
            "cost_usd": ending.cost,
            "wall_ms": u64::try_from(ending.wall.as_millis()).unwrap_or(u64::MAX),
            "workspace": ending.workspace,
        }));
    }

    fn abandon(&mut self) {}
}
