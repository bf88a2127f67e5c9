//! A call, or any text, in one short line: what the live view, the front end and ACP title
//! things with.

use anstyle::Style;
use golato::message::ToolCall;
use serde_json::Value;

use super::shown::visible;

const BOLD: Style = Style::new().bold();
/// Characters of one shown line (an argument summary, a result line, the latest output).
pub(super) const LINE_WIDTH: usize = 100;

/// The call in one line, without styles: its tool and what it acts on.
pub(crate) fn call_label(call: &ToolCall) -> String {
    let args: Option<serde_json::Map<String, Value>> = serde_json::from_str(&call.arguments).ok();
    let field = |name: &str| args.as_ref().and_then(|args| args.get(name));
    let text = |name: &str| field(name).and_then(Value::as_str).map(str::to_owned);
    let summary = match call.name.as_str() {
        "bash" => text("command").map(|command| {
            let first = command.lines().next().unwrap_or_default().to_owned();
            let more = if command.lines().nth(1).is_some() {
                " …"
            } else {
                ""
            };
            match field("timeout").and_then(Value::as_f64) {
                Some(seconds) => format!("$ {first}{more} (timeout {seconds}s)"),
                None => format!("$ {first}{more}"),
            }
        }),
        "read" => text("path").map(|path| {
            let offset = field("offset").and_then(Value::as_u64);
            let limit = field("limit").and_then(Value::as_u64);
            match (offset, limit) {
                (None, None) => path,
                (offset, Some(limit)) => {
                    format!("{path} (from line {}, {limit} lines)", offset.unwrap_or(1))
                }
                (Some(offset), None) => format!("{path} (from line {offset})"),
            }
        }),
        "edit" => text("path").map(|path| {
            let edits = field("edits").and_then(Value::as_array).map_or(0, Vec::len);
            format!(
                "{path} ({})",
                crate::view::shown::count(edits as u64, "edit")
            )
        }),
        "write" => text("path").map(|path| {
            let bytes = text("content").map_or(0, |content| content.len());
            format!("{path} ({bytes} bytes)")
        }),
        // A subagent: what it was asked to do, in its own words.
        "task" => text("description"),
        "update_plan" => field("plan")
            .and_then(Value::as_array)
            .map(|steps| crate::view::shown::count(steps.len() as u64, "step")),
        _ => None,
    };
    let summary = summary.unwrap_or_else(|| {
        // Any other tool, or arguments a built-in will reject: show them as sent.
        call.arguments
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    });
    format!("{} {}", clip(&call.name), clip(&summary))
}

/// The call as it ran: with the arguments the person changed it to before it ran (`e` on a
/// question), which its result keeps; else as the model sent it.
pub(crate) fn as_ran<'a>(
    call: &'a ToolCall,
    details: Option<&Value>,
) -> std::borrow::Cow<'a, ToolCall> {
    match details.and_then(|details| details.get(golato::policy::RAN_WITH_KEY)) {
        Some(arguments) => std::borrow::Cow::Owned(ToolCall {
            arguments: arguments.to_string(),
            ..call.clone()
        }),
        None => std::borrow::Cow::Borrowed(call),
    }
}

/// The label with the tool's name in bold.
pub(super) fn styled(label: &str) -> String {
    match label.split_once(' ') {
        Some((name, rest)) => format!("{BOLD}{name}{BOLD:#} {rest}"),
        None => format!("{BOLD}{label}{BOLD:#}"),
    }
}

/// At most [`LINE_WIDTH`] characters of `text`, its control characters made visible.
pub(crate) fn clip(text: &str) -> String {
    let text = visible(text);
    match text.char_indices().nth(LINE_WIDTH) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.into_owned(),
    }
}

/// The size of base64 `data` once decoded, in the unit a person reads best.
pub(super) fn decoded_size(data: &str) -> String {
    let padding = data.bytes().rev().take_while(|&byte| byte == b'=').count();
    let bytes = (data.len() / 4 * 3).saturating_sub(padding);
    if bytes < 1024 {
        format!("{bytes} bytes")
    } else {
        format!("{:.1} KiB", bytes as f64 / 1024.0)
    }
}
