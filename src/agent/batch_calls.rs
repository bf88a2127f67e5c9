//! What the calls of one batch share: the calls themselves, each call's cancellation token
//! (a child of the batch's, made only when its function or a hook asks for it, or the call
//! must be cancelled on its own), and each call's update gate, which checks the partial results
//! a running function publishes and forwards the valid ones to the run actor.
//!
//! One allocation serves the whole batch: the run actor, the tool actors and every call's
//! `ToolContext` hold the same [`SharedBatch`].

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use actix::Message;
use golato_actors::TracedRecipient;
use tokio_util::sync::CancellationToken;

use crate::hook::HookAction;
use crate::message::ToolCall;
use crate::tool::{check_result, CallHost, ToolResult};

/// What a tool actor (or its call's update gate) tells the run actor while the call runs.
#[derive(Message)]
#[rtype(result = "()")]
pub(crate) struct CallNotice {
    pub(crate) batch: u64,
    pub(crate) index: usize,
    pub(crate) notice: Notice,
}

pub(crate) enum Notice {
    /// A valid partial result, to become a `ToolExecutionUpdate` event.
    Update(ToolResult),
    /// A hook blocked, rewrote or replaced something.
    Hook(HookAction),
}

pub(crate) struct SharedBatch {
    id: u64,
    calls: Vec<ToolCall>,
    /// The batch's token: the run's cancellation reaches every call through it.
    cancel: CancellationToken,
    notices: TracedRecipient<CallNotice>,
    slots: Vec<Slot>,
}

#[derive(Default)]
struct Slot {
    token: OnceLock<CancellationToken>,
    /// Set when this call alone is cancelled (timeout, invalid update), before or after its
    /// token exists.
    cancelled: AtomicBool,
    gate: Mutex<Gate>,
}

#[derive(Default)]
struct Gate {
    /// The function returned or was abandoned: nothing more is forwarded.
    closed: bool,
    /// Why an update was refused; the call's result says so.
    invalid: Option<String>,
}

/// Never seen: every index used is within the batch.
static NO_CALL: ToolCall = ToolCall {
    id: String::new(),
    name: String::new(),
    arguments: String::new(),
};

impl SharedBatch {
    pub(crate) fn new(
        id: u64,
        calls: Vec<ToolCall>,
        cancel: CancellationToken,
        notices: TracedRecipient<CallNotice>,
    ) -> Arc<SharedBatch> {
        let slots = calls.iter().map(|_| Slot::default()).collect();
        Arc::new(SharedBatch {
            id,
            calls,
            cancel,
            notices,
            slots,
        })
    }

    /// The batch's number within its run.
    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    pub(crate) fn calls(&self) -> &[ToolCall] {
        &self.calls
    }

    pub(crate) fn batch_token(&self) -> &CancellationToken {
        &self.cancel
    }

    /// The calls back, copied only if a tool still holds its context.
    pub(crate) fn into_calls(shared: Arc<SharedBatch>) -> Vec<ToolCall> {
        match Arc::try_unwrap(shared) {
            Ok(batch) => batch.calls,
            Err(shared) => shared.calls.clone(),
        }
    }

    /// Cancels one call (its timeout expired, or it published an invalid update).
    pub(crate) fn cancel_call(&self, index: usize) {
        let Some(slot) = self.slots.get(index) else {
            return;
        };
        slot.cancelled.store(true, Ordering::SeqCst);
        if let Some(token) = slot.token.get() {
            token.cancel();
        }
    }

    /// Forwards nothing more for the call (its function returned).
    pub(crate) fn shut_gate(&self, index: usize) {
        if let Some(slot) = self.slots.get(index) {
            lock(&slot.gate).closed = true;
        }
    }

    /// Forwards nothing more for the call; returns why one of its updates was refused.
    pub(crate) fn close_gate(&self, index: usize) -> Option<String> {
        let slot = self.slots.get(index)?;
        let mut gate = lock(&slot.gate);
        gate.closed = true;
        gate.invalid.take()
    }

    pub(crate) fn notify(&self, index: usize, notice: Notice) {
        self.notices.do_send(CallNotice {
            batch: self.id,
            index,
            notice,
        });
    }
}

fn lock(gate: &Mutex<Gate>) -> std::sync::MutexGuard<'_, Gate> {
    gate.lock().unwrap_or_else(PoisonError::into_inner)
}

impl CallHost for SharedBatch {
    fn call(&self, index: usize) -> &ToolCall {
        self.calls.get(index).unwrap_or(&NO_CALL)
    }

    fn token(&self, index: usize) -> &CancellationToken {
        let Some(slot) = self.slots.get(index) else {
            return &self.cancel;
        };
        let token = slot.token.get_or_init(|| self.cancel.child_token());
        // The call may have been cancelled on its own before its token existed.
        if slot.cancelled.load(Ordering::SeqCst) {
            token.cancel();
        }
        token
    }

    fn publish(&self, index: usize, partial: ToolResult) {
        let Some(slot) = self.slots.get(index) else {
            return;
        };
        let mut gate = lock(&slot.gate);
        // Nothing is forwarded once the function returned, was abandoned or published an
        // invalid update. Forwarding under the lock keeps closing the gate a clean cut.
        if gate.closed || gate.invalid.is_some() {
            return;
        }
        match check_result(&partial) {
            Ok(()) => self.notify(index, Notice::Update(partial)),
            Err(reason) => {
                gate.invalid = Some(reason);
                drop(gate);
                self.cancel_call(index);
            }
        }
    }
}
