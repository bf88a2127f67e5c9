#![allow(clippy::unwrap_used)]

use super::*;
use crate::message::{AssistantMessage, ToolCall, ToolResultMessage};

fn user(text: &str) -> Message {
    Message::User(UserMessage::new(text))
}

fn call(id: &str) -> Message {
    Message::Assistant(AssistantMessage::with_tool_calls([ToolCall::new(
        id, "read", "{}",
    )]))
}

fn result(id: &str) -> Message {
    Message::ToolResult(ToolResultMessage {
        tool_call_id: id.to_owned(),
        tool_name: "read".to_owned(),
        content: vec![Content::text("x")],
        details: None,
        is_error: false,
        attempt: None,
    })
}

#[test]
fn cuts_only_before_an_assistant_message_and_keeps_what_fits() {
    let messages = [user("go"), call("1"), result("1"), call("2"), result("2")];
    let counts = [10, 10, 10, 10, 10];
    assert_eq!(choose_cut(&messages, &counts, 20), Some(3));
    assert_eq!(choose_cut(&messages, &counts, 40), Some(1));
    // Nothing fits: the last cut, so the newest call stays with its result.
    assert_eq!(choose_cut(&messages, &counts, 5), Some(3));
    // A transcript with no assistant message after the first cannot be cut.
    assert_eq!(choose_cut(&[user("go")], &[10], 0), None);
}

#[test]
fn an_earlier_summary_alone_is_not_worth_compacting() {
    let summary = Message::User(summary_message("before"));
    let messages = [summary, call("1"), result("1")];
    assert_eq!(choose_cut(&messages, &[10, 10, 10], 0), None);
}

#[test]
fn rendering_drops_the_oldest_and_keeps_the_summary() {
    let summary = Message::User(summary_message("the goal"));
    let older = [summary, user(&"a".repeat(100)), user("recent")];
    let text = render(&older, 80);
    assert!(text.starts_with(SUMMARY_HEADER), "{text}");
    assert!(text.contains("1 older message(s) left out"), "{text}");
    assert!(text.ends_with("User: recent"), "{text}");
}

#[test]
fn long_parts_are_shortened_on_char_boundaries() {
    let text = "é".repeat(MAX_PART_CHARS);
    let short = shortened(&text);
    assert!(short.len() < text.len());
    assert!(short.contains("bytes left out"));
}
