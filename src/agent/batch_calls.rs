//! What the calls of one batch share: the calls themselves, each call's cancellation token
//! (a child of the batch's, made only when its function or a hook asks for it, or the call
//! must be cancelled on its own), and each call's update gate, which checks the partial results
//! a running function publishes and forwards the valid ones to the run actor.
//!
//! The gate keeps the path from a tool to the run actor bounded: at most one update of a call
//! is in the run actor's mailbox at a time; what the function publishes meanwhile coalesces
//! into one pending update (the newest), sent when the run actor has taken the previous one
//! ([`SharedBatch::update_delivered`]) or when the function returns. A function publishing
//! faster than the run actor reads costs one pending result, not a queue.
//!
//! One allocation serves the whole batch: the run actor, the tool actors and every call's
//! `ToolContext` hold the same [`SharedBatch`].

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use actix::Message;
use golato_actors::console::{Group, Probe};
use golato_actors::TracedRecipient;
use tokio_util::sync::CancellationToken;

use super::run::Channel;
use super::{Budget, Event};
use crate::hook::HookAction;
use crate::message::{ToolCall, Usage};
use crate::tool::{check_result, CallHost, ToolResult};

/// What every batch of a run shares with its calls: the run's events (where the events of
/// child runs that calls start are forwarded) and what calls spent for the run (those child
/// runs' tokens and money, counted against the run's budget).
pub(crate) struct RunShare {
    channel: Arc<Channel>,
    spent: Mutex<Spent>,
    /// The tool call this run is a child of: what calls spend here is spent there too.
    parent: Option<crate::tool::ToolContext>,
    /// The host's actor console, when it is on, and the run's ID: each call of the run's
    /// batches then has an entry there.
    console: Option<(golato_actors::console::Console, u64)>,
}

/// Tokens and money calls spent for their run.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Spent {
    pub(crate) usage: Usage,
    pub(crate) cost: f64,
    /// Some of it was spent at no known price: the run's cost is then unknown.
    pub(crate) unpriced: bool,
}

impl Spent {
    /// `usage` at `cost` (`None`: at no known price).
    pub(crate) fn of(usage: &Usage, cost: Option<f64>) -> Spent {
        Spent {
            usage: *usage,
            cost: cost.unwrap_or(0.0),
            unpriced: cost.is_none() && usage.total_tokens() > 0,
        }
    }

    /// Nothing spent.
    pub(crate) fn is_nothing(&self) -> bool {
        self.usage == Usage::default() && self.cost == 0.0 && !self.unpriced
    }

    pub(crate) fn add(&mut self, other: &Spent) {
        self.usage += other.usage;
        self.cost += other.cost;
        self.unpriced |= other.unpriced;
    }
}

impl RunShare {
    pub(crate) fn new(
        channel: Arc<Channel>,
        parent: Option<crate::tool::ToolContext>,
        console: Option<(golato_actors::console::Console, u64)>,
    ) -> Arc<RunShare> {
        Arc::new(RunShare {
            channel,
            spent: Mutex::new(Spent::default()),
            parent,
            console,
        })
    }

    /// Counts `spent` for this run, and for the call it is a child of.
    fn add(&self, spent: &Spent) {
        self.spent
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .add(spent);
        if let Some(parent) = &self.parent {
            parent.spend(&spent.usage, (!spent.unpriced).then_some(spent.cost));
        }
    }

    /// What calls spent so far.
    pub(crate) fn spent(&self) -> Spent {
        *self.spent.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

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
    /// The run's journal and the batch's turn, in a journaled run: every call of the batch is
    /// one of its steps. Here rather than with each call, which would make every call larger.
    journal: Option<Box<Journaled>>,
    run: Arc<RunShare>,
    /// The run's budget and what the run had spent itself when the batch began (what its
    /// calls spend is in `run`, live); `None`: no budget.
    budget: Option<(Budget, Spent)>,
    /// The calls' entries on the host's actor console (one registration for the batch).
    console: Group,
}

/// What a journaled batch adds: the journal, the turn, and which attempt each call is.
pub(crate) struct Journaled {
    pub(crate) journal: Arc<dyn crate::journal::Journal>,
    pub(crate) turn: usize,
    /// Each call's attempt as its journal started it (0 until then, shown as 1).
    attempts: Vec<std::sync::atomic::AtomicU32>,
    /// What each call spent (its child runs), recorded with its result: a call answered from
    /// the journal spends it again, so a run picked up elsewhere counts it once.
    spent: Vec<Mutex<Spent>>,
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
    /// Why an update was refused; the call's result says so. Boxed, as `pending` is, because
    /// every call of every batch holds a gate and few ever use these (a slot stays 64 bytes).
    invalid: Option<Box<str>>,
    /// An update is in the run actor's mailbox and not yet taken.
    in_flight: bool,
    /// The newest update published while one was in flight.
    pending: Option<Box<ToolResult>>,
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
        journal: Option<(Arc<dyn crate::journal::Journal>, usize)>,
        run: Arc<RunShare>,
        budget: Option<(Budget, Spent)>,
    ) -> Arc<SharedBatch> {
        let slots = calls.iter().map(|_| Slot::default()).collect();
        let journal = journal.map(|(journal, turn)| {
            Box::new(Journaled {
                journal,
                turn,
                attempts: calls.iter().map(|_| Default::default()).collect(),
                spent: calls.iter().map(|_| Default::default()).collect(),
            })
        });
        let console = run
            .console
            .as_ref()
            .map_or_else(Group::none, |(console, run_id)| {
                let names = calls
                    .iter()
                    .map(|call| (call.id.as_str(), call.name.as_str()));
                console.calls("ToolCall", *run_id, id, names)
            });
        Arc::new(SharedBatch {
            id,
            calls,
            cancel,
            notices,
            slots,
            journal,
            run,
            budget,
            console,
        })
    }

    /// Starts call `index`'s entry on the host's console (when it is on), running its tool
    /// from the start (its before-hooks, then its tool, say so when they begin).
    pub(crate) fn start_probe(&self, index: usize) {
        self.console.begin(index);
    }

    /// Call `index`'s console entry ([`Probe::none`] when the console is off).
    pub(crate) fn probe(&self, index: usize) -> Probe {
        self.console.probe(index)
    }

    /// Call `index` has its outcome: its console entry ends.
    pub(crate) fn end_probe(&self, index: usize) {
        self.console.end(index);
    }

    /// The run's journal and this batch's turn, in a journaled run.
    pub(crate) fn journal(&self) -> Option<(&Arc<dyn crate::journal::Journal>, usize)> {
        self.journal
            .as_deref()
            .map(|journaled| (&journaled.journal, journaled.turn))
    }

    /// The journal started call `index` as attempt `attempt`.
    pub(crate) fn set_attempt(&self, index: usize, attempt: u32) {
        if let Some(slot) = self
            .journal
            .as_deref()
            .and_then(|journaled| journaled.attempts.get(index))
        {
            slot.store(attempt, Ordering::SeqCst);
        }
    }

    /// What call `index` spent for the run so far, in a journaled batch.
    pub(crate) fn spent_by(&self, index: usize) -> Option<Spent> {
        self.journal
            .as_deref()
            .and_then(|journaled| journaled.spent.get(index))
            .map(|spent| *spent.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Counts what a call answered from the journal had spent when it ran (in another process,
    /// or an earlier life of this one).
    pub(crate) fn spend_recorded(&self, spent: &Spent) {
        self.run.add(spent);
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
            self.close(index, &mut lock(&slot.gate));
        }
    }

    /// Forwards nothing more for the call; returns why one of its updates was refused.
    pub(crate) fn close_gate(&self, index: usize) -> Option<String> {
        let slot = self.slots.get(index)?;
        let mut gate = lock(&slot.gate);
        self.close(index, &mut gate);
        gate.invalid.take().map(String::from)
    }

    /// Closes the gate. An update still pending was published before the function returned,
    /// so it goes out now: ahead of the call's result, which its caller reports after this.
    fn close(&self, index: usize, gate: &mut Gate) {
        gate.closed = true;
        if let Some(partial) = gate.pending.take() {
            self.notify(index, Notice::Update(*partial));
        }
    }

    /// The run actor took call `index`'s update from its mailbox: the newest one published
    /// since (if any) goes out.
    pub(crate) fn update_delivered(&self, index: usize) {
        let Some(slot) = self.slots.get(index) else {
            return;
        };
        let mut gate = lock(&slot.gate);
        match gate.pending.take() {
            Some(partial) => self.notify(index, Notice::Update(*partial)),
            None => gate.in_flight = false,
        }
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
    fn probe(&self, index: usize) -> Probe {
        SharedBatch::probe(self, index)
    }

    fn forward(&self, index: usize, event: Event) {
        let Some(slot) = self.slots.get(index) else {
            return;
        };
        // Not once the function returned: the call's end is out, or about to be.
        if lock(&slot.gate).closed {
            return;
        }
        let call = self.calls.get(index).unwrap_or(&NO_CALL);
        self.run
            .channel
            .push(Event::Subagent(super::event::SubagentEvent::of_child(
                &call.id, event,
            )));
    }

    fn budget_left(&self) -> Option<Budget> {
        // Live: what the run spent itself, and what its calls (siblings' children) spent so far.
        let own = self.budget.map(|(budget, mut spent)| {
            spent.add(&self.run.spent());
            budget.left(&spent.usage, (!spent.unpriced).then_some(spent.cost))
        });
        // A child run's calls are bounded by its parent's budget too.
        let parents = self
            .run
            .parent
            .as_ref()
            .and_then(|parent| parent.budget_left());
        Budget::tighter(own, parents)
    }

    fn spend(&self, index: usize, usage: &Usage, cost: Option<f64>) {
        let spent = Spent::of(usage, cost);
        self.spend_recorded(&spent);
        if let Some(by_call) = self
            .journal
            .as_deref()
            .and_then(|journaled| journaled.spent.get(index))
        {
            by_call
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .add(&spent);
        }
    }

    fn call(&self, index: usize) -> &ToolCall {
        self.calls.get(index).unwrap_or(&NO_CALL)
    }

    fn attempt(&self, index: usize) -> u32 {
        self.journal
            .as_deref()
            .and_then(|journaled| journaled.attempts.get(index))
            .map_or(1, |slot| slot.load(Ordering::SeqCst).max(1))
    }

    fn turn(&self) -> Option<usize> {
        self.journal.as_deref().map(|journaled| journaled.turn)
    }

    fn run_key(&self) -> Option<&str> {
        self.journal
            .as_deref()
            .and_then(|journaled| journaled.journal.run_key())
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
            // Coalesced: the run actor has not taken the previous one yet.
            Ok(()) if gate.in_flight => match &mut gate.pending {
                Some(pending) => **pending = partial,
                None => gate.pending = Some(Box::new(partial)),
            },
            Ok(()) => {
                gate.in_flight = true;
                self.notify(index, Notice::Update(partial));
            }
            Err(reason) => {
                gate.invalid = Some(reason.into_boxed_str());
                drop(gate);
                self.cancel_call(index);
            }
        }
    }
}

#[cfg(test)]
mod tests;
