//! A batch's calls as one group: registered at once, named at once (one text for all their
//! IDs and tools), members started and ended by index, into the history together when the
//! batch ends.
//!
//! A member's record is 28 bytes of atomics ([`Member`]): on the stress example, time follows
//! the memory a run touches (BENCHMARKS.md, "The actor console"), and a batch has a record per
//! call. What few calls do beyond running their tool (wait on a lease or a person, hold a
//! lease, a text of their own) is kept beside, in the group's [`Rich`] list.

use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use super::activity::{Activity, Identity, WaitingOn};
use super::entry::{self, Ident};
use super::probe::Probe;
use super::Shared;

/// What a member does, as a code: the common activities without a lock or a text.
const IDLE: u8 = 0;
const RUNNING_TOOL: u8 = 1;
const RUNNING_HOOKS: u8 = 2;
const WAITING_PERSON: u8 = 3;
/// Anything else: the activity is in the group's [`Rich`] list.
const RICH: u8 = 4;

/// The common activities' texts, as [`Activity::Running`] names them.
const TOOL: &str = "its tool";
const HOOKS: &str = "its before-hooks";

/// One member's record.
#[derive(Debug, Default)]
pub(super) struct Member {
    /// [`entry::UNUSED`] until its work begins, [`entry::LIVE`], then [`entry::ENDED`].
    pub(super) life: AtomicU8,
    /// What it does: a code ([`IDLE`], [`RUNNING_TOOL`], …, [`RICH`]).
    doing: AtomicU8,
    /// Whether the group's rich list has something of it (an activity, leases, an identity).
    rich: AtomicBool,
    /// Bumped on every change, so a connection sends only what changed since it last looked.
    pub(super) version: AtomicU32,
    /// When it began, since when it does what it does, when it ended: milliseconds after its
    /// group was made (see [`GroupInner::stamp`]).
    born_ms: AtomicU32,
    since_ms: AtomicU32,
    ended_ms: AtomicU32,
    /// Where its call ID and its tool's name end in the group's names (its call ID begins
    /// where the member before it ends).
    names_end: (u32, u32),
}

/// What a member has beyond its code.
#[derive(Debug, Default)]
pub(super) struct Rich {
    pub(super) activity: Option<Activity>,
    pub(super) ident: Ident,
    /// Path leases held, each since when.
    pub(super) holds: Vec<(PathBuf, u64)>,
}

/// The records of a [`Group`].
#[derive(Debug)]
pub(crate) struct GroupInner {
    pub(super) first_id: u64,
    /// When it was made (µs on the console's clock): its members' times count from here.
    made_us: u64,
    pub(super) kind: super::Kind,
    pub(super) name: &'static str,
    /// Where it is in the console's live list.
    pub(super) place: entry::Place,
    /// The run and batch every member belongs to.
    pub(super) run: Option<u64>,
    pub(super) batch: Option<u64>,
    /// The members' call IDs and tools' names, one after the other; `None` for members with
    /// no names.
    names: Option<String>,
    pub(super) members: Box<[Member]>,
    /// What members have beyond their codes, by index: few have anything.
    rich: Mutex<Vec<(usize, Rich)>>,
    /// Its console's clock, and its console (weakly, as a lone record's: see
    /// [`Lone`](super::entry::Lone)).
    pub(super) clock: entry::Clock,
    shared: Weak<Shared>,
}

/// How a group is made: see [`Console::group`](super::Console::group) and
/// [`Console::calls`](super::Console::calls).
pub(super) struct GroupPlan {
    pub(super) kind: super::Kind,
    pub(super) name: &'static str,
    pub(super) run: Option<u64>,
    pub(super) batch: Option<u64>,
    pub(super) names: Option<String>,
    pub(super) names_end: Vec<(u32, u32)>,
    /// What each member does when it begins.
    pub(super) running_tool: bool,
}

impl GroupInner {
    pub(super) fn new(plan: GroupPlan, first_id: u64, shared: &Arc<Shared>) -> GroupInner {
        let doing = if plan.running_tool {
            RUNNING_TOOL
        } else {
            IDLE
        };
        let members = plan
            .names_end
            .into_iter()
            .map(|names_end| Member {
                doing: AtomicU8::new(doing),
                version: AtomicU32::new(1),
                names_end,
                ..Member::default()
            })
            .collect();
        GroupInner {
            first_id,
            made_us: shared.clock.now_us(),
            kind: plan.kind,
            name: plan.name,
            place: entry::Place::default(),
            run: plan.run,
            batch: plan.batch,
            names: plan.names,
            members,
            rich: Mutex::new(Vec::new()),
            clock: shared.clock,
            shared: Arc::downgrade(shared),
        }
    }

    pub(super) fn id(&self, index: usize) -> u64 {
        self.first_id + index as u64
    }

    /// Now, as a member's time: milliseconds after the group was made (a member that lives
    /// past 49 days reads as 49 days old).
    fn stamp(&self) -> u32 {
        let ms = self.clock.now_us().saturating_sub(self.made_us) / 1_000;
        u32::try_from(ms).unwrap_or(u32::MAX)
    }

    /// A member's time on the console's clock (µs).
    fn time_us(&self, ms: &AtomicU32) -> u64 {
        self.made_us + u64::from(ms.load(Ordering::Relaxed)) * 1_000
    }

    pub(super) fn born_us(&self, member: &Member) -> u64 {
        self.time_us(&member.born_ms)
    }

    pub(super) fn since_us(&self, member: &Member) -> u64 {
        self.time_us(&member.since_ms)
    }

    pub(super) fn ended_us(&self, member: &Member) -> u64 {
        self.time_us(&member.ended_ms)
    }

    /// Members still at work end now (the group ends).
    pub(super) fn end_all(&self) {
        let now = self.stamp();
        for member in self.members.iter() {
            if member.life.load(Ordering::Acquire) == entry::LIVE {
                member.ended_ms.store(now, Ordering::Relaxed);
                member.life.store(entry::ENDED, Ordering::Release);
            }
        }
    }

    /// Member `index`'s identity: the group's, under what the member was told.
    pub(super) fn identity(&self, index: usize) -> Identity {
        let begin = index
            .checked_sub(1)
            .and_then(|before| self.members.get(before))
            .map_or(0, |before| before.names_end.1);
        let text = |from: u32, to: u32| {
            let range = usize::try_from(from).ok()?..usize::try_from(to).ok()?;
            self.names.as_deref()?.get(range).map(str::to_owned)
        };
        let (call, tool) = self
            .members
            .get(index)
            .map_or((0, 0), |member| member.names_end);
        let group = Identity {
            run: self.run,
            parent_run: None,
            batch: self.batch,
            call: text(begin, call),
            tool: text(call, tool),
        };
        self.with_rich(index, |rich| {
            rich.map(|rich| rich.ident.identity_over(group.clone()))
        })
        .unwrap_or(group)
    }

    /// What member `index` does, as a code.
    fn doing(&self, index: usize) -> u8 {
        self.members
            .get(index)
            .map_or(IDLE, |member| member.doing.load(Ordering::Acquire))
    }

    /// Member `index`'s activity and leases held.
    pub(super) fn activity(&self, index: usize) -> (Activity, Vec<(PathBuf, u64)>) {
        let doing = self.doing(index);
        let coded = match doing {
            IDLE => Some(Activity::Idle),
            RUNNING_TOOL => Some(Activity::Running {
                what: Cow::Borrowed(TOOL),
            }),
            RUNNING_HOOKS => Some(Activity::Running {
                what: Cow::Borrowed(HOOKS),
            }),
            WAITING_PERSON => Some(Activity::Waiting {
                on: WaitingOn::Person,
            }),
            _ => None,
        };
        let rich = self.with_rich(index, |rich| {
            rich.map(|rich| (rich.activity.clone(), rich.holds.clone()))
        });
        let (rich_activity, holds) = rich.unwrap_or_default();
        let activity = coded.or(rich_activity).unwrap_or(Activity::Idle);
        (activity, holds)
    }

    /// Whether member `index` holds a lease or waits for one (cheap: no lock unless it has
    /// something rich).
    pub(super) fn locking(&self, index: usize) -> bool {
        self.with_rich(index, |rich| {
            rich.is_some_and(|rich| {
                !rich.holds.is_empty()
                    || matches!(
                        rich.activity,
                        Some(Activity::Waiting {
                            on: WaitingOn::PathLease { .. }
                        })
                    )
            })
        })
    }

    /// Whether member `index` is busy (running something).
    pub(super) fn busy(&self, index: usize) -> bool {
        let doing = self.doing(index);
        match doing {
            RUNNING_TOOL | RUNNING_HOOKS => true,
            RICH => self.with_rich(index, |rich| {
                matches!(
                    rich.and_then(|rich| rich.activity.as_ref()),
                    Some(Activity::Handling { .. } | Activity::Running { .. })
                )
            }),
            _ => false,
        }
    }

    fn rich_list(&self) -> MutexGuard<'_, Vec<(usize, Rich)>> {
        self.rich.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Reads member `index`'s rich part (`None`: it has none), taking the lock only if it has.
    fn with_rich<R>(&self, index: usize, read: impl FnOnce(Option<&Rich>) -> R) -> R {
        let has = self
            .members
            .get(index)
            .is_some_and(|member| member.rich.load(Ordering::Acquire));
        if !has {
            return read(None);
        }
        let list = self.rich_list();
        read(
            list.iter()
                .find(|(at, _)| *at == index)
                .map(|(_, rich)| rich),
        )
    }

    /// Changes member `index`'s rich part, making it if need be.
    pub(super) fn change_rich(&self, index: usize, change: impl FnOnce(&mut Rich)) {
        let Some(member) = self.members.get(index) else {
            return;
        };
        let mut list = self.rich_list();
        let at = match list.iter().position(|(at, _)| *at == index) {
            Some(at) => at,
            None => {
                list.push((index, Rich::default()));
                list.len() - 1
            }
        };
        if let Some((_, rich)) = list.get_mut(at) {
            change(rich);
        }
        member.rich.store(true, Ordering::Release);
        drop(list);
        member.version.fetch_add(1, Ordering::Relaxed);
    }

    /// Member `index` does `activity` from now on.
    pub(super) fn set(&self, index: usize, activity: Activity) {
        let Some(member) = self.members.get(index) else {
            return;
        };
        let code = match &activity {
            Activity::Idle => IDLE,
            Activity::Running { what } if what == TOOL => RUNNING_TOOL,
            Activity::Running { what } if what == HOOKS => RUNNING_HOOKS,
            Activity::Waiting {
                on: WaitingOn::Person,
            } => WAITING_PERSON,
            _ => RICH,
        };
        if code == RICH || member.rich.load(Ordering::Acquire) {
            // Kept beside (or a rich activity of before let go).
            let kept = (code == RICH).then_some(activity);
            self.change_rich(index, |rich| rich.activity = kept);
        }
        member.since_ms.store(self.stamp(), Ordering::Relaxed);
        member.doing.store(code, Ordering::Release);
        member.version.fetch_add(1, Ordering::Relaxed);
    }

    /// How many of its members ran (they are what its history shows).
    pub(super) fn ran(&self) -> usize {
        self.members
            .iter()
            .filter(|member| member.life.load(Ordering::Acquire) != entry::UNUSED)
            .count()
    }
}

/// Console entries for many short pieces of work at once (see [`Console::group`](super::Console::group)); with the
/// console off ([`Group::none`]) every method is a no-op. Dropping it ends the group: its
/// members that ran go to the history.
#[derive(Debug, Default)]
pub struct Group(pub(super) Option<Arc<GroupInner>>);

impl Group {
    /// A group that records nothing.
    pub fn none() -> Group {
        Group(None)
    }

    /// Member `index`'s work starts now; its probe says what it does.
    pub fn start(&self, index: usize) -> Probe {
        self.begin(index);
        self.probe(index)
    }

    /// Member `index`'s work starts now, doing what the group began it as (a batch's call:
    /// running its tool); [`Group::start`] without a probe.
    pub fn begin(&self, index: usize) {
        let Some(inner) = &self.0 else {
            return;
        };
        let Some(member) = inner.members.get(index) else {
            return;
        };
        let now = inner.stamp();
        member.born_ms.store(now, Ordering::Relaxed);
        member.since_ms.store(now, Ordering::Relaxed);
        member.life.store(entry::LIVE, Ordering::Release);
        member.version.fetch_add(1, Ordering::Relaxed);
    }

    /// Member `index`'s probe (whether or not its work has started).
    pub fn probe(&self, index: usize) -> Probe {
        match &self.0 {
            Some(inner) if index < inner.members.len() => Probe::member(Arc::clone(inner), index),
            _ => Probe::none(),
        }
    }

    /// Member `index`'s work is over: it leaves the live list.
    pub fn end(&self, index: usize) {
        let Some(inner) = &self.0 else { return };
        if let Some(member) = inner.members.get(index) {
            member.ended_ms.store(inner.stamp(), Ordering::Relaxed);
            member.life.store(entry::ENDED, Ordering::Release);
            member.version.fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        if let Some(inner) = self.0.take() {
            if let Some(shared) = inner.shared.upgrade() {
                shared.end_group(&inner);
            }
        }
    }
}
