//! The console's record of a lone actor (one with a mailbox, or one of
//! [`Console::register`](super::Console::register)): its [`Lone`] record, its [`Entry`] and
//! [`State`]; the clock every record is stamped with; where a record is in the live list.
//! A batch's calls have smaller records of their own (see [`Member`](super::group::Member)).
//!
//! What the console costs is mostly its records: they are written on every change of every
//! actor of a busy host. So a record allocates nothing of its own once made, and its times come
//! from the kernel's coarse clock, which costs a quarter of the precise one (see [`Clock`]).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use super::activity::{Activity, Identity, Kind};
use super::Shared;
use crate::stats::bucket_of;

/// Microseconds since the console began, on the kernel's coarse monotonic clock: what every
/// record's times are in.
///
/// The coarse clock ticks every few milliseconds (4 ms at 250 Hz) and costs about 7 ns a read
/// against 25 ns for the precise one on the machines measured (BENCHMARKS.md, "The actor
/// console"); the console shows milliseconds and flags after seconds. Handling times, which go
/// into 10 µs buckets, are measured on the precise clock instead (see `Handling`).
#[derive(Debug, Clone, Copy)]
pub(super) struct Clock {
    epoch_ns: u64,
}

impl Clock {
    pub(super) fn new() -> Clock {
        Clock {
            epoch_ns: coarse_ns(),
        }
    }

    pub(super) fn now_us(&self) -> u64 {
        coarse_ns().saturating_sub(self.epoch_ns) / 1_000
    }
}

#[cfg(any(target_os = "linux", target_os = "android"))]
fn coarse_ns() -> u64 {
    let now = rustix::time::clock_gettime(rustix::time::ClockId::MonotonicCoarse);
    let secs = u64::try_from(now.tv_sec).unwrap_or_default();
    let nanos = u64::try_from(now.tv_nsec).unwrap_or_default();
    secs.saturating_mul(1_000_000_000).saturating_add(nanos)
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn coarse_ns() -> u64 {
    // No coarse clock to ask: the precise one, from the first read.
    static EPOCH: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    let epoch = EPOCH.get_or_init(std::time::Instant::now);
    u64::try_from(epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// A histogram of durations in the same buckets as [`crate::WaitHistogram`]: 10 µs, 100 µs,
/// 1 ms, 10 ms, 100 ms, 1 s, longer.
#[derive(Debug, Default)]
pub(crate) struct Histogram {
    pub(super) buckets: [AtomicU64; 7],
    pub(super) total_us: AtomicU64,
}

impl Histogram {
    pub(super) fn record(&self, us: u64) {
        if let Some(count) = self.buckets.get(bucket_of(us)) {
            count.fetch_add(1, Ordering::Relaxed);
        }
        self.total_us.fetch_add(us, Ordering::Relaxed);
    }
}

/// [`Identity`] as a record keeps it: its numbers in place, its texts (rare: a group names its
/// members, see [`GroupInner`](super::group::GroupInner)) boxed.
#[derive(Debug, Clone, Default)]
pub(super) struct Ident {
    pub(super) run: Option<u64>,
    pub(super) parent_run: Option<u64>,
    pub(super) batch: Option<u64>,
    /// The call's ID and the tool's name.
    texts: Option<Box<[Option<Box<str>>; 2]>>,
}

impl Ident {
    /// The identity, over `under` (what its group says of it): what the record says wins.
    pub(super) fn identity_over(&self, under: Identity) -> Identity {
        let text = |at: usize| {
            self.texts
                .as_deref()
                .and_then(|texts| texts.get(at))
                .and_then(|text| text.as_deref().map(str::to_owned))
        };
        Identity {
            run: self.run.or(under.run),
            parent_run: self.parent_run.or(under.parent_run),
            batch: self.batch.or(under.batch),
            call: text(0).or(under.call),
            tool: text(1).or(under.tool),
        }
    }

    pub(super) fn of(identity: &Identity) -> Ident {
        let text = |text: &Option<String>| text.as_deref().map(Box::from);
        let texts = [text(&identity.call), text(&identity.tool)];
        Ident {
            run: identity.run,
            parent_run: identity.parent_run,
            batch: identity.batch,
            texts: texts.iter().any(Option::is_some).then(|| Box::new(texts)),
        }
    }
}

/// The state an actor's owner changes: behind one lock, taken by the owner when the activity
/// changes and by the console when it samples.
#[derive(Debug)]
pub(super) struct State {
    pub(super) activity: Activity,
    pub(super) ident: Ident,
    /// Path leases held, each since when.
    pub(super) holds: Vec<(std::path::PathBuf, u64)>,
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
/// A group member at work.
pub(super) const LIVE: u8 = 1;
/// A group member whose work is over.
pub(super) const ENDED: u8 = 2;

/// The console's record of one lone actor (a group's members have smaller ones, see
/// [`Member`](super::group::Member)); live while it is in the console's live list.
#[derive(Debug)]
pub(super) struct Entry {
    pub(super) id: u64,
    pub(super) kind: Kind,
    pub(super) born_us: AtomicU64,
    pub(super) ended_us: AtomicU64,
    /// Bumped on every change, so a connection sends only what changed since it last looked.
    pub(super) version: AtomicU64,
    /// Since when (µs on the console's [`Clock`]) its activity is what it is: written under
    /// the state's lock, read without it (a sample may pair an activity with the time of the
    /// one before, for one sample).
    pub(super) since_us: AtomicU64,
    pub(super) state: Mutex<State>,
}

impl Entry {
    pub(super) fn new(id: u64, kind: Kind, now_us: u64) -> Entry {
        Entry {
            id,
            kind,
            born_us: AtomicU64::new(now_us),
            ended_us: AtomicU64::new(0),
            version: AtomicU64::new(1),
            since_us: AtomicU64::new(now_us),
            state: Mutex::new(State {
                activity: Activity::Idle,
                ident: Ident::default(),
                holds: Vec::new(),
            }),
        }
    }

    pub(super) fn born_us(&self) -> u64 {
        self.born_us.load(Ordering::Relaxed)
    }

    pub(super) fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn changed(&self) {
        self.version.fetch_add(1, Ordering::Relaxed);
    }
}

/// A lone actor's record (one with a mailbox, or one of [`Console::register`](super::Console::register)):
/// its entry, with what only such actors have, in one allocation. It ends when the last
/// [`Probe`](super::Probe) on it is dropped.
#[derive(Debug)]
pub(super) struct Lone {
    pub(super) entry: Entry,
    pub(super) name: Name,
    /// What its mailbox does; `None` for an actor without one.
    pub(super) mailbox: Option<MailboxStats>,
    /// Events the run told (runs only): a count, not a time, so telling one costs no clock
    /// read; the console notes when it last saw the count change.
    pub(super) events: AtomicU64,
    /// The count as the console last saw it, and since when (µs; 0: never seen one).
    pub(super) events_seen: AtomicU64,
    pub(super) events_changed_us: AtomicU64,
    /// The probes on it: the last one to go ends it.
    pub(super) probes: AtomicUsize,
    /// Where it is in the console's live list.
    pub(super) place: Place,
    /// Its console's clock, and its console (weakly: the console's history holds records, and
    /// a record holding its console would keep a dropped console alive).
    pub(super) clock: Clock,
    pub(super) shared: Weak<Shared>,
}

impl Lone {
    pub(super) fn new(entry: Entry, name: Name, mailbox: bool, shared: &Arc<Shared>) -> Lone {
        let born = entry.born_us();
        Lone {
            entry,
            name,
            mailbox: mailbox.then(|| MailboxStats::new(born)),
            events: AtomicU64::new(0),
            events_seen: AtomicU64::new(0),
            events_changed_us: AtomicU64::new(0),
            probes: AtomicUsize::new(1),
            place: Place::default(),
            clock: shared.clock,
            shared: Arc::downgrade(shared),
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
}

/// Where a record is in the list, as [`Registry::enlist`](super::registry::Registry::enlist) set it: the shard in the high 32
/// bits, the slot in the low ones.
#[derive(Debug, Default)]
pub(super) struct Place(AtomicU64);

impl Place {
    pub(super) fn set(&self, shard: usize, slot: usize) {
        let shard = u64::try_from(shard).unwrap_or(u64::MAX);
        let slot = u64::try_from(slot).unwrap_or(u64::MAX);
        self.0
            .store((shard << 32) | (slot & 0xffff_ffff), Ordering::Release);
    }

    pub(super) fn get(&self) -> (usize, usize) {
        let place = self.0.load(Ordering::Acquire);
        let part = |bits: u64| usize::try_from(bits).unwrap_or(usize::MAX);
        (part(place >> 32), part(place & 0xffff_ffff))
    }
}
