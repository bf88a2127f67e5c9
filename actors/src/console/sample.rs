//! Sampling the live records: the views of the actors, the path-lock table and the lints of
//! one pass, and the history's views.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::PoisonError;

use super::entry::{self, Entry, Lone, MailboxStats, State};
use super::group::GroupInner;
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
                Live::One(lone) if lone.entry.kind == Kind::Run => lone.entry.state().ident().run,
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
                    for (index, entry) in group.entries.iter().enumerate() {
                        if entry.is_live() {
                            pass.visit(group.seen(index, entry), &mut want);
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
            let ended_us = seen.entry.ended_us.load(Ordering::Relaxed);
            // Its age is how long it lived.
            let mut view = view_of(seen, ended_us);
            view.ended_ms_ago = Some(now.saturating_sub(ended_us) / 1_000);
            views.push(view);
        };
        for remembered in history.ended.iter().filter(|kept| kept.number > after) {
            match &remembered.ended {
                Ended::One(lone) => tell(lone.seen()),
                Ended::Group(group) => {
                    for (index, entry) in group.entries.iter().enumerate() {
                        if entry.life.load(Ordering::Acquire) != entry::UNUSED {
                            tell(group.seen(index, entry));
                        }
                    }
                }
            }
        }
        (views, history.last)
    }
}

/// What a view is made from: an entry, with its lone record or its group.
#[derive(Clone, Copy)]
struct Seen<'a> {
    entry: &'a Entry,
    name: &'a str,
    lone: Option<&'a Lone>,
    /// Its group, and its index there.
    group: Option<(&'a GroupInner, usize)>,
}

impl Seen<'_> {
    /// The identity the group gives it, under what it was told.
    fn group_identity(&self) -> Identity {
        self.group
            .map(|(group, index)| group.identity(index))
            .unwrap_or_default()
    }
}

/// The view of one entry now.
fn view_of(seen: Seen<'_>, now: u64) -> ActorView {
    let Seen {
        entry, name, lone, ..
    } = seen;
    let ms = |from: u64| now.saturating_sub(from) / 1_000;
    let (identity, activity, since, holds) = {
        let state: std::sync::MutexGuard<'_, State> = entry.state();
        (
            state.ident().identity_over(seen.group_identity()),
            state.activity.clone(),
            entry.since_us.load(Ordering::Relaxed),
            state
                .holds()
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
            let since = entry.since_us.load(Ordering::Relaxed);
            if busy && now.saturating_sub(since) > limits.handler {
                flags.push(LintKind::HandlerRunning);
            }
            locking = !state.holds().is_empty()
                || matches!(
                    state.activity,
                    Activity::Waiting {
                        on: WaitingOn::PathLease { .. }
                    }
                );
            let run = state
                .ident()
                .run
                .or_else(|| seen.group.and_then(|(group, _)| group.run));
            if let (Kind::Call, Some(run)) = (entry.kind, run) {
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

impl Lone {
    fn seen(&self) -> Seen<'_> {
        Seen {
            entry: &self.entry,
            name: self.name.as_str(),
            lone: Some(self),
            group: None,
        }
    }
}

impl GroupInner {
    fn seen<'a>(&'a self, index: usize, entry: &'a Entry) -> Seen<'a> {
        Seen {
            entry,
            name: self.name,
            lone: None,
            group: Some((self, index)),
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
