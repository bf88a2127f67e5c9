//! The caller's handle on a run: its events and its outcome.
//!
//! The run actor is the only writer of a run's [`Channel`]; the [`Run`] handle the only reader.
//! The channel is bounded for updates only: when the consumer has fallen so far behind that the
//! buffer is full, a new update of a call (or of the streaming message) is merged into the
//! pending one instead of queued. Lifecycle events are always queued, so none is ever lost, and
//! memory stays bounded by the run's own size however slowly the consumer reads.

use std::collections::VecDeque;
use std::fmt;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Waker};

use futures::Stream;

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::{Delivery, Error, Event, RunResult};
use crate::message::UserMessage;

type Outcome = Result<RunResult, Error>;

struct State {
    events: VecDeque<Event>,
    capacity: usize,
    /// Set once the run ended; events may still be queued. Boxed: a run in flight would
    /// otherwise carry room for a whole `RunResult` (over 200 bytes) it does not have yet.
    outcome: Option<Box<Outcome>>,
    finished: bool,
    /// Threads blocked on `event_ready` / `outcome_ready`. Notifying a condvar is a system call
    /// even when nobody waits, and a run pushes dozens of events.
    event_waiters: usize,
    outcome_waiters: usize,
    /// Messages queued by `Run::steer` and `Run::follow_up`, not yet delivered.
    steering: VecDeque<UserMessage>,
    follow_ups: VecDeque<UserMessage>,
    /// Set when the run decided to end: nothing more can be queued.
    inbox_closed: bool,
    /// The task polling `Run` as a `Stream`, woken by the next event or the end.
    stream_waker: Option<Waker>,
}

/// Events and outcome of one run, shared by the run actor and the [`Run`] handle.
pub(crate) struct Channel {
    state: Mutex<State>,
    /// Signalled when an event is queued or the run ends (blocking event readers).
    event_ready: Condvar,
    /// Signalled when the run ends (blocking `wait`); kept apart from `event_ready` so that a
    /// caller waiting for the outcome is not woken by every event.
    outcome_ready: Condvar,
    notify: Notify,
    /// Cleared when nobody will read events (`Agent::run`): they are then neither built nor
    /// kept.
    wanted: AtomicBool,
    /// Set by `Run::inject_crash`: the run actor panics when it next records a tool result.
    #[cfg(feature = "fault-injection")]
    crash: AtomicBool,
}

impl Channel {
    pub(crate) fn new(capacity: usize) -> Arc<Channel> {
        Arc::new(Channel {
            state: Mutex::new(State {
                events: VecDeque::new(),
                capacity: capacity.max(1),
                outcome: None,
                finished: false,
                event_waiters: 0,
                outcome_waiters: 0,
                steering: VecDeque::new(),
                follow_ups: VecDeque::new(),
                inbox_closed: false,
                stream_waker: None,
            }),
            event_ready: Condvar::new(),
            outcome_ready: Condvar::new(),
            notify: Notify::new(),
            wanted: AtomicBool::new(true),
            #[cfg(feature = "fault-injection")]
            crash: AtomicBool::new(false),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn wake_event_readers(&self, blocked_readers: usize, stream: Option<Waker>) {
        if blocked_readers > 0 {
            self.event_ready.notify_all();
        }
        self.notify.notify_waiters();
        if let Some(waker) = stream {
            waker.wake();
        }
    }

    /// Queues `event`, coalescing it into a pending update when the buffer is full.
    pub(crate) fn push(&self, event: Event) {
        let mut state = self.lock();
        if !self.wants_events() {
            return;
        }
        let event = if state.events.len() >= state.capacity {
            match coalesce(&mut state.events, event) {
                Some(event) => event,
                None => return,
            }
        } else {
            event
        };
        state.events.push_back(event);
        let blocked_readers = state.event_waiters;
        let stream = state.stream_waker.take();
        drop(state);
        self.wake_event_readers(blocked_readers, stream);
    }

    /// Records the outcome; the first one wins.
    pub(crate) fn finish(&self, outcome: Outcome) {
        let mut state = self.lock();
        if state.finished {
            return;
        }
        state.finished = true;
        state.outcome = Some(Box::new(outcome));
        let (blocked_readers, blocked_waiters) = (state.event_waiters, state.outcome_waiters);
        let stream = state.stream_waker.take();
        drop(state);
        if blocked_waiters > 0 {
            self.outcome_ready.notify_all();
        }
        self.wake_event_readers(blocked_readers, stream);
    }

    /// Queues a message for the run, or gives it back when the run has ended (or is ending).
    fn queue(&self, delivery: Delivery, message: UserMessage) -> Result<(), NotDelivered> {
        let mut state = self.lock();
        if state.finished || state.inbox_closed {
            return Err(NotDelivered { message });
        }
        match delivery {
            Delivery::Steer => state.steering.push_back(message),
            Delivery::FollowUp => state.follow_ups.push_back(message),
        }
        Ok(())
    }

    /// The steering messages queued so far.
    pub(crate) fn take_steering(&self) -> Vec<UserMessage> {
        self.lock().steering.drain(..).collect()
    }

    /// What to deliver when the run would otherwise end: steering first, else the follow-ups.
    /// With nothing queued the inbox closes, so nothing queued later can be lost.
    pub(crate) fn take_before_end(&self) -> Option<(Delivery, Vec<UserMessage>)> {
        let mut state = self.lock();
        if !state.steering.is_empty() {
            return Some((Delivery::Steer, state.steering.drain(..).collect()));
        }
        if !state.follow_ups.is_empty() {
            return Some((Delivery::FollowUp, state.follow_ups.drain(..).collect()));
        }
        state.inbox_closed = true;
        None
    }

    pub(crate) fn is_finished(&self) -> bool {
        self.lock().finished
    }

    /// Panics when a crash was injected into this run (the `fault-injection` feature).
    #[cfg(feature = "fault-injection")]
    #[allow(clippy::panic)]
    pub(crate) fn crash_if_injected(&self) {
        if self.crash.swap(false, Ordering::Relaxed) {
            panic!("a crash injected with Run::inject_crash");
        }
    }

    /// Whether events may still be read.
    pub(crate) fn wants_events(&self) -> bool {
        self.wanted.load(Ordering::Relaxed)
    }

    fn discard_events(&self) {
        self.wanted.store(false, Ordering::Relaxed);
        self.lock().events.clear();
    }

    fn try_next(&self) -> Poll<Event> {
        let mut state = self.lock();
        match state.events.pop_front() {
            Some(event) => Poll::Ready(Some(event)),
            None if state.finished => Poll::Ready(None),
            None => Poll::Pending,
        }
    }

    fn poll_next(&self, cx: &mut Context<'_>) -> std::task::Poll<Option<Event>> {
        let mut state = self.lock();
        match state.events.pop_front() {
            Some(event) => std::task::Poll::Ready(Some(event)),
            None if state.finished => std::task::Poll::Ready(None),
            None => {
                // Registered under the lock that `push` and `finish` take, so no wake-up is
                // missed between the check and the registration.
                match &mut state.stream_waker {
                    Some(waker) => waker.clone_from(cx.waker()),
                    None => state.stream_waker = Some(cx.waker().clone()),
                }
                std::task::Poll::Pending
            }
        }
    }

    fn next_blocking(&self) -> Option<Event> {
        let mut state = self.lock();
        loop {
            if let Some(event) = state.events.pop_front() {
                return Some(event);
            }
            if state.finished {
                return None;
            }
            state.event_waiters += 1;
            state = self
                .event_ready
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
            state.event_waiters -= 1;
        }
    }

    async fn next_async(&self) -> Option<Event> {
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if let Poll::Ready(event) = self.try_next() {
                return event;
            }
            notified.await;
        }
    }

    fn take_outcome(state: &mut State) -> Option<Outcome> {
        state.outcome.take().map(|outcome| *outcome)
    }

    fn wait_blocking(&self) -> Outcome {
        let mut state = self.lock();
        loop {
            if let Some(outcome) = Channel::take_outcome(&mut state) {
                return outcome;
            }
            state.outcome_waiters += 1;
            state = self
                .outcome_ready
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
            state.outcome_waiters -= 1;
        }
    }

    async fn wait_async(&self) -> Outcome {
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if let Some(outcome) = Channel::take_outcome(&mut self.lock()) {
                return outcome;
            }
            notified.await;
        }
    }
}

enum Poll<T> {
    Ready(Option<T>),
    Pending,
}

/// Merges `event` into a pending event of the same stream if it is an update; returns it back
/// if it must be queued (lifecycle events, or an update with nothing pending to merge into).
fn coalesce(events: &mut VecDeque<Event>, event: Event) -> Option<Event> {
    if !is_update(&event) {
        return Some(event);
    }
    let mut event = Some(event);
    for queued in events.iter_mut().rev() {
        event = Some(merge(queued, event.take()?)?);
    }
    event
}

fn is_update(event: &Event) -> bool {
    match event {
        Event::ToolExecutionUpdate(_) | Event::MessageUpdate(_) => true,
        Event::Subagent(nested) => is_update(&nested.event),
        _ => false,
    }
}

/// Merges `update` into `queued` when it is a pending update of the same call, message or
/// child run's call or message (`None`); else gives it back.
fn merge(queued: &mut Event, update: Event) -> Option<Event> {
    match (queued, update) {
        (Event::ToolExecutionUpdate(queued), Event::ToolExecutionUpdate(update))
            if queued.index == update.index && queued.call.id == update.call.id =>
        {
            queued.partial_result = update.partial_result;
            None
        }
        (Event::MessageUpdate(queued), Event::MessageUpdate(mut update))
            if queued.turn == update.turn =>
        {
            for delta in update.deltas.drain(..) {
                let unmerged = match queued.deltas.last_mut() {
                    Some(last) => last.merge(delta),
                    None => Some(delta),
                };
                queued.deltas.extend(unmerged);
            }
            None
        }
        (Event::Subagent(queued), Event::Subagent(update)) if queued.path == update.path => {
            let super::event::SubagentEvent { path, event } = update;
            merge(&mut queued.event, *event).map(|event| {
                Event::Subagent(super::event::SubagentEvent {
                    path,
                    event: Box::new(event),
                })
            })
        }
        (_, update) => Some(update),
    }
}

/// A started run: its live events, its outcome, and a way to cancel it.
///
/// Read the events with the blocking iterator [`Run::events`], or from async code with
/// [`Run::next_event`] or as a [`Stream`] (`Run` is one: `run.next().await` with
/// `futures::StreamExt`), then take the outcome with [`Run::wait`] or [`Run::finish`]. Neither is
/// required: a run proceeds whether or not its events are read, and a consumer that never
/// reads them does not make memory grow without bound (updates are coalesced).
///
/// `Run` is `Send`, so it can move to another thread or task. Dropping it cancels the run
/// (started tools are still waited for, by the runtime, in the background).
///
/// ```
/// use golato::agent::{self, Agent, Event, Input};
/// use golato::generator::Scripted;
/// use golato::message::{AssistantMessage, UserMessage};
/// use std::sync::Arc;
///
/// let agent = Agent::new(agent::Config {
///     generator: Some(Arc::new(Scripted::new([AssistantMessage::with_text("Hello!")]))),
///     ..Default::default()
/// })?;
/// let run = agent.start(Input::from(UserMessage::new("Hi")));
/// let mut saw_end = false;
/// for event in run.events() {
///     saw_end |= matches!(event, Event::RunEnd(_));
/// }
/// assert!(saw_end);
/// assert_eq!(run.wait()?.final_message.text(), "Hello!");
/// # Ok::<(), golato::agent::Error>(())
/// ```
pub struct Run {
    channel: Arc<Channel>,
    cancel: CancellationToken,
    id: u64,
}

impl fmt::Debug for Run {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Run")
            .field("id", &self.id)
            .field("finished", &self.channel.is_finished())
            .finish_non_exhaustive()
    }
}

impl Run {
    pub(crate) fn new(channel: Arc<Channel>, cancel: CancellationToken, id: u64) -> Run {
        Run {
            channel,
            cancel,
            id,
        }
    }

    /// The run's process-unique ID (also in its tracing span and its `RunStart` event).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// A blocking iterator over the run's events; it ends after the run's last event.
    ///
    /// Blocking: from async code use [`Run::next_event`] instead.
    pub fn events(&self) -> Events<'_> {
        Events { run: self }
    }

    /// The next event, or `None` once the run is over and every event was read.
    ///
    /// # Cancel safety
    /// Cancel safe: an event is taken only when the future completes.
    pub async fn next_event(&self) -> Option<Event> {
        self.channel.next_async().await
    }

    /// Waits for the run to end and returns its outcome. Events not read yet are dropped: this
    /// consumes the `Run`, so nobody can read them any more, and from here on the run does not
    /// build them at all.
    ///
    /// Blocking: from async code use [`Run::finish`] instead.
    ///
    /// # Errors
    /// An [`Error`] carrying the transcript so far when the run was cancelled, its generator
    /// failed, it reached `max_turns`, or its input could not be run.
    pub fn wait(self) -> Result<RunResult, Error> {
        self.channel.discard_events();
        self.channel.wait_blocking()
    }

    /// Waits for the run to end and returns its outcome. Events not read yet are dropped, as
    /// with [`Run::wait`].
    ///
    /// # Errors
    /// As [`Run::wait`].
    ///
    /// # Cancel safety
    /// Not cancel safe: dropping the future drops the `Run`, which cancels the run.
    pub async fn finish(self) -> Result<RunResult, Error> {
        self.channel.discard_events();
        self.channel.wait_async().await
    }

    /// Queues `message` to steer the run: it is delivered after the batch of tool calls that is
    /// running (all of whose calls finish and are recorded first), before the next model turn,
    /// as a user message in the transcript and a `UserMessage` event. Queued while the model is
    /// writing an answer without calls, it is delivered after that answer and the run goes on.
    ///
    /// # Errors
    /// [`NotDelivered`], with the message, when the run has ended or is ending.
    pub fn steer(&self, message: UserMessage) -> Result<(), NotDelivered> {
        self.channel.queue(Delivery::Steer, message)
    }

    /// Queues `message` for when the run would otherwise end (an answer without tool calls, or a
    /// batch that terminates): it is then added to the transcript and the run goes on with
    /// another model turn. Follow-ups queued together are delivered together, in order.
    ///
    /// # Errors
    /// [`NotDelivered`], with the message, when the run has ended or is ending.
    pub fn follow_up(&self, message: UserMessage) -> Result<(), NotDelivered> {
        self.channel.queue(Delivery::FollowUp, message)
    }

    /// Cancels the run: the generator request is dropped and every started tool is signalled.
    /// The run still waits for started tools to return, then ends with [`Error::Cancelled`].
    pub fn cancel(&self) {
        self.cancel.cancel();
    }

    /// Test-only fault hook (the `fault-injection` feature): the run's actor panics when it
    /// next records a tool result, as a bug in it would. The run then ends with
    /// [`Error::Crashed`] carrying its transcript; other runs are not affected.
    #[cfg(feature = "fault-injection")]
    pub fn inject_crash(&self) {
        self.channel.crash.store(true, Ordering::Relaxed);
    }

    /// The run's cancellation token, to cancel it from elsewhere.
    pub fn cancellation_token(&self) -> CancellationToken {
        self.cancel.clone()
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        if !self.channel.is_finished() {
            self.cancel.cancel();
        }
    }
}

/// The run's events, as [`Run::next_event`] gives them; the stream ends after the run's last
/// event (`RunEnd`), and the outcome is then ready for [`Run::finish`].
///
/// ```
/// use futures::StreamExt;
/// use golato::agent::{self, Agent, Event, Input};
/// use golato::generator::Scripted;
/// use golato::message::{AssistantMessage, UserMessage};
/// use std::sync::Arc;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), golato::agent::Error> {
/// let agent = Agent::new(agent::Config {
///     generator: Some(Arc::new(Scripted::new([AssistantMessage::with_text("Hello!")]))),
///     ..Default::default()
/// })?;
/// let mut run = agent.start(Input::from(UserMessage::new("Hi")));
/// let mut kinds = Vec::new();
/// while let Some(event) = run.next().await {
///     kinds.push(serde_json::to_value(&event).map(|line| line["type"].clone()));
/// }
/// assert_eq!(kinds.last().and_then(|kind| kind.as_ref().ok()), Some(&"run_end".into()));
/// assert_eq!(run.finish().await?.final_message.text(), "Hello!");
/// # Ok(())
/// # }
/// ```
impl Stream for Run {
    type Item = Event;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> std::task::Poll<Option<Event>> {
        self.channel.poll_next(cx)
    }
}

/// A message given to [`Run::steer`] or [`Run::follow_up`] after the run ended (or while it
/// was ending), returned unsent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the run has ended, so the message was not delivered; start a new run with it, resuming from the transcript (agent::Input::transcript)")]
pub struct NotDelivered {
    /// The message, back to the caller.
    pub message: UserMessage,
}

/// Blocking iterator over a run's events, from [`Run::events`].
#[derive(Debug)]
pub struct Events<'a> {
    run: &'a Run,
}

impl Iterator for Events<'_> {
    type Item = Event;

    fn next(&mut self) -> Option<Event> {
        self.run.channel.next_blocking()
    }
}

#[cfg(test)]
#[path = "run_tests.rs"]
mod tests;
