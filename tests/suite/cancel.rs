//! Cancellation, generator failure, guard rails and concurrent runs (BEHAVIOUR.md §1.3–1.6).

use crate::support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use futures::StreamExt;
use golato::agent::{self, Agent, Error, Event};
use golato::generator::{Delta, EventStream, Generator, Request, Scripted, StreamEvent};
use golato::message::{AssistantMessage, Message, StopReason};
use golato::tool::{Execution, Tool, ToolResult};
use serde_json::json;
use support::*;
use tokio::sync::{mpsc, Barrier};

/// A tool that tells the test it is running, waits for cancellation, and (once `release` is
/// signalled, if given) returns what it saw.
fn waits_for_cancel(running: mpsc::UnboundedSender<String>, returned: Arc<AtomicBool>) -> Tool {
    Tool::new(
        "wait",
        "Waits to be cancelled.",
        json!({"type": "object"}),
        move |ctx, _args| {
            let (running, returned) = (running.clone(), Arc::clone(&returned));
            async move {
                let _ = running.send(ctx.call().id.clone());
                tokio::time::timeout(HANG_GUARD, ctx.cancelled())
                    .await
                    .map_err(|_| "never cancelled")?;
                let _ = running.send(format!("{} saw cancellation", ctx.call().id));
                // Still doing cleanup after the signal: the run must wait for this.
                tokio::task::yield_now().await;
                returned.store(true, Ordering::SeqCst);
                Ok(ToolResult::text(format!("stopped {}", ctx.call().id)))
            }
        },
    )
}

fn cancelled_transcript(outcome: Result<agent::RunResult, Error>) -> Vec<Message> {
    match outcome {
        Err(Error::Cancelled { messages }) => messages,
        other => panic!("expected Cancelled, got {other:?}"),
    }
}

#[test]
fn cancelling_mid_batch_waits_for_started_calls_and_keeps_the_transcript() {
    let (running_tx, mut running_rx) = mpsc::unbounded_channel();
    let returned = Arc::new(AtomicBool::new(false));
    let agent = agent_with(
        script(vec![call("a", "wait", "{}"), call("b", "wait", "{}")]),
        vec![waits_for_cancel(running_tx, Arc::clone(&returned))],
    );
    let run = agent.start(prompt("go"));
    // Both calls of the parallel batch are running.
    let mut started = vec![
        running_rx.blocking_recv().unwrap(),
        running_rx.blocking_recv().unwrap(),
    ];
    // (Nothing is cancelled yet, so these are the two "running" messages.)
    started.sort();
    assert_eq!(started, ["a", "b"]);
    run.cancel();
    let (events, outcome) = collect(run);
    assert!(
        returned.load(Ordering::SeqCst),
        "the run waited for the started functions"
    );
    let messages = cancelled_transcript(outcome);
    let results = transcript_results(&messages);
    let texts: Vec<String> = results.iter().map(|r| r.text()).collect();
    assert_eq!(
        texts,
        ["stopped a", "stopped b"],
        "started calls keep what they returned"
    );
    assert_eq!(
        tool_trace(&events).len(),
        4,
        "one start and one end per call"
    );
    assert!(matches!(messages[0], Message::User(_)));
    assert!(matches!(messages[1], Message::Assistant(_)));
}

#[test]
fn cancelling_a_sequential_batch_gives_unstarted_calls_an_error_result() {
    let (running_tx, mut running_rx) = mpsc::unbounded_channel();
    let returned = Arc::new(AtomicBool::new(false));
    let agent = Agent::new(agent::Config {
        generator: Some(Arc::new(script(vec![
            call("a", "wait", "{}"),
            call("b", "wait", "{}"),
            call("c", "echo", r#"{"text":"x"}"#),
        ]))),
        tools: vec![
            waits_for_cancel(running_tx, Arc::clone(&returned)),
            echo_tool(),
        ],
        tool_execution: Execution::Sequential,
        ..Default::default()
    })
    .unwrap();
    let run = agent.start(prompt("go"));
    assert_eq!(running_rx.blocking_recv().unwrap(), "a");
    run.cancel();
    let (events, outcome) = collect(run);
    let results = transcript_results(&cancelled_transcript(outcome));
    assert_eq!(results.len(), 3);
    assert_eq!(results[0].text(), "stopped a");
    for result in &results[1..] {
        assert!(result.is_error);
        assert!(
            result.text().contains("cancelled before"),
            "{}",
            result.text()
        );
    }
    assert_eq!(
        tool_trace(&events),
        ["start:0", "end:0", "start:1", "end:1", "start:2", "end:2"]
    );
    let mut seen = Vec::new();
    while let Ok(message) = running_rx.try_recv() {
        seen.push(message);
    }
    assert_eq!(seen, ["a saw cancellation"], "b never ran");
}

#[test]
fn cancelling_while_the_generator_streams_ends_the_run_with_the_transcript() {
    let (asked_tx, asked_rx) = std::sync::mpsc::channel::<()>();
    let asked_tx = std::sync::Mutex::new(asked_tx);
    let generator = Gated::new(
        Scripted::new([AssistantMessage::with_text("never")]),
        move |_| {
            let _ = asked_tx.lock().unwrap().send(());
            std::future::pending::<()>()
        },
    );
    let agent = agent_with(generator, vec![]);
    let run = agent.start(prompt("hello"));
    asked_rx.recv().unwrap();
    run.cancel();
    let messages = cancelled_transcript(run.wait());
    assert_eq!(messages.len(), 1, "the prompt is kept");
}

#[test]
fn dropping_the_run_cancels_it() {
    let (running_tx, mut running_rx) = mpsc::unbounded_channel();
    let returned = Arc::new(AtomicBool::new(false));
    let agent = agent_with(
        script(vec![call("a", "wait", "{}")]),
        vec![waits_for_cancel(running_tx, Arc::clone(&returned))],
    );
    let run = agent.start(prompt("go"));
    assert_eq!(running_rx.blocking_recv().unwrap(), "a");
    drop(run);
    assert_eq!(running_rx.blocking_recv().unwrap(), "a saw cancellation");
}

#[test]
fn a_generator_failure_ends_the_run_with_the_transcript() {
    // The script answers the first request only; the second request fails.
    let generator = Scripted::new([AssistantMessage::with_tool_calls([call(
        "1",
        "echo",
        r#"{"text":"x"}"#,
    )])]);
    let agent = agent_with(generator, vec![echo_tool()]);
    match agent.start(prompt("go")).wait() {
        Err(Error::Generator { source, messages }) => {
            assert!(
                source.to_string().contains("asked for message #2"),
                "{source}"
            );
            assert_eq!(messages.len(), 3, "prompt, assistant, tool result");
        }
        other => panic!("expected a generator error, got {other:?}"),
    }
}

#[test]
fn max_turns_ends_a_run_that_needs_more_with_a_clear_error() {
    let looping = Scripted::new((0..5).map(|i| {
        AssistantMessage::with_tool_calls([call(&i.to_string(), "echo", r#"{"text":"x"}"#)])
    }));
    let agent = Agent::new(agent::Config {
        generator: Some(Arc::new(looping)),
        tools: vec![echo_tool()],
        max_turns: Some(2),
        ..Default::default()
    })
    .unwrap();
    match agent.start(prompt("go")).wait() {
        Err(error @ Error::MaxTurns { .. }) => {
            assert!(error.to_string().contains("max_turns"));
            assert_eq!(
                error.messages().unwrap().len(),
                5,
                "prompt and two turns of two messages"
            );
        }
        other => panic!("expected MaxTurns, got {other:?}"),
    }
}

#[test]
fn concurrent_runs_on_one_agent_execute_at_the_same_time() {
    const RUNS: usize = 8;
    // Every run's tool waits until all runs' tools are running.
    let barrier = Arc::new(Barrier::new(RUNS));
    let meet = Tool::new("meet", "", json!({"type": "object"}), move |_ctx, _args| {
        let barrier = Arc::clone(&barrier);
        async move {
            tokio::time::timeout(HANG_GUARD, barrier.wait())
                .await
                .map_err(|_| "runs did not overlap")?;
            Ok(ToolResult::text("met"))
        }
    });
    let agent = agent_with(script(vec![call("1", "meet", "{}")]), vec![meet]);
    let runs: Vec<_> = (0..RUNS)
        .map(|i| agent.start(prompt(&format!("run {i}"))))
        .collect();
    for run in runs {
        let result = run.wait().unwrap();
        assert!(transcript_results(&result.messages)
            .iter()
            .all(|r| !r.is_error));
    }
}

/// Streams `deltas`, then either fails (the stream ends without a message) or hangs.
struct CutShort {
    deltas: Vec<Delta>,
    hang: bool,
}

impl Generator for CutShort {
    fn stream(&self, _request: Request) -> EventStream {
        let deltas = futures::stream::iter(
            self.deltas
                .clone()
                .into_iter()
                .map(|delta| Ok(StreamEvent::Delta(delta))),
        );
        if self.hang {
            deltas.chain(futures::stream::pending()).boxed()
        } else {
            deltas.boxed()
        }
    }
}

fn text_and_a_cut_call() -> Vec<Delta> {
    vec![
        Delta::Reasoning("hmm".to_owned()),
        Delta::Text("Hello ".to_owned()),
        Delta::Text("wor".to_owned()),
        Delta::ToolCall {
            index: 0,
            id: Some("c1".to_owned()),
            name: Some("echo".to_owned()),
            arguments: r#"{"te"#.to_owned(),
        },
    ]
}

/// The kinds of the events from the turn's `MessageEnd` on.
fn ending(events: &[Event]) -> Vec<&'static str> {
    let from = events
        .iter()
        .position(|event| matches!(event, Event::MessageEnd(_)))
        .unwrap_or(events.len());
    events[from..]
        .iter()
        .map(|event| match event {
            Event::MessageEnd(_) => "MessageEnd",
            Event::TurnEnd(_) => "TurnEnd",
            Event::RunEnd(_) => "RunEnd",
            _ => "other",
        })
        .collect()
}

fn assert_partial(message: &Message, stop_reason: StopReason) -> &AssistantMessage {
    let Message::Assistant(partial) = message else {
        panic!("expected the partial answer, got {message:?}");
    };
    assert_eq!(partial.text(), "Hello wor");
    assert_eq!(partial.reasoning, "hmm");
    assert_eq!(partial.stop_reason, stop_reason);
    assert!(
        partial.tool_calls.is_empty(),
        "a call cut short must not be recorded, or it would run on resume"
    );
    partial
}

#[test]
fn a_generator_failing_mid_answer_records_what_had_streamed_in() {
    let agent = agent_with(
        CutShort {
            deltas: text_and_a_cut_call(),
            hang: false,
        },
        vec![echo_tool()],
    );
    let (events, outcome) = collect(agent.start(prompt("go")));
    let Err(Error::Generator { source, messages }) = outcome else {
        panic!("expected a generator error, got {outcome:?}");
    };
    assert_eq!(messages.len(), 2, "prompt, partial answer");
    let partial = assert_partial(&messages[1], StopReason::Error);
    assert_eq!(partial.error_message, Some(source.to_string()));
    assert_eq!(ending(&events), ["MessageEnd", "TurnEnd", "RunEnd"]);
}

#[test]
fn cancelling_mid_answer_records_what_had_streamed_in() {
    let agent = agent_with(
        CutShort {
            deltas: text_and_a_cut_call(),
            hang: true,
        },
        vec![echo_tool()],
    );
    let run = agent.start(prompt("go"));
    let mut events = Vec::new();
    for event in run.events() {
        // The last delta (the call fragment) has arrived: the generator now hangs.
        if matches!(&event, Event::MessageUpdate(update)
            if update.deltas.iter().any(|delta| matches!(delta, Delta::ToolCall { .. })))
        {
            run.cancel();
        }
        events.push(event);
    }
    let Err(Error::Cancelled { messages }) = run.wait() else {
        panic!("expected the run to be cancelled");
    };
    assert_eq!(messages.len(), 2, "prompt, partial answer");
    assert_partial(&messages[1], StopReason::Aborted);
    assert_eq!(ending(&events), ["MessageEnd", "TurnEnd", "RunEnd"]);
}

#[test]
fn cancelling_before_any_answer_arrived_records_nothing_more() {
    let agent = agent_with(
        CutShort {
            deltas: Vec::new(),
            hang: true,
        },
        vec![echo_tool()],
    );
    let run = agent.start(prompt("go"));
    for event in run.events() {
        if matches!(event, Event::MessageStart(_)) {
            run.cancel();
        }
    }
    let Err(Error::Cancelled { messages }) = run.wait() else {
        panic!("expected the run to be cancelled");
    };
    assert_eq!(messages.len(), 1, "the prompt only");
}
