//! Property tests of the validation pipeline: arbitrary batches of IDs (duplicated, empty),
//! names (blank, unknown), argument strings (invalid JSON, non-objects, schema failures) and tool
//! behaviours (ok, error, panic, invalid result, invalid update, terminate, slow), run in
//! parallel or in sequence. Whatever the batch: one start and one end event per call, one
//! result per call at its source position with the error it should have, the terminate rule,
//! and nothing escapes (the run ends normally, no panic reaches the caller).

use crate::support;

use std::sync::Arc;

use golato::agent::{self, Agent, Event};
use golato::generator::Scripted;
use golato::message::{AssistantMessage, Content, Message, ToolCall};
use golato::tool::{Execution, Tool, ToolResult};
use proptest::prelude::*;
use serde_json::json;
use support::*;

/// What a registered tool does when called with valid arguments.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Behaviour {
    Ok,
    Error,
    Panic,
    InvalidResult,
    InvalidUpdate,
    Terminate,
    Slow,
}

const BEHAVIOURS: [Behaviour; 7] = [
    Behaviour::Ok,
    Behaviour::Error,
    Behaviour::Panic,
    Behaviour::InvalidResult,
    Behaviour::InvalidUpdate,
    Behaviour::Terminate,
    Behaviour::Slow,
];

fn name_of(behaviour: Behaviour) -> String {
    format!("{behaviour:?}").to_lowercase()
}

fn bad_image() -> Content {
    Content::image("image/bmp", "AAAA")
}

fn tool(behaviour: Behaviour) -> Tool {
    Tool::new(
        name_of(behaviour),
        "A tool of the property test.",
        json!({"type": "object", "properties": {"n": {"type": "integer"}}}),
        move |ctx, _args| async move {
            match behaviour {
                Behaviour::Ok => Ok(ToolResult::text("ok")),
                Behaviour::Error => Err("it failed".into()),
                Behaviour::Panic => panic!("the tool panicked on purpose"),
                Behaviour::InvalidResult => Ok(ToolResult {
                    content: vec![bad_image()],
                    ..ToolResult::text("")
                }),
                Behaviour::InvalidUpdate => {
                    ctx.update(ToolResult {
                        content: vec![bad_image()],
                        ..ToolResult::text("")
                    });
                    Ok(ToolResult::text("returned after an invalid update"))
                }
                Behaviour::Terminate => Ok(ToolResult::text("stop").with_terminate()),
                Behaviour::Slow => {
                    for _ in 0..50 {
                        tokio::task::yield_now().await;
                    }
                    Ok(ToolResult::text("slow"))
                }
            }
        },
    )
}

/// One call of the batch, before IDs are assigned.
#[derive(Debug, Clone)]
enum Target {
    Registered(Behaviour),
    Unknown,
    Blank,
}

#[derive(Debug, Clone)]
enum Arguments {
    Valid,
    SchemaFailure,
    NotJson,
    NotAnObject,
}

#[derive(Debug, Clone)]
struct Planned {
    /// An index into a small pool of IDs (so duplicates happen), or `None` for an empty ID.
    id: Option<u8>,
    target: Target,
    arguments: Arguments,
}

fn planned() -> impl Strategy<Value = Planned> {
    let id = prop_oneof![1 => Just(None), 6 => (0u8..12).prop_map(Some)];
    let target = prop_oneof![
        8 => prop::sample::select(BEHAVIOURS.to_vec()).prop_map(Target::Registered),
        1 => Just(Target::Unknown),
        1 => Just(Target::Blank),
    ];
    let arguments = prop_oneof![
        6 => Just(Arguments::Valid),
        1 => Just(Arguments::SchemaFailure),
        1 => Just(Arguments::NotJson),
        1 => Just(Arguments::NotAnObject),
    ];
    (id, target, arguments).prop_map(|(id, target, arguments)| Planned {
        id,
        target,
        arguments,
    })
}

fn to_call(plan: &Planned) -> ToolCall {
    let id = plan.id.map_or_else(String::new, |id| format!("id-{id}"));
    let name = match &plan.target {
        Target::Registered(behaviour) => name_of(*behaviour),
        Target::Unknown => "no_such_tool".to_owned(),
        Target::Blank => "  ".to_owned(),
    };
    let arguments = match plan.arguments {
        Arguments::Valid => r#"{"n": 1}"#,
        Arguments::SchemaFailure => r#"{"n": "one"}"#,
        Arguments::NotJson => r#"{"n": "#,
        Arguments::NotAnObject => "[1, 2]",
    };
    ToolCall::new(id, name, arguments)
}

/// Whether call `index` of `plans` should end in an error result, and whether its function
/// should have run to a terminating result.
fn expected(plans: &[Planned], index: usize) -> (bool, bool) {
    let plan = &plans[index];
    let duplicated = plan
        .id
        .is_some_and(|id| plans.iter().filter(|other| other.id == Some(id)).count() > 1);
    let invalid = plan.id.is_none()
        || duplicated
        || !matches!(plan.target, Target::Registered(_))
        || !matches!(plan.arguments, Arguments::Valid);
    if invalid {
        return (true, false);
    }
    match plan.target {
        Target::Registered(Behaviour::Ok | Behaviour::Slow) => (false, false),
        Target::Registered(Behaviour::Terminate) => (false, true),
        _ => (true, false),
    }
}

fn check(plans: &[Planned], sequential: bool) -> Result<(), TestCaseError> {
    let calls: Vec<ToolCall> = plans.iter().map(to_call).collect();
    let agent = Agent::new(agent::Config {
        generator: Some(Arc::new(Scripted::new([
            AssistantMessage::with_tool_calls(calls.clone()),
            AssistantMessage::with_text("done"),
        ]))),
        tools: BEHAVIOURS
            .iter()
            .map(|behaviour| tool(*behaviour))
            .collect(),
        tool_execution: if sequential {
            Execution::Sequential
        } else {
            Execution::Parallel
        },
        ..Default::default()
    })
    .unwrap();
    let (events, outcome) = collect(agent.start(prompt("go")));
    let result = outcome.map_err(|error| TestCaseError::fail(format!("run failed: {error}")))?;

    // One start and one end per call; an end never before its start.
    for index in 0..calls.len() {
        let position = |wanted: fn(&Event, usize) -> bool| {
            events
                .iter()
                .enumerate()
                .filter(|(_, event)| wanted(event, index))
                .map(|(at, _)| at)
                .collect::<Vec<_>>()
        };
        let starts = position(|e, i| matches!(e, Event::ToolExecutionStart(s) if s.index == i));
        let ends = position(|e, i| matches!(e, Event::ToolExecutionEnd(s) if s.index == i));
        prop_assert_eq!(starts.len(), 1, "starts of call {}", index);
        prop_assert_eq!(ends.len(), 1, "ends of call {}", index);
        prop_assert!(
            starts[0] < ends[0],
            "call {} ended before it started",
            index
        );
    }

    // One result per call, at its source position, matching its end event.
    let results = transcript_results(&result.messages);
    prop_assert_eq!(results.len(), calls.len());
    let ends = end_results(&events);
    let mut all_terminate = !calls.is_empty();
    for (index, (call, recorded)) in calls.iter().zip(&results).enumerate() {
        prop_assert_eq!(
            &recorded.tool_call_id,
            &call.id,
            "result {} out of place",
            index
        );
        prop_assert!(
            ends.contains(recorded),
            "result {} is not its end event's",
            index
        );
        let (is_error, terminates) = expected(plans, index);
        prop_assert_eq!(
            recorded.is_error,
            is_error,
            "call {} ({:?}): {}",
            index,
            plans[index],
            recorded.text()
        );
        all_terminate &= terminates;
    }

    // The terminate rule: the run stops after the batch only if every call terminated.
    let asked_again =
        matches!(result.messages.last(), Some(Message::Assistant(m)) if m.text() == "done");
    prop_assert_eq!(asked_again, !all_terminate, "terminate rule");
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn every_call_of_any_batch_gets_one_start_one_end_and_its_result_in_place(
        plans in prop::collection::vec(planned(), 1..12),
        sequential in any::<bool>(),
    ) {
        check(&plans, sequential)?;
    }
}
