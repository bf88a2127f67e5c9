//! Sampling the live records: the views of the actors, the path-lock table and the lints of
//! one pass, and the history's views.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::PoisonError;

use super::entry::{self, Lone, MailboxStats, State};
use super::group::{GroupInner, Member};
use super::lints::{empty_lock, lints, Limits};
use super::registry::Live;
use super::view::{self, ActorView, Held, Lint, LintKind, LockParty, LockView, Snapshot};
use super::{Activity, Console, Ended, Identity, Kind, WaitingOn};

impl Console {
    /// Everything now: the live actors, the path locks, the lints and the recent history.
    pub fn snapshot(&self) -> Snapshot {
        self.snapshot_of(self.sample(|_, _| true), 0).0
    }

    /// The snapshot of a sample of every actor, with the recent history; `dropped` as a
    /// connection counted it. With it, the number of the last ended actor it tells of.
    pub(super) fn snapshot_of(&self, sample: Sample, dropped: u64) -> (Snapshot, u64) {
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
    pub(super) fn sample(&self, mut want: impl FnMut(u64, u64) -> bool) -> Sample {
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
                Live::One(lone) => pass.visit(Seen::Lone(lone), &mut want),
                Live::Group(group) => {
                    for (index, member) in group.members.iter().enumerate() {
                        if member.life.load(Ordering::Acquire) == entry::LIVE {
                            pass.visit(Seen::Member(group, index, member), &mut want);
                        }
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
    pub(super) fn history(&self, now: u64, after: u64) -> (Vec<ActorView>, u64) {
        let history = self
            .shared
            .history
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let mut views = Vec::new();
        let mut tell = |seen: Seen<'_>| {
            let ended_us = seen.ended_us();
            // Its age is how long it lived.
            let mut view = view_of(seen, ended_us);
            view.ended_ms_ago = Some(now.saturating_sub(ended_us) / 1_000);
            views.push(view);
        };
        for remembered in history.ended.iter().filter(|kept| kept.number > after) {
            match &remembered.ended {
                Ended::One(lone) => tell(Seen::Lone(lone)),
                Ended::Group(group) => {
                    for (index, member) in group.members.iter().enumerate() {
                        if member.life.load(Ordering::Acquire) != entry::UNUSED {
                            tell(Seen::Member(group, index, member));
                        }
                    }
                }
            }
        }
        (views, history.last)
    }
}

/// What a view is made from: a lone actor's record, or a group's member.
#[derive(Clone, Copy)]
enum Seen<'a> {
    Lone(&'a Lone),
    Member(&'a GroupInner, usize, &'a Member),
}

impl<'a> Seen<'a> {
    fn id(self) -> u64 {
        match self {
            Seen::Lone(lone) => lone.entry.id,
            Seen::Member(group, index, _) => group.id(index),
        }
    }

    fn kind(self) -> Kind {
        match self {
            Seen::Lone(lone) => lone.entry.kind,
            Seen::Member(group, ..) => group.kind,
        }
    }

    fn version(self) -> u64 {
        match self {
            Seen::Lone(lone) => lone.entry.version.load(Ordering::Relaxed),
            Seen::Member(_, _, member) => u64::from(member.version.load(Ordering::Relaxed)),
        }
    }

    fn born_us(self) -> u64 {
        match self {
            Seen::Lone(lone) => lone.entry.born_us(),
            Seen::Member(group, _, member) => group.born_us(member),
        }
    }

    fn since_us(self) -> u64 {
        match self {
            Seen::Lone(lone) => lone.entry.since_us.load(Ordering::Relaxed),
            Seen::Member(group, _, member) => group.since_us(member),
        }
    }

    fn ended_us(self) -> u64 {
        match self {
            Seen::Lone(lone) => lone.entry.ended_us.load(Ordering::Relaxed),
            Seen::Member(group, _, member) => group.ended_us(member),
        }
    }

    fn lone(self) -> Option<&'a Lone> {
        match self {
            Seen::Lone(lone) => Some(lone),
            Seen::Member(..) => None,
        }
    }

    /// Its identity, activity and leases.
    fn state(self) -> (Identity, Activity, Vec<(std::path::PathBuf, u64)>) {
        match self {
            Seen::Lone(lone) => {
                let state: std::sync::MutexGuard<'_, State> = lone.entry.state();
                (
                    state.ident.identity_over(Identity::default()),
                    state.activity.clone(),
                    state.holds.to_vec(),
                )
            }
            Seen::Member(group, index, _) => {
                let (activity, holds) = group.activity(index);
                (group.identity(index), activity, holds)
            }
        }
    }

    /// Whether it runs something, holds or waits for a lease, and the run it belongs to: what
    /// the lints ask of every record (without a copy of its texts).
    fn lint_facts(self) -> (bool, bool, Option<u64>) {
        match self {
            Seen::Lone(lone) => {
                let state = lone.entry.state();
                let busy = matches!(
                    state.activity,
                    Activity::Handling { .. } | Activity::Running { .. }
                );
                let locking = !state.holds.is_empty()
                    || matches!(
                        state.activity,
                        Activity::Waiting {
                            on: WaitingOn::PathLease { .. }
                        }
                    );
                (busy, locking, state.ident.run)
            }
            Seen::Member(group, index, _) => (group.busy(index), group.locking(index), group.run),
        }
    }
}

/// The view of one record now.
fn view_of(seen: Seen<'_>, now: u64) -> ActorView {
    let ms = |from: u64| now.saturating_sub(from) / 1_000;
    let (identity, activity, holds) = seen.state();
    let holds = holds
        .iter()
        .map(|(path, at)| Held {
            path: path.display().to_string(),
            for_ms: ms(*at),
        })
        .collect();
    let lone = seen.lone();
    let last_event = lone.and_then(|lone| lone.noted_event(now));
    let mailbox = lone.and_then(|lone| lone.mailbox.as_ref());
    let read = |histogram: fn(&MailboxStats) -> &entry::Histogram| {
        mailbox
            .map(|mailbox| view::Histogram::from(histogram(mailbox)))
            .unwrap_or_default()
    };
    let name = match seen {
        Seen::Lone(lone) => lone.name.as_str(),
        Seen::Member(group, ..) => group.name,
    };
    ActorView {
        id: seen.id(),
        kind: seen.kind(),
        name: name.to_owned(),
        identity,
        activity,
        for_ms: ms(seen.since_us()),
        mailbox_depth: mailbox.map_or(0, |mailbox| mailbox.depth.load(Ordering::Relaxed)),
        handled: mailbox.map_or(0, |mailbox| mailbox.handled.load(Ordering::Relaxed)),
        busy: read(|mailbox| &mailbox.busy),
        mailbox_wait: read(|mailbox| &mailbox.wait),
        age_ms: ms(seen.born_us()),
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
    /// Flags a record, and makes its view if it is wanted or notable.
    fn visit(&mut self, seen: Seen<'_>, want: &mut impl FnMut(u64, u64) -> bool) {
        let (now, limits) = (self.now, &self.limits);
        let version = seen.version();
        let mut flags = Vec::new();
        let (busy, locking, run) = seen.lint_facts();
        if busy && now.saturating_sub(seen.since_us()) > limits.handler {
            flags.push(LintKind::HandlerRunning);
        }
        if let (Kind::Call, Some(run)) = (seen.kind(), run) {
            if !self.runs.contains(&run) {
                flags.push(LintKind::OrphanCall);
            }
        }
        if let Some(mailbox) = seen.lone().and_then(|lone| lone.mailbox.as_ref()) {
            if mailbox.depth.load(Ordering::Relaxed) > 0
                && now.saturating_sub(mailbox.last_handled_us.load(Ordering::Relaxed))
                    > limits.mailbox
            {
                flags.push(LintKind::MailboxStalled);
            }
        }
        if let (Kind::Run, Some(lone)) = (seen.kind(), seen.lone()) {
            let last = lone.noted_event(now).unwrap_or_else(|| seen.born_us());
            if now.saturating_sub(last) > limits.silent_run {
                flags.push(LintKind::SilentRun);
            }
        }
        let wanted = want(seen.id(), version);
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

/// What one pass found.
pub(super) struct Sample {
    pub(super) now: u64,
    pub(super) views: Vec<(u64, ActorView)>,
    pub(super) locks: Vec<LockView>,
    pub(super) lints: Vec<Lint>,
}
