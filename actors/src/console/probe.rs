//! The [`Probe`] an actor holds on its console record: a lone actor's
//! [`Entry`](super::entry::Entry), or a member of a [`Group`](super::Group).
//!
//! Everything an actor does to its record is a relaxed atomic or a short uncontended lock on
//! its own record: the console reads records when it samples, and never sends an actor
//! anything, so a slow console can never hold an actor up.

use std::borrow::Cow;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

pub use super::activity::{Activity, Identity, Kind, WaitingOn};
use super::entry::{Clock, Entry, Ident, Lone};
use super::GroupInner;

/// Where a probe's entry is: a lone record, or one slot of a [`Group`](super::Group).
#[derive(Default)]
enum Link {
    #[default]
    Off,
    One(Arc<Lone>),
    Member(Arc<GroupInner>, usize),
}

impl Clone for Link {
    fn clone(&self) -> Link {
        match self {
            Link::Off => Link::Off,
            Link::One(lone) => {
                lone.probes.fetch_add(1, Ordering::Relaxed);
                Link::One(Arc::clone(lone))
            }
            Link::Member(group, index) => Link::Member(Arc::clone(group), *index),
        }
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        if let Link::One(lone) = self {
            // The last probe ends the actor (AcqRel: every change made through the other
            // probes is seen by the ending).
            if lone.probes.fetch_sub(1, Ordering::AcqRel) == 1 {
                if let Some(shared) = lone.shared.upgrade() {
                    shared.end(lone);
                }
            }
        }
    }
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
        match &self.0 {
            Link::Off => f.write_str("Probe(off)"),
            Link::One(lone) => write!(f, "Probe({} #{})", lone.name.as_str(), lone.entry.id),
            Link::Member(group, index) => write!(
                f,
                "Probe({} #{})",
                group.name,
                group.first_id + *index as u64
            ),
        }
    }
}

impl Probe {
    /// A probe that records nothing (the console is off).
    pub fn none() -> Probe {
        Probe(Link::Off)
    }

    pub(super) fn lone(lone: Arc<Lone>) -> Probe {
        Probe(Link::One(lone))
    }

    pub(super) fn member(group: Arc<GroupInner>, index: usize) -> Probe {
        Probe(Link::Member(group, index))
    }

    /// A lone actor's entry (a group's members have records of their own, see
    /// [`GroupInner`]).
    fn parts(&self) -> Option<(&Entry, &Clock)> {
        match &self.0 {
            Link::One(lone) => Some((&lone.entry, &lone.clock)),
            _ => None,
        }
    }

    fn lone_record(&self) -> Option<&Lone> {
        match &self.0 {
            Link::One(lone) => Some(lone),
            _ => None,
        }
    }

    /// Whether a console records this probe's actor.
    pub fn is_on(&self) -> bool {
        !matches!(self.0, Link::Off)
    }

    /// The entry's ID on the console, when one records it.
    pub fn id(&self) -> Option<u64> {
        match &self.0 {
            Link::Off => None,
            Link::One(lone) => Some(lone.entry.id),
            Link::Member(group, index) => Some(group.id(*index)),
        }
    }

    fn with(&self, change: impl FnOnce(&Entry, &Clock)) {
        if let Some((entry, shared)) = self.parts() {
            change(entry, shared);
            entry.changed();
        }
    }

    /// Sets who the actor is; `fill` runs only when the console is on, so building the
    /// identity costs nothing otherwise.
    pub fn identify(&self, fill: impl FnOnce(&mut Identity)) {
        if let Link::Member(group, index) = &self.0 {
            let mut identity = group.identity(*index);
            fill(&mut identity);
            group.change_rich(*index, |rich| rich.ident = Ident::of(&identity));
            return;
        }
        self.with(|entry, _| {
            let mut state = entry.state();
            let mut identity = state.ident.identity_over(Identity::default());
            fill(&mut identity);
            state.ident = Ident::of(&identity);
        });
    }

    /// Who the actor is, as its owner (or its group) said.
    pub fn identity(&self) -> Option<Identity> {
        if let Link::Member(group, index) = &self.0 {
            return Some(group.identity(*index));
        }
        let (entry, _) = self.parts()?;
        Some(entry.state().ident.identity_over(Identity::default()))
    }

    /// Sets what the actor does now, from now on.
    pub fn set(&self, activity: Activity) {
        if let Link::Member(group, index) = &self.0 {
            return group.set(*index, activity);
        }
        self.with(|entry, shared| {
            let now = shared.now_us();
            let mut state = entry.state();
            state.activity = activity;
            entry.since_us.store(now, Ordering::Relaxed);
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
        if let Some(lone) = self.lone_record() {
            lone.events.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Notes that the actor holds the lease on `path` until the returned guard is dropped.
    pub fn holding(&self, path: &Path) -> Holding {
        if let Link::Member(group, index) = &self.0 {
            let now = group.clock.now_us();
            group.change_rich(*index, |rich| rich.holds.push((path.to_path_buf(), now)));
            return Holding(Some((self.clone(), path.to_path_buf())));
        }
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
        if let Some(mailbox) = self.lone_record().and_then(|lone| lone.mailbox.as_ref()) {
            mailbox.depth.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The message left the mailbox unhandled (the actor stopped).
    pub(crate) fn dropped(&self) {
        if let Some(mailbox) = self.lone_record().and_then(|lone| lone.mailbox.as_ref()) {
            mailbox.depth.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// The message of type `message` is handled from now until the returned guard is dropped,
    /// after waiting `wait_us` in the mailbox.
    pub(crate) fn handling(&self, message: &'static str, wait_us: u64) -> Handling {
        let Some((entry, shared)) = self.parts() else {
            return Handling(None);
        };
        if let Some(mailbox) = self.lone_record().and_then(|lone| lone.mailbox.as_ref()) {
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
            (before, entry.since_us.swap(now, Ordering::Relaxed))
        };
        entry.changed();
        Handling(Some(Handled {
            probe: self.clone(),
            started: Instant::now(),
            since: now,
            before,
        }))
    }
}

/// What a [`Handling`] gives back.
#[derive(Debug)]
struct Handled {
    probe: Probe,
    /// On the precise clock: the handling time goes into 10 µs buckets.
    started: Instant,
    /// On the console's clock: the activity's `since`, to know it was not changed since.
    since: u64,
    before: (Activity, u64),
}

/// A message being handled; dropping it records the time it took and gives the actor back the
/// activity it had before (a run waiting on the model still does, after a delta).
#[derive(Debug)]
pub struct Handling(Option<Handled>);

impl Handling {
    /// Nothing to note (the console is off).
    pub fn none() -> Handling {
        Handling(None)
    }
}

impl Drop for Handling {
    fn drop(&mut self) {
        let Some(handled) = self.0.take() else {
            return;
        };
        let Handled {
            probe,
            started,
            since: handling_since,
            before: (before, since),
        } = handled;
        let Some((entry, shared)) = probe.parts() else {
            return;
        };
        if let Some(mailbox) = probe.lone_record().and_then(|lone| lone.mailbox.as_ref()) {
            let busy = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
            mailbox.busy.record(busy);
            mailbox.handled.fetch_add(1, Ordering::Relaxed);
            mailbox
                .last_handled_us
                .store(shared.now_us(), Ordering::Relaxed);
        }
        {
            let mut state = entry.state();
            // A handler that set an activity of its own keeps it.
            if matches!(state.activity, Activity::Handling { .. })
                && entry.since_us.load(Ordering::Relaxed) == handling_since
            {
                state.activity = before;
                entry.since_us.store(since, Ordering::Relaxed);
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
        let release = |holds: &mut Vec<(PathBuf, u64)>| {
            if let Some(at) = holds.iter().position(|(held, _)| *held == path) {
                holds.swap_remove(at);
            }
        };
        if let Link::Member(group, index) = &probe.0 {
            return group.change_rich(*index, |rich| release(&mut rich.holds));
        }
        probe.with(|entry, _| release(&mut entry.state().holds));
    }
}
