//! Executing a batch (BEHAVIOUR.md §3): parallel by default, sequential on request, results in
//! source order, event order, late updates, the terminate rule and `StopReason::Length`.
//! Concurrency is proven with barriers and handshakes, never with sleeps.

use crate::support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use golato::agent::{self, Agent};
use golato::generator::Scripted;
use golato::message::{AssistantMessage, StopReason};
use golato::tool::{Execution, Tool, ToolResult};
use pretty_assertions::assert_eq;
use serde_json::json;
use support::*;
use tokio::sync::{Barrier, Notify};

/// A tool whose calls all wait on one barrier: a batch finishes only if `parties` calls run at
/// the same time.
fn barrier_tool(parties: usize) -> Tool {
    let barrier = Arc::new(Barrier::new(parties));
    Tool::new(
        "meet",
        "Waits for the others.",
        json!({"type": "object"}),
        move |ctx, _args| {
            let barrier = Arc::clone(&barrier);
            async move {
                tokio::time::timeout(HANG_GUARD, barrier.wait())
                    .await
                    .map_err(|_| "the other calls never arrived: calls did not run concurrently")?;
                Ok(ToolResult::text(format!("met {}", ctx.call().id)))
            }
        },
    )
}

/// A tool whose calls each wait up to `patience` for another call of the batch to be running at
/// the same time, counting the calls that met one. A sequential batch never meets (and so takes
/// `patience` per call); a parallel one does.
fn overlap_probe(name: &str, meetings: Arc<AtomicUsize>, patience: Duration) -> Tool {
    let present = Arc::new(AtomicUsize::new(0));
    let arrived = Arc::new(Notify::new());
    Tool::new(
        name,
        "Detects overlap.",
        json!({"type": "object"}),
        move |_ctx, _args| {
            let (meetings, present, arrived) = (
                Arc::clone(&meetings),
                Arc::clone(&present),
                Arc::clone(&arrived),
            );
            async move {
                let others = present.fetch_add(1, Ordering::SeqCst);
                arrived.notify_waiters();
                let notified = arrived.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                let met = others > 0
                    || present.load(Ordering::SeqCst) > 1
                    || tokio::time::timeout(patience, notified).await.is_ok();
                if met {
                    meetings.fetch_add(1, Ordering::SeqCst);
                }
                present.fetch_sub(1, Ordering::SeqCst);
                Ok(ToolResult::text("probed"))
            }
        },
    )
}

const SHORT_PATIENCE: Duration = Duration::from_millis(100);

#[test]
fn calls_run_in_parallel_by_default() {
    let calls = (0..4).map(|i| call(&i.to_string(), "meet", "{}")).collect();
    let agent = agent_with(script(calls), vec![barrier_tool(4)]);
    let (events, outcome) = collect(agent.start(prompt("go")));
    let results = transcript_results(&outcome.expect("run succeeds").messages);
    assert!(results.iter().all(|r| !r.is_error), "{results:?}");
    // All starts come in source order before any end.
    assert_eq!(
        &tool_trace(&events)[..4],
        ["start:0", "start:1", "start:2", "start:3"]
    );
}

#[test]
fn sequential_config_serializes_every_batch() {
    let overlaps = Arc::new(AtomicUsize::new(0));
    let probe = overlap_probe("probe", Arc::clone(&overlaps), SHORT_PATIENCE);
    let agent = Agent::new(agent::Config {
        generator: Some(Arc::new(script(vec![
            call("1", "probe", "{}"),
            call("2", "probe", "{}"),
            call("3", "probe", "{}"),
        ]))),
        tools: vec![probe],
        tool_execution: Execution::Sequential,
        ..Default::default()
    })
    .unwrap();
    let (events, outcome) = collect(agent.start(prompt("go")));
    outcome.unwrap();
    assert_eq!(
        overlaps.load(Ordering::SeqCst),
        0,
        "no two calls overlapped"
    );
    assert_eq!(
        tool_trace(&events),
        ["start:0", "end:0", "start:1", "end:1", "start:2", "end:2"]
    );
}

#[test]
fn the_overlap_probe_detects_a_parallel_batch() {
    // The probe used in these tests can fail: in a parallel batch its calls meet.
    let overlaps = Arc::new(AtomicUsize::new(0));
    let probe = overlap_probe("probe", Arc::clone(&overlaps), HANG_GUARD);
    let agent = agent_with(
        script(vec![call("1", "probe", "{}"), call("2", "probe", "{}")]),
        vec![probe],
    );
    collect(agent.start(prompt("go"))).1.unwrap();
    assert_eq!(overlaps.load(Ordering::SeqCst), 2);
}

#[test]
fn one_sequential_tool_makes_its_whole_batch_sequential() {
    let overlaps = Arc::new(AtomicUsize::new(0));
    let parallel_probe = overlap_probe("probe", Arc::clone(&overlaps), SHORT_PATIENCE);
    let sequential_probe = overlap_probe("careful", Arc::clone(&overlaps), SHORT_PATIENCE)
        .with_execution(Execution::Sequential);
    let agent = agent_with(
        script(vec![
            call("1", "probe", "{}"),
            call("2", "careful", "{}"),
            call("3", "probe", "{}"),
        ]),
        vec![parallel_probe, sequential_probe],
    );
    let (events, outcome) = collect(agent.start(prompt("go")));
    outcome.unwrap();
    assert_eq!(overlaps.load(Ordering::SeqCst), 0);
    assert_eq!(
        tool_trace(&events),
        ["start:0", "end:0", "start:1", "end:1", "start:2", "end:2"]
    );
}

#[test]
fn results_stay_in_source_order_when_completion_order_is_reversed() {
    // Call 0 finishes only after call 1 has finished.
    let second_done = Arc::new(Notify::new());
    let tool = {
        let second_done = Arc::clone(&second_done);
        Tool::new(
            "ordered",
            "",
            json!({"type": "object"}),
            move |ctx, _args| {
                let second_done = Arc::clone(&second_done);
                async move {
                    let id = ctx.call().id.clone();
                    if id == "first" {
                        let wait = second_done.notified();
                        tokio::time::timeout(HANG_GUARD, wait)
                            .await
                            .map_err(|_| "second never finished")?;
                    } else {
                        // notify_one stores a permit, so the order of these two does not matter.
                        second_done.notify_one();
                    }
                    Ok(ToolResult::text(id))
                }
            },
        )
    };
    let agent = agent_with(
        script(vec![
            call("first", "ordered", "{}"),
            call("second", "ordered", "{}"),
        ]),
        vec![tool],
    );
    let (events, outcome) = collect(agent.start(prompt("go")));
    let result = outcome.unwrap();
    let recorded: Vec<String> = transcript_results(&result.messages)
        .iter()
        .map(|r| r.text())
        .collect();
    assert_eq!(recorded, ["first", "second"], "transcript in source order");
    let ended: Vec<String> = end_results(&events).iter().map(|r| r.text()).collect();
    assert_eq!(ended, ["second", "first"], "end events in completion order");
    assert_eq!(
        tool_trace(&events),
        ["start:0", "start:1", "end:1", "end:0"]
    );
    // The end event's result is the very message recorded in the transcript.
    assert_eq!(
        end_results(&events)
            .iter()
            .rev()
            .cloned()
            .collect::<Vec<_>>(),
        transcript_results(&result.messages)
    );
}

#[test]
fn an_invalid_call_in_a_parallel_batch_ends_right_after_its_start() {
    let agent = agent_with(
        script(vec![
            call("1", "meet", "{}"),
            call("2", "missing", "{}"),
            call("3", "meet", "{}"),
        ]),
        vec![barrier_tool(2)],
    );
    let (events, outcome) = collect(agent.start(prompt("go")));
    outcome.unwrap();
    let trace = tool_trace(&events);
    assert_eq!(&trace[..4], ["start:0", "start:1", "end:1", "start:2"]);
    assert_eq!(trace.len(), 6);
}

#[test]
fn an_invalid_call_in_a_sequential_batch_takes_its_turn() {
    let agent = Agent::new(agent::Config {
        generator: Some(Arc::new(script(vec![
            call("1", "echo", r#"{"text":"a"}"#),
            call("2", "missing", "{}"),
            call("3", "echo", r#"{"text":"b"}"#),
        ]))),
        tools: vec![echo_tool()],
        tool_execution: Execution::Sequential,
        ..Default::default()
    })
    .unwrap();
    let (events, outcome) = collect(agent.start(prompt("go")));
    let results = transcript_results(&outcome.unwrap().messages);
    assert!(results[1].is_error);
    assert_eq!(
        tool_trace(&events),
        ["start:0", "end:0", "start:1", "end:1", "start:2", "end:2"]
    );
}

#[test]
fn updates_come_between_start_and_end_and_late_updates_are_dropped() {
    let late = Arc::new(Notify::new());
    let published_late = Arc::new(Notify::new());
    let tool = {
        let (late, published_late) = (Arc::clone(&late), Arc::clone(&published_late));
        Tool::new(
            "chatty",
            "",
            json!({"type": "object"}),
            move |ctx, _args| {
                let (late, published_late) = (Arc::clone(&late), Arc::clone(&published_late));
                async move {
                    ctx.update(ToolResult::text("one"));
                    ctx.update(ToolResult::text("two"));
                    // Keep the context past the return, and publish once the function is over.
                    tokio::spawn(async move {
                        late.notified().await;
                        ctx.update(ToolResult::text("too late"));
                        published_late.notify_one();
                    });
                    Ok(ToolResult::text("returned"))
                }
            },
        )
    };
    // The second request waits until the late update was published, so the run is still going
    // when it arrives.
    let generator = {
        let (late, published_late) = (Arc::clone(&late), Arc::clone(&published_late));
        Gated::new(script(vec![call("1", "chatty", "{}")]), move |n| {
            let (late, published_late) = (Arc::clone(&late), Arc::clone(&published_late));
            async move {
                if n == 1 {
                    late.notify_one();
                    published_late.notified().await;
                }
            }
        })
    };
    let agent = agent_with(generator, vec![tool]);
    let (events, outcome) = collect(agent.start(prompt("go")));
    outcome.unwrap();
    assert_eq!(
        tool_trace(&events),
        ["start:0", "update:0", "update:0", "end:0"]
    );
}

fn terminate_tool(name: &str, result: ToolResult) -> Tool {
    Tool::new(name, "", json!({"type": "object"}), move |_ctx, _args| {
        let result = result.clone();
        async move { Ok(result) }
    })
}

#[test]
fn a_batch_in_which_every_call_terminates_successfully_ends_the_run() {
    // A one-entry script: asking the generator again would fail the run.
    let generator = Scripted::new([AssistantMessage::with_tool_calls([
        call("1", "stop", "{}"),
        call("2", "stop", "{}"),
    ])]);
    let agent = agent_with(
        generator,
        vec![terminate_tool(
            "stop",
            ToolResult::text("bye").with_terminate(),
        )],
    );
    let result = collect(agent.start(prompt("go")))
        .1
        .expect("terminated cleanly");
    assert_eq!(result.turns, 1);
    assert_eq!(result.final_message.tool_calls.len(), 2);
    assert_eq!(transcript_results(&result.messages).len(), 2);
}

#[test]
fn an_error_result_with_terminate_keeps_the_loop_running() {
    let agent = agent_with(
        script(vec![
            call("1", "stop", "{}"),
            call("2", "stop_failed", "{}"),
        ]),
        vec![
            terminate_tool("stop", ToolResult::text("bye").with_terminate()),
            terminate_tool(
                "stop_failed",
                ToolResult::error("could not").with_terminate(),
            ),
        ],
    );
    let result = collect(agent.start(prompt("go"))).1.unwrap();
    assert_eq!(result.turns, 2);
    assert_eq!(result.final_message.text(), "done");
}

#[test]
fn an_ordinary_sibling_keeps_the_loop_running_and_is_not_skipped() {
    let counter = Arc::new(AtomicUsize::new(0));
    let agent = agent_with(
        script(vec![call("1", "stop", "{}"), call("2", "count", "{}")]),
        vec![
            terminate_tool("stop", ToolResult::text("bye").with_terminate()),
            counting_tool("count", counter.clone()),
        ],
    );
    let result = collect(agent.start(prompt("go"))).1.unwrap();
    assert_eq!(counter.load(Ordering::SeqCst), 1, "the sibling ran");
    assert_eq!(result.turns, 2);
    let results = transcript_results(&result.messages);
    assert_eq!(results[1].text(), "counted");
}

#[test]
fn an_invalid_sibling_keeps_the_loop_running() {
    let agent = agent_with(
        script(vec![call("1", "stop", "{}"), call("2", "nope", "{}")]),
        vec![terminate_tool(
            "stop",
            ToolResult::text("bye").with_terminate(),
        )],
    );
    assert_eq!(collect(agent.start(prompt("go"))).1.unwrap().turns, 2);
}

#[test]
fn length_stop_with_calls_runs_nothing_and_continues() {
    let counter = Arc::new(AtomicUsize::new(0));
    let mut truncated = AssistantMessage::with_tool_calls([
        call("1", "count", r#"{"partial": "#),
        call("2", "count", "{}"),
    ]);
    truncated.stop_reason = StopReason::Length;
    let generator = Scripted::new([truncated, AssistantMessage::with_text("done")]);
    let agent = agent_with(generator, vec![counting_tool("count", counter.clone())]);
    let (events, outcome) = collect(agent.start(prompt("go")));
    let result = outcome.unwrap();
    assert_eq!(counter.load(Ordering::SeqCst), 0, "no function ran");
    let results = transcript_results(&result.messages);
    assert_eq!(results.len(), 2);
    for result in &results {
        assert!(result.is_error);
        assert!(result.text().contains("token limit"), "{}", result.text());
        assert!(result.text().contains("Re-issue"), "{}", result.text());
    }
    assert_eq!(
        tool_trace(&events),
        ["start:0", "end:0", "start:1", "end:1"]
    );
    assert_eq!(result.final_message.text(), "done");
}

#[test]
fn a_cpu_bound_tool_does_not_stall_other_runs() {
    // One run's tool blocks its thread until another run has completed a whole turn. On an
    // actor thread this would deadlock; on the blocking pool it cannot.
    let other_done = Arc::new(std::sync::Barrier::new(2));
    let blocker = {
        let other_done = Arc::clone(&other_done);
        Tool::blocking(
            "block",
            "",
            json!({"type": "object"}),
            move |_ctx, _args| {
                other_done.wait();
                Ok(ToolResult::text("unblocked"))
            },
        )
    };
    let agent = agent_with(script(vec![call("1", "block", "{}")]), vec![blocker]);
    let quick = agent_with(
        script(vec![call("1", "echo", r#"{"text":"x"}"#)]),
        vec![echo_tool()],
    );
    let blocked = agent.start(prompt("block"));
    let quick_result = quick.start(prompt("quick")).wait();
    assert!(quick_result.is_ok());
    other_done.wait();
    assert!(blocked.wait().is_ok());
}
