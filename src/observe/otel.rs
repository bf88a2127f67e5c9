//! golato's spans as OpenTelemetry spans (the `otel` feature).
//!
//! Every span golato makes becomes an OpenTelemetry span, nested as in `tracing` (run → turn →
//! batch → call). Where OpenTelemetry's GenAI semantic conventions apply, they are followed: a
//! model request is a `chat {model}` span of kind client with `gen_ai.operation.name = chat`,
//! `gen_ai.request.model` and, when the provider reports them, `gen_ai.usage.input_tokens` and
//! `gen_ai.usage.output_tokens`; a tool call is an `execute_tool {tool}` span with
//! `gen_ai.operation.name = execute_tool`, `gen_ai.tool.name` and `gen_ai.tool.call.id`, whose
//! status is an error when the call's result is one. Actor messages are spans too
//! (`actor_message`, with the actor, message type, mailbox wait and queue depth).
//!
//! [`otlp`] exports to an OTLP/HTTP collector (Jaeger, Tempo, Honeycomb, the OpenTelemetry
//! Collector); [`layer`] takes a tracer of yours.
//!
//! ```no_run
//! use tracing_subscriber::layer::SubscriberExt;
//! use tracing_subscriber::util::SubscriberInitExt;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let (layer, provider) = golato::observe::otel::otlp("http://localhost:4318/v1/traces", "my-service")?;
//! tracing_subscriber::registry().with(layer).init();
//! // ... run agents ...
//! provider.shutdown()?; // flushes what is still buffered
//! # Ok(())
//! # }
//! ```

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::WithExportConfig;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing::Subscriber;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::{EnvFilter, Layer};

pub use opentelemetry_otlp::ExporterBuildError;

use super::DEFAULT_FILTER;

/// A layer turning golato's spans (filtered to [`DEFAULT_FILTER`]) into OpenTelemetry spans
/// made by `tracer`.
pub fn layer<S, T>(tracer: T) -> impl Layer<S> + 'static
where
    S: Subscriber + for<'span> LookupSpan<'span>,
    T: opentelemetry::trace::Tracer + Send + Sync + 'static,
    T::Span: Send + Sync,
{
    tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_filter(EnvFilter::new(DEFAULT_FILTER))
}

/// A layer exporting golato's spans over OTLP/HTTP (protobuf) to `endpoint` (such as
/// `http://localhost:4318/v1/traces`) as the service `service_name`, in batches from a
/// background thread. Keep the returned provider, and call its `shutdown` before the process
/// exits, so that the last batch is sent.
///
/// # Errors
/// [`ExporterBuildError`] when the exporter cannot be built (an invalid endpoint, say).
pub fn otlp<S>(
    endpoint: &str,
    service_name: &str,
) -> Result<(impl Layer<S> + 'static, SdkTracerProvider), ExporterBuildError>
where
    S: Subscriber + for<'span> LookupSpan<'span>,
{
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_endpoint(endpoint)
        .build()?;
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(
            opentelemetry_sdk::Resource::builder()
                .with_service_name(service_name.to_owned())
                .build(),
        )
        .build();
    let tracer = provider.tracer("golato");
    Ok((layer(tracer), provider))
}
