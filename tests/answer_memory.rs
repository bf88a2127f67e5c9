//! Reading the events of a run whose answer streams in as millions of tiny deltas costs memory
//! in proportion to the answer, not to the number of deltas (issue 21, item 7: a 10 MB answer
//! peaked at 1,026 MiB when its events were read, 43 MiB when not). Alone in its binary: it
//! measures the process's peak memory.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::sync::Arc;

use futures::StreamExt;
use golato::agent::{self, Agent, Event};
use golato::generator::{Delta, EventStream, Generator, Request, StreamEvent};
use golato::message::AssistantMessage;
use support::*;

/// An answer of `bytes` one-byte text deltas, as fast as the run takes them.
struct Trickle {
    bytes: usize,
}

impl Generator for Trickle {
    fn stream(&self, _: Request) -> EventStream {
        let bytes = self.bytes;
        let deltas = futures::stream::iter(0..bytes)
            .map(|_| Ok(StreamEvent::Delta(Delta::Text("x".to_owned()))));
        let done = futures::stream::once(async move {
            Ok(StreamEvent::Done(AssistantMessage::with_text(
                "x".repeat(bytes),
            )))
        });
        deltas.chain(done).boxed()
    }
}

#[test]
fn streaming_a_large_answer_to_a_reader_costs_a_small_multiple_of_it() {
    const ANSWER: usize = 4 * 1024 * 1024;
    let agent = Agent::new(agent::Config {
        generator: Some(Arc::new(Trickle { bytes: ANSWER })),
        ..Default::default()
    })
    .unwrap();
    // Warm up the host and the allocator with a small run first.
    let warm = Agent::new(agent::Config {
        generator: Some(Arc::new(Trickle { bytes: 1_000 })),
        ..Default::default()
    })
    .unwrap();
    collect(warm.start(prompt("warm up"))).1.unwrap();
    let before = peak_rss_kib();
    let run = agent.start(prompt("a long answer"));
    let mut streamed = 0;
    for event in run.events() {
        if let Event::MessageUpdate(update) = &event {
            for delta in &update.deltas {
                if let Delta::Text(text) = delta {
                    streamed += text.len();
                }
            }
        }
    }
    let result = run.wait().unwrap();
    assert_eq!(streamed, ANSWER, "every delta reached the reader");
    assert_eq!(result.final_message.text().len(), ANSWER);
    let grown_mib = (peak_rss_kib() - before) / 1024;
    // The answer is held a few times over (the stream's message, what streamed in so far, the
    // transcript); one envelope per delta in the run actor's mailbox was over 100 times it.
    assert!(
        grown_mib < 16 * (ANSWER as u64) / (1024 * 1024),
        "peak memory grew {grown_mib} MiB for a {} MiB answer",
        ANSWER / (1024 * 1024)
    );
}
