//! The journal seam: see [`Journal`]. Also reachable as `golato::journal`.

mod file;
mod replay;

pub use file::{FileError, FileJournal};
pub use replay::SafeToReplay;

use std::collections::HashMap;
use std::fmt;
use std::sync::Mutex;

use futures::future::BoxFuture;
use futures::FutureExt;
use serde_json::Value;

/// Which step of a run: its input, a model turn (1-based), or the call with this ID of a
/// turn's message.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum StepKey {
    /// What the run started from: recorded by its first start, compared by every later one (a
    /// journal belongs to one run; started with another input, the run is refused).
    Input,
    /// The assistant message of turn `turn`.
    Turn {
        /// The turn, from 1.
        turn: usize,
    },
    /// The result of the call `call_id` of turn `turn`'s message.
    Call {
        /// The turn, from 1.
        turn: usize,
        /// The call's ID, as the model gave it.
        call_id: String,
    },
    /// The user messages queued for the run ([`Run::steer`](crate::agent::Run::steer),
    /// [`Run::follow_up`](crate::agent::Run::follow_up)) that it took after turn `turn`: after
    /// the turn's batch (steering), or when the run would have ended (`ending`: steering, else
    /// follow-ups; none means the run ends). Messages come from outside the run, so a journal
    /// records which ones joined it where.
    Inbox {
        /// The turn, from 1.
        turn: usize,
        /// Taken when the run would otherwise end.
        ending: bool,
    },
    /// The summary that compacted turn `turn`'s request (the `index`th of that turn, from 1),
    /// with what it replaced: a run picked up from its journal sends what it sent before.
    Compaction {
        /// The turn, from 1.
        turn: usize,
        /// Which compaction of the turn, from 1 (a refused request compacts a second time).
        index: usize,
    },
    /// A person's answer to whether the call `call_id` of turn `turn` may run (see
    /// [`Approver`](crate::policy::Approver)): recorded, so a run picked up again does not ask
    /// again, and a durable run's question outlives the process that asked it.
    Approval {
        /// The turn, from 1.
        turn: usize,
        /// The call's ID, as the model gave it.
        call_id: String,
    },
    /// Work a hook does once for the call `call_id` of turn `turn` ([`HookContext::step`]):
    /// a second model's review of it, say. Its start is recorded before it runs, as a call's
    /// is, so work cut short is started again as its next attempt and can tell.
    ///
    /// [`HookContext::step`]: crate::hook::HookContext::step
    Hook {
        /// The turn, from 1.
        turn: usize,
        /// The call's ID, as the model gave it.
        call_id: String,
        /// The hook's name for the work (ASCII letters, digits, `_`).
        name: String,
    },
}

impl fmt::Display for StepKey {
    /// `input`, `turn-3`, `turn-3/call-ID`, `turn-3/inbox`, `turn-3/inbox-end`,
    /// `turn-3/compaction-1`, `turn-3/approval-ID` or `turn-3/hook-NAME-ID`: a name a journal
    /// may use as is.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StepKey::Input => f.write_str("input"),
            StepKey::Turn { turn } => write!(f, "turn-{turn}"),
            StepKey::Call { turn, call_id } => write!(f, "turn-{turn}/call-{call_id}"),
            StepKey::Inbox {
                turn,
                ending: false,
            } => write!(f, "turn-{turn}/inbox"),
            StepKey::Inbox { turn, ending: true } => write!(f, "turn-{turn}/inbox-end"),
            StepKey::Compaction { turn, index } => write!(f, "turn-{turn}/compaction-{index}"),
            StepKey::Approval { turn, call_id } => write!(f, "turn-{turn}/approval-{call_id}"),
            StepKey::Hook {
                turn,
                call_id,
                name,
            } => write!(f, "turn-{turn}/hook-{name}-{call_id}"),
        }
    }
}

/// A step that produced nothing to record: the turn failed or was cancelled, the call's actor
/// was lost. The run goes on (or ends) as it would without a journal; nothing is recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotRecorded;

/// A step's work, not started yet: [`StepWork::run`] starts it and gives what it produced, as
/// JSON, or [`NotRecorded`]. A journal that knows the step was started before and cut short
/// (its process died) starts it with [`StepWork::run_attempt`], so that a tool call sees which
/// attempt it is ([`ToolContext::attempt`](crate::tool::ToolContext::attempt)) and its result
/// says it was retried.
pub struct StepWork {
    start: Box<dyn FnOnce(u32) -> BoxFuture<'static, Result<Value, NotRecorded>> + Send>,
}

impl fmt::Debug for StepWork {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StepWork").finish_non_exhaustive()
    }
}

impl StepWork {
    /// Work that does not care which attempt it is.
    pub fn new(
        work: impl std::future::Future<Output = Result<Value, NotRecorded>> + Send + 'static,
    ) -> StepWork {
        StepWork {
            start: Box::new(move |_| work.boxed()),
        }
    }

    /// Work told its attempt number (1 for the first) when it starts.
    pub fn with_attempt<F>(start: impl FnOnce(u32) -> F + Send + 'static) -> StepWork
    where
        F: std::future::Future<Output = Result<Value, NotRecorded>> + Send + 'static,
    {
        StepWork {
            start: Box::new(move |attempt| start(attempt).boxed()),
        }
    }

    /// Starts the work as its first attempt.
    pub fn run(self) -> BoxFuture<'static, Result<Value, NotRecorded>> {
        (self.start)(1)
    }

    /// Starts the work as attempt `attempt` (from 1): the step was started `attempt - 1` times
    /// before without being recorded.
    pub fn run_attempt(self, attempt: u32) -> BoxFuture<'static, Result<Value, NotRecorded>> {
        (self.start)(attempt.max(1))
    }
}

/// The format of what golato records: `{"golato_journal": FORMAT, "step": …}`. A record in
/// another format (another version of golato, or something else) is refused with a clear
/// error instead of being misread.
pub const RECORD_FORMAT: u64 = 1;

/// `value` as golato records it: what a [`Journal`] kept outside golato (golato-restate's) hands
/// back for a step it answers itself.
pub fn seal(value: Value) -> Value {
    serde_json::json!({"golato_journal": RECORD_FORMAT, "step": value})
}

/// What `record` holds for step `step`, if golato recorded it in this format.
pub(crate) fn unseal(record: Value, step: &str) -> Result<Value, Error> {
    let refused = |what: String| {
        Error {
        step: step.to_owned(),
        reason: format!("{what}; was it written by another version of golato (this one reads format {RECORD_FORMAT})?"),
    }
    };
    let Value::Object(mut fields) = record else {
        return Err(refused("its record is not a JSON object".to_owned()));
    };
    match fields.get("golato_journal").and_then(Value::as_u64) {
        Some(RECORD_FORMAT) => {}
        Some(other) => return Err(refused(format!("its record is in format {other}"))),
        None => {
            return Err(refused(
                "its record does not say golato wrote it".to_owned(),
            ))
        }
    }
    fields
        .remove("step")
        .ok_or_else(|| refused("its record holds no step".to_owned()))
}

/// What a journal records of an inbox step: the messages that joined the run there, if any.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct InboxRecord {
    /// How they reached the run.
    pub delivery: crate::message::Delivery,
    /// The messages, in the order they were queued.
    pub messages: Vec<crate::message::UserMessage>,
}

/// What a journal records of a call: its result message and whether it asked to end the run.
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) struct RecordedCall {
    pub(crate) message: crate::message::ToolResultMessage,
    pub(crate) terminate: bool,
    /// What the call spent for the run (a subagent's tokens), when it spent anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) spent: Option<RecordedSpend>,
}

/// Tokens and money a call spent, as a journal records them.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct RecordedSpend {
    pub(crate) usage: crate::message::Usage,
    /// `None`: some of it was spent at no known price.
    pub(crate) cost: Option<f64>,
}

/// Why a step could not go through the journal.
#[derive(Debug, thiserror::Error)]
pub enum StepError {
    /// The work produced nothing to record.
    #[error("the step produced nothing to record")]
    NotRecorded,
    /// The journal could not record the step, or hand back a recorded one.
    #[error(transparent)]
    Journal(#[from] Error),
}

impl From<NotRecorded> for StepError {
    fn from(_: NotRecorded) -> Self {
        StepError::NotRecorded
    }
}

/// A journal that failed: the run ends with `agent::Error::Journal`, its transcript kept, and
/// can be picked up from the journal once it works again.
#[derive(Debug, thiserror::Error)]
#[error("the run's journal failed at {step}: {reason}")]
pub struct Error {
    /// The step, as [`StepKey`] shows it.
    pub step: String,
    /// What went wrong.
    pub reason: String,
}

/// The seam every step of a run goes through: each model turn (the assembled message, never its
/// deltas) and each tool call's result, identified by [`StepKey`]. A [`Journal`] runs a step's
/// work once and records what it produced; a step it recorded before is given back without
/// running again. A run started with [`Agent::start_journaled`](crate::agent::Agent::start_journaled)
/// on a journal that already holds some of its steps therefore asks the model for no turn it
/// recorded and runs no call whose result it recorded: it picks up where the journal leaves
/// off. A durable engine is a journal whose records outlive the process; [`MemoryJournal`]
/// keeps them in memory. Runs started without one (`Agent::start`) go through no journal and
/// pay nothing for it.
///
/// What is recorded: a turn's message once the model finished it (a turn that failed or was
/// cancelled is not, and is asked again), and a call's result message once its tool actor
/// concluded it, hooks included (a call whose actor was lost is not). A call that was running
/// when a run stopped without recording it runs again when the run is picked up: at least once
/// for a call interrupted mid-flight, exactly once for a recorded one.
///
/// ```
/// use std::sync::Arc;
/// use golato::agent::{self, Agent};
/// use golato::journal::MemoryJournal;
/// use golato::generator::Scripted;
/// use golato::message::{AssistantMessage, UserMessage};
///
/// let agent = Agent::new(agent::Config {
///     generator: Some(Arc::new(Scripted::new([AssistantMessage::with_text("hi")]))),
///     ..Default::default()
/// })?;
/// let journal = Arc::new(MemoryJournal::new());
/// let first = agent.start_journaled(UserMessage::new("hello"), journal.clone()).wait()?;
/// assert_eq!(journal.keys(), ["input", "turn-1", "turn-1/inbox-end"]);
/// // Again on the same journal: the turn comes from the journal, the model is not asked.
/// let again = agent.start_journaled(UserMessage::new("hello"), journal.clone()).wait()?;
/// assert_eq!(again.final_message, first.final_message);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// `step` is called in the order the run takes its steps: turns one after another, and the
/// calls of a batch in source order as the batch starts them. An engine whose journal is
/// positional (Restate's) takes the step when `step` is called, not when its future is first
/// polled, and so sees the same order on every replay.
///
/// An implementation runs `work` only for a step it has no record of, records its value before
/// it returns it (a durable journal: once the record is safe), and returns the recorded value
/// for a step it has. Steps of one run may be asked for concurrently (a parallel batch's
/// calls).
pub trait Journal: Send + Sync + fmt::Debug + 'static {
    /// The value of step `key`: recorded before, or produced by `work` now and recorded.
    fn step(&self, key: StepKey, work: StepWork) -> BoxFuture<'static, Result<Value, StepError>>;

    /// A name for the run this journal belongs to, if it has one (a durable run's ID): tools
    /// see it as [`ToolContext::run_key`](crate::tool::ToolContext::run_key), to make
    /// idempotency keys of their side effects with the call's ID.
    fn run_key(&self) -> Option<&str> {
        None
    }
}

/// A [`Journal`] in memory: steps recorded by key, for tests, for picking a run up in the same
/// process (after a cancellation or a failed provider), and as the model of a durable one.
#[derive(Debug, Default)]
pub struct MemoryJournal {
    steps: std::sync::Arc<Mutex<HashMap<String, Value>>>,
    /// The keys in the order they were recorded.
    order: std::sync::Arc<Mutex<Vec<String>>>,
}

impl MemoryJournal {
    /// An empty journal.
    pub fn new() -> Self {
        MemoryJournal::default()
    }

    /// The recorded steps' keys, in the order they were recorded.
    pub fn keys(&self) -> Vec<String> {
        self.order
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// A journal holding the steps of `transcript` (an earlier run's, as
    /// [`RunResult::messages`](crate::RunResult::messages) or [`Error::messages`](crate::agent::Error::messages)
    /// give it, maybe saved and loaded): its `k`-th assistant message as turn `k` and each tool
    /// result after it as that turn's call. Starting the transcript's first prompt on it with
    /// [`Agent::start_journaled`](crate::Agent::start_journaled) picks the run up where the
    /// transcript leaves off, as resuming from the transcript does: one mechanism.
    ///
    /// What a transcript does not say is taken as the default: no call asked to end the run.
    pub fn from_transcript(transcript: &[crate::message::Message]) -> MemoryJournal {
        use crate::message::Message;
        let journal = MemoryJournal::new();
        let mut turn = 0;
        {
            let mut steps = journal
                .steps
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let mut order = journal
                .order
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let mut record = |key: StepKey, value: Value| {
                let name = key.to_string();
                if steps.insert(name.clone(), seal(value)).is_none() {
                    order.push(name);
                }
            };
            // User messages after a turn joined the run from its inbox: after the turn's batch
            // when the turn asked for calls, else when the run would have ended.
            let mut inbox: Option<(StepKey, InboxRecord)> = None;
            let mut asked_for_calls = false;
            let flush = |inbox: &mut Option<(StepKey, InboxRecord)>,
                         record: &mut dyn FnMut(StepKey, Value)| {
                if let Some((key, messages)) = inbox.take() {
                    if let Ok(value) = serde_json::to_value(Some(messages)) {
                        record(key, value);
                    }
                }
            };
            for message in transcript {
                match message {
                    Message::User(user) if turn > 0 => {
                        let (key, delivery) = if asked_for_calls {
                            (
                                StepKey::Inbox {
                                    turn,
                                    ending: false,
                                },
                                crate::message::Delivery::Steer,
                            )
                        } else {
                            (
                                StepKey::Inbox { turn, ending: true },
                                crate::message::Delivery::FollowUp,
                            )
                        };
                        inbox
                            .get_or_insert_with(|| {
                                (
                                    key,
                                    InboxRecord {
                                        delivery,
                                        messages: Vec::new(),
                                    },
                                )
                            })
                            .1
                            .messages
                            .push(user.clone());
                    }
                    Message::Assistant(assistant) => {
                        flush(&mut inbox, &mut record);
                        turn += 1;
                        asked_for_calls = !assistant.tool_calls.is_empty();
                        if let Ok(value) = serde_json::to_value(assistant) {
                            record(StepKey::Turn { turn }, value);
                        }
                    }
                    Message::ToolResult(result) if turn > 0 => {
                        let key = StepKey::Call {
                            turn,
                            call_id: result.tool_call_id.clone(),
                        };
                        let recorded = RecordedCall {
                            message: result.clone(),
                            terminate: false,
                            spent: None,
                        };
                        if let Ok(value) = serde_json::to_value(&recorded) {
                            record(key, value);
                        }
                    }
                    _ => {}
                }
            }
            flush(&mut inbox, &mut record);
        }
        journal
    }

    /// The value recorded for `key`, if any.
    pub fn recorded(&self, key: &StepKey) -> Option<Value> {
        self.steps
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&key.to_string())
            .cloned()
    }
}

impl Journal for MemoryJournal {
    fn step(&self, key: StepKey, work: StepWork) -> BoxFuture<'static, Result<Value, StepError>> {
        let name = key.to_string();
        if let Some(value) = self.recorded(&key) {
            return futures::future::ready(Ok(value)).boxed();
        }
        let (steps, order) = (self.steps.clone(), self.order.clone());
        async move {
            let value = work.run().await?;
            let mut steps = steps
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            // Two runs on one journal may race on a step: the first record wins, as a durable
            // journal's would.
            match steps.entry(name) {
                std::collections::hash_map::Entry::Occupied(kept) => Ok(kept.get().clone()),
                std::collections::hash_map::Entry::Vacant(slot) => {
                    order
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .push(slot.key().clone());
                    Ok(slot.insert(value).clone())
                }
            }
        }
        .boxed()
    }
}
