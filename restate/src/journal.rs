//! A run's journal on Restate: the run actor asks for its steps through [`RestateJournal`]; the
//! invocation's handler ([`drive`]) answers them from the invocation's journal or runs them and
//! records them there, one `ctx.run` entry at a time.
//!
//! Restate replays an invocation by running its handler again from the start, handing back
//! each journaled `ctx.run` in order without running its closure. The SDK asks that every
//! `ctx.run` be awaited before the next context call, and a closure cannot tell whether its
//! step will be replayed before it is issued, so the entries are small records issued by the
//! handler in an order it can reproduce, never long work inside a closure:
//!
//! - `Started { steps }`: these steps were started (a turn asked of the model, calls launched)
//!   with nothing recorded for them. Issued only as a probe, the first time in an attempt of the
//!   invocation that a step is asked for and the journal has no more entries, and before every
//!   launch of calls after that. Each one a replay finds counts as an earlier attempt: a call
//!   started again is told its attempt number.
//! - `Done { step, value }`: a step's value, recorded as soon as its work finished (calls in the
//!   order they finish, which the entries themselves carry, so a replay needs no clock).
//!
//! While replaying ("not live") the handler reads the next entry for whatever step the run
//! asks for; the first `ctx.run` whose closure actually runs says the journal has nothing more,
//! and from then on ("live") steps are run and recorded without probing. Entries are named by
//! step family (`input`, `turn-N`, `batch-N`): the run asks for its families in one order on
//! every replay (input, turn, that turn's batch, next turn...), so names always match.

mod entry;

pub(crate) use entry::Refusal;

use std::collections::HashMap;

use entry::{family, is_approval, record, Entry};
use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;
use futures::{FutureExt, StreamExt};
use golato::journal::{Error as JournalError, NotRecorded, StepError, StepKey, StepWork};
use restate_sdk::prelude::*;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

/// One step the run asks for, with its work and where its value goes.
pub(crate) struct StepRequest {
    key: StepKey,
    work: StepWork,
    reply: oneshot::Sender<Result<Value, StepError>>,
}

/// The run's side of the bridge: a [`golato::journal::Journal`] whose steps the invocation's
/// handler answers.
#[derive(Debug)]
pub(crate) struct RestateJournal {
    requests: mpsc::UnboundedSender<StepRequest>,
    key: String,
}

impl RestateJournal {
    pub(crate) fn new(key: String) -> (RestateJournal, mpsc::UnboundedReceiver<StepRequest>) {
        let (requests, receiver) = mpsc::unbounded_channel();
        (RestateJournal { requests, key }, receiver)
    }
}

fn gone(step: &str) -> StepError {
    StepError::Journal(JournalError {
        step: step.to_owned(),
        reason: "the worker's Restate invocation ended (its connection to the server went away); the run goes on where Restate retries it".to_owned(),
    })
}

impl golato::journal::Journal for RestateJournal {
    fn step(&self, key: StepKey, work: StepWork) -> BoxFuture<'static, Result<Value, StepError>> {
        let step = key.to_string();
        let (reply, answer) = oneshot::channel();
        if self
            .requests
            .send(StepRequest { key, work, reply })
            .is_err()
        {
            return futures::future::ready(Err(gone(&step))).boxed();
        }
        async move { answer.await.unwrap_or_else(|_| Err(gone(&step))) }.boxed()
    }

    fn run_key(&self) -> Option<&str> {
        Some(&self.key)
    }
}

/// How long running work goes without an entry before a heartbeat checks for cancellation.
const CANCEL_CHECK: std::time::Duration = std::time::Duration::from_secs(2);
/// The same while all that runs is calls waiting for a person's answer (which may take
/// hours: a heartbeat every 2 s would fill the journal).
const CANCEL_CHECK_ASKING: std::time::Duration = std::time::Duration::from_secs(30);

/// A started step's name, entry family and what its work produced.
type Ran = (String, String, Result<Value, NotRecorded>);

struct Pending {
    key: StepKey,
    name: String,
    /// `None` once started.
    work: Option<StepWork>,
    reply: oneshot::Sender<Result<Value, StepError>>,
}

/// What ended the drive: the run's outcome future finished, or Restate cancelled the run.
pub(crate) struct Driver<'a> {
    ctx: &'a WorkflowContext<'a>,
    requests: mpsc::UnboundedReceiver<StepRequest>,
    pending: Vec<Pending>,
    /// Values replayed before their step was asked for.
    replayed: HashMap<String, Value>,
    /// Earlier starts of each step found in the journal.
    starts: HashMap<String, u32>,
    running: FuturesUnordered<BoxFuture<'static, Ran>>,
    /// How many of the running steps are not approvals (see [`CANCEL_CHECK_ASKING`]).
    running_work: usize,
    /// The entry family of the running work (one step family runs at a time).
    running_family: Option<String>,
    live: bool,
    /// Restate cancelled the invocation: nothing more is recorded.
    cancelled: bool,
    /// The inbox's next slot to read, and the follow-ups read and not delivered yet.
    next_slot: u64,
    follow_ups: Vec<golato::message::UserMessage>,
    /// Model turns this attempt asked for (not replayed), for the worker's log.
    pub(crate) turns_asked: usize,
    /// Entries this attempt wrote to the journal, and their bytes (JSON), for the worker's log.
    pub(crate) entries_written: usize,
    pub(crate) bytes_written: usize,
}

impl<'a> Driver<'a> {
    pub(crate) fn new(
        ctx: &'a WorkflowContext<'a>,
        requests: mpsc::UnboundedReceiver<StepRequest>,
    ) -> Self {
        Driver {
            ctx,
            requests,
            pending: Vec::new(),
            replayed: HashMap::new(),
            starts: HashMap::new(),
            running: FuturesUnordered::new(),
            running_work: 0,
            running_family: None,
            live: false,
            cancelled: false,
            next_slot: 0,
            follow_ups: Vec::new(),
            turns_asked: 0,
            entries_written: 0,
            bytes_written: 0,
        }
    }

    /// Answers the run's steps until `finished` resolves (the run ended), cancelling the run
    /// through `cancel` when Restate cancels the invocation.
    pub(crate) async fn drive<T>(
        &mut self,
        finished: impl std::future::Future<Output = T>,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> T {
        let mut finished = std::pin::pin!(finished);
        loop {
            while let Ok(request) = self.requests.try_recv() {
                self.accept(request);
            }
            let inbox = self
                .pending
                .iter()
                .position(|pending| matches!(pending.key, StepKey::Inbox { .. }));
            if let Some(at) = inbox {
                self.inbox(at, cancel).await;
                continue;
            }
            if self.cancelled {
                // Nothing more is recorded: every step runs as in a run without a journal.
                for pending in std::mem::take(&mut self.pending) {
                    self.start(pending, 1);
                }
            } else if !self.live && !self.pending.is_empty() {
                self.probe(cancel).await;
                continue;
            } else if self.live && self.pending.iter().any(|pending| pending.work.is_some()) {
                self.launch(cancel).await;
                continue;
            }
            let check = self.cancel_check();
            tokio::select! {
                request = self.requests.recv() => match request {
                    Some(request) => self.accept(request),
                    None => return finished.await,
                },
                Some((name, family, result)) = self.running.next() => {
                    self.finished(name, family, result, cancel).await;
                }
                () = tokio::time::sleep(check), if self.live && !self.cancelled && !self.running.is_empty() => {
                    self.heartbeat(cancel).await;
                }
                outcome = &mut finished => return outcome,
            }
        }
    }

    /// An inbox step: the messages posted to the run since the last one (see [`crate::inbox`]).
    async fn inbox(&mut self, at: usize, cancel: &tokio_util::sync::CancellationToken) {
        let Pending { key, reply, .. } = self.pending.remove(at);
        let StepKey::Inbox { ending, .. } = key else {
            return;
        };
        if self.cancelled {
            // The run is ending: take nothing more.
            let _ = reply.send(Ok(golato::journal::seal(Value::Null)));
            return;
        }
        let answer = match self.posted(ending).await {
            Ok(record) => Ok(golato::journal::seal(
                serde_json::to_value(record).unwrap_or_default(),
            )),
            Err(error) => {
                self.refused(error, cancel);
                Err(StepError::NotRecorded)
            }
        };
        let _ = reply.send(answer);
    }

    /// What the run takes at an inbox step: the steering posted; where it would end
    /// (`ending`), else the follow-ups held, else a message that beats the inbox's closing to
    /// the next slot, else nothing (the inbox is closed). Each slot read is a peek of its
    /// promise, an entry of this invocation's journal: a replay reads the same.
    async fn posted(
        &mut self,
        ending: bool,
    ) -> Result<Option<golato::journal::InboxRecord>, TerminalError> {
        use golato::agent::event::Delivery;
        use golato::journal::InboxRecord;
        let ctx = self.ctx;
        let mut steering = Vec::new();
        loop {
            let name = crate::slots::slot_name(self.next_slot);
            let Some(Json(slot)) = ctx.peek_promise::<Json<crate::slots::Slot>>(&name).await?
            else {
                break;
            };
            let Some((message, follow_up)) = slot.message() else {
                break;
            };
            self.next_slot += 1;
            match follow_up {
                true => self.follow_ups.push(message),
                false => steering.push(message),
            }
        }
        let record = |delivery, messages| Some(InboxRecord { delivery, messages });
        if !steering.is_empty() {
            return Ok(record(Delivery::Steer, steering));
        }
        if !ending {
            return Ok(None);
        }
        if !self.follow_ups.is_empty() {
            return Ok(record(
                Delivery::FollowUp,
                std::mem::take(&mut self.follow_ups),
            ));
        }
        let name = crate::slots::slot_name(self.next_slot);
        ctx.resolve_promise(&name, Json(crate::slots::Slot::Closed));
        let Json(slot) = ctx.promise::<Json<crate::slots::Slot>>(&name).await?;
        Ok(match slot.message() {
            None => None,
            Some((message, follow_up)) => {
                self.next_slot += 1;
                let delivery = match follow_up {
                    true => Delivery::FollowUp,
                    false => Delivery::Steer,
                };
                record(delivery, vec![message])
            }
        })
    }

    fn accept(&mut self, request: StepRequest) {
        let name = request.key.to_string();
        if let Some(value) = self.replayed.remove(&name) {
            let _ = request.reply.send(Ok(value));
            return;
        }
        self.pending.push(Pending {
            key: request.key,
            name,
            work: Some(request.work),
            reply: request.reply,
        });
    }

    fn answer(&mut self, name: &str, value: Result<Value, StepError>) {
        if let Some(at) = self.pending.iter().position(|pending| pending.name == name) {
            let pending = self.pending.remove(at);
            let _ = pending.reply.send(value);
        } else if let Ok(value) = value {
            self.replayed.insert(name.to_owned(), value);
        }
    }

    /// Records `entry` under `family` (see [`record`]), counting what this attempt wrote.
    async fn record(
        &mut self,
        family: String,
        entry: impl FnOnce() -> BoxFuture<'static, Entry> + Send + 'static,
    ) -> Result<(Entry, bool), Refusal> {
        let ctx = self.ctx;
        let (entry, fresh) = record(ctx, family, entry).await?;
        if fresh {
            self.entries_written += 1;
            self.bytes_written += serde_json::to_vec(&entry).map_or(0, |bytes| bytes.len());
        }
        Ok((entry, fresh))
    }

    /// Not live: reads the next entry for the first step asked for (see the module's docs).
    async fn probe(&mut self, cancel: &tokio_util::sync::CancellationToken) {
        let Some(first) = self.pending.first_mut() else {
            return;
        };
        let family_name = family(&first.key);
        let entry: Box<dyn FnOnce() -> BoxFuture<'static, Entry> + Send> = match first.key {
            StepKey::Input => {
                // The input is known at once: its entry is its value.
                let work = first.work.take();
                let step = first.name.clone();
                Box::new(move || {
                    async move {
                        let value = match work {
                            Some(work) => work.run().await.unwrap_or(Value::Null),
                            None => Value::Null,
                        };
                        Entry::Done { step, value }
                    }
                    .boxed()
                })
            }
            _ => {
                let steps: Vec<String> = self
                    .pending
                    .iter()
                    .filter(|pending| family(&pending.key) == family_name)
                    .map(|pending| pending.name.clone())
                    .collect();
                Box::new(move || futures::future::ready(Entry::Started { steps }).boxed())
            }
        };
        match self.record(family_name, entry).await {
            Ok((entry, fresh)) => {
                self.live = fresh;
                match entry {
                    Entry::Done { step, value } => self.answer(&step, Ok(value)),
                    Entry::Started { steps } if fresh => self.start_steps(&steps),
                    Entry::Started { steps } => {
                        for step in steps {
                            *self.starts.entry(step).or_default() += 1;
                        }
                    }
                    Entry::Running => {}
                }
            }
            Err(error) => self.refused(error, cancel),
        }
    }

    /// Live: starts every step asked for and not started yet; calls and hooks' work after a
    /// `Started` entry (cut short, they are started again knowing it).
    async fn launch(&mut self, cancel: &tokio_util::sync::CancellationToken) {
        let start_recorded =
            |key: &StepKey| matches!(key, StepKey::Call { .. } | StepKey::Hook { .. });
        let calls: Vec<String> = self
            .pending
            .iter()
            .filter(|pending| pending.work.is_some() && start_recorded(&pending.key))
            .map(|pending| pending.name.clone())
            .collect();
        let others: Vec<String> = self
            .pending
            .iter()
            .filter(|pending| pending.work.is_some() && !start_recorded(&pending.key))
            .map(|pending| pending.name.clone())
            .collect();
        self.start_steps(&others);
        let Some(family_name) = calls.first().and_then(|first| {
            self.pending
                .iter()
                .find(|pending| &pending.name == first)
                .map(|pending| family(&pending.key))
        }) else {
            return;
        };
        let steps = calls.clone();
        match self
            .record(family_name, move || {
                futures::future::ready(Entry::Started { steps }).boxed()
            })
            .await
        {
            Ok(_) => self.start_steps(&calls),
            Err(error) => self.refused(error, cancel),
        }
    }

    fn start_steps(&mut self, steps: &[String]) {
        for step in steps {
            let attempt = self.starts.get(step).copied().unwrap_or(0) + 1;
            if let Some(pending) = self
                .pending
                .iter_mut()
                .find(|pending| &pending.name == step && pending.work.is_some())
            {
                if let Some(work) = pending.work.take() {
                    if matches!(pending.key, StepKey::Turn { .. }) {
                        self.turns_asked += 1;
                        tracing::info!(step = %step, attempt, "asking the model");
                    } else if attempt > 1 {
                        tracing::info!(step = %step, attempt, "running a call again: its worker died before recording it");
                    }
                    let (name, family_name) = (pending.name.clone(), family(&pending.key));
                    self.run_work(name, family_name, work, attempt);
                }
            }
        }
    }

    /// Starts `work` as attempt `attempt` of step `name`.
    fn run_work(&mut self, name: String, family_name: String, work: StepWork, attempt: u32) {
        self.running_family = Some(family_name.clone());
        self.running_work += usize::from(!is_approval(&name));
        self.running.push(
            work.run_attempt(attempt)
                .map(move |result| (name, family_name, result))
                .boxed(),
        );
    }

    /// How long to wait for running work before a heartbeat.
    fn cancel_check(&self) -> std::time::Duration {
        match self.running_work {
            0 => CANCEL_CHECK_ASKING,
            _ => CANCEL_CHECK,
        }
    }

    /// Starts a step outside the journal (after a cancellation).
    fn start(&mut self, mut pending: Pending, attempt: u32) {
        if let Some(work) = pending.work.take() {
            self.run_work(pending.name.clone(), family(&pending.key), work, attempt);
        }
        self.pending.push(Pending {
            work: None,
            ..pending
        });
    }

    async fn finished(
        &mut self,
        name: String,
        family: String,
        result: Result<Value, NotRecorded>,
        cancel: &tokio_util::sync::CancellationToken,
    ) {
        self.running_work -= usize::from(!is_approval(&name));
        match result {
            Ok(value) if !self.cancelled => {
                let step = name.clone();
                let recorded = value.clone();
                match self
                    .record(family, move || {
                        futures::future::ready(Entry::Done {
                            step,
                            value: recorded,
                        })
                        .boxed()
                    })
                    .await
                {
                    Ok(_) => self.answer(&name, Ok(value)),
                    Err(error) => {
                        self.refused(error, cancel);
                        self.answer(&name, Err(StepError::NotRecorded));
                    }
                }
            }
            Ok(value) => self.answer(&name, Ok(value)),
            Err(NotRecorded) => self.answer(&name, Err(StepError::NotRecorded)),
        }
    }

    /// Records that work is still going on: Restate answers a cancelled invocation's next
    /// entry with 409, which is how a cancellation reaches running tools (the SDK surfaces it
    /// at journal operations only, and awaiting any other durable future here would put await
    /// points in the journal that a replay cannot reproduce).
    async fn heartbeat(&mut self, cancel: &tokio_util::sync::CancellationToken) {
        let Some(family) = self.running_family.clone() else {
            return;
        };
        if let Err(error) = self
            .record(family, || futures::future::ready(Entry::Running).boxed())
            .await
        {
            self.refused(error, cancel);
        }
    }

    /// An entry could not be recorded or read: Restate ended the invocation (cancelled: 409),
    /// or the journal holds an entry this golato cannot read, which ends the run with a
    /// journal error naming it. Nothing more is recorded either way.
    fn refused(
        &mut self,
        refusal: impl Into<Refusal>,
        cancel: &tokio_util::sync::CancellationToken,
    ) {
        match refusal.into() {
            Refusal::Restate(error) => tracing::info!(
                code = error.code(),
                message = error.message(),
                "Restate ended the run's invocation"
            ),
            Refusal::Unreadable { family, reason } => {
                tracing::error!(
                    family,
                    reason,
                    "the run's journal holds an entry this golato cannot read"
                );
                for pending in std::mem::take(&mut self.pending) {
                    let _ = pending.reply.send(Err(StepError::Journal(JournalError {
                        step: pending.name,
                        reason: format!("its journal entry ({family}) is not one this golato reads: {reason}; was the deployment replaced by another version of golato while the run was going on? Register a new version at a new address: Restate finishes running runs on the old one")
                    })));
                }
            }
        }
        self.cancelled = true;
        cancel.cancel();
    }
}

#[cfg(test)]
mod tests;
