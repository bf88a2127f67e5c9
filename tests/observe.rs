//! `golato::observe`: the one-line way to watch the actors, as a user sees its output.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::io::Write;
use std::sync::{Arc, Mutex};

use support::*;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

#[derive(Clone, Default)]
struct Buffer(Arc<Mutex<Vec<u8>>>);

impl Write for Buffer {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Buffer {
    type Writer = Buffer;
    fn make_writer(&'a self) -> Buffer {
        self.clone()
    }
}

#[test]
fn the_layer_prints_each_actor_message_nested_in_its_run() {
    let buffer = Buffer::default();
    tracing_subscriber::registry()
        .with(golato::observe::layer_with(
            tracing_subscriber::EnvFilter::new(golato::observe::DEFAULT_FILTER),
            buffer.clone(),
            false,
        ))
        .init();
    let agent = agent_with(
        script(vec![
            call("a", "echo", r#"{"text":"1"}"#),
            call("b", "echo", r#"{"text":"2"}"#),
        ]),
        vec![echo_tool()],
    );
    let run = agent.start(prompt("go"));
    run.events().for_each(drop);
    run.wait().unwrap();
    drop(agent);

    let text = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
    let closes: Vec<&str> = text.lines().filter(|l| l.contains(": close ")).collect();
    let report = closes
        .iter()
        .find(|line| {
            line.contains(
                "actor_message{actor=\"RunActor\" message_type=\"BatchReport<CallOutcome>\"",
            )
        })
        .unwrap_or_else(|| panic!("no tool report handled by the run actor in:\n{text}"));
    assert!(report.contains(" DEBUG run{run_id="), "{report}");
    assert!(report.contains("}:turn{turn=1}:actor_message{"), "{report}");
    assert!(report.contains("mailbox_wait_us="), "{report}");
    assert!(report.contains("queue_depth="), "{report}");
    assert!(report.contains("time.busy="), "{report}");
    for id in ["a", "b"] {
        let call = format!(
            "call{{index={} gen_ai.operation.name=\"execute_tool\" gen_ai.tool.name=echo gen_ai.tool.call.id={id} otel.name=execute_tool echo}}: close",
            if id == "a" { 0 } else { 1 }
        );
        assert!(
            closes
                .iter()
                .any(|line| line.contains(&call) && line.contains(":batch{")),
            "no {call} in:\n{text}"
        );
    }
    assert!(
        closes.iter().any(|line| line.contains(
            "generate{gen_ai.operation.name=\"chat\" gen_ai.request.model=scripted otel.name=chat scripted otel.kind=\"client\"}: close"
        )),
        "{text}"
    );
}

#[test]
fn the_host_counts_each_actor_types_messages_and_waits() {
    let host = golato::Host::new(golato::HostConfig::default()).unwrap();
    assert!(host.stats().actors.is_empty());
    let agent = golato::Agent::new(golato::agent::Config {
        generator: Some(Arc::new(script(vec![
            call("a", "echo", r#"{"text":"1"}"#),
            call("b", "echo", r#"{"text":"2"}"#),
        ]))),
        tools: vec![echo_tool()],
        host: Some(host.clone()),
        ..Default::default()
    })
    .unwrap();
    for _ in 0..3 {
        let run = agent.start(prompt("go"));
        run.events().for_each(drop);
        run.wait().unwrap();
    }
    let stats = host.stats();
    let run_actor = stats.actor("RunActor").expect("the run actors are counted");
    // Per run at least: a delta per streamed piece, the generator's end twice, a report per call.
    assert!(run_actor.messages_handled >= 3 * 4, "{run_actor:?}");
    assert_eq!(run_actor.mailbox_depth, 0, "every message was handled");
    let waits: u64 = run_actor.mailbox_wait.buckets.iter().map(|b| b.count).sum();
    assert_eq!(waits, run_actor.messages_handled);
    assert_eq!(run_actor.mailbox_wait.buckets.len(), 7);
    assert_eq!(run_actor.mailbox_wait.buckets[6].up_to, None);
    let supervisor = stats
        .actor("BatchSupervisor<CallOutcome>")
        .unwrap_or_else(|| panic!("the batch supervisors are counted: {stats:?}"));
    assert_eq!(supervisor.messages_handled, 3, "one RunBatch per run");
    assert_eq!(host.shutdown_blocking(HANG_GUARD).unfinished, 0);
}
