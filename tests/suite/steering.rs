//! Steering and follow-up messages: delivered between a batch and the next model turn, or when
//! the run would otherwise end; never lost silently.

use crate::support;

use std::sync::{mpsc, Arc, Mutex};

use golato::agent::event::Delivery;
use golato::agent::{Event, NotDelivered};
use golato::generator::Scripted;
use golato::message::{AssistantMessage, Message, UserMessage};
use golato::tool::{Tool, ToolResult};
use pretty_assertions::assert_eq;
use serde_json::json;
use support::*;

/// A tool that waits for the test to release it.
fn gate_tool() -> (Tool, mpsc::Sender<()>) {
    let (release, gate) = mpsc::channel::<()>();
    let gate = Arc::new(Mutex::new(gate));
    let tool = Tool::blocking(
        "wait",
        "Waits for the test.",
        json!({"type": "object"}),
        move |_, _| {
            gate.lock().unwrap().recv().unwrap();
            Ok(ToolResult::text("waited"))
        },
    );
    (tool, release)
}

/// The roles (and user texts) of a transcript, compactly.
fn shape(messages: &[Message]) -> Vec<String> {
    messages
        .iter()
        .map(|message| match message {
            Message::User(user) => format!("user:{}", user.text()),
            Message::Assistant(assistant) if assistant.tool_calls.is_empty() => {
                format!("assistant:{}", assistant.text())
            }
            Message::Assistant(_) => "assistant:calls".to_owned(),
            Message::ToolResult(result) => format!("result:{}", result.text()),
        })
        .collect()
}

#[test]
fn steering_waits_for_the_batch_then_comes_before_the_next_turn() {
    let (tool, release) = gate_tool();
    let agent = agent_with(
        Scripted::new([
            AssistantMessage::with_tool_calls([call("1", "wait", "{}"), call("2", "wait", "{}")]),
            AssistantMessage::with_text("steered"),
        ]),
        vec![tool],
    );
    let run = agent.start(prompt("go"));
    let mut events = Vec::new();
    for event in run.events() {
        if matches!(event, Event::ToolExecutionStart(ref start) if start.index == 1) {
            // Both calls are running: steer now, then let them finish.
            run.steer(UserMessage::new("use the other file")).unwrap();
            release.send(()).unwrap();
            release.send(()).unwrap();
        }
        events.push(event);
    }
    let result = run.wait().unwrap();
    assert_eq!(
        shape(&result.messages),
        [
            "user:go",
            "assistant:calls",
            "result:waited",
            "result:waited",
            "user:use the other file",
            "assistant:steered"
        ]
    );
    // The event comes after the batch's turn ended and before the next turn starts.
    let kinds: Vec<&str> = events
        .iter()
        .filter_map(|event| match event {
            Event::TurnEnd(_) => Some("turn_end"),
            Event::TurnStart(_) => Some("turn_start"),
            Event::UserMessage(message) => {
                assert_eq!(message.delivery, Delivery::Steer);
                assert_eq!(message.message, UserMessage::new("use the other file"));
                Some("steer")
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        kinds,
        ["turn_start", "turn_end", "steer", "turn_start", "turn_end"]
    );
}

#[test]
fn a_follow_up_keeps_a_run_going_that_would_have_ended() {
    let (answer_gate, gate) = mpsc::channel::<()>();
    let gate = Arc::new(Mutex::new(gate));
    let generator = Gated::new(
        Scripted::new([
            AssistantMessage::with_text("first answer"),
            AssistantMessage::with_text("second answer"),
        ]),
        move |n| {
            let gate = Arc::clone(&gate);
            async move {
                if n == 0 {
                    tokio::task::spawn_blocking(move || gate.lock().unwrap().recv().unwrap())
                        .await
                        .unwrap();
                }
            }
        },
    );
    let agent = agent_with(generator, vec![]);
    let run = agent.start(prompt("go"));
    // Queued while the model is still writing its first answer.
    run.follow_up(UserMessage::new("and then?")).unwrap();
    run.follow_up(UserMessage::new("briefly")).unwrap();
    answer_gate.send(()).unwrap();
    let events: Vec<Event> = run.events().collect();
    let result = run.wait().unwrap();
    assert_eq!(
        shape(&result.messages),
        [
            "user:go",
            "assistant:first answer",
            "user:and then?",
            "user:briefly",
            "assistant:second answer"
        ]
    );
    assert_eq!(result.final_message.text(), "second answer");
    assert_eq!(result.turns, 2);
    let delivered: Vec<Delivery> = events
        .iter()
        .filter_map(|event| match event {
            Event::UserMessage(message) => Some(message.delivery),
            _ => None,
        })
        .collect();
    assert_eq!(delivered, [Delivery::FollowUp, Delivery::FollowUp]);
}

#[test]
fn a_message_queued_after_the_run_ended_comes_back_as_an_error() {
    let agent = agent_with(Scripted::new([AssistantMessage::with_text("bye")]), vec![]);
    let run = agent.start(prompt("go"));
    for _ in run.events() {}
    let message = UserMessage::new("too late");
    assert_eq!(
        run.steer(message.clone()),
        Err(NotDelivered {
            message: message.clone()
        })
    );
    assert_eq!(
        run.follow_up(message.clone()),
        Err(NotDelivered { message })
    );
    assert_eq!(run.wait().unwrap().final_message.text(), "bye");
}
