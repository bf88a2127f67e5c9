//! What the console knows of one actor instance: its [`Entry`], kept up by the [`Probe`] its
//! owner holds.
//!
//! Everything an actor does to its entry is a relaxed atomic or a short uncontended lock on its
//! own entry: the console reads entries when it samples, and never sends an actor anything, so
//! a slow console can never hold an actor up.

use std::borrow::Cow;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use super::{GroupInner, Shared};
use crate::stats::bucket_of;

/// What kind of actor an entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Kind {
    /// A run's actor (a subagent's run included: its identity names its parent).
    Run,
    /// A batch supervisor.
    Batch,
    /// One tool call: its tool actor, or the task that concludes it once the actor has nothing
    /// left to control.
    Call,
    /// The path-lock actor.
    PathLock,
    /// Any other actor with a counted mailbox.
    Other,
}

impl Kind {
    /// The kind's name, as the wire and the viewer show it.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Run => "run",
            Kind::Batch => "batch",
            Kind::Call => "call",
            Kind::PathLock => "path_lock",
            Kind::Other => "other",
        }
    }
}

/// Who an actor is: the run, call and tool it belongs to. Set by the actor's owner, once or
/// rarely ([`Probe::identify`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct Identity {
    /// The run's ID.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<u64>,
    /// The run this run is a subagent of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_run: Option<u64>,
    /// The batch (the run's turn) a batch supervisor or call belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch: Option<u64>,
    /// The tool call's ID.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<String>,
    /// The tool's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
}

/// What an actor is doing now.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Activity {
    /// Nothing: waiting for a message.
    Idle,
    /// Handling a message of this type, on its actor thread.
    Handling {
        /// The message type.
        message: Cow<'static, str>,
    },
    /// Running work of its own off the actor threads (a tool call's function, a hook).
    Running {
        /// What runs.
        what: Cow<'static, str>,
    },
    /// Waiting for something outside itself.
    Waiting {
        /// What it waits on.
        on: WaitingOn,
    },
}

/// What an actor waits on.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "for", rename_all = "snake_case")]
#[non_exhaustive]
pub enum WaitingOn {
    /// The model's next message.
    Model,
    /// The calls of its batch.
    Calls,
    /// The lease on a path, held by another call.
    PathLease {
        /// The path.
        path: String,
    },
    /// A person's answer (an approval).
    Person,
    /// A subagent's run.
    Child,
    /// Something else, named.
    Other {
        /// What.
        what: String,
    },
}

impl fmt::Display for Activity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Activity::Idle => f.write_str("idle"),
            Activity::Handling { message } => write!(f, "handling {message}"),
            Activity::Running { what } => write!(f, "running {what}"),
            Activity::Waiting { on } => write!(f, "waiting on {on}"),
        }
    }
}

impl fmt::Display for WaitingOn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WaitingOn::Model => f.write_str("the model"),
            WaitingOn::Calls => f.write_str("its calls"),
            WaitingOn::PathLease { path } => write!(f, "the lease on {path}"),
            WaitingOn::Person => f.write_str("a person"),
            WaitingOn::Child => f.write_str("a subagent"),
            WaitingOn::Other { what } => f.write_str(what),
        }
    }
}

/// A histogram of durations in the same buckets as [`crate::WaitHistogram`]: 10 µs, 100 µs,
/// 1 ms, 10 ms, 100 ms, 1 s, longer.
#[derive(Debug, Default)]
pub(crate) struct Histogram {
    pub(super) buckets: [AtomicU64; 7],
    pub(super) total_us: AtomicU64,
}

impl Histogram {
    fn record(&self, us: u64) {
        if let Some(count) = self.buckets.get(bucket_of(us)) {
            count.fetch_add(1, Ordering::Relaxed);
        }
        self.total_us.fetch_add(us, Ordering::Relaxed);
    }
}

/// The state an actor's owner changes: behind one lock, taken by the owner when the activity
/// changes and by the console when it samples.
#[derive(Debug)]
pub(super) struct State {
    pub(super) identity: Identity,
    pub(super) activity: Activity,
    /// Since when (µs after the console's epoch) the activity is what it is.
    pub(super) since_us: u64,
    /// Path leases held, each since when.
    pub(super) holds: Vec<(PathBuf, u64)>,
}

/// An actor's type name: shared by every mailbox of the type, or a constant.
#[derive(Debug, Clone)]
pub(crate) enum Name {
    Static(&'static str),
    Shared(Arc<str>),
}

impl Name {
    pub(super) fn as_str(&self) -> &str {
        match self {
            Name::Static(name) => name,
            Name::Shared(name) => name,
        }
    }
}

impl From<&'static str> for Name {
    fn from(name: &'static str) -> Name {
        Name::Static(name)
    }
}

impl From<Arc<str>> for Name {
    fn from(name: Arc<str>) -> Name {
        Name::Shared(name)
    }
}

/// What an actor's mailbox has done.
#[derive(Debug)]
pub(super) struct MailboxStats {
    pub(super) depth: AtomicUsize,
    pub(super) handled: AtomicU64,
    pub(super) last_handled_us: AtomicU64,
    pub(super) busy: Histogram,
    pub(super) wait: Histogram,
}

impl MailboxStats {
    pub(super) fn new(now_us: u64) -> MailboxStats {
        MailboxStats {
            depth: AtomicUsize::new(0),
            handled: AtomicU64::new(0),
            last_handled_us: AtomicU64::new(now_us),
            busy: Histogram::default(),
            wait: Histogram::default(),
        }
    }
}

/// A group member whose work has not started.
pub(super) const UNUSED: u8 = 0;
/// A live entry.
pub(super) const LIVE: u8 = 1;
/// A group member whose work is over.
pub(super) const ENDED: u8 = 2;

/// The console's record of one live actor.
#[derive(Debug)]
pub(super) struct Entry {
    pub(super) id: u64,
    pub(super) kind: Kind,
    pub(super) name: Name,
    pub(super) born_us: AtomicU64,
    /// A group member's life: [`UNUSED`] until its work starts, [`LIVE`], then [`ENDED`] (and
    /// when). A lone entry is live while it is in the console's live list.
    pub(super) life: AtomicU8,
    pub(super) ended_us: AtomicU64,
    /// Bumped on every change, so a connection sends only what changed since it last looked.
    pub(super) version: AtomicU64,
    /// What its mailbox does; `None` for work without one (a tool call), which keeps the
    /// many short entries small (an entry's memory is most of what the console costs).
    pub(super) mailbox: Option<Box<MailboxStats>>,
    /// Events the run told (runs only): a count, not a time, so telling one costs no clock
    /// read; the console notes when it last saw the count change.
    pub(super) events: AtomicU64,
    /// The count as the console last saw it, and since when (µs; 0: never seen one).
    pub(super) events_seen: AtomicU64,
    pub(super) events_changed_us: AtomicU64,
    pub(super) state: Mutex<State>,
}

impl Entry {
    pub(super) fn new(id: u64, kind: Kind, name: Name, now_us: u64) -> Entry {
        Entry {
            id,
            kind,
            name,
            born_us: AtomicU64::new(now_us),
            life: AtomicU8::new(LIVE),
            ended_us: AtomicU64::new(0),
            version: AtomicU64::new(1),
            mailbox: None,
            events: AtomicU64::new(0),
            events_seen: AtomicU64::new(0),
            events_changed_us: AtomicU64::new(0),
            state: Mutex::new(State {
                identity: Identity::default(),
                activity: Activity::Idle,
                since_us: now_us,
                holds: Vec::new(),
            }),
        }
    }

    /// When the run's last event was noticed (`None`: it told none): a sample that finds the
    /// count changed since the last one notes it as of `now`.
    pub(super) fn noted_event(&self, now: u64) -> Option<u64> {
        let events = self.events.load(Ordering::Relaxed);
        if events == 0 {
            return None;
        }
        if self.events_seen.swap(events, Ordering::Relaxed) != events {
            self.events_changed_us.store(now, Ordering::Relaxed);
            return Some(now);
        }
        Some(self.events_changed_us.load(Ordering::Relaxed))
    }

    pub(super) fn born_us(&self) -> u64 {
        self.born_us.load(Ordering::Relaxed)
    }

    pub(super) fn is_live(&self) -> bool {
        self.life.load(Ordering::Acquire) == LIVE
    }

    pub(super) fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn changed(&self) {
        self.version.fetch_add(1, Ordering::Relaxed);
    }
}

/// One actor's live record, held by the actor's owner; its entry leaves the console's live
/// list (for its short history) when the last clone is dropped.
struct Tracked {
    entry: Arc<Entry>,
    shared: Arc<Shared>,
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.shared.end(&self.entry);
    }
}

/// Where a probe's entry is: its own, or one slot of a [`Group`](super::Group).
#[derive(Clone, Default)]
enum Link {
    #[default]
    Off,
    One(Arc<Tracked>),
    Member(Arc<GroupInner>, usize),
}

/// An actor's handle on its console entry: what it is, what it does. With the console off,
/// every method is a no-op costing one branch.
///
/// Get one from a counted [`Mailbox`](crate::Mailbox) ([`Mailbox::probe`](crate::Mailbox::probe)),
/// for work that has no mailbox from [`Host::probe`](crate::Host::probe), or for many short
/// pieces of work at once from a [`Group`](super::Group). Clones share the entry; a lone entry
/// ends when the last clone is dropped, a group's member when the group says so.
#[derive(Clone, Default)]
pub struct Probe(Link);

impl fmt::Debug for Probe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.parts() {
            None => f.write_str("Probe(off)"),
            Some((entry, _)) => write!(f, "Probe({} #{})", entry.name.as_str(), entry.id),
        }
    }
}

impl Probe {
    /// A probe that records nothing (the console is off).
    pub fn none() -> Probe {
        Probe(Link::Off)
    }

    pub(super) fn tracking(entry: Arc<Entry>, shared: Arc<Shared>) -> Probe {
        Probe(Link::One(Arc::new(Tracked { entry, shared })))
    }

    pub(super) fn member(group: Arc<GroupInner>, index: usize) -> Probe {
        Probe(Link::Member(group, index))
    }

    fn parts(&self) -> Option<(&Entry, &Shared)> {
        match &self.0 {
            Link::Off => None,
            Link::One(tracked) => Some((&tracked.entry, &tracked.shared)),
            Link::Member(group, index) => group.member(*index),
        }
    }

    /// Whether a console records this probe's actor.
    pub fn is_on(&self) -> bool {
        !matches!(self.0, Link::Off)
    }

    /// The entry's ID on the console, when one records it.
    pub fn id(&self) -> Option<u64> {
        self.parts().map(|(entry, _)| entry.id)
    }

    fn with(&self, change: impl FnOnce(&Entry, &Shared)) {
        if let Some((entry, shared)) = self.parts() {
            change(entry, shared);
            entry.changed();
        }
    }

    /// Sets who the actor is; `fill` runs only when the console is on, so building the
    /// identity costs nothing otherwise.
    pub fn identify(&self, fill: impl FnOnce(&mut Identity)) {
        self.with(|entry, _| fill(&mut entry.state().identity));
    }

    /// Who the actor is, as its owner said.
    pub fn identity(&self) -> Option<Identity> {
        self.parts()
            .map(|(entry, _)| entry.state().identity.clone())
    }

    /// Sets what the actor does now, from now on.
    pub fn set(&self, activity: Activity) {
        self.with(|entry, shared| {
            let now = shared.now_us();
            let mut state = entry.state();
            state.activity = activity;
            state.since_us = now;
        });
    }

    /// [`Activity::Idle`].
    pub fn idle(&self) {
        if self.is_on() {
            self.set(Activity::Idle);
        }
    }

    /// [`Activity::Waiting`] on `on`.
    pub fn waiting(&self, on: impl FnOnce() -> WaitingOn) {
        if self.is_on() {
            self.set(Activity::Waiting { on: on() });
        }
    }

    /// [`Activity::Running`] `what` (a `&'static str` costs no allocation).
    pub fn running(&self, what: impl FnOnce() -> Cow<'static, str>) {
        if self.is_on() {
            self.set(Activity::Running { what: what() });
        }
    }

    /// Notes that the run told an event (the "run with no event" lint reads it; its time is
    /// when a sample first sees the count changed, within one sample).
    pub fn event(&self) {
        if let Some((entry, _)) = self.parts() {
            entry.events.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Notes that the actor holds the lease on `path` until the returned guard is dropped.
    pub fn holding(&self, path: &Path) -> Holding {
        let Some((entry, shared)) = self.parts() else {
            return Holding(None);
        };
        let now = shared.now_us();
        entry.state().holds.push((path.to_path_buf(), now));
        entry.changed();
        Holding(Some((self.clone(), path.to_path_buf())))
    }

    /// The message was put in this actor's mailbox.
    pub(crate) fn sent(&self) {
        if let Some(mailbox) = self.parts().and_then(|(entry, _)| entry.mailbox.as_deref()) {
            mailbox.depth.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The message left the mailbox unhandled (the actor stopped).
    pub(crate) fn dropped(&self) {
        if let Some(mailbox) = self.parts().and_then(|(entry, _)| entry.mailbox.as_deref()) {
            mailbox.depth.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// The message of type `message` is handled from now until the returned guard is dropped,
    /// after waiting `wait_us` in the mailbox.
    pub(crate) fn handling(&self, message: &'static str, wait_us: u64) -> Handling {
        let Some((entry, shared)) = self.parts() else {
            return Handling(None);
        };
        if let Some(mailbox) = entry.mailbox.as_deref() {
            mailbox.depth.fetch_sub(1, Ordering::Relaxed);
            mailbox.wait.record(wait_us);
        }
        let now = shared.now_us();
        let before = {
            let mut state = entry.state();
            let before = std::mem::replace(
                &mut state.activity,
                Activity::Handling {
                    message: Cow::Borrowed(message),
                },
            );
            (before, std::mem::replace(&mut state.since_us, now))
        };
        entry.changed();
        Handling(Some((self.clone(), now, before)))
    }
}

/// A message being handled; dropping it records the time it took and gives the actor back the
/// activity it had before (a run waiting on the model still does, after a delta).
#[derive(Debug)]
pub struct Handling(Option<(Probe, u64, (Activity, u64))>);

impl Handling {
    /// Nothing to note (the console is off).
    pub fn none() -> Handling {
        Handling(None)
    }
}

impl Drop for Handling {
    fn drop(&mut self) {
        let Some((probe, started, (before, since))) = self.0.take() else {
            return;
        };
        let Some((entry, shared)) = probe.parts() else {
            return;
        };
        let now = shared.now_us();
        if let Some(mailbox) = entry.mailbox.as_deref() {
            mailbox.busy.record(now.saturating_sub(started));
            mailbox.handled.fetch_add(1, Ordering::Relaxed);
            mailbox.last_handled_us.store(now, Ordering::Relaxed);
        }
        {
            let mut state = entry.state();
            // A handler that set an activity of its own keeps it.
            if matches!(state.activity, Activity::Handling { .. }) && state.since_us == started {
                state.activity = before;
                state.since_us = since;
            }
        }
        entry.changed();
    }
}

/// A lease on a path, as the console knows it; dropping it notes the release.
#[derive(Debug)]
pub struct Holding(Option<(Probe, PathBuf)>);

impl Drop for Holding {
    fn drop(&mut self) {
        let Some((probe, path)) = self.0.take() else {
            return;
        };
        probe.with(|entry, _| {
            let mut state = entry.state();
            if let Some(at) = state.holds.iter().position(|(held, _)| *held == path) {
                state.holds.swap_remove(at);
            }
        });
    }
}
