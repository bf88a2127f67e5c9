//! The same run from every kind of caller: a plain thread, tokio (both flavours) and actix,
//! reading events with the blocking iterator or the async API.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use golato::agent::{Agent, Event, Run};
use support::*;

fn agent() -> Agent {
    agent_with(
        script(vec![call("1", "echo", r#"{"text":"hi"}"#)]),
        vec![echo_tool()],
    )
}

/// The event kinds of a whole run, in order.
fn kinds(events: &[Event]) -> Vec<&'static str> {
    events
        .iter()
        .map(|event| match event {
            Event::RunStart(_) => "run_start",
            Event::TurnStart(_) => "turn_start",
            Event::MessageStart(_) => "message_start",
            Event::MessageUpdate(_) => "message_update",
            Event::MessageEnd(_) => "message_end",
            Event::ToolExecutionStart(_) => "tool_start",
            Event::ToolExecutionUpdate(_) => "tool_update",
            Event::ToolExecutionEnd(_) => "tool_end",
            Event::TurnEnd(_) => "turn_end",
            Event::RunEnd(_) => "run_end",
            _ => "other",
        })
        .filter(|kind| *kind != "message_update")
        .collect()
}

const EXPECTED: [&str; 12] = [
    "run_start",
    "turn_start",
    "message_start",
    "message_end",
    "tool_start",
    "tool_end",
    "turn_end",
    "turn_start",
    "message_start",
    "message_end",
    "turn_end",
    "run_end",
];

fn expected() -> Vec<&'static str> {
    EXPECTED.to_vec()
}

async fn run_async(run: Run) -> Vec<Event> {
    let mut events = Vec::new();
    while let Some(event) = run.next_event().await {
        events.push(event);
    }
    let result = run.finish().await.expect("run succeeds");
    assert_eq!(result.final_message.text(), "done");
    events
}

fn run_blocking(run: Run) -> Vec<Event> {
    let (events, outcome) = collect(run);
    assert_eq!(outcome.expect("run succeeds").final_message.text(), "done");
    events
}

#[test]
fn plain_main_with_the_blocking_iterator() {
    let events = run_blocking(agent().start(prompt("go")));
    assert_eq!(kinds(&events), expected());
}

#[test]
fn a_run_moves_to_another_thread() {
    let run = agent().start(prompt("go"));
    let events = std::thread::spawn(move || run_blocking(run))
        .join()
        .unwrap();
    assert_eq!(kinds(&events), expected());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokio_multi_thread_with_the_async_api() {
    let events = run_async(agent().start(prompt("go"))).await;
    assert_eq!(kinds(&events), expected());
}

#[tokio::test(flavor = "current_thread")]
async fn tokio_current_thread_with_the_async_api() {
    let events = run_async(agent().start(prompt("go"))).await;
    assert_eq!(kinds(&events), expected());
}

#[tokio::test(flavor = "current_thread")]
async fn tokio_current_thread_with_the_blocking_iterator() {
    // Blocking the caller's only thread is the caller's choice; golato's host runs elsewhere.
    let events = run_blocking(agent().start(prompt("go")));
    assert_eq!(kinds(&events), expected());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokio_task_with_agent_run() {
    let agent = agent();
    let result = tokio::spawn(async move { agent.run(prompt("go")).await })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(result.final_message.text(), "done");
}

#[actix::test]
async fn actix_system_with_the_async_api() {
    let events = run_async(agent().start(prompt("go"))).await;
    assert_eq!(kinds(&events), expected());
}

#[test]
fn actix_main_style_system() {
    let system = actix::System::new();
    let events = system.block_on(async { run_async(agent().start(prompt("go"))).await });
    assert_eq!(kinds(&events), expected());
}
