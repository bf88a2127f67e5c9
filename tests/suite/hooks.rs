//! Hooks around tool calls: block, rewrite, replace, and failing hooks, each seen in the
//! transcript and in `ToolHook` events.

use crate::support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use golato::agent::{self, Agent, Event};
use golato::hook::{self, AfterToolCall, BeforeToolCall, Hook, HookAction};
use golato::message::Content;
use golato::tool::{Tool, ToolResult};
use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use support::*;

fn agent_with_hooks(
    calls: Vec<golato::message::ToolCall>,
    tools: Vec<Tool>,
    hooks: Vec<Arc<dyn Hook>>,
) -> Agent {
    Agent::new(agent::Config {
        generator: Some(Arc::new(script(calls))),
        tools,
        hooks,
        ..Default::default()
    })
    .unwrap()
}

/// `echo`, also recording the arguments its function got.
fn recording_echo(seen: Arc<Mutex<Vec<Value>>>) -> Tool {
    Tool::new(
        "echo",
        "Echoes text.",
        object_schema(json!({"text": {"type": "string"}}), &["text"]),
        move |_ctx, args| {
            let seen = Arc::clone(&seen);
            async move {
                seen.lock().unwrap().push(args.clone());
                Ok(ToolResult::text(args["text"].as_str().unwrap_or_default()))
            }
        },
    )
}

/// The hook actions in event order, by call index.
fn hook_actions(events: &[Event]) -> Vec<(usize, HookAction)> {
    events
        .iter()
        .filter_map(|event| match event {
            Event::ToolHook(hook) => Some((hook.index, hook.action.clone())),
            _ => None,
        })
        .collect()
}

fn texts(run_result: &Result<agent::RunResult, agent::Error>) -> Vec<(String, bool)> {
    transcript_results(&run_result.as_ref().unwrap().messages)
        .iter()
        .map(|result| (result.text(), result.is_error))
        .collect()
}

#[test]
fn a_before_hook_blocks_a_call_with_its_reason_and_the_function_never_runs() {
    let ran = Arc::new(AtomicUsize::new(0));
    let guard = hook::before(|ctx| async move {
        if ctx.call.name == "danger" {
            return Ok(BeforeToolCall::Block("danger is not allowed here".into()));
        }
        Ok(BeforeToolCall::Run)
    });
    let seen = Arc::new(Mutex::new(Vec::new()));
    let agent = agent_with_hooks(
        vec![
            call("1", "danger", "{}"),
            call("2", "echo", r#"{"text":"fine"}"#),
        ],
        vec![
            counting_tool("danger", Arc::clone(&ran)),
            recording_echo(seen),
        ],
        vec![guard],
    );
    let (events, outcome) = collect(agent.start(prompt("go")));
    assert_eq!(ran.load(Ordering::SeqCst), 0);
    assert_eq!(
        texts(&outcome),
        [
            ("danger is not allowed here".to_owned(), true),
            ("fine".to_owned(), false)
        ]
    );
    assert_eq!(
        hook_actions(&events),
        [(
            0,
            HookAction::Blocked {
                reason: "danger is not allowed here".into()
            }
        )]
    );
    // The blocked call still has one start before its hook event and one end after it.
    let trace: Vec<String> = events
        .iter()
        .filter_map(|event| match event {
            Event::ToolExecutionStart(e) if e.index == 0 => Some("start".to_owned()),
            Event::ToolHook(e) if e.index == 0 => Some("hook".to_owned()),
            Event::ToolExecutionEnd(e) if e.index == 0 => Some("end".to_owned()),
            _ => None,
        })
        .collect();
    assert_eq!(trace, ["start", "hook", "end"]);
}

#[test]
fn hooks_run_in_order_and_rewritten_arguments_are_checked_again() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let shout = hook::before(|ctx| async move {
        let text = ctx.arguments["text"]
            .as_str()
            .unwrap_or_default()
            .to_uppercase();
        Ok(BeforeToolCall::Rewrite(json!({"text": text})))
    });
    let observed = Arc::new(Mutex::new(Vec::new()));
    let second = {
        let observed = Arc::clone(&observed);
        hook::before(move |ctx| {
            let observed = Arc::clone(&observed);
            async move {
                // The second hook sees the first one's rewrite.
                observed.lock().unwrap().push(ctx.arguments.clone());
                if ctx.arguments["text"] == "BREAK" {
                    return Ok(BeforeToolCall::Rewrite(json!({"text": 5})));
                }
                Ok(BeforeToolCall::Run)
            }
        })
    };
    let agent = agent_with_hooks(
        vec![
            call("1", "echo", r#"{"text":"hello"}"#),
            call("2", "echo", r#"{"text":"break"}"#),
        ],
        vec![recording_echo(Arc::clone(&seen))],
        vec![shout, second],
    );
    let (events, outcome) = collect(agent.start(prompt("go")));
    let results = texts(&outcome);
    assert_eq!(results[0], ("HELLO".to_owned(), false));
    assert!(results[1].1);
    assert!(
        results[1]
            .0
            .contains("rewrote the arguments of echo into ones the tool rejects"),
        "{}",
        results[1].0
    );
    // Only the valid rewrite reached the function.
    assert_eq!(*seen.lock().unwrap(), [json!({"text": "HELLO"})]);
    let mut observed = observed.lock().unwrap().clone();
    observed.sort_by_key(Value::to_string);
    assert_eq!(
        observed,
        [json!({"text": "BREAK"}), json!({"text": "HELLO"})]
    );
    let mut actions = hook_actions(&events);
    actions.sort_by_key(|(index, _)| *index);
    assert_eq!(
        actions[0],
        (
            0,
            HookAction::Rewrote {
                arguments: json!({"text": "HELLO"})
            }
        )
    );
    assert!(matches!(&actions[1], (1, HookAction::Failed { .. })));
    // The transcript keeps the call as the model sent it.
    let assistant = outcome.unwrap().messages[1].clone();
    let golato::message::Message::Assistant(assistant) = assistant else {
        panic!("not an assistant message")
    };
    assert_eq!(assistant.tool_calls[0].arguments, r#"{"text":"hello"}"#);
}

#[test]
fn an_after_hook_replaces_results_and_an_invalid_replacement_is_an_error() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let redact = hook::after(|ctx, result| async move {
        if ctx.arguments["text"] == "secret" && result.content == vec![Content::text("secret")] {
            return Ok(AfterToolCall::Replace(ToolResult::text("[redacted]")));
        }
        if result.content == vec![Content::text("image")] {
            let broken = ToolResult {
                content: vec![Content::image("image/bmp", "AAAA")],
                ..ToolResult::default()
            };
            return Ok(AfterToolCall::Replace(broken));
        }
        Ok(AfterToolCall::Keep)
    });
    let agent = agent_with_hooks(
        vec![
            call("1", "echo", r#"{"text":"secret"}"#),
            call("2", "echo", r#"{"text":"image"}"#),
            call("3", "echo", r#"{"text":"plain"}"#),
        ],
        vec![recording_echo(seen)],
        vec![redact],
    );
    let (events, outcome) = collect(agent.start(prompt("go")));
    let results = texts(&outcome);
    assert_eq!(results[0], ("[redacted]".to_owned(), false));
    assert!(results[1].1);
    assert!(results[1]
        .0
        .contains("replaced the result of echo with an invalid one"));
    assert_eq!(results[2], ("plain".to_owned(), false));
    // The end event carries the replaced result, exactly as recorded.
    let ends = end_results(&events);
    let first = ends.iter().find(|r| r.tool_call_id == "1").unwrap();
    assert_eq!(first.text(), "[redacted]");
    let mut actions = hook_actions(&events);
    actions.sort_by_key(|(index, _)| *index);
    assert_eq!(actions[0], (0, HookAction::ReplacedResult));
    assert!(matches!(&actions[1], (1, HookAction::Failed { .. })));
    assert_eq!(actions.len(), 2);
}

#[test]
fn a_hook_that_fails_or_panics_fails_only_its_call() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let flaky = hook::before(|ctx| async move {
        match ctx.arguments["text"].as_str() {
            Some("error") => Err("the policy service is down".into()),
            Some("panic") => panic!("hook bug"),
            _ => Ok(BeforeToolCall::Run),
        }
    });
    let agent = agent_with_hooks(
        vec![
            call("1", "echo", r#"{"text":"error"}"#),
            call("2", "echo", r#"{"text":"panic"}"#),
            call("3", "echo", r#"{"text":"ok"}"#),
        ],
        vec![recording_echo(Arc::clone(&seen))],
        vec![flaky],
    );
    let (_events, outcome) = collect(agent.start(prompt("go")));
    let results = texts(&outcome);
    assert!(results[0].1 && results[0].0.contains("the policy service is down"));
    assert!(
        results[1].1 && results[1].0.contains("panicked: hook bug"),
        "{}",
        results[1].0
    );
    assert_eq!(results[2], ("ok".to_owned(), false));
    assert_eq!(*seen.lock().unwrap(), [json!({"text": "ok"})]);
    // The run went on to its final answer.
    assert_eq!(outcome.unwrap().final_message.text(), "done");
}

#[test]
fn a_hook_sees_the_run_and_the_call() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let contexts = Arc::new(Mutex::new(Vec::new()));
    let watch = {
        let contexts = Arc::clone(&contexts);
        hook::before(move |ctx| {
            let contexts = Arc::clone(&contexts);
            async move {
                contexts.lock().unwrap().push((
                    ctx.run_id,
                    ctx.index,
                    ctx.call.id.clone(),
                    ctx.cancel.is_cancelled(),
                ));
                Ok(BeforeToolCall::Run)
            }
        })
    };
    let agent = agent_with_hooks(
        vec![call("c-7", "echo", r#"{"text":"x"}"#)],
        vec![recording_echo(seen)],
        vec![watch],
    );
    let run = agent.start(prompt("go"));
    let id = run.id();
    run.wait().unwrap();
    assert_eq!(
        *contexts.lock().unwrap(),
        [(id, 0, "c-7".to_owned(), false)]
    );
}

/// Answers every question as told: allow with other arguments, or refuse with a reason.
struct Answering(golato::policy::Approval);

impl golato::policy::Approver for Answering {
    fn default_decision(&self, _ctx: &golato::hook::HookContext) -> golato::policy::Decision {
        golato::policy::Decision::Ask
    }

    fn ask(
        &self,
        _ctx: golato::hook::HookContext,
        _why: String,
    ) -> futures::future::BoxFuture<'static, Result<golato::policy::Approval, String>> {
        let approval = self.0.clone();
        Box::pin(async move { Ok(approval) })
    }
}

#[test]
fn a_person_can_change_a_call_before_it_runs_or_refuse_it_saying_why() {
    use golato::policy::{Approval, CallPolicy};
    let policy_hook = |approval: Approval| {
        let (_session, watched) =
            tokio::sync::watch::channel(golato::policy::HookSession::default());
        Arc::new(CallPolicy::default()).hook(Some(Arc::new(Answering(approval))), watched)
    };
    // Changed: the tool runs with the person's arguments, and the model reads that it did.
    let seen = Arc::new(Mutex::new(Vec::new()));
    let agent = agent_with_hooks(
        vec![call("1", "echo", r#"{"text":"rm -rf build"}"#)],
        vec![recording_echo(Arc::clone(&seen))],
        vec![policy_hook(Approval::AllowWith(
            json!({"text": "rm -rf build/cache"}),
        ))],
    );
    let (_, outcome) = collect(agent.start(prompt("go")));
    assert_eq!(
        *seen.lock().unwrap(),
        [json!({"text": "rm -rf build/cache"})]
    );
    let (text, is_error) = texts(&outcome).remove(0);
    assert!(!is_error);
    assert!(
        text.starts_with("[The user changed this call before it ran; it ran with the arguments {\"text\":\"rm -rf build/cache\"}]"),
        "{text}"
    );
    assert!(text.ends_with("rm -rf build/cache"), "{text}");
    // Refused with a reason: nothing runs, and the model reads the person's words.
    let seen = Arc::new(Mutex::new(Vec::new()));
    let agent = agent_with_hooks(
        vec![call("1", "echo", r#"{"text":"x"}"#)],
        vec![recording_echo(Arc::clone(&seen))],
        vec![policy_hook(Approval::Refuse {
            reason: Some("use the staging database".into()),
        })],
    );
    let (_, outcome) = collect(agent.start(prompt("go")));
    assert!(seen.lock().unwrap().is_empty());
    assert_eq!(
        texts(&outcome),
        [(
            "The user did not allow this echo call; it was not run. They said why: use the staging database".to_owned(),
            true
        )]
    );
}
