//! A server's tools as golato's: their names (prefixed, sanitized), their progress as updates, and
//! their results as a tool result's content.

use rmcp::model::ProgressNotificationParam;
use serde_json::Value;

use crate::message::Content;
use crate::tool::ToolResult;

/// A tool name providers accept (letters, digits, `_`, `-`; at most 64 characters).
pub(super) fn tool_name(prefix: &str, name: &str) -> String {
    let mut full = format!("{}_{}", sanitize(prefix), sanitize(name));
    full.truncate(64);
    full
}

pub(super) fn sanitize(text: &str) -> String {
    let cleaned: String = text
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if cleaned.is_empty() {
        "mcp".to_owned()
    } else {
        cleaned
    }
}

pub(super) fn progress_text(step: &ProgressNotificationParam) -> String {
    let mut text = match step.total {
        Some(total) => format!("progress {}/{}", step.progress, total),
        None => format!("progress {}", step.progress),
    };
    if let Some(message) = &step.message {
        text.push_str(": ");
        text.push_str(message);
    }
    text
}

/// golato's result for an MCP `CallToolResult` (as JSON, its wire form).
pub(super) fn to_tool_result(result: &Value) -> ToolResult {
    let mut content = Vec::new();
    for part in result
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        content.push(to_content(part));
    }
    if content.is_empty() {
        if let Some(structured) = result.get("structuredContent") {
            content.push(Content::text(structured.to_string()));
        }
    }
    ToolResult {
        content,
        is_error: result
            .get("isError")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        ..ToolResult::text("")
    }
}

pub(super) fn to_content(part: &Value) -> Content {
    let field = |name: &str| part.get(name).and_then(Value::as_str).unwrap_or_default();
    match field("type") {
        "text" => Content::text(field("text")),
        "image" if crate::tool::IMAGE_TYPES.contains(&field("mimeType")) => {
            Content::image(field("mimeType"), field("data"))
        }
        "image" => Content::text(format!(
            "[image of type {} left out: golato passes on PNG, JPEG, GIF and WebP]",
            field("mimeType")
        )),
        "audio" => Content::text(format!("[audio of type {} left out]", field("mimeType"))),
        "resource_link" => {
            let mut text = format!("Resource: {} <{}>", field("name"), field("uri"));
            if let Some(description) = part.get("description").and_then(Value::as_str) {
                text.push_str(&format!(" — {description}"));
            }
            Content::text(text)
        }
        "resource" => {
            let resource = part.get("resource").unwrap_or(&Value::Null);
            let get = |name: &str| resource.get(name).and_then(Value::as_str);
            match get("text") {
                Some(text) => Content::text(format!(
                    "Resource {}:\n{text}",
                    get("uri").unwrap_or_default()
                )),
                None => Content::text(format!(
                    "[resource {} ({}) left out: binary]",
                    get("uri").unwrap_or_default(),
                    get("mimeType").unwrap_or("no type")
                )),
            }
        }
        other => Content::text(format!("[content of type {other:?} left out]")),
    }
}
