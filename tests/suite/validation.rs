//! The validation sequence (BEHAVIOUR.md §2): each failure becomes an error result at the call's
//! source position, with a start and an end event, and the run continues.

use crate::support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use golato::message::Content;
use golato::tool::{Tool, ToolResult};
use pretty_assertions::assert_eq;
use serde_json::json;
use support::*;

/// Runs one batch of `calls` against `tools` and returns the recorded results and the tool
/// event trace. The script's second entry ends the run, so a passing run proves the loop
/// continued after the errors.
fn run_batch(
    calls: Vec<golato::message::ToolCall>,
    tools: Vec<Tool>,
) -> (Vec<golato::message::ToolResultMessage>, Vec<String>) {
    let agent = agent_with(script(calls), tools);
    let (events, outcome) = collect(agent.start(prompt("go")));
    let result = outcome.expect("the run continues past tool errors");
    assert_eq!(result.final_message.text(), "done");
    let results = transcript_results(&result.messages);
    assert_eq!(
        end_results(&events).len(),
        results.len(),
        "one end event per call"
    );
    (results, tool_trace(&events))
}

fn assert_error_containing(result: &golato::message::ToolResultMessage, needles: &[&str]) {
    assert!(result.is_error, "expected an error result, got {result:?}");
    let text = result.text();
    for needle in needles {
        assert!(text.contains(needle), "{text:?} should mention {needle:?}");
    }
}

#[test]
fn a_valid_call_runs_and_its_result_is_recorded() {
    let (results, trace) = run_batch(
        vec![call("1", "echo", r#"{"text":"hi"}"#)],
        vec![echo_tool()],
    );
    assert_eq!(results.len(), 1);
    assert!(!results[0].is_error);
    assert_eq!(results[0].text(), "hi");
    assert_eq!(results[0].tool_call_id, "1");
    assert_eq!(results[0].tool_name, "echo");
    assert_eq!(trace, ["start:0", "end:0"]);
}

#[test]
fn empty_id_is_an_error_and_the_function_does_not_run() {
    let counter = Arc::new(AtomicUsize::new(0));
    let (results, trace) = run_batch(
        vec![call("", "count", "{}")],
        vec![counting_tool("count", counter.clone())],
    );
    assert_error_containing(&results[0], &["no ID"]);
    assert_eq!(counter.load(Ordering::SeqCst), 0);
    assert_eq!(trace, ["start:0", "end:0"]);
}

#[test]
fn a_duplicated_id_is_found_in_a_large_batch_too() {
    let counter = Arc::new(AtomicUsize::new(0));
    let mut calls: Vec<_> = (0..40)
        .map(|i| call(&format!("c{i}"), "count", "{}"))
        .collect();
    calls.push(call("c7", "count", "{}"));
    let (results, _) = run_batch(calls, vec![counting_tool("count", counter.clone())]);
    assert_error_containing(&results[7], &["\"c7\"", "appears 2 times"]);
    assert_error_containing(&results[40], &["\"c7\"", "appears 2 times"]);
    assert_eq!(counter.load(Ordering::SeqCst), 39);
}

#[test]
fn a_duplicated_id_fails_every_call_that_carries_it() {
    let counter = Arc::new(AtomicUsize::new(0));
    let (results, _) = run_batch(
        vec![
            call("same", "count", "{}"),
            call("other", "count", "{}"),
            call("same", "count", "{}"),
        ],
        vec![counting_tool("count", counter.clone())],
    );
    assert_error_containing(&results[0], &["\"same\"", "appears 2 times"]);
    assert!(!results[1].is_error);
    assert_error_containing(&results[2], &["\"same\"", "appears 2 times"]);
    assert_eq!(
        counter.load(Ordering::SeqCst),
        1,
        "only the unique call ran"
    );
}

#[test]
fn blank_name_is_an_error() {
    let (results, _) = run_batch(vec![call("1", "   ", "{}")], vec![echo_tool()]);
    assert_error_containing(&results[0], &["blank tool name", "echo"]);
}

#[test]
fn unknown_tool_is_an_error_listing_the_available_tools() {
    let (results, _) = run_batch(
        vec![call("1", "delete_everything", "{}")],
        vec![echo_tool()],
    );
    assert_error_containing(&results[0], &["\"delete_everything\" not found", "echo"]);
}

#[test]
fn arguments_that_are_not_a_json_object_are_errors() {
    let cases = [
        (r#""just a string""#, "a string"),
        ("[1, 2]", "an array"),
        ("42", "a number"),
        ("null", "null"),
        ("true", "a boolean"),
    ];
    for (arguments, kind) in cases {
        let (results, _) = run_batch(vec![call("1", "echo", arguments)], vec![echo_tool()]);
        assert_error_containing(&results[0], &["must be a JSON object", kind, arguments]);
    }
}

#[test]
fn broken_or_empty_json_is_an_error() {
    for arguments in [r#"{"text": "unterminated"#, ""] {
        let (results, _) = run_batch(vec![call("1", "echo", arguments)], vec![echo_tool()]);
        assert_error_containing(&results[0], &["not valid JSON"]);
    }
}

#[test]
fn schema_violations_name_the_path_and_the_expectation_without_coercion() {
    let tool = Tool::new(
        "order",
        "Orders items.",
        json!({
            "type": "object",
            "properties": {
                "quantity": {"type": "integer"},
                "items": {"type": "array", "items": {"type": "object", "properties": {"sku": {"type": "string"}}, "required": ["sku"]}}
            },
            "required": ["quantity", "items"]
        }),
        |_ctx, _args| async { Ok(ToolResult::text("ordered")) },
    );
    let (results, _) = run_batch(
        vec![call(
            "1",
            "order",
            r#"{"quantity": "5", "items": [{"sku": 7}]}"#,
        )],
        vec![tool],
    );
    assert_error_containing(
        &results[0],
        &[
            "/quantity",
            "\"integer\"",
            "/items/0/sku",
            "\"string\"",
            "Received arguments",
            r#""quantity":"5""#,
        ],
    );
}

#[test]
fn a_function_error_becomes_an_error_result() {
    let tool = Tool::new(
        "fail",
        "Fails.",
        json!({"type": "object"}),
        |_ctx, _args| async { Err("customer database is unreachable".into()) },
    );
    let (results, _) = run_batch(vec![call("1", "fail", "{}")], vec![tool]);
    assert_error_containing(&results[0], &["customer database is unreachable"]);
}

#[test]
fn a_tool_may_return_an_error_result_itself() {
    let tool = Tool::new(
        "soft",
        "Soft failure.",
        json!({"type": "object"}),
        |_ctx, _args| async { Ok(ToolResult::error("not allowed")) },
    );
    let (results, _) = run_batch(vec![call("1", "soft", "{}")], vec![tool]);
    assert_error_containing(&results[0], &["not allowed"]);
}

#[test]
fn a_panic_becomes_an_error_result_naming_the_tool_and_the_message() {
    let tool = Tool::new(
        "boom",
        "Panics.",
        json!({"type": "object"}),
        |_ctx, _args| async {
            if true {
                panic!("the flux capacitor overheated");
            }
            Ok(ToolResult::text("unreachable"))
        },
    );
    let blocking = Tool::blocking(
        "boom_blocking",
        "Panics on the blocking pool.",
        json!({"type": "object"}),
        |_ctx, _args| panic!("blocking panic {}", 7),
    );
    // A function that panics while making its future, before any of it runs.
    let early = Tool::new(
        "boom_early",
        "Panics before its future exists.",
        json!({"type": "object"}),
        |_ctx, _args| {
            if true {
                panic!("no future for you");
            }
            async { Ok(ToolResult::text("unreachable")) }
        },
    );
    let (results, _) = run_batch(
        vec![
            call("1", "boom", "{}"),
            call("2", "boom_blocking", "{}"),
            call("3", "echo", r#"{"text":"still here"}"#),
            call("4", "boom_early", "{}"),
        ],
        vec![tool, blocking, echo_tool(), early],
    );
    assert_error_containing(
        &results[3],
        &["boom_early", "panicked", "no future for you"],
    );
    assert_error_containing(
        &results[0],
        &["boom", "panicked", "the flux capacitor overheated"],
    );
    assert_error_containing(
        &results[1],
        &["boom_blocking", "panicked", "blocking panic 7"],
    );
    assert_eq!(results[2].text(), "still here");
}

#[test]
fn an_invalid_final_result_becomes_an_error_result() {
    let bad_mime = Tool::new(
        "bad_mime",
        "",
        json!({"type": "object"}),
        |_ctx, _args| async {
            Ok(ToolResult {
                content: vec![Content::image("image/bmp", "AAAA")],
                ..Default::default()
            })
        },
    );
    let bad_data = Tool::new(
        "bad_data",
        "",
        json!({"type": "object"}),
        |_ctx, _args| async {
            Ok(ToolResult {
                content: vec![Content::image("image/png", "not base64!")],
                ..Default::default()
            })
        },
    );
    let empty_data = Tool::new(
        "empty_data",
        "",
        json!({"type": "object"}),
        |_ctx, _args| async {
            Ok(ToolResult {
                content: vec![Content::image("image/png", "")],
                ..Default::default()
            })
        },
    );
    let empty_content = Tool::new(
        "empty_content",
        "",
        json!({"type": "object"}),
        |_ctx, _args| async { Ok(ToolResult::default()) },
    );
    let (results, _) = run_batch(
        vec![
            call("1", "bad_mime", "{}"),
            call("2", "bad_data", "{}"),
            call("3", "empty_data", "{}"),
            call("4", "empty_content", "{}"),
        ],
        vec![bad_mime, bad_data, empty_data, empty_content],
    );
    assert_error_containing(&results[0], &["invalid result", "image/bmp"]);
    assert_error_containing(&results[1], &["invalid result", "base64"]);
    assert_error_containing(&results[2], &["invalid result", "empty data"]);
    assert!(!results[3].is_error, "an empty content list is valid");
    assert!(results[3].content.is_empty());
}

#[test]
fn an_invalid_update_is_not_forwarded_cancels_the_function_and_becomes_the_error_result() {
    let tool = Tool::new(
        "progress",
        "",
        json!({"type": "object"}),
        |ctx, _args| async move {
            ctx.update(ToolResult::text("step 1"));
            ctx.update(ToolResult {
                content: vec![Content::image("text/html", "AAAA")],
                ..Default::default()
            });
            // The invalid update cancelled us; a well-behaved tool stops when asked.
            ctx.cancelled().await;
            Ok(ToolResult::text("finished anyway"))
        },
    );
    let agent = agent_with(script(vec![call("1", "progress", "{}")]), vec![tool]);
    let (events, outcome) = collect(agent.start(prompt("go")));
    let results = transcript_results(&outcome.expect("run continues").messages);
    assert_error_containing(&results[0], &["invalid partial result", "text/html"]);
    assert_eq!(
        tool_trace(&events),
        ["start:0", "update:0", "end:0"],
        "only the valid update is forwarded"
    );
}

#[test]
fn typed_tools_derive_their_schema_and_receive_typed_arguments() {
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Args {
        count: u32,
    }
    let tool = Tool::typed("double", "Doubles.", |_ctx, args: Args| async move {
        Ok(ToolResult::text((args.count * 2).to_string()))
    });
    assert_eq!(tool.parameters()["type"], "object");
    assert_eq!(tool.parameters()["properties"]["count"]["type"], "integer");
    let (results, _) = run_batch(
        vec![
            call("1", "double", r#"{"count": 21}"#),
            call("2", "double", r#"{"count": "21"}"#),
        ],
        vec![tool],
    );
    assert_eq!(results[0].text(), "42");
    assert_error_containing(&results[1], &["/count"]);
}

#[test]
fn a_schema_error_shows_a_huge_value_cut() {
    let tool = Tool::new(
        "count",
        "Counts.",
        json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}),
        |_ctx, _args| async { Ok(ToolResult::text("counted")) },
    );
    let huge = "x".repeat(4 * 1024 * 1024);
    let arguments = json!({ "n": huge }).to_string();
    let (results, _) = run_batch(vec![call("1", "count", &arguments)], vec![tool]);
    assert_error_containing(&results[0], &["Invalid arguments for count", "/n", "cut"]);
    assert!(
        results[0].text().len() < 16 * 1024,
        "{} bytes of error text",
        results[0].text().len()
    );
}
