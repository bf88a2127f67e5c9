//! Every actor message is handled inside a span naming the actor and the message type, with its
//! mailbox wait and queue depth; spans nest run → turn → batch → call.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use support::*;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id};
use tracing::Subscriber;
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

#[derive(Debug, Clone, Default)]
struct Recorded {
    name: String,
    fields: HashMap<String, String>,
    ancestors: Vec<String>,
}

#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<Recorded>>>);

struct Fields<'a>(&'a mut HashMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Recorder {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut recorded = Recorded {
            name: attrs.metadata().name().to_owned(),
            ..Default::default()
        };
        attrs.record(&mut Fields(&mut recorded.fields));
        if let Some(span) = ctx.span(id) {
            recorded.ancestors = span.scope().skip(1).map(|s| s.name().to_owned()).collect();
        }
        self.0.lock().unwrap().push(recorded);
    }
}

#[test]
fn actor_messages_are_traced_with_mailbox_wait_and_nested_spans() {
    let recorder = Recorder::default();
    let subscriber = tracing_subscriber::registry()
        .with(recorder.clone())
        .with(tracing_subscriber::filter::LevelFilter::DEBUG);
    tracing::subscriber::set_global_default(subscriber).unwrap();

    let agent = agent_with(
        script(vec![call("1", "echo", r#"{"text":"hi"}"#)]),
        vec![echo_tool()],
    );
    // Events are read, so that the generator's deltas reach the run actor as messages too.
    let run = agent.start(prompt("go"));
    run.events().for_each(drop);
    run.wait().unwrap();

    let spans = recorder.0.lock().unwrap().clone();
    let handled: Vec<(String, String)> = spans
        .iter()
        .filter(|s| s.name == "actor_message")
        .map(|s| (s.fields["actor"].clone(), s.fields["message_type"].clone()))
        .collect();
    for expected in [
        ("RunActor", "GeneratorDone"),
        ("RunActor", "GeneratorDelta"),
        ("RunActor", "BatchReport<CallOutcome>"),
        ("BatchSupervisor", "RunBatch"),
    ] {
        assert!(
            handled
                .iter()
                .any(|(a, m)| a == expected.0 && m == expected.1),
            "no span for {expected:?} in {handled:?}"
        );
    }
    let message_span = spans.iter().find(|s| s.name == "actor_message").unwrap();
    assert!(message_span.fields.contains_key("mailbox_wait_us"));
    assert!(message_span.fields.contains_key("queue_depth"));

    let call = spans
        .iter()
        .find(|s| s.name == "call")
        .expect("a call span");
    assert_eq!(call.ancestors, ["batch", "turn", "run"]);
    assert_eq!(call.fields["gen_ai.tool.name"], "echo");
    assert_eq!(call.fields["gen_ai.tool.call.id"], "1");
    assert_eq!(call.fields["gen_ai.operation.name"], "execute_tool");
    let generate = spans
        .iter()
        .find(|s| s.name == "generate")
        .expect("a span per model request");
    assert_eq!(generate.ancestors, ["turn", "run"]);
    assert_eq!(generate.fields["gen_ai.operation.name"], "chat");
    assert_eq!(generate.fields["gen_ai.request.model"], "scripted");
    let run_batch = spans
        .iter()
        .find(|s| s.name == "actor_message" && s.fields["message_type"] == "RunBatch")
        .unwrap();
    assert_eq!(run_batch.ancestors, ["batch", "turn", "run"]);

    // A compaction's summary request is a model request of its turn.
    use golato::agent::compaction::Compaction;
    use golato::agent::{self, Agent};
    use golato::generator::{Model, Scripted};
    use golato::message::AssistantMessage;
    use support::compaction::{fetch_tool, fetching_script, PerMessage};
    let compacting = Agent::new(agent::Config {
        generator: Some(Arc::new(Scripted::new(fetching_script(6, false)))),
        tools: vec![fetch_tool(10)],
        context_window: Some(1_000),
        compaction: Compaction::default()
            .with_counter(Arc::new(PerMessage))
            .with_summarizer(
                Arc::new(Scripted::new([AssistantMessage::with_text("summary")])),
                Model::new("cheap-model"),
            ),
        ..Default::default()
    })
    .unwrap();
    compacting.start(prompt("go")).wait().unwrap();
    let spans = recorder.0.lock().unwrap().clone();
    let compact = spans
        .iter()
        .find(|s| s.name == "compact")
        .expect("a span for the summary request");
    assert_eq!(compact.ancestors, ["turn", "run"]);
    assert_eq!(compact.fields["gen_ai.request.model"], "cheap-model");
    assert_eq!(compact.fields["reason"], "Threshold");
}
