//! The provider clients against llmock (a Python package), a third-party fake of the OpenAI and Anthropic APIs
//! with injectable faults and a verdict on how the client behaved. `.ci/run` installs and starts
//! it and runs these tests with `--ignored`; by hand:
//!
//! ```text
//! pip install llmock==0.2.2 && llmock serve --port 8000 &
//! GOLATO_LLMOCK_URL=http://127.0.0.1:8000 cargo test --test llmock -- --ignored
//! ```

use crate::support;

use std::time::Duration;

use futures::StreamExt;
use golato::generator::{
    self, Anthropic, Generator, Model, OpenAiChat, OpenAiResponses, Request, RetryPolicy,
    StreamEvent,
};
use golato::message::{AssistantMessage, Message, StopReason, UserMessage};
use serde_json::{json, Value};
use support::*;

/// llmock keeps one scenario queue: the tests take turns.
static SERVER: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn base() -> String {
    std::env::var("GOLATO_LLMOCK_URL")
        .expect("GOLATO_LLMOCK_URL must point at a running llmock (see this file's header)")
}

async fn admin(path: &str, body: Option<Value>) -> Value {
    let client = reqwest::Client::new();
    let url = format!("{}/_llmock/{path}", base());
    let response = match body {
        Some(body) => {
            client
                .post(url)
                .header("content-type", "application/json")
                .body(body.to_string())
                .send()
                .await
        }
        None => client.get(url).send().await,
    };
    serde_json::from_str(&response.unwrap().text().await.unwrap()).unwrap()
}

async fn scenario(behaviors: Value) {
    admin("reset", Some(json!({}))).await;
    admin("scenario", Some(json!({"behaviors": behaviors}))).await;
}

async fn assert_verdict_passed() {
    let verdict = admin("verdict", None).await;
    assert_eq!(
        verdict["passed"], true,
        "llmock's verdict on golato: {verdict:#}"
    );
}

fn openai() -> OpenAiChat {
    OpenAiChat::new(format!("{}/v1", base()), Some("test-key".into()))
        .unwrap()
        .with_retry(RetryPolicy {
            max_retries: 3,
            initial_backoff: Duration::from_millis(50),
            max_backoff: Duration::from_secs(2),
        })
        .with_idle_timeout(Duration::from_secs(5))
}

fn responses() -> OpenAiResponses {
    OpenAiResponses::new(format!("{}/v1", base()), Some("test-key".into())).unwrap()
}

fn anthropic() -> Anthropic {
    Anthropic::new(format!("{}/anthropic", base()), "test-key").unwrap()
}

fn request() -> Request {
    Request {
        model: Model::new("gpt-4o"),
        system_prompt: None,
        messages: std::sync::Arc::new(vec![Message::User(UserMessage::new("Say hello"))]),
        tools: Vec::new().into(),
        compacted_turns: 0,
    }
}

async fn generate(generator: &dyn Generator) -> Result<AssistantMessage, generator::Error> {
    let mut stream = generator.stream(request());
    while let Some(item) = stream.next().await {
        if let StreamEvent::Done(message) = item? {
            return Ok(message);
        }
    }
    panic!("the stream ended without a message")
}

#[tokio::test]
#[ignore = "needs an llmock server: .ci/run starts one and runs this with --ignored"]
async fn scripted_replies_stream_through_every_client() {
    let _turn = SERVER.lock().await;
    scenario(json!([{"type": "reply", "text": "hello from llmock"}])).await;
    let message = generate(&openai()).await.unwrap();
    assert_eq!(
        (message.text().as_str(), message.stop_reason),
        ("hello from llmock", StopReason::Stop)
    );
    scenario(json!([{"type": "reply", "text": "hello from claude"}])).await;
    let message = generate(&anthropic()).await.unwrap();
    assert_eq!(
        (message.text().as_str(), message.stop_reason),
        ("hello from claude", StopReason::Stop)
    );
    scenario(json!([{"type": "reply", "text": "hello from responses"}])).await;
    let message = generate(&responses()).await.unwrap();
    assert_eq!(
        (message.text().as_str(), message.stop_reason),
        ("hello from responses", StopReason::Stop)
    );
    assert_verdict_passed().await;
}

#[tokio::test]
#[ignore = "needs an llmock server: .ci/run starts one and runs this with --ignored"]
async fn rate_limits_are_retried_after_the_wait_the_server_asks_for() {
    let _turn = SERVER.lock().await;
    scenario(json!([{"type": "fail", "status": 429, "retry_after": 0.3, "times": 2}])).await;
    let message = generate(&openai()).await.unwrap();
    assert!(!message.text().is_empty());
    let requests = admin("requests", None).await;
    assert!(
        requests.as_array().map_or(0, Vec::len) >= 3
            || requests["requests"].as_array().map_or(0, Vec::len) >= 3,
        "{requests:#}"
    );
    assert_verdict_passed().await;
}

#[tokio::test]
#[ignore = "needs an llmock server: .ci/run starts one and runs this with --ignored"]
async fn client_errors_are_not_retried_and_carry_the_providers_message() {
    let _turn = SERVER.lock().await;
    scenario(json!([{"type": "fail", "status": 400}])).await;
    let error = generate(&openai()).await.unwrap_err();
    assert!(
        matches!(
            error,
            generator::Error::Provider {
                status: Some(400),
                ..
            }
        ),
        "{error:?}"
    );
    scenario(json!([{"type": "fail", "status": 529}, {"type": "fail", "status": 401}])).await;
    let error = generate(&anthropic()).await.unwrap_err();
    assert!(
        matches!(
            error,
            generator::Error::Provider {
                status: Some(401),
                ..
            }
        ),
        "{error:?}"
    );
    assert_verdict_passed().await;
}

#[tokio::test]
#[ignore = "needs an llmock server: .ci/run starts one and runs this with --ignored"]
async fn broken_streams_are_errors_not_partial_answers() {
    let _turn = SERVER.lock().await;
    for (fault, check) in [
        (
            "truncate",
            (|e: &generator::Error| matches!(e, generator::Error::IncompleteStream))
                as fn(&generator::Error) -> bool,
        ),
        ("disconnect", |e| {
            matches!(
                e,
                generator::Error::Http { .. } | generator::Error::IncompleteStream
            )
        }),
        ("malformed", |e| {
            matches!(e, generator::Error::MalformedStream { .. })
        }),
    ] {
        scenario(json!([{"type": "stream_fault", "kind": fault, "after_chunks": 2}])).await;
        let error = generate(&openai()).await.unwrap_err();
        assert!(check(&error), "{fault}: {error:?}");
    }
    assert_verdict_passed().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs an llmock server: .ci/run starts one and runs this with --ignored"]
async fn an_agent_runs_the_tool_llmock_calls_then_ends() {
    let _turn = SERVER.lock().await;
    admin("reset", Some(json!({}))).await;
    let weather = golato::Tool::new(
        "get_weather",
        "Get the current weather for a city.",
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
        |_ctx, args| async move {
            Ok(golato::ToolResult::text(format!(
                "21C in {}",
                args["city"].as_str().unwrap_or("?")
            )))
        },
    );
    for generator in [
        Box::new(openai()) as Box<dyn Generator>,
        Box::new(anthropic()),
        Box::new(responses()),
    ] {
        let agent = golato::Agent::new(golato::agent::Config {
            generator: Some(std::sync::Arc::from(generator)),
            // A provider refuses a request that names no model.
            model: Model::new("gpt-4o"),
            tools: vec![weather.clone()],
            max_turns: Some(5),
            ..Default::default()
        })
        .unwrap();
        let result = agent
            .run(prompt("What's the weather in Paris?"))
            .await
            .unwrap();
        let results = transcript_results(&result.messages);
        assert_eq!(results.len(), 1, "{:#?}", result.messages);
        assert!(!results[0].is_error, "{}", results[0].text());
        assert!(results[0].text().starts_with("21C in "));
        assert_eq!(result.final_message.stop_reason, StopReason::Stop);
    }
    assert_verdict_passed().await;
}
