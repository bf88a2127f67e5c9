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

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

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

/// The actor console's figures as OpenTelemetry metrics, read when the meter's reader collects
/// (the console itself is sampled at most twice a second, whatever the number of readers):
///
/// - `golato.actors` (gauge, by `kind`): live actors;
/// - `golato.actor.mailbox.depth` (gauge, by `kind`): messages waiting, summed;
/// - `golato.actor.busy` (gauge, µs, by `kind`): time the live actors spent handling messages;
/// - `golato.console.lints` (gauge, by `lint`): what looks wrong now;
/// - `golato.actor.handled` (counter, by `actor` type): messages handled since the host began;
/// - `golato.actor.mailbox.wait` (counter, by `actor` type and `le`, the bucket's bound in µs,
///   `inf` for the last): handled messages by how long they waited, since the host began.
///
/// Keep the returned value: it holds the instruments. It holds a handle to the host, too.
///
/// # Errors
/// [`ConsoleOff`] when the host's console is off (`HostConfig::console`).
pub fn console_metrics(
    host: &crate::Host,
    meter: &opentelemetry::metrics::Meter,
) -> Result<ConsoleMetrics, ConsoleOff> {
    use opentelemetry::KeyValue;
    let sampled = Arc::new(Sampled {
        console: host.console().cloned().ok_or(ConsoleOff)?,
        last: Mutex::new(None),
    });
    let by_kind = |name: &'static str, pick: fn(&Figures) -> &BTreeMap<&'static str, u64>| {
        let sampled = Arc::clone(&sampled);
        meter
            .u64_observable_gauge(name)
            .with_callback(move |observer| {
                for (key, value) in pick(&sampled.figures()) {
                    observer.observe(*value, &[KeyValue::new("kind", *key)]);
                }
            })
            .build()
    };
    let gauges = vec![
        by_kind("golato.actors", |figures| &figures.live),
        by_kind("golato.actor.mailbox.depth", |figures| &figures.depth),
        by_kind("golato.actor.busy", |figures| &figures.busy_us),
        {
            let sampled = Arc::clone(&sampled);
            meter
                .u64_observable_gauge("golato.console.lints")
                .with_callback(move |observer| {
                    for (lint, count) in &sampled.figures().lints {
                        observer.observe(*count, &[KeyValue::new("lint", *lint)]);
                    }
                })
                .build()
        },
    ];
    let counters = vec![
        {
            let host = host.clone();
            meter
                .u64_observable_counter("golato.actor.handled")
                .with_callback(move |observer| {
                    for actor in host.stats().actors {
                        observer.observe(
                            actor.messages_handled,
                            &[KeyValue::new("actor", actor.actor.clone())],
                        );
                    }
                })
                .build()
        },
        {
            let host = host.clone();
            meter
                .u64_observable_counter("golato.actor.mailbox.wait")
                .with_callback(move |observer| {
                    for actor in host.stats().actors {
                        for bucket in &actor.mailbox_wait.buckets {
                            let le = bucket
                                .up_to
                                .map_or("inf".to_owned(), |bound| bound.as_micros().to_string());
                            observer.observe(
                                bucket.count,
                                &[
                                    KeyValue::new("actor", actor.actor.clone()),
                                    KeyValue::new("le", le),
                                ],
                            );
                        }
                    }
                })
                .build()
        },
    ];
    Ok(ConsoleMetrics {
        _gauges: gauges,
        _counters: counters,
    })
}

/// The host's console is off: turn it on with `HostConfig::console` to export its metrics.
#[derive(Debug, thiserror::Error)]
#[error("the host's actor console is off, so it has no figures to export; build the host with HostConfig {{ console: Some(ConsoleConfig::default()), .. }}")]
pub struct ConsoleOff;

/// The console's instruments, registered with a meter; keep it while they should report.
#[derive(Debug)]
pub struct ConsoleMetrics {
    _gauges: Vec<opentelemetry::metrics::ObservableGauge<u64>>,
    _counters: Vec<opentelemetry::metrics::ObservableCounter<u64>>,
}

/// The console's figures, sampled at most twice a second for every instrument.
struct Sampled {
    console: golato_actors::console::Console,
    last: Mutex<Option<(std::time::Instant, Arc<Figures>)>>,
}

#[derive(Default)]
struct Figures {
    live: BTreeMap<&'static str, u64>,
    depth: BTreeMap<&'static str, u64>,
    busy_us: BTreeMap<&'static str, u64>,
    lints: BTreeMap<&'static str, u64>,
}

impl Sampled {
    fn figures(&self) -> Arc<Figures> {
        let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((at, figures)) = last.as_ref() {
            if at.elapsed() < std::time::Duration::from_millis(500) {
                return Arc::clone(figures);
            }
        }
        let snapshot = self.console.snapshot();
        let mut figures = Figures::default();
        for actor in &snapshot.actors {
            let kind = actor.kind.as_str();
            *figures.live.entry(kind).or_default() += 1;
            *figures.depth.entry(kind).or_default() += actor.mailbox_depth as u64;
            *figures.busy_us.entry(kind).or_default() += actor.busy.total_us;
        }
        for lint in &snapshot.lints {
            *figures.lints.entry(lint.lint.as_str()).or_default() += 1;
        }
        let figures = Arc::new(figures);
        *last = Some((std::time::Instant::now(), Arc::clone(&figures)));
        figures
    }
}
