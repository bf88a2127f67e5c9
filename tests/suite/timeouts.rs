//! Per-call timeouts: a call past its timeout is cancelled and gets an error result; a function
//! that ignores the cancellation is abandoned after the grace period, and nothing is leaked.

use crate::support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use golato::agent::{self, Agent};
use golato::tool::{Tool, ToolResult};
use pretty_assertions::assert_eq;
use serde_json::json;
use support::*;

fn agent(tools: Vec<Tool>, calls: Vec<golato::message::ToolCall>, config: agent::Config) -> Agent {
    Agent::new(agent::Config {
        generator: Some(Arc::new(script(calls))),
        tools,
        ..config
    })
    .unwrap()
}

/// Waits for its call's cancellation, notes that it saw it, and returns normally.
fn patient(name: &str, saw_cancel: Arc<AtomicBool>) -> Tool {
    Tool::new(
        name,
        "Waits to be cancelled.",
        json!({"type": "object"}),
        move |ctx, _| {
            let saw_cancel = Arc::clone(&saw_cancel);
            async move {
                ctx.cancelled().await;
                saw_cancel.store(true, Ordering::SeqCst);
                Ok(ToolResult::text("stopped"))
            }
        },
    )
}

fn quick(name: &str) -> Tool {
    Tool::new(
        name,
        "Answers at once.",
        json!({"type": "object"}),
        |_, _| async { Ok(ToolResult::text("quick")) },
    )
}

#[test]
fn a_call_past_its_tools_timeout_is_cancelled_and_says_so() {
    let saw_cancel = Arc::new(AtomicBool::new(false));
    let slow = patient("slow", Arc::clone(&saw_cancel)).with_timeout(Duration::from_millis(50));
    let agent = agent(
        vec![slow, quick("quick")],
        vec![call("1", "slow", "{}"), call("2", "quick", "{}")],
        agent::Config::default(),
    );
    let result = agent.start(prompt("go")).wait().unwrap();
    let results = transcript_results(&result.messages);
    assert!(results[0].is_error);
    assert_eq!(
        results[0].text(),
        "Tool slow timed out after 0.05 s and was cancelled."
    );
    assert!(saw_cancel.load(Ordering::SeqCst));
    assert_eq!(results[1].text(), "quick");
    assert!(!results[1].is_error);
}

#[test]
fn the_agents_default_timeout_applies_unless_the_tool_sets_its_own() {
    let (default_saw, own_saw) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    let by_default = patient("by_default", Arc::clone(&default_saw));
    // Its own timeout is shorter than the agent's: it is the one that applies.
    let own = patient("own", Arc::clone(&own_saw)).with_timeout(Duration::from_millis(20));
    let agent = agent(
        vec![by_default, own],
        vec![call("1", "by_default", "{}"), call("2", "own", "{}")],
        agent::Config {
            tool_timeout: Some(Duration::from_millis(80)),
            ..Default::default()
        },
    );
    let result = agent.start(prompt("go")).wait().unwrap();
    let results = transcript_results(&result.messages);
    assert_eq!(
        results[0].text(),
        "Tool by_default timed out after 0.08 s and was cancelled."
    );
    assert_eq!(
        results[1].text(),
        "Tool own timed out after 0.02 s and was cancelled."
    );
    assert!(default_saw.load(Ordering::SeqCst) && own_saw.load(Ordering::SeqCst));
}

/// Sets its flag when dropped: shows that an abandoned future was dropped, not leaked.
struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[test]
fn a_function_that_ignores_cancellation_is_abandoned_after_the_grace_period() {
    let dropped = Arc::new(AtomicBool::new(false));
    let stubborn = {
        let dropped = Arc::clone(&dropped);
        Tool::new(
            "stubborn",
            "Never stops.",
            json!({"type": "object"}),
            move |_ctx, _| {
                let flag = DropFlag(Arc::clone(&dropped));
                async move {
                    let _flag = flag;
                    std::future::pending::<()>().await;
                    Ok(ToolResult::text("unreachable"))
                }
            },
        )
        .with_timeout(Duration::from_millis(20))
    };
    let agent = agent(
        vec![stubborn],
        vec![call("1", "stubborn", "{}")],
        agent::Config {
            tool_timeout_grace: Duration::from_millis(20),
            ..Default::default()
        },
    );
    let result = agent.start(prompt("go")).wait().unwrap();
    let results = transcript_results(&result.messages);
    assert!(results[0].is_error);
    assert!(
        results[0].text().starts_with(
            "Tool stubborn timed out after 0.02 s and did not stop within 0.02 s of being cancelled, so it was abandoned. It may still be running;"
        ),
        "{}",
        results[0].text()
    );
    assert_eq!(result.final_message.text(), "done");
    // The aborted task drops its future on the runtime; wait for that, not for a time.
    let started = std::time::Instant::now();
    while !dropped.load(Ordering::SeqCst) {
        assert!(
            started.elapsed() < HANG_GUARD,
            "the abandoned future was never dropped"
        );
        std::thread::yield_now();
    }
}

#[test]
fn without_a_timeout_a_slow_call_is_waited_for() {
    let (release, released) = std::sync::mpsc::channel::<()>();
    let released = Arc::new(std::sync::Mutex::new(released));
    let slow = Tool::blocking(
        "slow",
        "Waits for the test.",
        json!({"type": "object"}),
        move |_, _| {
            released.lock().unwrap().recv().unwrap();
            Ok(ToolResult::text("finished"))
        },
    );
    let agent = agent(
        vec![slow],
        vec![call("1", "slow", "{}")],
        agent::Config::default(),
    );
    let run = agent.start(prompt("go"));
    // The call started; the run ends only once the test lets the function return.
    for event in run.events() {
        if matches!(event, golato::Event::ToolExecutionStart(_)) {
            release.send(()).unwrap();
        }
    }
    let result = run.wait().unwrap();
    assert_eq!(transcript_results(&result.messages)[0].text(), "finished");
}
