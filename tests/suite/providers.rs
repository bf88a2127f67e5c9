//! The provider clients against a loopback HTTP server that replays recorded streams and
//! injects faults; the server records what the clients sent.

use crate::support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use golato::generator::{
    self, Anthropic, Generator, Model, OpenAiChat, OpenAiResponses, Request, RetryPolicy,
    StreamEvent, ToolChoice,
};
use golato::message::{
    AssistantMessage, Content, Message, StopReason, ToolResultMessage, UserMessage,
};
use serde_json::{json, Value};
use support::provider::{FakeProvider, Reply, Script};
use support::*;

/// The fake provider with `replies` queued.
async fn serve(replies: Vec<Reply>) -> (String, Arc<FakeProvider>) {
    FakeProvider::start(Script::Queue(replies.into())).await
}

/// An agent on a provider client, with a model chosen (a provider refuses the placeholder).
fn provider_agent(client: impl Generator, tools: Vec<golato::Tool>) -> golato::Agent {
    golato::Agent::new(golato::agent::Config {
        generator: Some(Arc::new(client)),
        model: Model::new("gpt-test"),
        tools,
        ..Default::default()
    })
    .unwrap()
}

fn fast_retries() -> RetryPolicy {
    RetryPolicy {
        max_retries: 2,
        initial_backoff: Duration::from_millis(1),
        max_backoff: Duration::from_millis(20),
    }
}

fn request(model: Model) -> Request {
    Request {
        model,
        system_prompt: Some("Be brief.".into()),
        messages: Arc::new(vec![Message::User(UserMessage::new("Weather in Paris?"))]),
        tools: vec![golato::tool::ToolDefinition {
            name: "get_weather".into(),
            description: "Weather.".into(),
            parameters: json!({"type": "object"}),
        }]
        .into(),
        compacted_turns: 0,
    }
}

async fn collect_stream(
    generator: &dyn Generator,
    request: Request,
) -> Result<(usize, AssistantMessage), generator::Error> {
    let mut stream = generator.stream(request);
    let mut deltas = 0;
    while let Some(item) = stream.next().await {
        match item? {
            StreamEvent::Delta(_) => deltas += 1,
            StreamEvent::Done(message) => return Ok((deltas, message)),
            _ => {}
        }
    }
    panic!("the stream ended without a message")
}

#[tokio::test]
async fn openai_chat_replays_recorded_streams_in_any_pieces() {
    for pieces in [1, 3, 50] {
        let (url, server) = serve(vec![Reply::ok(
            fixture("openai-chat/parallel-tool-calls.sse"),
            pieces,
        )])
        .await;
        let client = OpenAiChat::new(format!("{url}/v1"), Some("sk-test".into())).unwrap();
        let (deltas, message) = collect_stream(&client, request(Model::new("gpt-4o")))
            .await
            .unwrap();
        assert!(deltas > 10);
        assert_eq!(message.stop_reason, StopReason::ToolCalls);
        assert_eq!(message.tool_calls.len(), 2);
        assert_eq!(message.usage.output_tokens, 60);
        let (headers, body) = server.requests.lock().unwrap().remove(0);
        assert_eq!(headers["authorization"], "Bearer sk-test");
        assert_eq!(body["model"], "gpt-4o");
        assert_eq!(body["stream"], true);
        assert_eq!(body["stream_options"]["include_usage"], true);
        assert_eq!(
            body["messages"][0],
            json!({"role": "system", "content": "Be brief."})
        );
        assert_eq!(
            body["messages"][1],
            json!({"role": "user", "content": "Weather in Paris?"})
        );
        assert_eq!(body["tools"][0]["function"]["name"], "get_weather");
    }
}

#[tokio::test]
async fn anthropic_replays_recorded_streams_in_any_pieces() {
    for pieces in [1, 7, 64] {
        let (url, server) = serve(vec![Reply::ok(fixture("anthropic/tool-use.sse"), pieces)]).await;
        let client = Anthropic::new(url, "ant-key").unwrap();
        let mut model = Model::new("claude-sonnet-4-20250514");
        model.max_output_tokens = Some(1024);
        let (_, message) = collect_stream(&client, request(model)).await.unwrap();
        assert_eq!(
            message.text(),
            "I'll check the current weather in Paris for you."
        );
        assert_eq!(message.tool_calls[0].arguments, r#"{"location": "Paris"}"#);
        let (headers, body) = server.requests.lock().unwrap().remove(0);
        assert_eq!(headers["x-api-key"], "ant-key");
        assert_eq!(headers["anthropic-version"], "2023-06-01");
        assert_eq!(body["max_tokens"], 1024);
        assert_eq!(body["system"][0]["text"], "Be brief.");
        assert_eq!(body["tools"][0]["input_schema"], json!({"type": "object"}));
    }
}

#[tokio::test]
async fn rate_limits_and_server_errors_are_retried_honouring_retry_after() {
    let mut limited = Reply::status(429, r#"{"error": {"message": "slow down"}}"#);
    limited.headers.push(("retry-after", "0".into()));
    let (url, server) = serve(vec![
        limited,
        Reply::status(503, "busy"),
        Reply::ok(fixture("openai-chat/text-stop.sse"), 4),
    ])
    .await;
    let client = OpenAiChat::new(url + "/v1", None)
        .unwrap()
        .with_retry(fast_retries());
    let (_, message) = collect_stream(&client, request(Model::new("m")))
        .await
        .unwrap();
    assert_eq!(message.stop_reason, StopReason::Stop);
    assert_eq!(server.requests.lock().unwrap().len(), 3);
}

/// A retry is said as it happens, in the stream and as the run's event: which one, of how
/// many, after how long, and why; before any of the answer.
#[tokio::test]
async fn each_retry_is_an_event_saying_why_and_how_long() {
    let (url, _server) = serve(vec![
        Reply::status(429, "slow down"),
        Reply::status(503, "busy"),
        Reply::ok(fixture("openai-chat/text-stop.sse"), 4),
    ])
    .await;
    let client = OpenAiChat::new(url + "/v1", None)
        .unwrap()
        .with_retry(fast_retries());
    let agent = golato::Agent::new(golato::agent::Config {
        generator: Some(Arc::new(client)),
        model: Model::new("m"),
        ..Default::default()
    })
    .unwrap();
    let run = agent.start(golato::agent::Input::from(UserMessage::new("hi")));
    let mut events = Vec::new();
    while let Some(event) = run.next_event().await {
        events.push(event);
    }
    let retries: Vec<_> = events
        .iter()
        .filter_map(|event| match event {
            golato::agent::Event::Retry(retry) => Some(retry.retrying.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(retries.len(), 2, "{events:?}");
    assert_eq!((retries[0].attempt, retries[0].retries), (1, 2));
    assert_eq!(retries[0].reason, "HTTP 429");
    assert_eq!(
        (retries[1].attempt, retries[1].reason.as_str()),
        (2, "HTTP 503")
    );
    assert!(retries.iter().all(|retry| retry.wait_ms <= 20));
    let first_retry = events
        .iter()
        .position(|event| matches!(event, golato::agent::Event::Retry(_)))
        .unwrap();
    let first_update = events
        .iter()
        .position(|event| matches!(event, golato::agent::Event::MessageUpdate(_)))
        .unwrap();
    assert!(first_retry < first_update);
}

#[tokio::test]
async fn retries_are_bounded_and_client_errors_are_not_retried() {
    let (url, server) = serve(vec![
        Reply::status(500, "a"),
        Reply::status(500, "b"),
        Reply::status(500, r#"{"error": {"message": "still down"}}"#),
    ])
    .await;
    let client = OpenAiChat::new(url + "/v1", None)
        .unwrap()
        .with_retry(fast_retries());
    let error = collect_stream(&client, request(Model::new("m")))
        .await
        .unwrap_err();
    assert!(
        matches!(
            error,
            generator::Error::Provider {
                status: Some(500),
                ..
            }
        ),
        "{error:?}"
    );
    assert!(error.to_string().contains("still down"), "{error}");
    assert_eq!(
        server.requests.lock().unwrap().len(),
        3,
        "one try and two retries"
    );

    let (url, server) = serve(vec![Reply::status(400, r#"{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: too large"}}"#)]).await;
    let client = Anthropic::new(url, "k").unwrap().with_retry(fast_retries());
    let error = collect_stream(&client, request(Model::new("m")))
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "the provider answered with an error (HTTP 400): max_tokens: too large"
    );
    assert_eq!(server.requests.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn broken_malformed_and_silent_streams_are_errors() {
    let (url, _) = serve(vec![Reply::ok(b"data: {not json}\n\n".to_vec(), 1)]).await;
    let client = OpenAiChat::new(url + "/v1", None).unwrap();
    let error = collect_stream(&client, request(Model::new("m")))
        .await
        .unwrap_err();
    assert!(
        matches!(error, generator::Error::MalformedStream { .. }),
        "{error:?}"
    );

    // Cut between two events: a stream that ends without saying it is complete.
    let whole = fixture("anthropic/tool-use.sse");
    let boundary = whole
        .windows(2)
        .enumerate()
        .filter(|(_, pair)| pair == b"\n\n")
        .map(|(at, _)| at + 2)
        .find(|at| *at > whole.len() / 2)
        .unwrap();
    let (url, _) = serve(vec![Reply::ok(whole[..boundary].to_vec(), 2)]).await;
    let client = Anthropic::new(url, "k").unwrap();
    let error = collect_stream(&client, request(Model::new("m")))
        .await
        .unwrap_err();
    assert!(
        matches!(error, generator::Error::IncompleteStream),
        "{error:?}"
    );
    // Cut inside an event: what arrived of it is not JSON.
    let (url, _) = serve(vec![Reply::ok(whole[..boundary + 40].to_vec(), 2)]).await;
    let client = Anthropic::new(url, "k").unwrap();
    let error = collect_stream(&client, request(Model::new("m")))
        .await
        .unwrap_err();
    assert!(
        matches!(error, generator::Error::MalformedStream { .. }),
        "{error:?}"
    );

    let mut stalled = Reply::ok(fixture("openai-chat/text-stop.sse")[..200].to_vec(), 1);
    stalled.stall = true;
    let (url, _) = serve(vec![stalled]).await;
    let client = OpenAiChat::new(url + "/v1", None)
        .unwrap()
        .with_idle_timeout(Duration::from_millis(200));
    let error = collect_stream(&client, request(Model::new("m")))
        .await
        .unwrap_err();
    assert!(
        matches!(error, generator::Error::IdleTimeout { .. }),
        "{error:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_whole_run_against_the_server_sends_tool_results_back() {
    let (url, server) = serve(vec![
        Reply::ok(fixture("openai-chat/single-tool-call-non-strict.sse"), 5),
        Reply::ok(fixture("openai-chat/text-stop.sse"), 5),
    ])
    .await;
    let weather = golato::Tool::new(
        "get_weather",
        "Weather.",
        json!({"type": "object"}),
        |_ctx, _args| async { Ok(golato::ToolResult::text("Sunny, 21 °C")) },
    );
    let client = OpenAiChat::new(url + "/v1", None).unwrap();
    let agent = provider_agent(client, vec![weather]);
    let result = agent.run(prompt("Weather in New York?")).await.unwrap();
    assert!(result.final_message.text().starts_with("I'm unable"));
    let requests = server.requests.lock().unwrap();
    assert_eq!(requests.len(), 2);
    let messages = requests[1].1["messages"].as_array().unwrap().clone();
    let tool_message = messages.iter().find(|m| m["role"] == "tool").unwrap();
    assert_eq!(tool_message["content"], "Sunny, 21 °C");
    assert!(tool_message["tool_call_id"]
        .as_str()
        .unwrap()
        .starts_with("call_"));
    let assistant = messages.iter().find(|m| m["role"] == "assistant").unwrap();
    assert_eq!(
        assistant["tool_calls"][0]["function"]["arguments"],
        r#"{"city":"New York City"}"#
    );
}

fn with_image_result(model: Model) -> Request {
    let mut request = request(model);
    request.messages = Arc::new(vec![
        Message::User(UserMessage::new("Look")),
        Message::Assistant(AssistantMessage::with_tool_calls([
            golato::message::ToolCall::new("c1", "shot", "{}"),
        ])),
        Message::ToolResult(ToolResultMessage {
            tool_call_id: "c1".into(),
            tool_name: "shot".into(),
            content: vec![
                Content::text("a picture"),
                Content::image("image/png", "iVBORw0KGgo="),
            ],
            details: None,
            is_error: false,
            attempt: None,
        }),
    ]);
    request
}

#[tokio::test]
async fn images_in_tool_results_follow_each_providers_rules() {
    let (url, server) = serve(vec![
        Reply::ok(fixture("openai-chat/text-stop.sse"), 1),
        Reply::ok(fixture("openai-chat/text-stop.sse"), 1),
    ])
    .await;
    let client = OpenAiChat::new(url + "/v1", None).unwrap();
    collect_stream(&client, with_image_result(Model::new("vision")))
        .await
        .unwrap();
    let mut blind = Model::new("text-only");
    blind.supports_images = false;
    collect_stream(&client, with_image_result(blind))
        .await
        .unwrap();
    {
        let requests = server.requests.lock().unwrap();
        let messages = requests[0].1["messages"].as_array().unwrap();
        assert_eq!(messages[3]["role"], "tool");
        assert_eq!(messages[3]["content"], "a picture");
        assert_eq!(
            messages[4]["role"], "user",
            "images follow the tool results in a user message"
        );
        assert_eq!(
            messages[4]["content"][1]["image_url"]["url"],
            "data:image/png;base64,iVBORw0KGgo="
        );
        let blind_messages = requests[1].1["messages"].as_array().unwrap();
        assert_eq!(
            blind_messages.len(),
            4,
            "no image message for a model without image input"
        );
        assert!(blind_messages[3]["content"]
            .as_str()
            .unwrap()
            .contains("left out"));
    }

    let (url, server) = serve(vec![Reply::ok(fixture("anthropic/basic-text.sse"), 1)]).await;
    let client = Anthropic::new(url, "k").unwrap();
    collect_stream(&client, with_image_result(Model::new("claude")))
        .await
        .unwrap();
    let requests = server.requests.lock().unwrap();
    let result = &requests[0].1["messages"][2]["content"][0];
    assert_eq!(result["type"], "tool_result");
    assert_eq!(result["tool_use_id"], "c1");
    assert_eq!(result["content"][1]["type"], "image");
    assert_eq!(result["content"][1]["source"]["media_type"], "image/png");
}

#[tokio::test]
async fn an_assistant_message_without_content_is_left_out_for_anthropic() {
    let (url, server) = serve(vec![Reply::ok(fixture("anthropic/basic-text.sse"), 1)]).await;
    let client = Anthropic::new(url, "k").unwrap();
    let mut request = request(Model::new("claude"));
    let cut_short = AssistantMessage {
        reasoning: "thinking about it".into(),
        stop_reason: golato::message::StopReason::Aborted,
        ..AssistantMessage::default()
    };
    request.messages = Arc::new(vec![
        Message::User(UserMessage::new("Hi")),
        Message::Assistant(cut_short),
        Message::User(UserMessage::new("Go on")),
    ]);
    collect_stream(&client, request).await.unwrap();
    let requests = server.requests.lock().unwrap();
    let roles: Vec<&str> = requests[0].1["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|message| message["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "user"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_mid_stream_ends_the_run_with_its_transcript() {
    let mut stalled = Reply::ok(fixture("openai-chat/text-stop.sse")[..2000].to_vec(), 1);
    stalled.stall = true;
    let (url, server) = serve(vec![stalled]).await;
    let agent = provider_agent(
        OpenAiChat::new(url + "/v1", None)
            .unwrap()
            .with_idle_timeout(HANG_GUARD),
        vec![],
    );
    let run = agent.start(prompt("hello"));
    // Cancel once some of the answer has streamed in.
    let mut first_text = String::new();
    while let Some(event) = run.next_event().await {
        if let golato::Event::MessageUpdate(update) = event {
            for delta in update.deltas {
                if let golato::generator::Delta::Text(text) = delta {
                    first_text.push_str(&text);
                }
            }
            run.cancel();
            break;
        }
    }
    match run.finish().await {
        Err(golato::agent::Error::Cancelled { messages }) => {
            assert_eq!(messages.len(), 2, "the prompt and the partial answer");
            let golato::message::Message::Assistant(partial) = &messages[1] else {
                panic!("expected the partial answer, got {:?}", messages[1]);
            };
            assert_eq!(partial.stop_reason, golato::message::StopReason::Aborted);
            assert!(partial.text().starts_with(&first_text), "{partial:?}");
        }
        other => panic!("expected Cancelled, got {other:?}"),
    }
    assert_eq!(server.requests.lock().unwrap().len(), 1);
}

/// A fixture's HTTP body: raw SSE as recorded, or JSON lines framed as `data:` events.
fn fixture_body(path: &str, done_marker: bool) -> Vec<u8> {
    let bytes = fixture(path);
    if !path.ends_with(".jsonl") {
        return bytes;
    }
    let mut framed: String = String::from_utf8(bytes)
        .unwrap()
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| format!("data: {line}\n\n"))
        .collect();
    if done_marker {
        framed.push_str("data: [DONE]\n\n");
    }
    framed.into_bytes()
}

/// The body in pieces of random sizes (seeded, so a failure can be replayed).
fn random_pieces(body: &[u8], seed: u64) -> Reply {
    let mut state = seed | 1;
    let mut chunks = Vec::new();
    let mut rest = body;
    while !rest.is_empty() {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let size = (state % 97 + 1) as usize;
        let (chunk, tail) = rest.split_at(size.min(rest.len()));
        chunks.push(chunk.to_vec());
        rest = tail;
    }
    Reply {
        status: 200,
        headers: vec![],
        chunks,
        stall: false,
    }
}

#[tokio::test]
async fn every_recorded_stream_replays_through_the_real_clients() {
    let openai_streams = [
        "openai-chat/parallel-tool-calls.sse",
        "openai-chat/single-tool-call-non-strict.sse",
        "openai-chat/single-tool-call-strict.sse",
        "openai-chat/strict-tool-call.sse",
        "openai-chat/finish-length.sse",
        "openai-chat/finish-length-2.sse",
        "openai-chat/text-stop.sse",
        "openai-chat/text-long.jsonl",
        "openai-compatible/groq-tool-call.jsonl",
        "openai-compatible/xai-tool-call.jsonl",
        "openai-compatible/deepseek-tool-call.jsonl",
        "openai-compatible/deepseek-text.jsonl",
    ];
    let anthropic_streams = [
        "anthropic/tool-use.sse",
        "anthropic/basic-text.sse",
        "anthropic/text-after-tool-results.sse",
        "anthropic/parallel-tool-use-no-args.sse",
        "anthropic/text-then-tool-no-args.jsonl",
        "anthropic/tool-quoted-input.jsonl",
    ];
    replay_all(&openai_streams, true, |url| {
        Box::new(OpenAiChat::new(url + "/v1", None).unwrap())
    })
    .await;
    replay_all(&anthropic_streams, false, |url| {
        Box::new(Anthropic::new(url, "k").unwrap())
    })
    .await;
    let responses_streams = [
        "openai-responses/azure-tool-call.jsonl",
        "openai-responses/lmstudio-reasoning-tool-call.jsonl",
    ];
    replay_all(&responses_streams, false, |url| {
        Box::new(OpenAiResponses::new(url + "/v1", None).unwrap())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_whole_run_on_the_responses_api_sends_function_call_outputs_back() {
    let (url, server) = serve(vec![
        Reply::ok(
            fixture_body("openai-responses/azure-tool-call.jsonl", false),
            5,
        ),
        Reply::ok(
            fixture_body("openai-responses/lmstudio-reasoning-tool-call.jsonl", false),
            3,
        ),
    ])
    .await;
    let weather = golato::Tool::new(
        "weather",
        "Weather.",
        json!({"type": "object", "properties": {"location": {"type": "string"}}}),
        |_ctx, _args| async {
            Ok(golato::ToolResult {
                content: vec![
                    Content::text("Sunny, 21 °C"),
                    Content::image("image/png", "iVBORw0KGgo="),
                ],
                ..golato::ToolResult::text("")
            })
        },
    );
    let client = OpenAiResponses::new(url + "/v1", Some("sk-test-key-0000".into())).unwrap();
    let agent = golato::Agent::new(golato::agent::Config {
        generator: Some(Arc::new(client)),
        model: Model::new("gpt-test"),
        system_prompt: Some("Be brief.".into()),
        tools: vec![weather],
        max_turns: Some(2),
        ..Default::default()
    })
    .unwrap();
    // The second answer calls the tool again; two turns are all this run may take.
    let error = agent
        .run(prompt("Weather in San Francisco?"))
        .await
        .unwrap_err();
    assert!(error.to_string().contains("max_turns"), "{error}");
    let requests = server.requests.lock().unwrap();
    assert_eq!(requests.len(), 2);
    let (headers, first) = &requests[0];
    assert_eq!(headers["authorization"], "Bearer sk-test-key-0000");
    assert_eq!(first["model"], "gpt-test");
    assert_eq!(first["instructions"], "Be brief.");
    assert_eq!(first["store"], false);
    assert_eq!(first["tools"][0]["name"], "weather");
    assert_eq!(first["input"][0]["role"], "user");
    assert_eq!(
        first["input"][0]["content"][0]["text"],
        "Weather in San Francisco?"
    );
    let input = requests[1].1["input"].as_array().unwrap();
    let call = input
        .iter()
        .find(|item| item["type"] == "function_call")
        .unwrap();
    assert!(call["call_id"].as_str().unwrap().starts_with("call_H5Dx"));
    assert_eq!(call["arguments"], r#"{"location":"San Francisco"}"#);
    let output = input
        .iter()
        .find(|item| item["type"] == "function_call_output")
        .unwrap();
    assert_eq!(output["call_id"], call["call_id"]);
    assert_eq!(
        output["output"][0],
        json!({"type": "input_text", "text": "Sunny, 21 °C"})
    );
    assert_eq!(
        output["output"][1],
        json!({"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="})
    );
}

#[tokio::test]
async fn provider_options_reach_every_provider_in_its_own_terms() {
    let model = Model::new("m")
        .with_temperature(0.25)
        .with_max_output_tokens(321)
        .with_tool_choice(ToolChoice::Tool("get_weather".into()))
        .with_parallel_tool_calls(false)
        .with_extra("top_p", json!(0.5))
        .with_extra("metadata", json!({"run": "options"}));
    let (url, server) = serve(vec![
        Reply::ok(fixture("openai-chat/text-stop.sse"), 1),
        Reply::ok(fixture("anthropic/basic-text.sse"), 1),
        Reply::ok(
            fixture_body("openai-responses/azure-tool-call.jsonl", false),
            1,
        ),
        Reply::ok(fixture("openai-chat/text-stop.sse"), 1),
    ])
    .await;
    let openai = OpenAiChat::new(format!("{url}/v1"), None).unwrap();
    let anthropic = Anthropic::new(url.clone(), "k").unwrap();
    let responses = OpenAiResponses::new(format!("{url}/v1"), None).unwrap();
    for client in [&openai as &dyn Generator, &anthropic, &responses] {
        collect_stream(client, request(model.clone()))
            .await
            .unwrap();
    }
    // The default choice sends nothing a server might not know.
    collect_stream(&openai, request(Model::new("m")))
        .await
        .unwrap();
    let requests = server.requests.lock().unwrap();
    let bodies: Vec<&Value> = requests.iter().map(|(_, body)| body).collect();
    for body in &bodies[..3] {
        assert_eq!(body["temperature"], 0.25);
        assert_eq!(body["top_p"], 0.5);
        assert_eq!(body["metadata"], json!({"run": "options"}));
    }
    let (chat, claude, responses) = (bodies[0], bodies[1], bodies[2]);
    assert_eq!(chat["max_tokens"], 321);
    assert_eq!(
        chat["tool_choice"],
        json!({"type": "function", "function": {"name": "get_weather"}})
    );
    assert_eq!(chat["parallel_tool_calls"], false);
    assert_eq!(claude["max_tokens"], 321);
    assert_eq!(
        claude["tool_choice"],
        json!({"type": "tool", "name": "get_weather", "disable_parallel_tool_use": true})
    );
    assert_eq!(responses["max_output_tokens"], 321);
    assert_eq!(
        responses["tool_choice"],
        json!({"type": "function", "name": "get_weather"})
    );
    assert_eq!(responses["parallel_tool_calls"], false);
    let plain = bodies[3];
    for field in ["temperature", "tool_choice", "parallel_tool_calls", "top_p"] {
        assert!(
            plain.get(field).is_none(),
            "{field} sent by default: {plain}"
        );
    }
}

/// Serves each stream whole and in random pieces to a client made by `client`; the three
/// messages must be equal and not empty.
async fn replay_all(
    paths: &[&str],
    done_marker: bool,
    client: impl Fn(String) -> Box<dyn Generator>,
) {
    for path in paths {
        let body = fixture_body(path, done_marker);
        let (url, _) = serve(vec![
            Reply::ok(body.clone(), 1),
            random_pieces(&body, 7),
            random_pieces(&body, 42),
        ])
        .await;
        let client = client(url);
        let whole = collect_stream(client.as_ref(), request(Model::new("m")))
            .await
            .unwrap()
            .1;
        for _ in 0..2 {
            assert_eq!(
                collect_stream(client.as_ref(), request(Model::new("m")))
                    .await
                    .unwrap()
                    .1,
                whole,
                "{path}"
            );
        }
        assert!(
            !whole.tool_calls.is_empty() || !whole.text().is_empty(),
            "{path}: empty message"
        );
    }
}

#[test]
fn a_client_never_shows_its_api_key_in_debug_output() {
    let key = "sk-very-secret-key-123";
    let openai = OpenAiChat::new("http://127.0.0.1:9", Some(key.to_owned())).unwrap();
    let anthropic = Anthropic::new("http://127.0.0.1:9", key).unwrap();
    let responses = OpenAiResponses::new("http://127.0.0.1:9", Some(key.to_owned())).unwrap();
    for shown in [
        format!("{openai:?}"),
        format!("{anthropic:?}"),
        format!("{responses:?}"),
    ] {
        assert!(!shown.contains(key), "{shown}");
        assert!(
            shown.contains("<redacted>") && shown.contains("127.0.0.1:9"),
            "{shown}"
        );
    }
    let keyless = format!("{:?}", OpenAiChat::new("http://127.0.0.1:9", None).unwrap());
    assert!(keyless.contains("api_key: None"), "{keyless}");
}

#[tokio::test]
async fn a_refused_connection_says_so_once() {
    // Nothing listens on a port just released.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let client = OpenAiChat::new(format!("http://127.0.0.1:{port}/v1"), None)
        .unwrap()
        .with_retry(fast_retries());
    let error = collect_stream(&client, request(Model::new("m")))
        .await
        .expect_err("nothing listens");
    let text = error.to_string();
    assert!(text.to_lowercase().contains("connection refused"), "{text}");
    assert_eq!(
        text.matches(&format!("127.0.0.1:{port}")).count(),
        1,
        "{text}"
    );
    // The cause stays reachable for a caller that inspects it.
    let source = std::error::Error::source(&error).expect("the HTTP client's error");
    let client_error = source
        .downcast_ref::<reqwest::Error>()
        .expect("a reqwest error");
    assert!(client_error.is_connect(), "{client_error:?}");
}

#[tokio::test]
async fn a_provider_refuses_a_request_with_no_model_chosen() {
    let (url, server) = serve(vec![]).await;
    let openai = OpenAiChat::new(format!("{url}/v1"), None).unwrap();
    let anthropic = Anthropic::new(url, "key").unwrap();
    for client in [&openai as &dyn Generator, &anthropic] {
        for model in [Model::default(), Model::new(" ")] {
            let error = collect_stream(client, request(model))
                .await
                .expect_err("refused");
            assert!(
                matches!(error, generator::Error::NoModel { .. })
                    && error.to_string().contains("agent::Config::model"),
                "{error}"
            );
        }
    }
    assert!(
        server.requests.lock().unwrap().is_empty(),
        "nothing was sent"
    );
}

/// Everything logged while it runs, at every level, as text.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn api_keys_stay_out_of_logs_and_errors_even_when_the_server_quotes_them() {
    let key = "sk-very-secret-key-123";
    let captured = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_writer({
            let captured = captured.clone();
            move || captured.clone()
        })
        .finish();
    // This test's runtime has one thread: everything the clients do is logged here.
    let _logging = tracing::subscriber::set_default(subscriber);
    let refusal = format!(r#"{{"error": {{"message": "Incorrect API key provided: {key}."}}}}"#);
    let (url, _server) = serve(vec![
        Reply::status(500, "busy"),
        Reply::status(401, &refusal),
        Reply::status(500, "busy"),
        Reply::status(401, &refusal),
    ])
    .await;
    let openai = OpenAiChat::new(format!("{url}/v1"), Some(key.to_owned()))
        .unwrap()
        .with_retry(fast_retries());
    let anthropic = Anthropic::new(url, key).unwrap().with_retry(fast_retries());
    for client in [&openai as &dyn Generator, &anthropic] {
        let error = collect_stream(client, request(Model::new("m")))
            .await
            .expect_err("refused");
        let shown = format!("{error} {error:?}");
        assert!(!shown.contains(key), "{shown}");
        assert!(
            shown.contains("Incorrect API key provided: <redacted>."),
            "{shown}"
        );
    }
    let logged = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    assert!(logged.contains("retrying"), "nothing was logged: {logged}");
    assert!(!logged.contains(key), "{logged}");
}

/// Prompt caching, as each API takes it: Anthropic's breakpoints on the system prompt, the
/// last tool and the newest message; OpenAI's key, the same for every turn of a conversation.
#[tokio::test]
async fn requests_ask_each_provider_to_cache_the_prefix_and_can_be_told_not_to() {
    let turn_two = |model: Model| {
        let mut request = request(model);
        let mut messages = (*request.messages).clone();
        messages.push(Message::Assistant(
            golato::message::AssistantMessage::with_text("Sunny."),
        ));
        messages.push(Message::User(UserMessage::new("And tomorrow?")));
        request.messages = Arc::new(messages);
        request
    };
    let (url, server) = serve(vec![
        Reply::ok(fixture("anthropic/tool-use.sse"), 1),
        Reply::ok(fixture("anthropic/tool-use.sse"), 1),
    ])
    .await;
    let client = Anthropic::new(url, "ant-key").unwrap();
    collect_stream(&client, turn_two(Model::new("claude")))
        .await
        .unwrap();
    let (_, body) = server.requests.lock().unwrap().remove(0);
    let ephemeral = json!({"type": "ephemeral"});
    assert_eq!(body["system"][0]["cache_control"], ephemeral, "{body}");
    assert_eq!(body["tools"][0]["cache_control"], ephemeral);
    let last = body["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["content"][0]["text"], "And tomorrow?");
    assert_eq!(last["content"][0]["cache_control"], ephemeral);
    // Three breakpoints, within the four the API allows.
    assert_eq!(body.to_string().matches("cache_control").count(), 3);
    let off = Model::new("claude").with_prompt_cache(golato::generator::PromptCache::off());
    collect_stream(&client, turn_two(off)).await.unwrap();
    let (_, body) = server.requests.lock().unwrap().remove(0);
    assert_eq!(body["system"], "Be brief.");
    assert!(!body.to_string().contains("cache_control"), "{body}");

    let (url, server) = serve(
        (0..4)
            .map(|_| Reply::ok(fixture("openai-chat/text-stop.sse"), 1))
            .collect(),
    )
    .await;
    let client = OpenAiChat::new(format!("{url}/v1"), Some("sk".into())).unwrap();
    collect_stream(&client, request(Model::new("gpt")))
        .await
        .unwrap();
    collect_stream(&client, turn_two(Model::new("gpt")))
        .await
        .unwrap();
    let keyed =
        Model::new("gpt").with_prompt_cache(golato::generator::PromptCache::keyed("user-42"));
    collect_stream(&client, turn_two(keyed)).await.unwrap();
    let off = Model::new("gpt").with_prompt_cache(golato::generator::PromptCache::off());
    collect_stream(&client, turn_two(off)).await.unwrap();
    let bodies = server.take_bodies();
    let first_key = bodies[0]["prompt_cache_key"].as_str().unwrap();
    assert!(first_key.starts_with("golato-"), "{first_key}");
    // Turn two of the same conversation: the same key, so the same cache.
    assert_eq!(bodies[1]["prompt_cache_key"], first_key);
    assert_eq!(bodies[2]["prompt_cache_key"], "user-42");
    assert!(bodies[3].get("prompt_cache_key").is_none());
}

#[tokio::test]
async fn the_output_schema_is_asked_of_each_provider_in_its_own_terms() {
    let schema = json!({"type": "object", "properties": {"ok": {"type": "boolean"}}});
    let mut model = Model::new("m");
    model.output_schema = Some(Arc::new(schema.clone()));
    let (url, server) = serve(vec![
        Reply::ok(fixture("openai-chat/text-stop.sse"), 1),
        Reply::ok(fixture("anthropic/tool-use.sse"), 1),
    ])
    .await;
    let chat = OpenAiChat::new(format!("{url}/v1"), Some("sk".into())).unwrap();
    collect_stream(&chat, request(model.clone())).await.unwrap();
    let anthropic = Anthropic::new(url, "key").unwrap();
    collect_stream(&anthropic, request(model)).await.unwrap();
    let bodies = server.take_bodies();
    assert_eq!(bodies[0]["response_format"]["type"], "json_schema");
    assert_eq!(
        bodies[0]["response_format"]["json_schema"]["schema"],
        schema
    );
    let system = bodies[1]["system"][0]["text"].as_str().unwrap();
    assert!(system.starts_with("Be brief.\n\n"), "{system}");
    assert!(
        system.contains("valid against this JSON Schema"),
        "{system}"
    );
}

/// The fake provider checks what every test sends: a request with a tool result whose call is
/// missing (or a call without a result) is refused, in each of the three wire formats, as
/// OpenAI refuses it; a paired one passes.
#[tokio::test]
async fn the_fake_provider_refuses_a_result_without_its_call_in_every_format() {
    use support::provider::unpaired;
    let chat_call = json!({"role": "assistant", "tool_calls": [{"id": "a", "type": "function"}]});
    let chat_result = json!({"role": "tool", "tool_call_id": "a", "content": "ok"});
    assert_eq!(
        unpaired(&json!({"messages": [chat_call, chat_result]})),
        None
    );
    assert!(unpaired(&json!({"messages": [chat_result]}))
        .unwrap()
        .contains("\"a\""));
    assert!(unpaired(&json!({"messages": [chat_call]}))
        .unwrap()
        .contains("no result"));
    assert!(unpaired(&json!({"messages": [chat_result, chat_call]})).is_some());
    let use_block = json!({"role": "assistant", "content": [{"type": "tool_use", "id": "b"}]});
    let result_block =
        json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "b"}]});
    assert_eq!(
        unpaired(&json!({"messages": [use_block, result_block]})),
        None
    );
    assert!(unpaired(&json!({"messages": [result_block]})).is_some());
    let call_item = json!({"type": "function_call", "call_id": "c"});
    let output_item = json!({"type": "function_call_output", "call_id": "c"});
    assert_eq!(unpaired(&json!({"input": [call_item, output_item]})), None);
    assert!(unpaired(&json!({"input": [output_item]})).is_some());
    assert!(unpaired(&json!({"input": [call_item]})).is_some());

    let (url, server) = serve(vec![Reply::ok(fixture("openai-chat/text-stop.sse"), 1)]).await;
    let response = reqwest::Client::new()
        .post(format!("{url}/v1/chat/completions"))
        .json(&json!({"model": "m", "messages": [chat_result]}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 400);
    assert!(response.text().await.unwrap().contains("without that call"));
    assert_eq!(server.requests.lock().unwrap().len(), 1);
}
