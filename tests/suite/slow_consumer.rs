//! A consumer that does not read events must not make memory grow without bound: pending
//! updates coalesce once the buffer is full, lifecycle events are all kept, and a consumer that
//! keeps up sees every update.

use crate::support;

use std::sync::Arc;

use golato::agent::{self, Agent, Event};
use golato::generator::Scripted;
use golato::message::AssistantMessage;
use golato::tool::{Tool, ToolResult};
use serde_json::json;
use support::*;
use tokio::sync::{mpsc, Notify};

const UPDATES: usize = 100_000;
const BUFFER: usize = 16;

fn flood_tool() -> Tool {
    Tool::new(
        "flood",
        "Publishes many updates.",
        json!({"type": "object"}),
        |ctx, _args| async move {
            for i in 0..UPDATES {
                ctx.update(ToolResult::text(format!("progress {i}")));
            }
            Ok(ToolResult::text("flooded"))
        },
    )
}

#[test]
fn a_consumer_that_does_not_read_gets_coalesced_updates_and_every_lifecycle_event() {
    // The second request waits until the test has read every event so far. When it is asked,
    // the run actor has handled every update (they precede the batch's end in its mailbox).
    let asked = Arc::new(Notify::new());
    let release = Arc::new(Notify::new());
    let generator = {
        let (asked, release) = (Arc::clone(&asked), Arc::clone(&release));
        Gated::new(
            Scripted::new([
                AssistantMessage::with_tool_calls([
                    call("1", "flood", "{}"),
                    call("2", "flood", "{}"),
                ]),
                AssistantMessage::with_text("done"),
            ]),
            move |n| {
                let (asked, release) = (Arc::clone(&asked), Arc::clone(&release));
                async move {
                    if n == 1 {
                        asked.notify_one();
                        release.notified().await;
                    }
                }
            },
        )
    };
    let agent = Agent::new(agent::Config {
        generator: Some(Arc::new(generator)),
        tools: vec![flood_tool()],
        event_buffer: BUFFER,
        ..Default::default()
    })
    .unwrap();
    let run = agent.start(prompt("go"));
    futures::executor::block_on(asked.notified());

    let mut buffered = Vec::new();
    let mut events = run.events();
    // Everything up to the second turn's start is buffered now.
    for event in events.by_ref() {
        let is_second_turn = matches!(&event, Event::TurnStart(turn) if turn.turn == 2);
        buffered.push(event);
        if is_second_turn {
            break;
        }
    }
    release.notify_one();
    let rest: Vec<Event> = events.collect();
    run.wait().unwrap();

    let trace = tool_trace(&buffered);
    let updates = trace.iter().filter(|t| t.starts_with("update")).count();
    assert!(
        updates <= BUFFER,
        "{updates} updates were buffered, more than the buffer of {BUFFER}"
    );
    assert_eq!(trace.iter().filter(|t| t.starts_with("start")).count(), 2);
    assert_eq!(trace.iter().filter(|t| t.starts_with("end")).count(), 2);
    // The newest update of each call survived coalescing.
    let last_partials = update_texts(&buffered);
    assert!(
        last_partials.contains(&format!("progress {}", UPDATES - 1)),
        "{last_partials:?}"
    );
    assert!(rest.iter().any(|event| matches!(event, Event::RunEnd(_))));
}

#[test]
fn a_consumer_that_keeps_up_sees_every_update() {
    const STEPS: usize = 200;
    // The tool publishes one update, then waits until the consumer has seen it.
    let (seen_tx, seen_rx) = mpsc::unbounded_channel::<()>();
    let seen_rx = Arc::new(tokio::sync::Mutex::new(seen_rx));
    let tool = Tool::new("steps", "", json!({"type": "object"}), move |ctx, _args| {
        let seen_rx = Arc::clone(&seen_rx);
        async move {
            let mut seen = seen_rx.lock().await;
            for i in 0..STEPS {
                ctx.update(ToolResult::text(i.to_string()));
                seen.recv().await.ok_or("consumer went away")?;
            }
            Ok(ToolResult::text("stepped"))
        }
    });
    let agent = Agent::new(agent::Config {
        generator: Some(Arc::new(script(vec![call("1", "steps", "{}")]))),
        tools: vec![tool],
        event_buffer: 1,
        ..Default::default()
    })
    .unwrap();
    let run = agent.start(prompt("go"));
    let mut partials = Vec::new();
    for event in run.events() {
        if let Event::ToolExecutionUpdate(update) = event {
            partials.push(update.partial_result.text_content());
            seen_tx.send(()).unwrap();
        }
    }
    run.wait().unwrap();
    let expected: Vec<String> = (0..STEPS).map(|i| i.to_string()).collect();
    assert_eq!(partials, expected);
}

#[test]
fn streamed_text_coalesces_for_a_slow_consumer_without_losing_text() {
    let long_text: String = (0..5_000).map(|i| format!("word{i} ")).collect();
    // The message's tool call runs after every text delta was handled; it holds the run until
    // the test has read the buffered events.
    let (asked_tx, asked_rx) = std::sync::mpsc::channel::<()>();
    let asked_tx = std::sync::Mutex::new(asked_tx);
    let release = Arc::new(Notify::new());
    let hold = {
        let release = Arc::clone(&release);
        Tool::new("hold", "", json!({"type": "object"}), move |_ctx, _args| {
            let release = Arc::clone(&release);
            let _ = asked_tx.lock().unwrap().send(());
            async move {
                release.notified().await;
                Ok(ToolResult::text("released"))
            }
        })
    };
    let mut first = AssistantMessage::with_tool_calls([call("1", "hold", "{}")]);
    first.content = vec![golato::message::Content::text(long_text.clone())];
    let agent = Agent::new(agent::Config {
        generator: Some(Arc::new(Scripted::new([
            first,
            AssistantMessage::with_text("done"),
        ]))),
        tools: vec![hold],
        event_buffer: BUFFER,
        ..Default::default()
    })
    .unwrap();
    let run = agent.start(prompt("go"));
    asked_rx.recv().unwrap();
    let mut streamed = String::new();
    let mut updates = 0;
    for event in run.events() {
        match event {
            Event::MessageUpdate(update) if update.turn == 1 => {
                updates += 1;
                for delta in &update.deltas {
                    if let golato::generator::Delta::Text(text) = delta {
                        streamed.push_str(text);
                    }
                }
            }
            Event::ToolExecutionStart(_) => release.notify_one(),
            _ => {}
        }
    }
    run.wait().unwrap();
    assert_eq!(streamed, long_text, "coalescing keeps every fragment");
    assert!(
        updates <= BUFFER,
        "{updates} message updates buffered, more than {BUFFER}"
    );
}
