//! For the compaction tests: a token counter whose figures follow from message counts, a
//! generator that remembers its requests, a tool and a script that make a run grow, and an
//! OpenAI-compatible loopback provider with a context limit (it refuses a request body over
//! `limit` bytes as OpenAI does, `context_length_exceeded`, writes a summary when golato's
//! summarizer asks, and otherwise answers scripted turns).

use std::sync::{Arc, Mutex};

use golato::agent::compaction::TokenCounter;
use golato::generator::{EventStream, Generator, Request};
use golato::message::{AssistantMessage, Message, ToolCall};
use golato::tool::{Tool, ToolResult};
use serde_json::{json, Value};

/// Counts 100 tokens per message: every figure below follows from message counts.
pub struct PerMessage;

impl TokenCounter for PerMessage {
    fn count_message(&self, _: &Message) -> u64 {
        100
    }
    fn count_prelude(&self, _: Option<&str>, _: &[golato::message::ToolDefinition]) -> u64 {
        0
    }
}

/// Remembers every request, then lets `inner` answer it.
pub struct Recording<G> {
    inner: G,
    requests: Arc<Mutex<Vec<Request>>>,
}

impl<G: Generator> Generator for Recording<G> {
    fn stream(&self, request: Request) -> EventStream {
        self.requests.lock().unwrap().push(request.clone());
        self.inner.stream(request)
    }
}

pub fn recording<G: Generator>(inner: G) -> (Recording<G>, Arc<Mutex<Vec<Request>>>) {
    let requests = Arc::new(Mutex::new(Vec::new()));
    (
        Recording {
            inner,
            requests: Arc::clone(&requests),
        },
        requests,
    )
}

/// A tool that returns `size` bytes of text.
pub fn fetch_tool(size: usize) -> Tool {
    Tool::new(
        "fetch",
        "Fetches a page.",
        json!({"type": "object"}),
        move |_ctx, _args| async move { Ok(ToolResult::text("x".repeat(size))) },
    )
}

/// `turns` messages calling `fetch` (twice each when `pairs`), then an answer.
pub fn fetching_script(turns: usize, pairs: bool) -> Vec<AssistantMessage> {
    let mut entries: Vec<AssistantMessage> = (0..turns)
        .map(|turn| {
            let mut calls = vec![ToolCall::new(format!("a{turn}"), "fetch", "{}")];
            if pairs {
                calls.push(ToolCall::new(format!("b{turn}"), "fetch", "{}"));
            }
            AssistantMessage::with_tool_calls(calls)
        })
        .collect();
    entries.push(AssistantMessage::with_text("all fetched"));
    entries
}

use super::provider::{FakeProvider, Reply, Script};

/// An OpenAI Chat stream of `message` (`{"text": …}` or `{"tool_calls": […]}`, calls in the wire form).
pub fn sse(message: &Value) -> String {
    let mut events = String::new();
    let delta = if let Some(text) = message.get("text") {
        json!({"role": "assistant", "content": text})
    } else {
        json!({"role": "assistant", "tool_calls": message["tool_calls"]})
    };
    let finish = if message.get("text").is_some() {
        "stop"
    } else {
        "tool_calls"
    };
    for chunk in [
        json!({"choices": [{"index": 0, "delta": delta}]}),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}),
    ] {
        events.push_str(&format!("data: {chunk}\n\n"));
    }
    events.push_str("data: [DONE]\n\n");
    events
}

/// `calls` turns calling `fetch`, then a final answer.
pub fn provider_turns(calls: usize) -> Vec<Value> {
    tool_turns(calls, "fetch", &json!({}))
}

/// `calls` turns calling `tool` with `arguments`, then a final answer.
pub fn tool_turns(calls: usize, tool: &str, arguments: &Value) -> Vec<Value> {
    let mut turns: Vec<Value> = (0..calls)
        .map(|turn| {
            json!({"tool_calls": [{"index": 0, "id": format!("c{turn}"), "type": "function",
                "function": {"name": tool, "arguments": arguments.to_string()}}]})
        })
        .collect();
    turns.push(json!({"text": "done"}));
    turns
}

/// The fake provider as an OpenAI-compatible server that refuses a body over `limit` bytes as
/// OpenAI does, writes a summary when asked by golato's summarizer, and otherwise answers from
/// `turns`. Returns its runtime, its base URL (with `/v1`) and its state.
pub fn provider(
    limit: usize,
    turns: Vec<Value>,
) -> (tokio::runtime::Runtime, String, Arc<FakeProvider>) {
    let mut turns: std::collections::VecDeque<Value> = turns.into();
    let respond = move |request: &Value, size: usize| {
        if size > limit {
            let refusal = json!({"error": {
                "message": format!("This model's maximum context length is {} tokens. However, your messages resulted in {} tokens.", limit / 4, size / 4),
                "type": "invalid_request_error",
                "code": "context_length_exceeded",
            }});
            return Reply::status(400, &refusal.to_string());
        }
        let summarizing = request["messages"][0]["content"]
            .as_str()
            .is_some_and(|system| system.starts_with("You compact the transcript"));
        let answer = if summarizing {
            json!({"text": "Pages 0 to 2 were fetched."})
        } else {
            turns
                .pop_front()
                .unwrap_or(json!({"text": "no more turns scripted"}))
        };
        Reply::sse(sse(&answer))
    };
    let (runtime, url, provider) = FakeProvider::start_blocking(Script::Respond(Box::new(respond)));
    (runtime, format!("{url}/v1"), provider)
}

/// The text of a message of an OpenAI request (its content as a string, or its first part's).
pub fn wire_text(message: &Value) -> &str {
    message["content"]
        .as_str()
        .or_else(|| message["content"][0]["text"].as_str())
        .unwrap_or_default()
}

/// The text of a request's first user message (what a run was started with).
pub fn first_prompt(request: &Value) -> String {
    request["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|message| message["role"] == "user")
        .map(wire_text)
        .unwrap_or_default()
        .to_owned()
}

/// How many answers a request's transcript holds.
pub fn answers(request: &Value) -> usize {
    request["messages"].as_array().map_or(0, |messages| {
        messages.iter().filter(|m| m["role"] == "assistant").count()
    })
}

/// A call in the OpenAI wire form.
pub fn wire_call(id: &str, name: &str, arguments: Value) -> Value {
    json!({"index": 0, "id": id, "type": "function",
           "function": {"name": name, "arguments": arguments.to_string()}})
}
