//! A generator that answers with one message the first time and an empty text after: a call
//! the person (or a command file) makes runs through an agent's whole pipeline this way, with
//! its hooks, rules, sandbox and approvals, as the model's calls do.

use futures::StreamExt as _;
use golato::generator::{EventStream, Generator, Request, StreamEvent};
use golato::message::AssistantMessage;

/// See the module's documentation. It hands the message over rather than keeping a copy (as
/// `Scripted` does, to answer again): the arguments of a large `write` would otherwise be
/// held once more.
pub(crate) struct OneCall(std::sync::Mutex<Option<AssistantMessage>>);

impl OneCall {
    /// Answers with `message` once.
    pub(crate) fn new(message: AssistantMessage) -> OneCall {
        OneCall(std::sync::Mutex::new(Some(message)))
    }
}

impl Generator for OneCall {
    fn stream(&self, _: Request) -> EventStream {
        let message = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
            .unwrap_or_else(|| AssistantMessage::with_text(""));
        futures::stream::once(async move { Ok(StreamEvent::Done(message)) }).boxed()
    }
}
