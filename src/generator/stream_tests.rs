//! The streaming decoders against real recorded provider streams (`tests/fixtures/llm/`),
//! whole and cut at random byte boundaries: the assembled message must not depend on the cuts.

use crate::generator::anthropic::MessagesStreamDecoder;
use crate::generator::openai::chat::ChatStreamDecoder;
use crate::generator::openai::responses::ResponsesStreamDecoder;
use crate::generator::sse::SseDecoder;
use crate::generator::Delta;
use crate::message::{AssistantMessage, StopReason};
use pretty_assertions::assert_eq;
use serde_json::{json, Value};

fn fixture(path: &str) -> Vec<u8> {
    let full = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/llm")
        .join(path);
    std::fs::read(&full)
        .unwrap_or_else(|error| panic!("fixture {} is missing ({error})", full.display()))
}

/// The HTTP body: raw SSE as recorded, or JSON lines framed as `data:` events the way the
/// recorder's own tests rebuild them.
fn body(path: &str, done_marker: bool) -> Vec<u8> {
    let bytes = fixture(path);
    if !path.ends_with(".jsonl") {
        return bytes;
    }
    let mut framed = String::new();
    for line in String::from_utf8(bytes)
        .unwrap()
        .lines()
        .filter(|line| !line.trim().is_empty())
    {
        framed.push_str(&format!("data: {line}\n\n"));
    }
    if done_marker {
        framed.push_str("data: [DONE]\n\n");
    }
    framed.into_bytes()
}

trait Decoder: Default {
    fn decode(&mut self, data: &str) -> Vec<Delta>;
    fn finish(self) -> AssistantMessage;
}

impl Decoder for ChatStreamDecoder {
    fn decode(&mut self, data: &str) -> Vec<Delta> {
        ChatStreamDecoder::decode(self, data).unwrap()
    }
    fn finish(self) -> AssistantMessage {
        ChatStreamDecoder::finish(self)
    }
}

impl Decoder for ResponsesStreamDecoder {
    fn decode(&mut self, data: &str) -> Vec<Delta> {
        ResponsesStreamDecoder::decode(self, data).unwrap()
    }
    fn finish(self) -> AssistantMessage {
        ResponsesStreamDecoder::finish(self)
    }
}

impl Decoder for MessagesStreamDecoder {
    fn decode(&mut self, data: &str) -> Vec<Delta> {
        MessagesStreamDecoder::decode(self, data).unwrap()
    }
    fn finish(self) -> AssistantMessage {
        MessagesStreamDecoder::finish(self)
    }
}

/// Feeds `body` cut at the given offsets and returns the deltas and the message.
fn run<D: Decoder>(body: &[u8], cuts: &[usize]) -> (Vec<Delta>, AssistantMessage) {
    let mut sse = SseDecoder::default();
    let mut decoder = D::default();
    let mut deltas = Vec::new();
    let mut from = 0;
    for &cut in cuts.iter().chain([body.len()].iter()) {
        for event in sse.feed(&body[from..cut]) {
            deltas.extend(decoder.decode(&event.data));
        }
        from = cut;
    }
    if let Some(event) = sse.finish() {
        deltas.extend(decoder.decode(&event.data));
    }
    (deltas, decoder.finish())
}

/// Random cut points (xorshift, seeded, so a failure can be replayed).
fn cuts(len: usize, seed: u64) -> Vec<usize> {
    let mut state = seed | 1;
    let mut cuts: Vec<usize> = (0..len / 7 + 1)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % (len as u64 + 1)) as usize
        })
        .collect();
    cuts.sort_unstable();
    cuts
}

/// Decodes the fixture whole and cut a dozen ways; checks the pieces agree and returns the
/// message.
fn decode<D: Decoder>(path: &str, done_marker: bool) -> AssistantMessage {
    let body = body(path, done_marker);
    let (deltas, message) = run::<D>(&body, &[]);
    for seed in 1..=12 {
        let (_, cut_message) = run::<D>(&body, &cuts(body.len(), seed));
        assert_eq!(cut_message, message, "{path} cut with seed {seed}");
    }
    // Every cut of one byte at a time, too.
    let bytewise: Vec<usize> = (1..body.len()).collect();
    assert_eq!(
        run::<D>(&body, &bytewise).1,
        message,
        "{path} fed byte by byte"
    );
    // The deltas add up to the message.
    let mut text = String::new();
    let mut reasoning = String::new();
    let mut arguments = vec![String::new(); message.tool_calls.len()];
    for delta in deltas {
        match delta {
            Delta::Text(more) => text.push_str(&more),
            Delta::Reasoning(more) => reasoning.push_str(&more),
            Delta::ToolCall {
                index,
                arguments: more,
                ..
            } => arguments[index].push_str(&more),
        }
    }
    assert_eq!(text, message.text(), "{path}: text deltas");
    assert_eq!(reasoning, message.reasoning, "{path}: reasoning deltas");
    for (assembled, call) in arguments.iter().zip(&message.tool_calls) {
        let assembled = if assembled.trim().is_empty() {
            "{}"
        } else {
            assembled.as_str()
        };
        assert_eq!(
            assembled, call.arguments,
            "{path}: argument fragments of {}",
            call.name
        );
    }
    message
}

fn openai(path: &str) -> AssistantMessage {
    decode::<ChatStreamDecoder>(path, true)
}

fn anthropic(path: &str) -> AssistantMessage {
    decode::<MessagesStreamDecoder>(path, false)
}

fn responses(path: &str) -> AssistantMessage {
    decode::<ResponsesStreamDecoder>(path, false)
}

fn arguments(message: &AssistantMessage, index: usize) -> Value {
    serde_json::from_str(&message.tool_calls[index].arguments).unwrap()
}

fn usage(message: &AssistantMessage) -> (u64, u64) {
    (
        message.usage.input_tokens + message.usage.cache_read_tokens,
        message.usage.output_tokens,
    )
}

#[test]
fn openai_parallel_tool_calls() {
    let message = openai("openai-chat/parallel-tool-calls.sse");
    assert_eq!(message.stop_reason, StopReason::ToolCalls);
    assert_eq!(message.tool_calls.len(), 2);
    assert_eq!(message.tool_calls[0].name, "GetWeatherArgs");
    assert_eq!(
        arguments(&message, 0),
        json!({"city": "Edinburgh", "country": "UK", "units": "c"})
    );
    assert_eq!(message.tool_calls[1].name, "get_stock_price");
    assert_eq!(
        arguments(&message, 1),
        json!({"ticker": "AAPL", "exchange": "NASDAQ"})
    );
    assert_ne!(message.tool_calls[0].id, message.tool_calls[1].id);
    assert_eq!(usage(&message), (149, 60));
}

#[test]
fn openai_single_tool_calls() {
    let non_strict = openai("openai-chat/single-tool-call-non-strict.sse");
    assert_eq!(
        (
            non_strict.tool_calls[0].name.as_str(),
            arguments(&non_strict, 0)
        ),
        ("get_weather", json!({"city": "New York City"}))
    );
    assert_eq!(usage(&non_strict), (44, 16));
    let strict = openai("openai-chat/single-tool-call-strict.sse");
    assert_eq!(
        arguments(&strict, 0),
        json!({"city": "Edinburgh", "country": "GB", "units": "c"})
    );
    assert_eq!(usage(&strict), (76, 24));
    let hand_written = openai("openai-chat/strict-tool-call.sse");
    assert_eq!(
        arguments(&hand_written, 0),
        json!({"city": "San Francisco", "state": "CA"})
    );
    assert_eq!(usage(&hand_written), (48, 19));
    for message in [non_strict, strict, hand_written] {
        assert_eq!(message.stop_reason, StopReason::ToolCalls);
        assert!(message.tool_calls[0].id.starts_with("call_"));
        assert_eq!(message.model.as_deref(), Some("gpt-4o-2024-08-06"));
    }
}

#[test]
fn openai_finish_length_and_text() {
    for (path, expected_usage) in [
        ("openai-chat/finish-length.sse", (17, 1)),
        ("openai-chat/finish-length-2.sse", (79, 1)),
    ] {
        let message = openai(path);
        assert_eq!(message.stop_reason, StopReason::Length, "{path}");
        assert_eq!(message.text(), "{\"");
        assert_eq!(usage(&message), expected_usage);
    }
    let text = openai("openai-chat/text-stop.sse");
    assert_eq!(text.stop_reason, StopReason::Stop);
    assert!(
        text.text()
            .starts_with("I'm unable to provide real-time updates"),
        "{}",
        text.text()
    );
    assert_eq!(usage(&text), (14, 47));
    let long = openai("openai-chat/text-long.jsonl");
    assert_eq!(long.stop_reason, StopReason::Stop);
    assert!(long.text().len() > 1000);
    assert_eq!(usage(&long), (16, 300));
}

#[test]
fn openai_compatible_dialects() {
    let groq = openai("openai-compatible/groq-tool-call.jsonl");
    assert_eq!(
        (
            groq.tool_calls[0].id.as_str(),
            groq.tool_calls[0].name.as_str(),
            groq.tool_calls[0].arguments.as_str()
        ),
        ("tk85n1k4m", "weather", "{}")
    );
    assert_eq!(groq.stop_reason, StopReason::ToolCalls);
    assert_eq!(usage(&groq), (210, 15));
    let xai = openai("openai-compatible/xai-tool-call.jsonl");
    assert!(!xai.reasoning.is_empty());
    assert_eq!(xai.text(), "");
    assert_eq!(arguments(&xai, 0), json!({"location": "San Francisco"}));
    assert_eq!(xai.stop_reason, StopReason::ToolCalls);
    // Cached prompt tokens, as the provider reports them.
    assert_eq!(xai.usage.cache_read_tokens, 306);
    let deepseek = openai("openai-compatible/deepseek-tool-call.jsonl");
    assert_eq!(deepseek.usage.cache_read_tokens, 320);
    assert_eq!(deepseek.reasoning.chars().count(), 191);
    assert_eq!(
        arguments(&deepseek, 0),
        json!({"location": "San Francisco"})
    );
    let text = openai("openai-compatible/deepseek-text.jsonl");
    assert_eq!(text.stop_reason, StopReason::Length);
    assert_eq!(usage(&text), (13, 400));
}

#[test]
fn openai_stream_without_done_or_index_and_with_an_error() {
    // No [DONE], no index on the calls, the whole arguments in one chunk, finish_reason "stop".
    let body = concat!(
        "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"id\":\"a\",\"function\":{\"name\":\"one\",\"arguments\":\"{\\\"x\\\":1}\"}}]}}]}\n\n",
        "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"id\":\"b\",\"function\":{\"name\":\"two\"}}]}}]}\n\n",
        "data:   {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}], \"unknown\": {\"field\": true}}   ",
    );
    let (_, message) = run::<ChatStreamDecoder>(body.as_bytes(), &[]);
    assert_eq!(message.stop_reason, StopReason::ToolCalls);
    assert_eq!(message.tool_calls.len(), 2);
    assert_eq!(
        (
            message.tool_calls[0].arguments.as_str(),
            message.tool_calls[1].arguments.as_str()
        ),
        ("{\"x\":1}", "{}")
    );
    let mut decoder = ChatStreamDecoder::default();
    let error = decoder
        .decode("{\"error\": {\"message\": \"Rate limit reached\"}}")
        .unwrap_err();
    assert!(error.to_string().contains("Rate limit reached"));
    assert!(decoder
        .decode("{not json")
        .unwrap_err()
        .to_string()
        .contains("malformed"));
}

#[test]
fn anthropic_tool_use_with_text() {
    let message = anthropic("anthropic/tool-use.sse");
    assert_eq!(
        message.text(),
        "I'll check the current weather in Paris for you."
    );
    assert_eq!(message.tool_calls[0].name, "get_weather");
    assert_eq!(arguments(&message, 0), json!({"location": "Paris"}));
    assert_eq!(message.stop_reason, StopReason::ToolCalls);
    assert_eq!(message.usage.output_tokens, 65);
    assert_eq!(message.usage.input_tokens, 377);
}

#[test]
fn anthropic_text_only() {
    let basic = anthropic("anthropic/basic-text.sse");
    assert_eq!(basic.text(), "Hello there!");
    assert_eq!(basic.stop_reason, StopReason::Stop);
    assert_eq!(usage(&basic), (11, 6));
    let after_tools = anthropic("anthropic/text-after-tool-results.sse");
    assert!(
        after_tools.text().contains('\u{1F985}'),
        "{}",
        after_tools.text()
    );
    assert_eq!(after_tools.stop_reason, StopReason::Stop);
    assert_eq!(usage(&after_tools), (678, 82));
}

#[test]
fn anthropic_calls_without_arguments_and_with_split_escapes() {
    let no_args = anthropic("anthropic/text-then-tool-no-args.jsonl");
    assert_eq!(no_args.text(), "I'll update the issue list for you.");
    assert_eq!(
        (
            no_args.tool_calls[0].name.as_str(),
            no_args.tool_calls[0].arguments.as_str()
        ),
        ("updateIssueList", "{}")
    );
    assert_eq!(no_args.stop_reason, StopReason::ToolCalls);
    let parallel = anthropic("anthropic/parallel-tool-use-no-args.sse");
    assert_eq!(parallel.tool_calls.len(), 2);
    for call in &parallel.tool_calls {
        assert_eq!(
            (call.name.as_str(), call.arguments.as_str()),
            ("pelican_name_generator", "{}")
        );
    }
    assert_ne!(parallel.tool_calls[0].id, parallel.tool_calls[1].id);
    let quoted = anthropic("anthropic/tool-quoted-input.jsonl");
    assert_eq!(quoted.tool_calls[0].name, "website_update");
    assert!(arguments(&quoted, 0).is_object());
    let error = MessagesStreamDecoder::default()
        .decode(
            r#"{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}"#,
        )
        .unwrap_err();
    assert!(error.to_string().contains("Overloaded"));
}

#[test]
fn responses_function_call_with_argument_deltas() {
    let message = responses("openai-responses/azure-tool-call.jsonl");
    assert_eq!(message.tool_calls.len(), 1);
    let call = &message.tool_calls[0];
    assert!(
        call.id.starts_with("call_H5Dx"),
        "the call_id, not the item id: {}",
        call.id
    );
    assert_eq!(call.name, "weather");
    assert_eq!(arguments(&message, 0), json!({"location": "San Francisco"}));
    assert_eq!(message.stop_reason, StopReason::ToolCalls);
    assert_eq!(usage(&message), (45, 24));
    assert_eq!(message.model.as_deref(), Some("gpt-5.1"));
    assert!(message.text().is_empty());
}

#[test]
fn responses_reasoning_text_and_a_call_whose_arguments_come_whole() {
    let message = responses("openai-responses/lmstudio-reasoning-tool-call.jsonl");
    assert_eq!(message.usage.cache_read_tokens, 2);
    assert_eq!(
        message.text(),
        "I'll get the current weather information for San Francisco for you."
    );
    assert!(!message.reasoning.is_empty());
    assert_eq!(message.tool_calls.len(), 1);
    assert_eq!(message.tool_calls[0].name, "weather");
    // No arguments.delta events at all: they arrive with arguments.done.
    assert_eq!(arguments(&message, 0), json!({"location": "San Francisco"}));
    assert_eq!(message.stop_reason, StopReason::ToolCalls);
    assert_eq!(usage(&message), (182, 61));
}

#[test]
fn responses_incomplete_refused_and_failed_streams() {
    let events = |lines: &[Value]| {
        let mut decoder = ResponsesStreamDecoder::default();
        for line in lines {
            decoder.decode(&line.to_string()).unwrap();
        }
        decoder.finish()
    };
    let cut = events(&[
        json!({"type": "response.output_text.delta", "output_index": 0, "delta": "Once upon"}),
        json!({"type": "response.incomplete", "response": {"status": "incomplete",
            "incomplete_details": {"reason": "max_output_tokens"},
            "usage": {"input_tokens": 10, "output_tokens": 3}}}),
    ]);
    assert_eq!(cut.stop_reason, StopReason::Length);
    assert_eq!(cut.text(), "Once upon");
    let refused = events(&[
        json!({"type": "response.refusal.delta", "output_index": 0, "delta": "I can't help with that."}),
        json!({"type": "response.completed", "response": {"status": "completed"}}),
    ]);
    assert_eq!(refused.text(), "I can't help with that.");
    assert_eq!(refused.stop_reason, StopReason::Stop);
    let failed = ResponsesStreamDecoder::default()
        .decode(
            &json!({"type": "response.failed", "response": {"status": "failed",
            "error": {"code": "server_error", "message": "The model crashed."}}})
            .to_string(),
        )
        .unwrap_err();
    assert!(
        failed.to_string().contains("The model crashed."),
        "{failed}"
    );
    let error = ResponsesStreamDecoder::default()
        .decode(r#"{"type": "error", "code": "rate_limit_exceeded", "message": "Slow down."}"#)
        .unwrap_err();
    assert!(error.to_string().contains("Slow down."), "{error}");
    assert!(ResponsesStreamDecoder::default()
        .decode("{not json")
        .is_err());
}

/// Real recordings of the providers' own web search (vercel/ai's fixtures): the queries run
/// and the pages cited come back with the answer, each page once.
#[test]
fn web_search_queries_and_citations_are_kept() {
    let claude = anthropic("anthropic/web-search.jsonl");
    let searched = claude.web_search.clone().unwrap();
    assert_eq!(searched.queries, ["tech news today September 26 2025"]);
    assert!(searched.citations.iter().any(|citation| citation.url
        == "https://9to5mac.com/2025/09/22/ios-26-1-beta-1/"
        && citation.title.as_deref()
            == Some("Apple releases first iOS 26.1 developer beta for iPhone - 9to5Mac")));
    let urls: Vec<&str> = searched.citations.iter().map(|c| c.url.as_str()).collect();
    let mut unique = urls.clone();
    unique.dedup();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(urls.len(), unique.len(), "each page once: {urls:?}");
    assert!(claude
        .text()
        .contains("Apple's significant retail milestone"));
    assert!(
        claude.tool_calls.is_empty(),
        "a server tool is no call of ours"
    );
    let openai = responses("openai-responses/web-search.jsonl");
    let searched = openai.web_search.clone().unwrap();
    assert_eq!(
        searched.queries,
        [
            "tech news today December 5 2025",
            "site:theverge.com \"December 5, 2025\" \"technology\""
        ]
    );
    assert!(searched
        .citations
        .iter()
        .any(|citation| citation.title.as_deref()
            == Some("AI coding startup Vercel raises $300 million, valued at $9.3 billion")));
    assert!(openai.tool_calls.is_empty());
    // Kept in the session as the message is: it reads back the same.
    let saved = serde_json::to_string(&claude).unwrap();
    let read: AssistantMessage = serde_json::from_str(&saved).unwrap();
    assert_eq!(read.web_search, claude.web_search);
}

/// The request offers the provider's own search beside the tools, with its domains; Chat
/// Completions, which has none, sends nothing for it.
#[test]
fn web_search_is_offered_in_each_providers_terms() {
    use crate::generator::{Model, Request, WebSearchTool};
    let request = Request {
        model: Model::new("m").with_web_search(
            WebSearchTool::default()
                .with_allowed_domains(["docs.rs"])
                .with_max_uses(3),
        ),
        system_prompt: None,
        messages: std::sync::Arc::new(Vec::new()),
        tools: std::sync::Arc::from(vec![crate::tool::ToolDefinition {
            name: "read".into(),
            description: "read".into(),
            parameters: json!({"type": "object"}),
        }]),
        compacted_turns: 0,
    };
    let claude = crate::generator::anthropic::request_body(&request);
    assert_eq!(
        claude["tools"][0],
        json!({"type": "web_search_20250305", "name": "web_search", "allowed_domains": ["docs.rs"], "max_uses": 3})
    );
    assert_eq!(claude["tools"][1]["name"], "read");
    let openai = crate::generator::openai::responses::request_body(&request);
    assert_eq!(
        openai["tools"][0],
        json!({"type": "web_search", "filters": {"allowed_domains": ["docs.rs"]}})
    );
    assert_eq!(openai["tools"][1]["name"], "read");
    let chat = crate::generator::openai::chat::request_body(&request);
    assert_eq!(chat["tools"].as_array().map(Vec::len), Some(1));
}
