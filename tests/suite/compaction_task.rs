//! Compaction that keeps the task: a 200-turn session whose goal is stated in its first
//! prompt, a requirement added by steering at turn 40, a plan updated at turns 60 and 120, and
//! files written throughout, compacted many times: the last request still carries the goal and
//! the requirement word for word, the newest plan, and every path written.

use crate::support;

use std::sync::{mpsc, Arc, Mutex};

use golato::agent::compaction::Compaction;
use golato::agent::{self, Agent, Event};
use golato::generator::{Model, Scripted};
use golato::message::{AssistantMessage, Content, Message, ToolCall, UserMessage};
use golato::tool::{Tool, ToolResult};
use serde_json::json;
use support::compaction::{recording, PerMessage};

const GOAL: &str =
    "GOAL: port the tokenizer in src/lex to the new grammar, keeping every public name.";
const REQUIREMENT: &str = "Also: never touch tests/golden, those files are reviewed by hand.";
const TURNS: usize = 200;

fn plan(steps: &[(&str, &str)]) -> String {
    json!({"plan": steps.iter().map(|(step, status)| json!({"step": step, "status": status})).collect::<Vec<_>>()}).to_string()
}

#[test]
fn the_goal_the_steered_requirement_the_newest_plan_and_every_changed_path_survive_compaction() {
    let dir = tempfile::tempdir().unwrap();
    let mut tools = golato::builtin::new(golato::builtin::Config {
        working_directory: dir.path().into(),
        allowed_tool_names: Some(vec!["write".into(), "update_plan".into()]),
        ..Default::default()
    })
    .unwrap();
    // Turn 40 waits for the test, which steers while it runs.
    let (release, gate) = mpsc::channel::<()>();
    let gate = Arc::new(Mutex::new(gate));
    tools.push(Tool::blocking(
        "wait",
        "Waits for the test.",
        json!({"type": "object"}),
        move |_, _| {
            gate.lock().unwrap().recv().unwrap();
            Ok(ToolResult::text("waited"))
        },
    ));
    let mut paths = Vec::new();
    let mut script: Vec<AssistantMessage> = (0..TURNS)
        .map(|turn| {
            let call = match turn {
                40 => ToolCall::new("wait", "wait", "{}"),
                60 => ToolCall::new(
                    format!("p{turn}"),
                    "update_plan",
                    plan(&[("Read the lexer", "in_progress"), ("Old step", "pending")]),
                ),
                120 => ToolCall::new(
                    format!("p{turn}"),
                    "update_plan",
                    plan(&[
                        ("Read the lexer", "completed"),
                        ("Port the keywords", "in_progress"),
                    ]),
                ),
                _ => {
                    let path = format!("src/lex/part{turn}.rs");
                    paths.push(path.clone());
                    ToolCall::new(
                        format!("w{turn}"),
                        "write",
                        json!({"path": path, "content": format!("// part {turn}\n")}).to_string(),
                    )
                }
            };
            AssistantMessage::with_tool_calls([call])
        })
        .collect();
    script.push(AssistantMessage::with_text("ported"));
    let (model, requests) = recording(Scripted::new(script));
    let summaries = Scripted::new(
        (0..100).map(|n| AssistantMessage::with_text(format!("Summary {n}: parts were written."))),
    );
    let agent = Agent::new(agent::Config {
        generator: Some(Arc::new(model)),
        tools,
        context_window: Some(5_000),
        compaction: Compaction::default()
            .with_threshold(0.8)
            .with_keep_recent(0.3)
            .with_counter(Arc::new(PerMessage))
            .with_summarizer(Arc::new(summaries), Model::new("cheap")),
        ..Default::default()
    })
    .unwrap();
    let run = agent.start(support::prompt(GOAL));
    let mut compactions = 0;
    for event in run.events() {
        match event {
            Event::ToolExecutionStart(start) if start.call.name == "wait" => {
                run.steer(UserMessage::new(REQUIREMENT)).unwrap();
                release.send(()).unwrap();
            }
            Event::Compaction(_) => compactions += 1,
            _ => {}
        }
    }
    let result = run.wait().unwrap();
    assert!(compactions >= 3, "compacted {compactions} times");
    assert_eq!(
        result
            .messages
            .iter()
            .filter(|m| matches!(m, Message::User(_)))
            .count(),
        2
    );

    let requests = requests.lock().unwrap();
    let last = requests.last().unwrap();
    let text: String = last
        .messages
        .iter()
        .flat_map(|message| match message {
            Message::User(user) => user.content.clone(),
            Message::Assistant(assistant) => {
                let mut parts = assistant.content.clone();
                parts.extend(
                    assistant
                        .tool_calls
                        .iter()
                        .map(|call| Content::text(call.arguments.clone())),
                );
                parts
            }
            Message::ToolResult(result) => result.content.clone(),
        })
        .filter_map(|part| match part {
            Content::Text { text } => Some(text.to_string()),
            Content::Image { .. } => None,
        })
        .collect::<Vec<_>>()
        .join("\n");
    // The first message is the summary, and it holds the facts.
    let Message::User(summary) = &last.messages[0] else {
        panic!("the last request does not start with a summary");
    };
    let summary = summary.text();
    assert!(summary.contains(GOAL), "{summary}");
    assert!(summary.contains(REQUIREMENT), "{summary}");
    assert!(
        summary.contains("- [in_progress] Port the keywords"),
        "{summary}"
    );
    assert!(
        !summary.contains("Old step"),
        "an older plan was kept: {summary}"
    );
    for path in &paths {
        assert!(
            text.contains(path.as_str()),
            "{path} is missing from the last request"
        );
    }
    // The model's own summary is there too, after the facts.
    assert!(
        summary.contains("What else happened, summarized:\nSummary "),
        "{summary}"
    );
}
