//! The result of an interrupted call that is not run again ([`Replay::Once`]): the journal
//! started it before, its process died, and nothing was recorded.

use serde_json::{json, Value};

use crate::message::{Content, ToolCall};
use crate::tool::{Replay, Tool, ToolResult};

/// What the model is told instead of a second run of `call` (attempt `attempt`), with what
/// the tool knows of the attempt that was cut short.
pub(super) fn result(tool: &Tool, call: &ToolCall, attempt: u32) -> ToolResult {
    let mut text = format!(
        "This call was interrupted: the process running it stopped before its result was recorded, and it was not run again (this is attempt {attempt}; {} calls run at most once). It may have partly run: check what it did before repeating it.",
        call.name
    );
    let mut details = serde_json::Map::new();
    details.insert(
        "interrupted".into(),
        json!({"attempt": attempt, "replay": Replay::Once.name()}),
    );
    if let Some(report) = tool.interrupted_report().and_then(|report| report(call)) {
        let said = report.text_content();
        if !said.is_empty() {
            text.push_str("\n\n");
            text.push_str(&said);
        }
        if let Some(Value::Object(more)) = report.details {
            details.extend(more);
        }
    }
    ToolResult {
        content: vec![Content::text(text)],
        details: Some(Value::Object(details)),
        is_error: true,
        terminate: false,
    }
}
