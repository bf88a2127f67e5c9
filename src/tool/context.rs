//! What a tool function gets besides its arguments.

use std::fmt;
use std::sync::Arc;

use tokio_util::sync::{CancellationToken, WaitForCancellationFuture};

use super::ToolResult;
use crate::message::ToolCall;

/// Receives the partial results a running tool publishes.
pub(crate) trait UpdateSink: Send + Sync {
    fn publish(&self, partial: ToolResult);
}

/// The context of one tool call: the call itself, the run's cancellation, and a way to publish
/// partial results while the function runs. Cheap to clone.
#[derive(Clone)]
pub struct ToolContext {
    call: CallRef,
    cancel: CancellationToken,
    updates: Option<Arc<dyn UpdateSink>>,
}

/// The call a context is for: its own, or one of its batch's calls (shared by the whole batch,
/// so a batch's contexts cost no copy of the calls).
#[derive(Clone)]
enum CallRef {
    Own(Arc<ToolCall>),
    InBatch(Arc<Vec<ToolCall>>, usize),
}

impl fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolContext")
            .field("call", self.call())
            .field("cancelled", &self.cancel.is_cancelled())
            .finish_non_exhaustive()
    }
}

impl ToolContext {
    pub(crate) fn new(
        calls: Arc<Vec<ToolCall>>,
        index: usize,
        cancel: CancellationToken,
        updates: Arc<dyn UpdateSink>,
    ) -> Self {
        ToolContext {
            call: CallRef::InBatch(calls, index),
            cancel,
            updates: Some(updates),
        }
    }

    /// A context for calling a tool function outside an agent (tests, the `golato tool`
    /// command): partial results are discarded.
    pub fn detached(call: ToolCall, cancel: CancellationToken) -> Self {
        ToolContext {
            call: CallRef::Own(Arc::new(call)),
            cancel,
            updates: None,
        }
    }

    /// The call being executed (ID, tool name, raw arguments).
    pub fn call(&self) -> &ToolCall {
        /// Never seen: the index is always within the batch.
        static NO_CALL: ToolCall = ToolCall {
            id: String::new(),
            name: String::new(),
            arguments: String::new(),
        };
        match &self.call {
            CallRef::Own(call) => call,
            CallRef::InBatch(calls, index) => calls.get(*index).unwrap_or(&NO_CALL),
        }
    }

    /// The token cancelled when the run is cancelled (or when this call published an invalid
    /// update). The agent waits for the function to return either way, so a function that
    /// ignores it delays the run's end.
    pub fn cancellation_token(&self) -> &CancellationToken {
        &self.cancel
    }

    /// Whether the call has been cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Resolves when the call is cancelled.
    ///
    /// # Cancel safety
    /// Cancel safe: dropping the future loses nothing.
    pub fn cancelled(&self) -> WaitForCancellationFuture<'_> {
        self.cancel.cancelled()
    }

    /// Publishes a partial result; observers see it as a `ToolExecutionUpdate` event.
    ///
    /// The partial result is checked like a final one: an invalid one (say, an image part with
    /// an unsupported MIME type) is not forwarded, cancels the function, and becomes the call's
    /// error result. Updates published after the function returned are dropped. When the
    /// event consumer falls behind, pending updates of one call are coalesced into the newest.
    pub fn update(&self, partial: ToolResult) {
        if let Some(updates) = &self.updates {
            updates.publish(partial);
        }
    }
}
