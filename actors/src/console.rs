//! The actor console: what every actor of a host is doing now, for a person or a script to
//! watch ([`Console::snapshot`] in process, [`Console::serve`] over a socket).
//!
//! Off by default ([`HostConfig::console`](crate::HostConfig::console) is `None`): every
//! [`Probe`] is then a `None` and costs one branch. On, each actor instance has an entry: a few
//! atomics bumped as its messages come and go, and a small lock its owner takes when what it
//! does changes. The console samples the entries when asked; it never sends an actor a message
//! and never waits on one, so a viewer that reads slowly slows only its own connection.
//!
//! ```
//! use golato_actors::console::{ConsoleConfig, Kind, WaitingOn};
//! use golato_actors::{Host, HostConfig};
//!
//! let host = Host::new(HostConfig { console: Some(ConsoleConfig::default()), ..HostConfig::default() })?;
//! let probe = host.probe(Kind::Other, "Fetcher");
//! probe.waiting(|| WaitingOn::Other { what: "the network".into() });
//! let snapshot = host.console().map(|console| console.snapshot()).unwrap_or_default();
//! assert_eq!(snapshot.actors.len(), 1);
//! assert_eq!(snapshot.actors[0].activity.to_string(), "waiting on the network");
//! # Ok::<(), golato_actors::HostError>(())
//! ```

mod activity;
mod entry;
mod group;
mod lints;
mod probe;
mod registry;
mod serve;
mod view;

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

pub use probe::{Activity, Handling, Holding, Identity, Kind, Probe, WaitingOn};
pub use serve::{ConsoleAddr, ConsoleServer, ServeError, MAX_VIEWERS};
pub use view::{
    ActorView, Delta, Held, Histogram, Lint, LintKind, LockParty, LockView, Snapshot, Thresholds,
    Update, WIRE_VERSION,
};

pub(crate) use entry::Name;
use entry::{Clock, Entry, Lone, MailboxStats, Place, Seen, State};
pub use group::Group;
use group::GroupInner;
use lints::empty_lock;
use lints::lints;
use lints::Limits;
use registry::{Live, Registry};

/// How a host's console records and tells.
#[derive(Debug, Clone)]
pub struct ConsoleConfig {
    /// At most this many updates a second per connection (at least 1). Default 4.
    pub rate: u32,
    /// Ended actors kept for the viewer's history, at most. Default 256.
    pub history: usize,
    /// How long an ended actor stays in the history, at most. Default 30 s.
    pub history_for: Duration,
    /// A handler, or a call's function, running longer than this is flagged. Default 10 s.
    pub handler_threshold: Duration,
    /// A mailbox holding messages with none handled for this long is flagged. Default 5 s.
    pub mailbox_threshold: Duration,
    /// A path lease held this long while others wait is flagged. Default 10 s.
    pub lease_threshold: Duration,
    /// A run with no event for this long is flagged. Default 60 s.
    pub silent_run_threshold: Duration,
    /// Where to serve the console when the host starts; `None`: only in process (or call
    /// [`Console::serve`]).
    pub listen: Option<ConsoleAddr>,
}

impl Default for ConsoleConfig {
    fn default() -> Self {
        ConsoleConfig {
            rate: 4,
            history: 256,
            history_for: Duration::from_secs(30),
            handler_threshold: Duration::from_secs(10),
            mailbox_threshold: Duration::from_secs(5),
            lease_threshold: Duration::from_secs(10),
            silent_run_threshold: Duration::from_secs(60),
            listen: None,
        }
    }
}

impl ConsoleConfig {
    /// The thresholds as the wire tells them.
    pub fn thresholds(&self) -> Thresholds {
        let ms = |duration: Duration| u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
        Thresholds {
            handler_ms: ms(self.handler_threshold),
            mailbox_ms: ms(self.mailbox_threshold),
            lease_ms: ms(self.lease_threshold),
            silent_run_ms: ms(self.silent_run_threshold),
        }
    }
}

/// A host's console: the live entries of its actors. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Console {
    shared: Arc<Shared>,
}

/// The registry behind a console, shared with every probe.
#[derive(Debug)]
struct Shared {
    clock: Clock,
    config: ConsoleConfig,
    next_id: AtomicU64,
    live: Registry,
    /// Ended actors, for a while.
    history: Mutex<History>,
}

impl Shared {
    fn now_us(&self) -> u64 {
        self.clock.now_us()
    }

    /// Takes the ended actor's entry out of the live list, into the history.
    fn end(&self, lone: &Arc<Lone>) {
        self.live.delist(&lone.place);
        let now = self.now_us();
        lone.entry.ended_us.store(now, Ordering::Relaxed);
        self.remember(now, [(now, Ended::One(Arc::clone(lone)))]);
    }

    /// Takes a group out of the live list; its members that ran go to the history.
    fn end_group(&self, group: &Arc<GroupInner>) {
        self.live.delist(&group.place);
        let now = self.now_us();
        // Remembered as of now (a connection sends what was remembered since its last
        // update), each with the time it really ended.
        let members = group
            .entries
            .iter()
            .enumerate()
            .filter_map(|(index, entry)| match entry.life.load(Ordering::Acquire) {
                entry::UNUSED => None,
                life => {
                    if life == entry::LIVE {
                        entry.ended_us.store(now, Ordering::Relaxed);
                    }
                    Some((now, Ended::Member(Arc::clone(group), index)))
                }
            });
        self.remember(now, members);
    }

    /// Adds ended actors to the history, which keeps the newest within its bounds.
    fn remember(&self, now: u64, ended: impl IntoIterator<Item = (u64, Ended)>) {
        let mut guard = self.history.lock().unwrap_or_else(PoisonError::into_inner);
        let History { last, ended: kept } = &mut *guard;
        kept.extend(ended.into_iter().map(|(at, ended)| {
            *last += 1;
            (*last, at, ended)
        }));
        let keep_for = u64::try_from(self.config.history_for.as_micros()).unwrap_or(u64::MAX);
        while kept.len() > self.config.history
            || kept
                .front()
                .is_some_and(|(_, at, _)| now.saturating_sub(*at) > keep_for)
        {
            kept.pop_front();
        }
        drop(guard);
    }
}

impl Console {
    pub(crate) fn new(config: ConsoleConfig) -> Console {
        Console {
            shared: Arc::new(Shared {
                clock: Clock::new(),
                config,
                next_id: AtomicU64::new(1),
                live: Registry::new(),
                history: Mutex::new(History::default()),
            }),
        }
    }

    /// How the console was configured.
    pub fn config(&self) -> &ConsoleConfig {
        &self.shared.config
    }

    /// Records a new actor of `kind` named `name`; it ends when the last clone of the probe is
    /// dropped.
    pub fn register(&self, kind: Kind, name: &'static str) -> Probe {
        self.register_named(kind, Name::Static(name))
    }

    pub(crate) fn register_named(&self, kind: Kind, name: Name) -> Probe {
        self.register_entry(kind, name, false)
    }

    /// Registers an actor with a mailbox (its depth, messages and their times are kept).
    pub(crate) fn register_mailbox(&self, kind: Kind, name: Name) -> Probe {
        self.register_entry(kind, name, true)
    }

    fn register_entry(&self, kind: Kind, name: Name, mailbox: bool) -> Probe {
        let id = self.shared.next_id.fetch_add(1, Ordering::Relaxed);
        let now = self.shared.now_us();
        let lone = Arc::new(Lone::new(
            Entry::new(id, kind, now),
            name,
            mailbox,
            Arc::clone(&self.shared),
        ));
        self.shared
            .live
            .enlist(Live::One(Arc::clone(&lone)), &lone.place);
        Probe::lone(lone)
    }

    /// Entries for `count` short pieces of work of `kind` (a batch's tool calls), registered
    /// at once: each member's life is [`Group::start`] to [`Group::end`], and the group leaves
    /// the console when dropped. One registration instead of one per member.
    pub fn group(&self, kind: Kind, name: &'static str, count: usize) -> Group {
        let first_id = self
            .shared
            .next_id
            .fetch_add(count as u64, Ordering::Relaxed);
        let now = self.shared.now_us();
        let entries = (0..count as u64)
            .map(|index| {
                let entry = Entry::new(first_id + index, kind, now);
                entry.life.store(entry::UNUSED, Ordering::Relaxed);
                entry
            })
            .collect();
        let inner = Arc::new(GroupInner {
            first_id,
            name,
            place: Place::default(),
            entries,
            shared: Arc::clone(&self.shared),
        });
        self.shared
            .live
            .enlist(Live::Group(Arc::clone(&inner)), &inner.place);
        Group(Some(inner))
    }

    /// Live actors now.
    pub fn live(&self) -> usize {
        self.shared
            .live
            .all()
            .iter()
            .map(|item| match item {
                Live::One(_) => 1,
                Live::Group(group) => group.entries.iter().filter(|e| e.is_live()).count(),
            })
            .sum()
    }

    /// Everything now: the live actors, the path locks, the lints and the recent history.
    pub fn snapshot(&self) -> Snapshot {
        self.snapshot_of(self.sample(|_, _| true), 0).0
    }

    /// The snapshot of a sample of every actor, with the recent history; `dropped` as a
    /// connection counted it. With it, the number of the last ended actor it tells of.
    fn snapshot_of(&self, sample: Sample, dropped: u64) -> (Snapshot, u64) {
        let (ended, last) = self.history(sample.now, 0);
        let snapshot = Snapshot {
            at_ms: sample.now / 1_000,
            ended,
            actors: sample.views.into_iter().map(|(_, view)| view).collect(),
            locks: sample.locks,
            lints: sample.lints,
            dropped,
        };
        (snapshot, last)
    }

    /// One pass over the live actors: the views of those `want(id, version)` selects, and the
    /// locks and lints of all. Only the selected and the notable (flagged, holding or waiting
    /// for a path) are turned into views, so a sample of a busy host whose viewer already has
    /// most actors stays cheap.
    fn sample(&self, mut want: impl FnMut(u64, u64) -> bool) -> Sample {
        let now = self.shared.now_us();
        let live = self.shared.live.all();
        // The live runs first: a call whose run is not among them is an orphan.
        let runs = live
            .iter()
            .filter_map(|item| match item {
                Live::One(lone) if lone.entry.kind == Kind::Run => lone.entry.state().ident.run,
                _ => None,
            })
            .collect();
        let mut pass = Pass {
            now,
            limits: Limits::of(&self.shared.config),
            runs,
            views: Vec::new(),
            notable: Vec::new(),
        };
        for item in &live {
            match item {
                Live::One(lone) => pass.visit(lone.seen(), &mut want),
                Live::Group(group) => {
                    for entry in group.entries.iter().filter(|entry| entry.is_live()) {
                        pass.visit(group.seen(entry), &mut want);
                    }
                }
            }
        }
        let Pass {
            mut views,
            notable,
            limits,
            ..
        } = pass;
        views.sort_unstable_by_key(|(_, view)| view.id);
        let locks = locks(notable.iter().map(|(view, _)| view));
        let lints = lints(&notable, &locks, &limits);
        Sample {
            now,
            views,
            locks,
            lints,
        }
    }

    /// The history's entries remembered after the one numbered `after` (0: all), and the
    /// number of the last one: a connection asks for what came after what it last sent, by
    /// number, as times on the coarse clock can be equal.
    fn history(&self, now: u64, after: u64) -> (Vec<ActorView>, u64) {
        let history = self
            .shared
            .history
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let views = history
            .ended
            .iter()
            .filter(|(number, _, _)| *number > after)
            .filter_map(|(_, _, ended)| {
                let seen = ended.seen()?;
                let ended_us = seen.entry.ended_us.load(Ordering::Relaxed);
                // Its age is how long it lived.
                let mut view = view_of(seen, ended_us);
                view.ended_ms_ago = Some(now.saturating_sub(ended_us) / 1_000);
                Some(view)
            })
            .collect();
        (views, history.last)
    }

    /// Serves this console at `addr` (see [`ConsoleServer`]), its connections running on
    /// `runtime`, until the returned server is dropped.
    ///
    /// # Errors
    /// [`ServeError::Listen`] when the address cannot be listened on.
    pub fn serve(
        &self,
        addr: &ConsoleAddr,
        runtime: &tokio::runtime::Handle,
    ) -> Result<ConsoleServer, ServeError> {
        serve::serve(self.clone(), addr, runtime)
    }
}

/// The view of one entry now.
fn view_of(seen: Seen<'_>, now: u64) -> ActorView {
    let Seen { entry, name, lone } = seen;
    let ms = |from: u64| now.saturating_sub(from) / 1_000;
    let (identity, activity, since, holds) = {
        let state: std::sync::MutexGuard<'_, State> = entry.state();
        (
            state.ident.identity(),
            state.activity.clone(),
            state.since_us,
            state
                .holds
                .iter()
                .map(|(path, at)| Held {
                    path: path.display().to_string(),
                    for_ms: ms(*at),
                })
                .collect(),
        )
    };
    let last_event = lone.and_then(|lone| lone.noted_event(now));
    let mailbox = lone.and_then(|lone| lone.mailbox.as_ref());
    let read = |histogram: fn(&MailboxStats) -> &entry::Histogram| {
        mailbox
            .map(|mailbox| view::Histogram::from(histogram(mailbox)))
            .unwrap_or_default()
    };
    ActorView {
        id: entry.id,
        kind: entry.kind,
        name: name.to_owned(),
        identity,
        activity,
        for_ms: ms(since),
        mailbox_depth: mailbox.map_or(0, |mailbox| mailbox.depth.load(Ordering::Relaxed)),
        handled: mailbox.map_or(0, |mailbox| mailbox.handled.load(Ordering::Relaxed)),
        busy: read(|mailbox| &mailbox.busy),
        mailbox_wait: read(|mailbox| &mailbox.wait),
        age_ms: ms(entry.born_us()),
        since_event_ms: last_event.map(ms),
        holds,
        ended_ms_ago: None,
    }
}

/// The path-lock table, from what the actors hold and wait on: holders from their leases,
/// waiters in the order they began to wait (the lock's FIFO order).
fn locks<'a>(actors: impl Iterator<Item = &'a ActorView>) -> Vec<LockView> {
    let mut table: BTreeMap<String, LockView> = BTreeMap::new();
    let party = |view: &ActorView, for_ms: u64| LockParty {
        actor: view.id,
        run: view.identity.run,
        call: view.identity.call.clone(),
        for_ms,
    };
    for view in actors {
        for held in &view.holds {
            let lock = table
                .entry(held.path.clone())
                .or_insert_with(|| empty_lock(&held.path));
            lock.holder = Some(party(view, held.for_ms));
        }
        if let Activity::Waiting {
            on: WaitingOn::PathLease { path },
        } = &view.activity
        {
            let lock = table
                .entry(path.clone())
                .or_insert_with(|| empty_lock(path));
            lock.waiting.push(party(view, view.for_ms));
        }
    }
    let mut locks: Vec<LockView> = table.into_values().collect();
    for lock in &mut locks {
        lock.waiting
            .sort_by(|a, b| b.for_ms.cmp(&a.for_ms).then(a.actor.cmp(&b.actor)));
    }
    locks
}

/// One pass over the live entries.
struct Pass {
    now: u64,
    limits: Limits,
    runs: std::collections::HashSet<u64>,
    views: Vec<(u64, ActorView)>,
    notable: Vec<(ActorView, Vec<LintKind>)>,
}

impl Pass {
    /// Flags `entry`, and makes its view if it is wanted or notable.
    fn visit(&mut self, seen: Seen<'_>, want: &mut impl FnMut(u64, u64) -> bool) {
        let (now, limits, entry) = (self.now, &self.limits, seen.entry);
        let version = entry.version.load(Ordering::Relaxed);
        let mut flags = Vec::new();
        let locking;
        {
            let state = entry.state();
            let busy = matches!(
                state.activity,
                Activity::Handling { .. } | Activity::Running { .. }
            );
            if busy && now.saturating_sub(state.since_us) > limits.handler {
                flags.push(LintKind::HandlerRunning);
            }
            locking = !state.holds.is_empty()
                || matches!(
                    state.activity,
                    Activity::Waiting {
                        on: WaitingOn::PathLease { .. }
                    }
                );
            if let (Kind::Call, Some(run)) = (entry.kind, state.ident.run) {
                if !self.runs.contains(&run) {
                    flags.push(LintKind::OrphanCall);
                }
            }
        }
        if let Some(mailbox) = seen.lone.and_then(|lone| lone.mailbox.as_ref()) {
            if mailbox.depth.load(Ordering::Relaxed) > 0
                && now.saturating_sub(mailbox.last_handled_us.load(Ordering::Relaxed))
                    > limits.mailbox
            {
                flags.push(LintKind::MailboxStalled);
            }
        }
        if let (Kind::Run, Some(lone)) = (entry.kind, seen.lone) {
            let last = lone.noted_event(now).unwrap_or_else(|| entry.born_us());
            if now.saturating_sub(last) > limits.silent_run {
                flags.push(LintKind::SilentRun);
            }
        }
        let wanted = want(entry.id, version);
        if !wanted && flags.is_empty() && !locking {
            return;
        }
        let view = view_of(seen, now);
        if !flags.is_empty() || locking {
            self.notable.push((view.clone(), flags));
        }
        if wanted {
            self.views.push((version, view));
        }
    }
}

/// The ended actors kept, oldest first, each numbered and with the time it was remembered
/// (their views are made only when someone looks: most are never looked at).
#[derive(Debug, Default)]
struct History {
    /// The number of the last one remembered.
    last: u64,
    ended: VecDeque<(u64, u64, Ended)>,
}

/// An ended actor in the history.
#[derive(Debug)]
enum Ended {
    One(Arc<Lone>),
    Member(Arc<GroupInner>, usize),
}

impl Ended {
    fn seen(&self) -> Option<Seen<'_>> {
        match self {
            Ended::One(lone) => Some(lone.seen()),
            Ended::Member(group, index) => group.entries.get(*index).map(|entry| group.seen(entry)),
        }
    }
}

impl Lone {
    fn seen(&self) -> Seen<'_> {
        Seen {
            entry: &self.entry,
            name: self.name.as_str(),
            lone: Some(self),
        }
    }
}

impl GroupInner {
    fn seen<'a>(&'a self, entry: &'a Entry) -> Seen<'a> {
        Seen {
            entry,
            name: self.name,
            lone: None,
        }
    }
}

/// What one pass found.
struct Sample {
    now: u64,
    views: Vec<(u64, ActorView)>,
    locks: Vec<LockView>,
    lints: Vec<Lint>,
}

#[cfg(test)]
mod tests;
