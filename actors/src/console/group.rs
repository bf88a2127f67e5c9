//! A batch's calls as one group: registered at once, members started and ended by index, into the
//! history together when the batch ends.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::entry::{self, Entry};
use super::probe::{start_member, Probe};
use super::Shared;

/// The entries of a [`Group`].
#[derive(Debug)]
pub(crate) struct GroupInner {
    pub(super) first_id: u64,
    pub(super) name: &'static str,
    /// Where it is in the console's live list.
    pub(super) place: entry::Place,
    pub(super) entries: Box<[Entry]>,
    pub(super) shared: Arc<Shared>,
}

impl GroupInner {
    pub(super) fn member(&self, index: usize) -> Option<(&Entry, &Shared)> {
        self.entries.get(index).map(|entry| (entry, &*self.shared))
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
        let Some(inner) = &self.0 else {
            return Probe::none();
        };
        let Some(entry) = inner.entries.get(index) else {
            return Probe::none();
        };
        let now = inner.shared.now_us();
        entry.born_us.store(now, Ordering::Relaxed);
        entry.state().since_us = now;
        entry.life.store(entry::LIVE, Ordering::Release);
        Probe::member(Arc::clone(inner), index)
    }

    /// Member `index`, the tool call `call` to `tool` of batch `batch` of run `run`, starts now
    /// running its tool: who it is and what it does are set in one step, before it shows, and
    /// without an allocation when the call's ID and the tool's name are short (as providers'
    /// are).
    pub fn start_call(&self, index: usize, run: u64, batch: u64, call: &str, tool: &str) {
        let Some(inner) = &self.0 else {
            return;
        };
        let Some(entry) = inner.entries.get(index) else {
            return;
        };
        start_member(entry, inner.shared.now_us(), run, batch, call, tool);
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
