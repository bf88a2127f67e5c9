//! Structured output: the final answer as JSON valid against a schema, one more turn for an
//! answer that is not, then a clear error; the schema asked of each provider in its own terms.

use crate::support;

use std::sync::Arc;

use golato::agent::{self, Agent};
use golato::generator::Scripted;
use golato::message::Message;
use serde_json::json;
use support::*;

#[derive(schemars::JsonSchema, serde::Deserialize, Debug, PartialEq)]
struct Verdict {
    passed: bool,
    reasons: Vec<String>,
}

fn agent(answers: &[&str]) -> Agent {
    let entries: Vec<serde_json::Value> =
        answers.iter().map(|text| json!({"text": text})).collect();
    Agent::new(agent::Config {
        generator: Some(Arc::new(
            Scripted::from_json(&serde_json::Value::from(entries).to_string()).unwrap(),
        )),
        output_schema: Some(agent::output_schema::<Verdict>()),
        ..Default::default()
    })
    .unwrap()
}

#[test]
fn a_valid_answer_is_the_runs_output() {
    let result = agent(&["```json\n{\"passed\": true, \"reasons\": [\"green\"]}\n```"])
        .start(prompt("check"))
        .wait()
        .unwrap();
    let verdict: Verdict = serde_json::from_value(result.output.unwrap()).unwrap();
    assert_eq!(
        verdict,
        Verdict {
            passed: true,
            reasons: vec!["green".into()]
        }
    );
    assert_eq!(result.turns, 1);
}

#[test]
fn an_invalid_answer_gets_one_more_turn_saying_what_was_wrong() {
    let result = agent(&["It passed!", r#"{"passed": true, "reasons": []}"#])
        .start(prompt("check"))
        .wait()
        .unwrap();
    assert_eq!(result.turns, 2);
    assert_eq!(result.output.unwrap()["passed"], true);
    let correction = result
        .messages
        .iter()
        .filter_map(|message| match message {
            Message::User(user) => Some(user.text()),
            _ => None,
        })
        .nth(1)
        .unwrap();
    assert!(correction.contains("not JSON"), "{correction}");
}

#[test]
fn two_invalid_answers_fail_the_run_with_the_reason_and_the_transcript() {
    let error = agent(&[r#"{"passed": "yes"}"#, r#"{"passed": 1, "reasons": []}"#])
        .start(prompt("check"))
        .wait()
        .unwrap_err();
    let agent::Error::InvalidOutput { reason, messages } = &error else {
        panic!("{error}");
    };
    assert!(reason.contains("/passed"), "{reason}");
    assert_eq!(
        messages
            .iter()
            .filter(|message| matches!(message, Message::Assistant(_)))
            .count(),
        2
    );
}

#[test]
fn a_schema_that_does_not_compile_is_refused_by_agent_new() {
    let error = Agent::new(agent::Config {
        generator: Some(Arc::new(Scripted::from_json("[]").unwrap())),
        output_schema: Some(json!({"type": 12})),
        ..Default::default()
    })
    .unwrap_err();
    assert!(
        matches!(error, agent::Error::InvalidOutputSchema { .. }),
        "{error}"
    );
}
