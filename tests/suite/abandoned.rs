//! A write or edit that golato gave up on (timed out, ignored its cancellation, abandoned after
//! the grace period) never changes its file afterwards, and no later write of that file starts
//! before it has stopped (issue 21, item 1). The file tools are held at the moment they would
//! change the file with the test-only `builtin::fault::Pause` (a handshake, not a sleep).

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use golato::agent::{self, Agent, Event};
use golato::builtin::fault::Pause;
use golato::generator::Scripted;
use golato::message::AssistantMessage;
use golato::tool::Tool;
use serde_json::json;
use support::*;

/// The built-ins in `dir`, with `edit` timing out after 50 ms.
fn tools_with_an_impatient_edit(dir: &std::path::Path) -> Vec<Tool> {
    tools_in(dir)
        .into_iter()
        .map(|tool| {
            if tool.name() == "edit" {
                tool.with_timeout(Duration::from_millis(50))
            } else {
                tool
            }
        })
        .collect()
}

fn agent(dir: &std::path::Path, turns: Vec<AssistantMessage>) -> Agent {
    Agent::new(agent::Config {
        generator: Some(Arc::new(Scripted::new(turns))),
        tools: tools_with_an_impatient_edit(dir),
        tool_timeout_grace: Duration::from_millis(10),
        ..Default::default()
    })
    .unwrap()
}

/// A directory with `f.txt` ("original"), and a pause set before anything replaces it.
fn file_held_before_replacing() -> (tempfile::TempDir, std::path::PathBuf, Pause) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("f.txt");
    std::fs::write(&file, "original\n").unwrap();
    let pause = Pause::before_replacing(&file.canonicalize().unwrap());
    (dir, file, pause)
}

fn edit_call() -> golato::message::ToolCall {
    call(
        "e",
        "edit",
        &json!({"path": "f.txt", "edits": [{"oldText": "original", "newText": "edited"}]})
            .to_string(),
    )
}

#[test]
fn an_abandoned_edit_never_lands() {
    let (dir, file, pause) = file_held_before_replacing();
    let agent = agent(
        dir.path(),
        vec![
            AssistantMessage::with_tool_calls(vec![edit_call()]),
            AssistantMessage::with_text("done"),
        ],
    );
    let run = agent.start(prompt("edit"));
    pause.wait_arrived();
    // The edit is held before it writes; its timeout and grace run out meanwhile.
    let outcome = run.wait().unwrap();
    let abandoned = outcome.messages.iter().find_map(|message| match message {
        golato::message::Message::ToolResult(result) => Some(result.clone()),
        _ => None,
    });
    let abandoned = abandoned.unwrap();
    assert!(abandoned.is_error);
    assert!(
        abandoned.text().contains("abandoned"),
        "{}",
        abandoned.text()
    );
    // Only now may the edit go on: it must see that it was given up on.
    pause.release();
    pause.wait_done();
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "original\n");
}

#[test]
fn a_later_write_waits_for_an_abandoned_edit_and_keeps_its_content() {
    let (dir, file, pause) = file_held_before_replacing();
    let agent = agent(
        dir.path(),
        vec![
            AssistantMessage::with_tool_calls(vec![edit_call()]),
            AssistantMessage::with_tool_calls(vec![call(
                "w",
                "write",
                &json!({"path": "f.txt", "content": "later\n"}).to_string(),
            )]),
            AssistantMessage::with_text("done"),
        ],
    );
    let run = agent.start(prompt("edit, then write"));
    pause.wait_arrived();
    let mut events = Vec::new();
    for event in run.events() {
        if let Event::ToolExecutionStart(start) = &event {
            if start.call.id == "w" {
                // The abandoned edit is still held before its write: let it go now that a
                // later write of the same file has started.
                pause.release();
            }
        }
        events.push(event);
    }
    let outcome = run.wait().unwrap();
    pause.wait_done();
    let results = end_results(&events);
    assert!(results[0].is_error && results[0].text().contains("abandoned"));
    assert!(!results[1].is_error, "{}", results[1].text());
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "later\n");
    assert_eq!(outcome.messages.len(), 6);
}
