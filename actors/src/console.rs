//! The actor console: what every actor of a host is doing now, for a person or a script to
//! watch ([`Console::snapshot`] in process, [`Console::serve`] over a socket).
//!
//! Off by default ([`HostConfig::console`](crate::HostConfig::console) is `None`): every
//! [`Probe`] is then a `None` and costs one branch. On, each actor instance has a record: for an
//! actor with a mailbox, a few atomics bumped as its messages come and go and a small lock its
//! owner takes when what it does changes; for each tool call of a batch, 28 bytes of atomics in
//! its batch's [`Group`]. The console samples the records when asked; it never sends an actor a
//! message and never waits on one, so a viewer that reads slowly slows only its own connection.
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
mod sample;
mod serve;
mod view;

use std::collections::VecDeque;
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
use entry::{Clock, Entry, Lone};
pub use group::Group;
use group::{GroupInner, GroupPlan};
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
        self.remember(now, Ended::One(Arc::clone(lone)), 1);
    }

    /// Takes a group out of the live list; its members that ran go to the history.
    fn end_group(&self, group: &Arc<GroupInner>) {
        self.live.delist(&group.place);
        let now = self.now_us();
        // Members still running end now; the others keep the time they really ended.
        group.end_all();
        let ran = group.ran();
        if ran > 0 {
            self.remember(now, Ended::Group(Arc::clone(group)), ran);
        }
    }

    /// Adds `actors` ended actors (a lone one, or a group's that ran) to the history, which
    /// keeps the newest within its bounds. Remembered as of `now`: a connection sends what
    /// was remembered since its last update.
    fn remember(&self, now: u64, ended: Ended, actors: usize) {
        let mut history = self.history.lock().unwrap_or_else(PoisonError::into_inner);
        history.last += 1;
        let number = history.last;
        history.actors += actors;
        history.ended.push_back(Remembered {
            number,
            at: now,
            actors,
            ended,
        });
        let keep_for = u64::try_from(self.config.history_for.as_micros()).unwrap_or(u64::MAX);
        // Dropped after the lock: an old group's last reference may go here.
        let mut gone = Vec::new();
        // The newest stays, even a batch larger than the bound: its calls go together.
        while history.ended.len() > 1 && history.actors > self.config.history
            || history
                .ended
                .front()
                .is_some_and(|oldest| now.saturating_sub(oldest.at) > keep_for)
        {
            let Some(oldest) = history.ended.pop_front() else {
                break;
            };
            history.actors -= oldest.actors;
            gone.push(oldest);
        }
        drop(history);
        drop(gone);
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
            &self.shared,
        ));
        self.shared
            .live
            .enlist(Live::One(Arc::clone(&lone)), &lone.place);
        Probe::lone(lone)
    }

    /// Entries for `count` short pieces of work of `kind`, registered at once: each member's
    /// life is [`Group::start`] to [`Group::end`], and the group leaves the console when
    /// dropped. One registration instead of one per member.
    pub fn group(&self, kind: Kind, name: &'static str, count: usize) -> Group {
        self.enlist_group(GroupPlan {
            kind,
            name,
            run: None,
            batch: None,
            names: None,
            names_end: vec![(0, 0); count],
            running_tool: false,
        })
    }

    /// Entries for the tool calls of batch `batch` of run `run`, `calls` their (call ID, tool)
    /// pairs, registered and named at once (the names in one text, so a call costs no
    /// allocation of its own). Each member begins running its tool ([`Group::begin`]) and
    /// ends with [`Group::end`]; the group leaves the console when dropped.
    pub fn calls<'a>(
        &self,
        name: &'static str,
        run: u64,
        batch: u64,
        calls: impl ExactSizeIterator<Item = (&'a str, &'a str)>,
    ) -> Group {
        let mut names = String::with_capacity(calls.len() * 40);
        let mut names_end = Vec::with_capacity(calls.len());
        for (call, tool) in calls {
            names.push_str(call);
            let call_end = names.len();
            names.push_str(tool);
            // Past 4 GiB of names a member is told without them.
            let end = |at: usize| u32::try_from(at).unwrap_or(u32::MAX);
            names_end.push((end(call_end), end(names.len())));
        }
        self.enlist_group(GroupPlan {
            kind: Kind::Call,
            name,
            run: Some(run),
            batch: Some(batch),
            names: Some(names),
            names_end,
            running_tool: true,
        })
    }

    fn enlist_group(&self, plan: GroupPlan) -> Group {
        let first_id = self
            .shared
            .next_id
            .fetch_add(plan.names_end.len() as u64, Ordering::Relaxed);
        let inner = Arc::new(GroupInner::new(plan, first_id, &self.shared));
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
                Live::Group(group) => group
                    .members
                    .iter()
                    .filter(|member| member.life.load(Ordering::Acquire) == entry::LIVE)
                    .count(),
            })
            .sum()
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

/// The ended actors kept, oldest first (their views are made only when someone looks: most are
/// never looked at).
#[derive(Debug, Default)]
struct History {
    /// The number of the last one remembered.
    last: u64,
    /// How many actors the kept ones are.
    actors: usize,
    ended: VecDeque<Remembered>,
}

/// An ended lone actor, or an ended group, as the history keeps it.
#[derive(Debug)]
struct Remembered {
    /// Its number: a connection asks for those after the last it told of.
    number: u64,
    /// When it was remembered.
    at: u64,
    /// How many actors it is (a group's members that ran).
    actors: usize,
    ended: Ended,
}

/// An ended actor in the history.
#[derive(Debug)]
enum Ended {
    One(Arc<Lone>),
    Group(Arc<GroupInner>),
}

#[cfg(test)]
mod tests;
