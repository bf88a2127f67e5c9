//! The same run from every kind of caller: a plain thread, tokio (both flavours) and actix,
//! reading events with the blocking iterator or the async API.

use crate::support;

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

#[tokio::test(flavor = "current_thread")]
async fn tokio_current_thread_with_the_run_as_a_stream() {
    use futures::StreamExt;
    let mut run = agent().start(prompt("go"));
    let mut events = Vec::new();
    while let Some(event) = run.next().await {
        events.push(event);
    }
    // Polled again after its end, the stream stays ended.
    assert!(run.next().await.is_none());
    assert_eq!(run.finish().await.unwrap().final_message.text(), "done");
    assert_eq!(kinds(&events), expected());
}

#[test]
fn every_event_serializes_with_its_kind_and_fields() {
    let (events, outcome) = collect(agent().start(prompt("go")));
    outcome.unwrap();
    let lines: Vec<serde_json::Value> = events
        .iter()
        .map(|event| serde_json::to_value(event).unwrap())
        .collect();
    let types: Vec<&str> = lines
        .iter()
        .map(|line| line["type"].as_str().unwrap())
        .filter(|kind| *kind != "message_update")
        .collect();
    assert_eq!(types, expected());

    let end = lines
        .iter()
        .find(|line| line["type"] == "tool_end")
        .unwrap();
    assert_eq!(end["index"], 0);
    assert_eq!(end["call"]["id"], "1");
    assert_eq!(end["call"]["name"], "echo");
    assert_eq!(end["result"]["tool_call_id"], "1");
    assert_eq!(end["result"]["content"][0]["text"], "hi");
    let texts: String = lines
        .iter()
        .filter(|line| line["type"] == "message_update")
        .flat_map(|line| line["deltas"].as_array().unwrap().clone())
        .filter(|delta| delta["kind"] == "text")
        .map(|delta| delta["text"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(texts, "done");
    let turn_end = lines
        .iter()
        .find(|line| line["type"] == "turn_end")
        .unwrap();
    assert_eq!(turn_end["tool_results"][0]["tool_call_id"], "1");
    // The scripted model has no price: no cost, never a zero one.
    assert_eq!(turn_end["cost"], serde_json::Value::Null);
    assert_eq!(
        lines.last().unwrap(),
        &serde_json::json!({
            "type": "run_end",
            "error": null,
            "usage": {"input_tokens": 0, "output_tokens": 0, "cache_read_tokens": 0, "cache_write_tokens": 0},
            "cost": null,
        })
    );
}
