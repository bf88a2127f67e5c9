use std::sync::Arc;

use actix::{Actor, Context, Handler};
use golato_actors::{traced_handlers, Mailbox, TracedActor};
use tokio_util::sync::CancellationToken;

use super::{CallNotice, Notice, SharedBatch};
use crate::message::ToolCall;
use crate::tool::{CallHost, ToolResult};

/// Stands in for the run actor: never handled while the test runs, so every notice sent
/// stays in its mailbox, where the test counts it.
struct Probe(tracing::Span);

impl Actor for Probe {
    type Context = Context<Self>;
}

impl TracedActor for Probe {
    fn span(&self) -> &tracing::Span {
        &self.0
    }
}

impl Handler<CallNotice> for Probe {
    type Result = ();
    fn handle(&mut self, _: CallNotice, _: &mut Context<Self>) {}
}

traced_handlers!(Probe { CallNotice });

fn text_of(notice: &Notice) -> String {
    match notice {
        Notice::Update(partial) => partial.text_content(),
        Notice::Hook(_) => String::from("hook"),
    }
}

/// Every call of every batch holds a slot, parked or not: the memory targets of a parked
/// run (BENCHMARKS.md) count on 64 bytes, not the 128 of a gate holding a result inline.
#[test]
fn a_call_slot_stays_within_64_bytes() {
    assert!(
        std::mem::size_of::<super::Slot>() <= 64,
        "a slot grew to {} bytes",
        std::mem::size_of::<super::Slot>()
    );
}

#[test]
fn updates_published_faster_than_taken_coalesce_into_the_newest() {
    let outcome = actix::System::new().block_on(async {
        let mailbox = Mailbox::new(Probe(tracing::Span::none()).start());
        let call = ToolCall {
            id: "c1".into(),
            name: "t".into(),
            arguments: "{}".into(),
        };
        let shared = SharedBatch::new(
            1,
            vec![call],
            CancellationToken::new(),
            mailbox.recipient(),
            None,
            super::RunShare::new(crate::agent::run::Channel::new(1), None, None),
            None,
        );
        // Nothing is handled until this block yields: the mailbox holds what was sent.
        for n in 0..1_000 {
            shared.publish(0, ToolResult::text(format!("update {n}")));
        }
        let after_burst = mailbox.depth();
        shared.update_delivered(0);
        let after_first_taken = mailbox.depth();
        shared.update_delivered(0);
        shared.publish(0, ToolResult::text("after both were taken"));
        let after_idle_publish = mailbox.depth();
        shared.publish(0, ToolResult::text("pending at return"));
        shared.shut_gate(0);
        let after_return = mailbox.depth();
        shared.publish(0, ToolResult::text("after return"));
        (
            after_burst,
            after_first_taken,
            after_idle_publish,
            after_return,
            mailbox.depth(),
        )
    });
    // One in the mailbox for a thousand published; the newest follows when it is taken;
    // the one pending when the function returns goes out; nothing after.
    assert_eq!(outcome, (1, 2, 3, 4, 4));
}

#[test]
fn the_update_sent_when_one_is_taken_is_the_newest() {
    let texts = actix::System::new().block_on(async {
        let (sent, mut received) = tokio::sync::mpsc::unbounded_channel::<String>();
        struct Forward(tracing::Span, tokio::sync::mpsc::UnboundedSender<String>);
        impl Actor for Forward {
            type Context = Context<Self>;
        }
        impl TracedActor for Forward {
            fn span(&self) -> &tracing::Span {
                &self.0
            }
        }
        impl Handler<CallNotice> for Forward {
            type Result = ();
            fn handle(&mut self, notice: CallNotice, _: &mut Context<Self>) {
                let _ = self.1.send(text_of(&notice.notice));
            }
        }
        traced_handlers!(Forward { CallNotice });
        let mailbox = Mailbox::new(Forward(tracing::Span::none(), sent).start());
        let call = ToolCall {
            id: "c1".into(),
            name: "t".into(),
            arguments: "{}".into(),
        };
        let shared = Arc::clone(&SharedBatch::new(
            1,
            vec![call],
            CancellationToken::new(),
            mailbox.recipient(),
            None,
            super::RunShare::new(crate::agent::run::Channel::new(1), None, None),
            None,
        ));
        for n in 0..3 {
            shared.publish(0, ToolResult::text(format!("update {n}")));
        }
        let first = received.recv().await;
        shared.update_delivered(0);
        let second = received.recv().await;
        vec![first, second]
    });
    assert_eq!(
        texts,
        vec![Some("update 0".to_string()), Some("update 2".to_string())]
    );
}
