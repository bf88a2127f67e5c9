//! What prompt caching saves on a 20-turn session: tokens and dollars with golato's cache
//! breakpoints and without them (`PromptCache::off`).
//!
//! The provider is a loopback server speaking Anthropic's Messages API that bills as Anthropic
//! documents it: a request's blocks in order (tools, system, messages) form a prefix; a block
//! marked `cache_control` writes the prefix up to it to the cache; a later request whose prefix
//! matches a cached one reads it (`cache_read_input_tokens`), writes the rest up to its last
//! breakpoint (`cache_creation_input_tokens`) and pays full price for what follows
//! (`input_tokens`). Tokens are counted as a byte of JSON per 4. The session: a system prompt,
//! the four built-in tools, and 19 turns each reading a 3 KB file before an answer. Costs are
//! at golato's price for claude-sonnet-4-5.
//!
//! `cargo bench -p golato --bench prompt_cache`

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::collections::hash_map::DefaultHasher;
use std::collections::HashSet;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::routing::post;
use axum::Router;
use golato::agent::{self, Agent, Input};
use golato::generator::{Anthropic, Model, PromptCache};
use golato::message::{Usage, UserMessage};
use serde_json::{json, Value};

const TURNS_WITH_CALLS: usize = 19;

/// Prefixes the "provider" has cached, by their hash.
#[derive(Default)]
struct Cache {
    prefixes: Mutex<HashSet<u64>>,
}

fn tokens(value: &Value) -> u64 {
    (value.to_string().len() as u64).div_ceil(4)
}

/// The request's blocks in Anthropic's order, each with whether it is a breakpoint.
fn blocks(request: &Value) -> Vec<(Value, bool)> {
    let mut blocks = Vec::new();
    let mut push = |mut block: Value| {
        let marked = block
            .as_object_mut()
            .and_then(|object| object.remove("cache_control"))
            .is_some();
        blocks.push((block, marked));
    };
    for tool in request["tools"].as_array().into_iter().flatten() {
        push(tool.clone());
    }
    match &request["system"] {
        Value::String(text) => push(json!({"type": "text", "text": text})),
        Value::Array(parts) => parts.iter().cloned().for_each(&mut push),
        _ => {}
    }
    for message in request["messages"].as_array().into_iter().flatten() {
        let role = message["role"].clone();
        match &message["content"] {
            Value::String(text) => push(json!({"role": role, "type": "text", "text": text})),
            Value::Array(parts) => {
                for part in parts {
                    let mut part = part.clone();
                    part["role"] = role.clone();
                    push(part);
                }
            }
            _ => {}
        }
    }
    blocks
}

/// Bills `request` against the cache: (input, cache read, cache write) tokens.
fn bill(cache: &Cache, request: &Value) -> (u64, u64, u64) {
    let mut prefixes = cache.prefixes.lock().unwrap();
    let mut hasher = DefaultHasher::new();
    let (mut total, mut read, mut last_breakpoint) = (0, 0, 0);
    for (block, marked) in blocks(request) {
        block.to_string().hash(&mut hasher);
        total += tokens(&block);
        let prefix = hasher.finish();
        if prefixes.contains(&prefix) {
            read = total;
        }
        if marked {
            prefixes.insert(prefix);
            last_breakpoint = total;
        }
    }
    let written = last_breakpoint.saturating_sub(read);
    (total - read - written, read, written)
}

fn event(kind: &str, data: Value) -> String {
    format!("event: {kind}\ndata: {data}\n\n")
}

async fn messages(State(cache): State<Arc<Cache>>, body: axum::body::Bytes) -> String {
    let request: Value = serde_json::from_slice(&body).unwrap();
    let (input, read, written) = bill(&cache, &request);
    let answered = request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|message| message["role"] == "assistant")
        .count();
    let block = if answered < TURNS_WITH_CALLS {
        json!({"type": "tool_use", "id": format!("toolu_{answered}"), "name": "read", "input": {}})
    } else {
        json!({"type": "text", "text": ""})
    };
    let delta = if answered < TURNS_WITH_CALLS {
        json!({"type": "input_json_delta", "partial_json": json!({"path": format!("notes/part{answered}.txt")}).to_string()})
    } else {
        json!({"type": "text_delta", "text": "All nineteen parts are read; the notes agree."})
    };
    let output = tokens(&delta) + 10;
    let stop = if answered < TURNS_WITH_CALLS {
        "tool_use"
    } else {
        "end_turn"
    };
    [
        event(
            "message_start",
            json!({"type": "message_start", "message": {"id": "msg", "type": "message", "role": "assistant",
                "model": request["model"], "content": [], "stop_reason": null, "usage": {
                "input_tokens": input, "cache_read_input_tokens": read,
                "cache_creation_input_tokens": written, "output_tokens": 1}}}),
        ),
        event(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": block}),
        ),
        event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": delta}),
        ),
        event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        event(
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": output}}),
        ),
        event("message_stop", json!({"type": "message_stop"})),
    ]
    .concat()
}

fn session(url: &str, dir: &std::path::Path, cache: PromptCache) -> (Usage, f64) {
    let client = Anthropic::new(url, "bench-key").unwrap();
    let agent = Agent::new(agent::Config {
        generator: Some(Arc::new(client)),
        model: Model::new("claude-sonnet-4-5").with_prompt_cache(cache),
        tools: golato::builtin::new(golato::builtin::Config {
            working_directory: dir.into(),
            ..Default::default()
        })
        .unwrap(),
        system_prompt: Some(
            "You are a careful coding agent working in a repository. Read before you edit; \
             run the tests after every change; explain what you changed and why. "
                .repeat(12),
        ),
        ..Default::default()
    })
    .unwrap();
    let result = agent
        .start(Input::from(UserMessage::new(
            "Read notes/part0.txt to notes/part18.txt, one at a time, and tell me whether they agree.",
        )))
        .wait()
        .unwrap();
    assert_eq!(result.turns, TURNS_WITH_CALLS + 1);
    (result.usage, result.cost.unwrap())
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("notes")).unwrap();
    for part in 0..TURNS_WITH_CALLS {
        let text = format!("Part {part}: the measurements agree within tolerance.\n").repeat(60);
        std::fs::write(dir.path().join(format!("notes/part{part}.txt")), text).unwrap();
    }
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let mut rows = Vec::new();
    for (name, setting) in [
        ("cache breakpoints (default)", PromptCache::default()),
        ("PromptCache::off()", PromptCache::off()),
    ] {
        // A fresh provider cache for each session.
        let app = Router::new()
            .route("/v1/messages", post(messages))
            .with_state(Arc::new(Cache::default()));
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let server = runtime.spawn(async move { axum::serve(listener, app).await.unwrap() });
        let (usage, cost) = session(&url, dir.path(), setting);
        server.abort();
        rows.push((name, usage, cost));
    }
    println!("20-turn session (19 reads of 3 KB, then an answer), claude-sonnet-4-5 prices");
    println!(
        "{:<28} {:>10} {:>12} {:>12} {:>8} {:>10}",
        "requests", "input", "cache read", "cache write", "output", "cost"
    );
    for (name, usage, cost) in &rows {
        println!(
            "{:<28} {:>10} {:>12} {:>12} {:>8} {:>10}",
            name,
            usage.input_tokens,
            usage.cache_read_tokens,
            usage.cache_write_tokens,
            usage.output_tokens,
            format!("${cost:.4}")
        );
    }
    let (cached, uncached) = (rows[0].2, rows[1].2);
    println!(
        "caching costs {:.1}% of the uncached session ({:.1}x cheaper)",
        100.0 * cached / uncached,
        uncached / cached
    );
}
