//! A batch's calls as one group: registered at once, named at once (one text for all their
//! IDs and tools), members started and ended by index, into the history together when the
//! batch ends.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::activity::Identity;
use super::entry::{self, Entry};
use super::probe::Probe;
use super::Shared;

/// The entries of a [`Group`].
#[derive(Debug)]
pub(crate) struct GroupInner {
    pub(super) first_id: u64,
    pub(super) name: &'static str,
    /// Where it is in the console's live list.
    pub(super) place: entry::Place,
    /// The run and batch every member belongs to.
    pub(super) run: Option<u64>,
    pub(super) batch: Option<u64>,
    /// The members' call IDs and tools' names, one after the other (see
    /// [`Entry::names_end`]); `None` for members with no names.
    pub(super) names: Option<String>,
    pub(super) entries: Box<[Entry]>,
    pub(super) shared: Arc<Shared>,
}

impl GroupInner {
    pub(super) fn member(&self, index: usize) -> Option<(&Entry, &Shared)> {
        self.entries.get(index).map(|entry| (entry, &*self.shared))
    }

    /// Member `index`'s identity, as the group says it.
    pub(super) fn identity(&self, index: usize) -> Identity {
        let begin = index
            .checked_sub(1)
            .and_then(|before| self.entries.get(before))
            .map_or(0, |before| before.names_end.1);
        let text = |from: u32, to: u32| {
            let range = usize::try_from(from).ok()?..usize::try_from(to).ok()?;
            self.names.as_deref()?.get(range).map(str::to_owned)
        };
        let (call, tool) = self
            .entries
            .get(index)
            .map_or((0, 0), |entry| entry.names_end);
        Identity {
            run: self.run,
            parent_run: None,
            batch: self.batch,
            call: text(begin, call),
            tool: text(call, tool),
        }
    }

    /// How many of its members ran (they are what its history shows).
    pub(super) fn ran(&self) -> usize {
        self.entries
            .iter()
            .filter(|entry| entry.life.load(Ordering::Acquire) != entry::UNUSED)
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
        let Some(entry) = inner.entries.get(index) else {
            return;
        };
        let now = inner.shared.now_us();
        entry.born_us.store(now, Ordering::Relaxed);
        entry.since_us.store(now, Ordering::Relaxed);
        entry.life.store(entry::LIVE, Ordering::Release);
        entry.changed();
    }

    /// Member `index`'s probe (whether or not its work has started).
    pub fn probe(&self, index: usize) -> Probe {
        match &self.0 {
            Some(inner) if index < inner.entries.len() => Probe::member(Arc::clone(inner), index),
            _ => Probe::none(),
        }
    }

    /// Member `index`'s work is over: it leaves the live list.
    pub fn end(&self, index: usize) {
        let Some(inner) = &self.0 else { return };
        if let Some(entry) = inner.entries.get(index) {
            entry
                .ended_us
                .store(inner.shared.now_us(), Ordering::Relaxed);
            entry.life.store(entry::ENDED, Ordering::Release);
            entry.version.fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        if let Some(inner) = self.0.take() {
            inner.shared.end_group(&inner);
        }
    }
}
