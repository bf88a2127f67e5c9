//! Concurrency caps: `max_parallel_calls` per batch and `max_concurrent_runs` per agent,
//! proved with barriers and counters, never with sleeps.

use crate::support;

use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Barrier, Mutex};

use golato::agent::{self, Agent, Event};
use golato::message::{AssistantMessage, UserMessage};
use golato::tool::{Tool, ToolResult};
use pretty_assertions::assert_eq;
use serde_json::json;
use support::*;

/// Counts how many of its calls run at once (and the most ever), and makes them meet in pairs:
/// a call finishes only once another one is running too.
#[derive(Clone)]
struct Meter {
    running: Arc<AtomicUsize>,
    most: Arc<AtomicUsize>,
    pairs: Arc<Barrier>,
}

impl Meter {
    fn new() -> Meter {
        Meter {
            running: Arc::default(),
            most: Arc::default(),
            pairs: Arc::new(Barrier::new(2)),
        }
    }

    fn tool(&self) -> Tool {
        let meter = self.clone();
        Tool::blocking(
            "pair",
            "Meets another call.",
            json!({"type": "object"}),
            move |ctx, _| {
                let now = meter.running.fetch_add(1, Ordering::SeqCst) + 1;
                meter.most.fetch_max(now, Ordering::SeqCst);
                meter.pairs.wait();
                meter.running.fetch_sub(1, Ordering::SeqCst);
                Ok(ToolResult::text(ctx.call().id.clone()))
            },
        )
    }

    fn most(&self) -> usize {
        self.most.load(Ordering::SeqCst)
    }
}

#[test]
fn max_parallel_calls_caps_a_batch_keeping_order_and_one_start_and_end_per_call() {
    let meter = Meter::new();
    let calls = (0..6)
        .map(|i| call(&format!("c{i}"), "pair", "{}"))
        .collect();
    let agent = Agent::new(agent::Config {
        generator: Some(Arc::new(script(calls))),
        tools: vec![meter.tool()],
        max_parallel_calls: NonZeroUsize::new(2),
        ..Default::default()
    })
    .unwrap();
    let (events, outcome) = collect(agent.start(prompt("go")));
    assert_eq!(meter.most(), 2);
    let results: Vec<String> = transcript_results(&outcome.unwrap().messages)
        .iter()
        .map(|r| r.text())
        .collect();
    assert_eq!(results, ["c0", "c1", "c2", "c3", "c4", "c5"]);
    let trace = tool_trace(&events);
    for index in 0..6 {
        let start = format!("start:{index}");
        let end = format!("end:{index}");
        assert_eq!(trace.iter().filter(|t| **t == start).count(), 1);
        assert_eq!(trace.iter().filter(|t| **t == end).count(), 1);
        let (start, end) = (
            trace.iter().position(|t| *t == start).unwrap(),
            trace.iter().position(|t| *t == end).unwrap(),
        );
        assert!(start < end, "{trace:?}");
    }
    // A start means the function was launched: never more than two started and not ended.
    let mut open = 0;
    for entry in &trace {
        if entry.starts_with("start") {
            open += 1;
        } else if entry.starts_with("end") {
            open -= 1;
        }
        assert!(open <= 2, "{trace:?}");
    }
}

#[test]
fn max_concurrent_runs_caps_the_agents_runs() {
    let meter = Meter::new();
    let agent = Agent::new(agent::Config {
        generator: Some(Arc::new(script(vec![call("c", "pair", "{}")]))),
        tools: vec![meter.tool()],
        max_concurrent_runs: NonZeroUsize::new(2),
        ..Default::default()
    })
    .unwrap();
    let runs: Vec<_> = (0..6)
        .map(|i| agent.start(prompt(&format!("run {i}"))))
        .collect();
    for run in runs {
        assert_eq!(run.wait().unwrap().final_message.text(), "done");
    }
    assert_eq!(meter.most(), 2);
}

#[test]
fn runs_over_the_cap_are_admitted_in_the_order_they_were_started() {
    // Each run's tool records its run's prompt; the first run holds the only place until the
    // test has started all the others.
    let order = Arc::new(Mutex::new(Vec::new()));
    let (release, gate) = mpsc::channel::<()>();
    let gate = Arc::new(Mutex::new(gate));
    let record = {
        let order = Arc::clone(&order);
        Tool::blocking(
            "record",
            "Records its run.",
            json!({"type": "object"}),
            move |ctx, _| {
                let id = ctx.call().id.clone();
                if id == "run 0" {
                    gate.lock().unwrap().recv().unwrap();
                }
                order.lock().unwrap().push(id);
                Ok(ToolResult::text("ok"))
            },
        )
    };
    // The call's ID is the run's prompt, so the tool can tell runs apart.
    let agent = Agent::new(agent::Config {
        generator: Some(Arc::new(PromptAsCallId)),
        tools: vec![record],
        max_concurrent_runs: NonZeroUsize::new(1),
        ..Default::default()
    })
    .unwrap();
    let first = agent.start(prompt("run 0"));
    for event in first.events() {
        if matches!(event, Event::ToolExecutionStart(_)) {
            break;
        }
    }
    let others: Vec<_> = (1..5)
        .map(|i| agent.start(prompt(&format!("run {i}"))))
        .collect();
    release.send(()).unwrap();
    first.wait().unwrap();
    for run in others {
        run.wait().unwrap();
    }
    assert_eq!(
        *order.lock().unwrap(),
        ["run 0", "run 1", "run 2", "run 3", "run 4"]
    );
}

#[test]
fn a_run_waiting_for_its_turn_can_be_cancelled() {
    let (release, gate) = mpsc::channel::<()>();
    let gate = Arc::new(Mutex::new(gate));
    let hold = Tool::blocking(
        "hold",
        "Waits for the test.",
        json!({"type": "object"}),
        move |_, _| {
            gate.lock().unwrap().recv().unwrap();
            Ok(ToolResult::text("released"))
        },
    );
    let agent = Agent::new(agent::Config {
        generator: Some(Arc::new(script(vec![call("h", "hold", "{}")]))),
        tools: vec![hold],
        max_concurrent_runs: NonZeroUsize::new(1),
        ..Default::default()
    })
    .unwrap();
    let first = agent.start(prompt("first"));
    for event in first.events() {
        if matches!(event, Event::ToolExecutionStart(_)) {
            break;
        }
    }
    let waiting = agent.start(prompt("second"));
    waiting.cancel();
    // It ends while the first run still holds the place, with its input as its transcript.
    match waiting.wait() {
        Err(agent::Error::Cancelled { messages }) => {
            assert_eq!(messages, [UserMessage::new("second").into()]);
        }
        other => panic!("expected a cancelled run, got {other:?}"),
    }
    release.send(()).unwrap();
    assert_eq!(first.wait().unwrap().final_message.text(), "done");
    // The place is free again.
    let third = agent.start(prompt("third"));
    release.send(()).unwrap();
    assert_eq!(third.wait().unwrap().final_message.text(), "done");
}

/// Answers the first request with one `record` call whose ID is the prompt, then "done".
struct PromptAsCallId;

impl golato::generator::Generator for PromptAsCallId {
    fn stream(&self, request: golato::generator::Request) -> golato::generator::EventStream {
        let prompt = match request.messages.first() {
            Some(golato::message::Message::User(user)) => user.text(),
            _ => String::new(),
        };
        let answered = request
            .messages
            .iter()
            .any(|m| matches!(m, golato::message::Message::Assistant(_)));
        let message = if answered {
            AssistantMessage::with_text("done")
        } else {
            AssistantMessage::with_tool_calls([call(&prompt, "record", "{}")])
        };
        golato::generator::Scripted::new([message]).stream(golato::generator::Request {
            messages: Arc::new(Vec::new()),
            ..request
        })
    }
}
