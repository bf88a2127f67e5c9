//! Resuming a run from an earlier transcript, possibly after a trip through JSON.

use crate::support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use golato::agent::{Agent, Error, Input, RunResult};
use golato::generator::Scripted;
use golato::message::{AssistantMessage, Message, StopReason, UserMessage};
use pretty_assertions::assert_eq;
use support::*;

fn two_step_script() -> Scripted {
    Scripted::new([
        AssistantMessage::with_tool_calls([call("1", "count", "{}"), call("2", "count", "{}")]),
        AssistantMessage::with_text("counted twice"),
        AssistantMessage::with_text("follow-up answered"),
    ])
}

#[test]
fn a_transcript_with_pending_calls_resumes_by_running_them() {
    let counter = Arc::new(AtomicUsize::new(0));
    let agent = agent_with(
        two_step_script(),
        vec![counting_tool("count", counter.clone())],
    );
    let full = agent.start(prompt("count")).wait().unwrap();
    assert_eq!(counter.load(Ordering::SeqCst), 2);

    // Stop after the assistant message, as if the process died before running the calls, and
    // move the transcript through JSON as another process would.
    let saved = serde_json::to_string(&full.messages[..2]).unwrap();
    let transcript: Vec<Message> = serde_json::from_str(&saved).unwrap();
    let resumed = resume(&agent, transcript).unwrap();
    assert_eq!(
        counter.load(Ordering::SeqCst),
        4,
        "the pending calls ran again"
    );
    assert_eq!(resumed.final_message.text(), "counted twice");
    assert_eq!(
        resumed.messages, full.messages,
        "same transcript as the uninterrupted run"
    );
}

#[test]
fn a_transcript_with_some_results_runs_only_the_missing_calls() {
    let counter = Arc::new(AtomicUsize::new(0));
    let agent = agent_with(
        two_step_script(),
        vec![counting_tool("count", counter.clone())],
    );
    let full = agent.start(prompt("count")).wait().unwrap();
    let resumed = resume(&agent, full.messages[..3].to_vec()).unwrap();
    assert_eq!(counter.load(Ordering::SeqCst), 3, "only call 2 ran again");
    assert_eq!(resumed.messages, full.messages);
}

#[test]
fn results_stay_in_source_order_when_a_middle_call_was_answered_before() {
    let script = Scripted::new([
        AssistantMessage::with_tool_calls([
            call("a", "echo", r#"{"text":"A"}"#),
            call("b", "echo", r#"{"text":"B"}"#),
            call("c", "echo", r#"{"text":"C"}"#),
        ]),
        AssistantMessage::with_text("done"),
    ]);
    let agent = agent_with(script, vec![echo_tool()]);
    let full = agent.start(prompt("echo")).wait().unwrap();
    // Only b was answered when the process stopped.
    let mut transcript = full.messages[..2].to_vec();
    transcript.push(full.messages[3].clone());
    let resumed = resume(&agent, transcript).unwrap();
    let answered: Vec<&str> = resumed
        .messages
        .iter()
        .filter_map(|message| match message {
            Message::ToolResult(result) => Some(result.tool_call_id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(answered, ["a", "b", "c"]);
    assert_eq!(resumed.messages, full.messages);
}

#[test]
fn a_finished_transcript_continues_with_a_new_prompt() {
    let counter = Arc::new(AtomicUsize::new(0));
    let agent = agent_with(two_step_script(), vec![counting_tool("count", counter)]);
    let first = agent.start(prompt("count")).wait().unwrap();
    let next = agent
        .start(Input {
            transcript: first.messages.clone(),
            prompts: vec![UserMessage::new("and then?")],
            summary: None,
        })
        .wait()
        .unwrap();
    assert_eq!(next.final_message.text(), "follow-up answered");
    assert_eq!(next.messages.len(), first.messages.len() + 2);
}

#[test]
fn a_cancelled_run_resumes_from_its_error_transcript() {
    let gate = Arc::new(tokio::sync::Notify::new());
    let generator = {
        let gate = Arc::clone(&gate);
        Gated::new(two_step_script(), move |n| {
            let gate = Arc::clone(&gate);
            async move {
                if n == 1 {
                    gate.notify_one();
                    std::future::pending::<()>().await;
                }
            }
        })
    };
    let counter = Arc::new(AtomicUsize::new(0));
    let gated = agent_with(generator, vec![counting_tool("count", counter.clone())]);
    let run = gated.start(prompt("count"));
    futures::executor::block_on(gate.notified());
    run.cancel();
    let messages = match run.wait() {
        Err(Error::Cancelled { messages }) => messages,
        other => panic!("expected Cancelled, got {other:?}"),
    };
    assert_eq!(messages.len(), 4, "prompt, assistant, two results");
    let agent = agent_with(
        two_step_script(),
        vec![counting_tool("count", counter.clone())],
    );
    let resumed = resume(&agent, messages).unwrap();
    assert_eq!(resumed.final_message.text(), "counted twice");
    assert_eq!(counter.load(Ordering::SeqCst), 2, "nothing ran twice");
}

#[test]
fn empty_input_is_a_clear_error() {
    let agent = agent_with(two_step_script(), vec![]);
    let error = agent.start(Input::default()).wait().unwrap_err();
    assert!(matches!(error, Error::EmptyInput));
    assert!(error.to_string().contains("at least one prompt"));
}

#[test]
fn a_transcript_ending_in_a_final_answer_cannot_continue_without_a_prompt() {
    let error = resuming_without_a_prompt(vec![
        Message::User(UserMessage::new("hi")),
        Message::Assistant(AssistantMessage::with_text("hello")),
    ]);
    assert!(matches!(error, Error::NotContinuable { .. }), "{error:?}");
    assert!(error.to_string().contains("add a prompt"), "{error}");
}

#[test]
fn a_transcript_ending_in_an_answer_cut_short_says_how_to_go_on() {
    let error = resuming_without_a_prompt(vec![
        Message::User(UserMessage::new("hi")),
        Message::Assistant(AssistantMessage {
            stop_reason: StopReason::Aborted,
            ..AssistantMessage::with_text("hel")
        }),
    ]);
    assert!(matches!(error, Error::NotContinuable { .. }), "{error:?}");
    let text = error.to_string();
    assert!(
        text.contains("cut short") && text.contains("add a prompt"),
        "{text}"
    );
}

/// A run of `agent` resumed from `transcript`, with no new prompt.
fn resume(agent: &Agent, transcript: Vec<Message>) -> Result<RunResult, Error> {
    agent
        .start(Input {
            transcript,
            ..Default::default()
        })
        .wait()
}

/// The error of a run resumed from `transcript` with no new prompt.
fn resuming_without_a_prompt(transcript: Vec<Message>) -> Error {
    resume(&agent_with(two_step_script(), vec![]), transcript).unwrap_err()
}
