//! Building an agent: required generator, tool checks, scripts loaded from files.

use crate::support;

use std::io::Write;
use std::sync::Arc;

use golato::agent::{self, Agent, Error};
use golato::generator::{self, Scripted};
use golato::message::StopReason;
use golato::tool::{self, Tool, ToolResult};
use pretty_assertions::assert_eq;
use serde_json::json;
use support::*;

fn tool_named(name: &str, schema: serde_json::Value) -> Tool {
    Tool::new(name, "", schema, |_ctx, _args| async {
        Ok(ToolResult::text("ok"))
    })
}

fn build(tools: Vec<Tool>) -> Result<Agent, Error> {
    Agent::new(agent::Config {
        generator: Some(Arc::new(Scripted::new([]))),
        tools,
        ..Default::default()
    })
}

#[test]
fn an_agent_needs_a_generator() {
    let error = Agent::new(agent::Config::default()).unwrap_err();
    assert!(matches!(error, Error::NoGenerator));
    assert!(error.to_string().contains("agent::Config::generator"));
}

#[test]
fn blank_and_duplicate_tool_names_are_rejected() {
    let error = build(vec![
        echo_tool(),
        tool_named("  ", json!({"type": "object"})),
    ])
    .unwrap_err();
    assert!(
        matches!(
            error,
            Error::InvalidTool(tool::Error::BlankName { index: 1 })
        ),
        "{error:?}"
    );
    let error = build(vec![echo_tool(), echo_tool()]).unwrap_err();
    assert_eq!(
        error.to_string(),
        "two tools are named \"echo\"; tool names must be unique, so rename or drop one"
    );
}

#[test]
fn schemas_must_compile_and_describe_an_object() {
    let error = tool::validate(&[tool_named("list", json!({"type": "array"}))]).unwrap_err();
    assert!(
        matches!(error, tool::Error::SchemaRootNotObject { .. }),
        "{error:?}"
    );
    assert!(error.to_string().contains("\"array\""));
    let error = tool::validate(&[tool_named(
        "broken",
        json!({"type": "object", "properties": {"n": {"type": "integr"}}}),
    )])
    .unwrap_err();
    assert!(
        matches!(error, tool::Error::InvalidSchema { .. }),
        "{error:?}"
    );
    assert!(error.to_string().contains("broken"));
    assert!(build(vec![tool_named(
        "broken",
        json!({"type": "object", "minProperties": "two"})
    )])
    .is_err());
}

#[test]
fn valid_tools_pass_and_are_offered_to_the_model_in_order() {
    let agent = build(vec![
        echo_tool(),
        tool_named("second", json!({"type": "object"})),
    ])
    .unwrap();
    let names: Vec<&str> = agent
        .tool_definitions()
        .iter()
        .map(|d| d.name.as_str())
        .collect();
    assert_eq!(names, ["echo", "second"]);
}

fn write_temp(contents: &str, suffix: &str) -> tempfile::NamedTempFile {
    let mut file = tempfile::Builder::new().suffix(suffix).tempfile().unwrap();
    file.write_all(contents.as_bytes()).unwrap();
    file
}

#[test]
fn scripts_load_from_jsonl_and_json_files() {
    let jsonl = write_temp(
        concat!(
            r#"{"tool_calls": [{"id": "c1", "name": "echo", "arguments": {"text": "from file"}}]}"#,
            "\n\n",
            r#"{"text": "done", "usage": {"input_tokens": 3, "output_tokens": 2}}"#,
            "\n"
        ),
        ".jsonl",
    );
    let script = Scripted::from_file(jsonl.path()).unwrap();
    assert_eq!(script.len(), 2);
    let agent = agent_with(script, vec![echo_tool()]);
    let result = agent.start(prompt("go")).wait().unwrap();
    assert_eq!(transcript_results(&result.messages)[0].text(), "from file");
    assert_eq!(result.usage.output_tokens, 2);

    let json = write_temp(
        r#"[{"tool_calls": [{"id": "c1", "name": "echo", "arguments": "{\"text\": \"raw\"}"}], "stop_reason": "length"}, {"content": [{"type": "text", "text": "ok"}]}]"#,
        ".json",
    );
    let script = Scripted::from_file(json.path()).unwrap();
    let agent = agent_with(script, vec![echo_tool()]);
    let result = agent.start(prompt("go")).wait().unwrap();
    match &result.messages[1] {
        golato::message::Message::Assistant(message) => {
            assert_eq!(message.stop_reason, StopReason::Length);
            assert_eq!(message.tool_calls[0].arguments, r#"{"text": "raw"}"#);
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn bad_scripts_name_the_entry_and_what_is_wrong() {
    let error = Scripted::from_json("{\"text\": \"fine\"}\n{\"txet\": \"typo\"}\n").unwrap_err();
    let text = error.to_string();
    assert!(text.contains("entry 2"), "{text}");
    assert!(text.contains("txet"), "{text}");
    let error = Scripted::from_json("{\"text\": \"fine\"}\nnot json\n").unwrap_err();
    assert!(error.to_string().contains("entry 2"));
    let error = Scripted::from_file("/definitely/not/here.jsonl").unwrap_err();
    assert!(matches!(error, generator::Error::ReadScript { .. }));
    assert!(error.to_string().contains("/definitely/not/here.jsonl"));
}

#[test]
fn a_script_that_runs_out_ends_the_run_with_a_clear_error() {
    let agent = agent_with(Scripted::new([]), vec![]);
    let error = agent.start(prompt("go")).wait().unwrap_err();
    assert!(
        error
            .to_string()
            .contains("the script has 0 assistant message(s)"),
        "{error}"
    );
    assert_eq!(error.messages().unwrap().len(), 1);
}
