//! `golato::observe::otel`: golato's spans as OpenTelemetry spans with the GenAI semantic
//! conventions, read back through the SDK's in-memory exporter.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use golato::generator::Scripted;
use golato::message::{AssistantMessage, Usage};
use opentelemetry::trace::{SpanKind, Status, TracerProvider as _};
use opentelemetry::Value;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use support::*;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

fn attribute<'a>(span: &'a SpanData, key: &str) -> Option<&'a Value> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| &kv.value)
}

fn text(span: &SpanData, key: &str) -> String {
    attribute(span, key)
        .unwrap_or_else(|| panic!("span {} has no {key}: {:?}", span.name, span.attributes))
        .as_str()
        .into_owned()
}

fn failing_tool() -> golato::Tool {
    golato::Tool::new(
        "fail",
        "Fails.",
        serde_json::json!({"type": "object"}),
        |_ctx, _args| async { Ok(golato::ToolResult::error("it broke")) },
    )
}

#[test]
fn tool_calls_and_model_requests_follow_the_genai_conventions() {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    tracing_subscriber::registry()
        .with(golato::observe::otel::layer(provider.tracer("golato-test")))
        .init();

    let mut asking = AssistantMessage::with_tool_calls([
        call("1", "echo", r#"{"text":"hi"}"#),
        call("2", "nope", "{}"),
        call("3", "fail", "{}"),
    ]);
    asking.usage = Usage {
        input_tokens: 12,
        output_tokens: 3,
        ..Usage::default()
    };
    let agent = agent_with(
        Scripted::new([asking, AssistantMessage::with_text("done")]),
        vec![echo_tool(), failing_tool()],
    );
    let run = agent.start(prompt("go"));
    run.events().for_each(drop);
    run.wait().unwrap();
    drop(agent);
    // The run's span ends when its actor is gone, just after the outcome is out: wait for it.
    let started = std::time::Instant::now();
    let spans = loop {
        provider.force_flush().unwrap();
        let spans = exporter.get_finished_spans().unwrap();
        if spans.iter().any(|s| s.name == "run") {
            break spans;
        }
        assert!(started.elapsed() < HANG_GUARD, "the run's span never ended");
        std::thread::yield_now();
    };
    let named =
        |name: &str| -> Vec<&SpanData> { spans.iter().filter(|s| s.name == name).collect() };

    let echo = named("execute_tool echo");
    assert_eq!(
        echo.len(),
        1,
        "one span for the valid call: {:?}",
        spans.iter().map(|s| &s.name).collect::<Vec<_>>()
    );
    let echo = echo[0];
    assert_eq!(text(echo, "gen_ai.operation.name"), "execute_tool");
    assert_eq!(text(echo, "gen_ai.tool.name"), "echo");
    assert_eq!(text(echo, "gen_ai.tool.call.id"), "1");
    assert_eq!(echo.status, Status::Unset);
    // No span for a call that failed validation (it never ran); an error span for a call
    // whose result is an error.
    assert!(spans.iter().all(|s| s.name != "execute_tool nope"));
    let fail = named("execute_tool fail");
    assert_eq!(fail.len(), 1);
    assert!(
        matches!(fail[0].status, Status::Error { .. }),
        "{:?}",
        fail[0].status
    );
    // The call nests in its batch, the batch in its turn, the turn in its run.
    let parent_of = |span: &SpanData| {
        spans
            .iter()
            .find(|p| p.span_context.span_id() == span.parent_span_id)
            .map(|p| p.name.to_string())
    };
    assert_eq!(parent_of(echo).as_deref(), Some("batch"));
    let batch = named("batch")[0];
    assert_eq!(parent_of(batch).as_deref(), Some("turn"));
    assert_eq!(parent_of(named("turn")[0]).as_deref(), Some("run"));

    let chats = named("chat scripted");
    assert_eq!(chats.len(), 2, "one span per model request");
    let first = chats
        .iter()
        .find(|s| attribute(s, "gen_ai.usage.input_tokens").is_some())
        .expect("the request whose answer reported usage");
    assert_eq!(first.span_kind, SpanKind::Client);
    assert_eq!(text(first, "gen_ai.operation.name"), "chat");
    assert_eq!(text(first, "gen_ai.request.model"), "scripted");
    assert_eq!(
        attribute(first, "gen_ai.usage.input_tokens"),
        Some(&Value::I64(12))
    );
    assert_eq!(
        attribute(first, "gen_ai.usage.output_tokens"),
        Some(&Value::I64(3))
    );

    // Actor messages are spans too, with their mailbox figures.
    let message = spans
        .iter()
        .find(|s| s.name == "actor_message" && text(s, "actor") == "BatchSupervisor")
        .expect("the supervisor's messages");
    assert!(attribute(message, "mailbox_wait_us").is_some());
    assert!(attribute(message, "queue_depth").is_some());
}

#[test]
fn the_actor_consoles_figures_are_metrics_a_reader_collects() {
    use golato::host::console::{ConsoleConfig, Kind};
    use opentelemetry::metrics::MeterProvider as _;
    use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
    use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};

    let off = golato::Host::new(golato::HostConfig::default()).unwrap();
    let exporter = InMemoryMetricExporter::default();
    let provider = SdkMeterProvider::builder()
        .with_reader(PeriodicReader::builder(exporter.clone()).build())
        .build();
    let meter = provider.meter("golato-test");
    let refused = golato::observe::otel::console_metrics(&off, &meter).unwrap_err();
    assert!(refused.to_string().contains("HostConfig"), "{refused}");

    let host = golato::Host::new(golato::HostConfig {
        console: Some(ConsoleConfig {
            handler_threshold: std::time::Duration::ZERO,
            ..ConsoleConfig::default()
        }),
        ..golato::HostConfig::default()
    })
    .unwrap();
    let _metrics = golato::observe::otel::console_metrics(&host, &meter).unwrap();
    // Two actors of another kind, one of them running (and so flagged at once).
    let idle = host.probe(Kind::Other, "Idle");
    let busy = host.probe(Kind::Other, "Busy");
    busy.running(|| "work".into());
    // The lint needs its threshold (zero) passed: the console's clock (a coarse one, which
    // ticks every few milliseconds) has to move on first.
    let console = host.console().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while console.snapshot().lints.is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "the busy actor was never flagged"
        );
        std::thread::yield_now();
    }
    provider.force_flush().unwrap();

    let finished = exporter.get_finished_metrics().unwrap();
    let gauge = |name: &str, key: &str, value: &str| -> Option<u64> {
        finished
            .iter()
            .flat_map(|resource| resource.scope_metrics())
            .flat_map(|scope| scope.metrics())
            .filter(|metric| metric.name() == name)
            .find_map(|metric| match metric.data() {
                AggregatedMetrics::U64(MetricData::Gauge(gauge)) => gauge
                    .data_points()
                    .find(|point| {
                        point
                            .attributes()
                            .any(|kv| kv.key.as_str() == key && kv.value.as_str() == value)
                    })
                    .map(|point| point.value()),
                _ => None,
            })
    };
    assert_eq!(gauge("golato.actors", "kind", "other"), Some(2));
    assert_eq!(
        gauge("golato.console.lints", "lint", "handler_running"),
        Some(1)
    );
    drop((idle, busy));
    provider.shutdown().unwrap();
}
