//! What keeping the task costs a compacted request: the 200-turn session of
//! `tests/suite/compaction_task.rs` (a goal in the first prompt, a requirement steered in at
//! turn 40, plans at turns 60 and 120, a file written at every other turn, 100 tokens a message,
//! a 5,000-token window), its last request in estimated tokens (`EstimateTokens`) with the kept
//! facts and as it would be without them (the summary message alone), and the summarizer's
//! requests.
//!
//! `cargo bench -p golato --bench compaction_kept`

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::{mpsc, Arc, Mutex};

use golato::agent::compaction::{Compaction, EstimateTokens, TokenCounter};
use golato::agent::{self, Agent, Event, Input};
use golato::generator::{EventStream, Generator, Model, Request, Scripted};
use golato::message::{AssistantMessage, Message, ToolCall, UserMessage};
use golato::tool::{Tool, ToolResult};
use serde_json::json;

const TURNS: usize = 200;

struct Counted(Arc<Mutex<Vec<Request>>>, Scripted);

impl Generator for Counted {
    fn stream(&self, request: Request) -> EventStream {
        self.0.lock().unwrap().push(request.clone());
        self.1.stream(request)
    }
}

/// 100 tokens a message, as the test counts, so that the session compacts where it does there.
struct PerMessage;

impl TokenCounter for PerMessage {
    fn count_message(&self, _: &Message) -> u64 {
        100
    }
    fn count_prelude(&self, _: Option<&str>, _: &[golato::message::ToolDefinition]) -> u64 {
        0
    }
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let mut tools = golato::builtin::new(golato::builtin::Config {
        working_directory: dir.path().into(),
        allowed_tool_names: Some(vec!["write".into(), "update_plan".into()]),
        ..Default::default()
    })
    .unwrap();
    let (release, gate) = mpsc::channel::<()>();
    let gate = Arc::new(Mutex::new(gate));
    tools.push(Tool::blocking(
        "wait",
        "Waits.",
        json!({"type": "object"}),
        move |_, _| {
            gate.lock().unwrap().recv().unwrap();
            Ok(ToolResult::text("waited"))
        },
    ));
    let plan = |steps: &[&str]| {
        json!({"plan": steps.iter().map(|step| json!({"step": step, "status": "pending"})).collect::<Vec<_>>()}).to_string()
    };
    let mut script: Vec<AssistantMessage> = (0..TURNS)
        .map(|turn| {
            let call = match turn {
                40 => ToolCall::new("wait", "wait", "{}"),
                60 | 120 => ToolCall::new(format!("p{turn}"), "update_plan", plan(&["Read the lexer", "Port the keywords", "Run the golden tests"])),
                _ => ToolCall::new(
                    format!("w{turn}"),
                    "write",
                    json!({"path": format!("src/lex/part{turn}.rs"), "content": format!("// part {turn}\n")}).to_string(),
                ),
            };
            AssistantMessage::with_tool_calls([call])
        })
        .collect();
    script.push(AssistantMessage::with_text("ported"));
    let requests = Arc::new(Mutex::new(Vec::new()));
    let summaries = Arc::new(Mutex::new(Vec::new()));
    let summary = "The agent wrote the lexer's parts one by one under src/lex; each write succeeded; no errors so far; the plan's first step is done and the keywords are being ported.";
    let agent = Agent::new(agent::Config {
        generator: Some(Arc::new(Counted(
            Arc::clone(&requests),
            Scripted::new(script),
        ))),
        tools,
        context_window: Some(5_000),
        compaction: Compaction::default()
            .with_counter(Arc::new(PerMessage))
            .with_summarizer(
                Arc::new(Counted(
                    Arc::clone(&summaries),
                    Scripted::new((0..100).map(|_| AssistantMessage::with_text(summary))),
                )),
                Model::new("cheap"),
            ),
        ..Default::default()
    })
    .unwrap();
    let run = agent.start(Input::from(UserMessage::new(
        "GOAL: port the tokenizer in src/lex to the new grammar, keeping every public name.",
    )));
    let mut compactions = 0;
    for event in run.events() {
        match event {
            Event::ToolExecutionStart(start) if start.call.name == "wait" => {
                run.steer(UserMessage::new(
                    "Also: never touch tests/golden, those files are reviewed by hand.",
                ))
                .unwrap();
                release.send(()).unwrap();
            }
            Event::Compaction(_) => compactions += 1,
            _ => {}
        }
    }
    run.wait().unwrap();
    let tokens = |messages: &[Message]| -> u64 {
        messages
            .iter()
            .map(|message| EstimateTokens.count_message(message))
            .sum()
    };
    let requests = requests.lock().unwrap();
    let last = requests.last().unwrap();
    let with_facts = tokens(&last.messages);
    let Message::User(first) = &last.messages[0] else {
        panic!("no summary")
    };
    let text = first.text();
    let header_end = text.find("\n\n").unwrap();
    let alone = match text.split_once("What else happened, summarized:\n") {
        Some((_, summarized)) => format!("{}\n\n{summarized}", &text[..header_end]),
        None => text.clone(),
    };
    let mut without = last.messages.as_ref().clone();
    without[0] = Message::User(UserMessage::new(alone));
    let without_facts = tokens(&without);
    let summarizer = summaries.lock().unwrap();
    let summarizer_tokens: Vec<u64> = summarizer
        .iter()
        .map(|request| tokens(&request.messages))
        .collect();
    println!("compaction_kept: {TURNS} turns, {compactions} compactions");
    println!(
        "  last request: {with_facts} estimated tokens with the kept facts, {without_facts} with the summary alone (+{})",
        with_facts - without_facts
    );
    println!(
        "  summarizer: {} requests, {}-{} estimated input tokens each (the rendered turns), {} words of summary out",
        summarizer.len(),
        summarizer_tokens.iter().min().unwrap(),
        summarizer_tokens.iter().max().unwrap(),
        summary.split_whitespace().count()
    );
}
