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
            "call{{index={} gen_ai.operation.name=\"execute_tool\" gen_ai.tool.name=echo gen_ai.tool.call.id={id}}}: close",
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
            "generate{gen_ai.operation.name=\"chat\" gen_ai.request.model=scripted}: close"
        )),
        "{text}"
    );
}
