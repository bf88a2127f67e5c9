//! The console's list of live records, in shards: an actor thread enlists and delists in a
//! shard of its own, so two threads registering actors do not take turns on one lock, and a
//! record's place is a slot, found without hashing.

use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::entry::{Lone, Place};
use super::group::GroupInner;

/// What is in the live list: a lone entry, or a group of them.
#[derive(Debug, Clone)]
pub(super) enum Live {
    One(Arc<Lone>),
    Group(Arc<GroupInner>),
}

#[derive(Debug, Default)]
struct Shard {
    slots: Vec<Option<Live>>,
    /// Slots emptied, to be filled again first.
    free: Vec<usize>,
}

/// The live records, sharded by the thread that enlists them.
#[derive(Debug)]
pub(super) struct Registry {
    shards: Box<[Mutex<Shard>]>,
}

/// Which shard a thread enlists in: threads are dealt shards in turn as they first enlist.
static NEXT_SHARD: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static SHARD: Cell<Option<usize>> = const { Cell::new(None) };
}

fn this_threads_shard() -> usize {
    SHARD.with(|shard| {
        shard.get().unwrap_or_else(|| {
            let dealt = NEXT_SHARD.fetch_add(1, Ordering::Relaxed);
            shard.set(Some(dealt));
            dealt
        })
    })
}

impl Registry {
    pub(super) fn new() -> Registry {
        // Enough that the actor threads of a host seldom share one.
        let threads = std::thread::available_parallelism().map_or(4, usize::from);
        let shards = (threads * 4).clamp(4, 64);
        Registry {
            shards: (0..shards).map(|_| Mutex::default()).collect(),
        }
    }

    fn shard(&self, index: usize) -> Option<MutexGuard<'_, Shard>> {
        self.shards
            .get(index)
            .map(|shard| shard.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Adds `live`, noting where in `place`.
    pub(super) fn enlist(&self, live: Live, place: &Place) {
        let index = this_threads_shard() % self.shards.len().max(1);
        let Some(mut shard) = self.shard(index) else {
            return;
        };
        let slot = match shard.free.pop() {
            Some(slot) => {
                if let Some(empty) = shard.slots.get_mut(slot) {
                    *empty = Some(live);
                }
                slot
            }
            None => {
                shard.slots.push(Some(live));
                shard.slots.len() - 1
            }
        };
        place.set(index, slot);
    }

    /// Takes out the record at `place`.
    pub(super) fn delist(&self, place: &Place) {
        let (index, slot) = place.get();
        let Some(mut shard) = self.shard(index) else {
            return;
        };
        if let Some(taken) = shard.slots.get_mut(slot).and_then(Option::take) {
            shard.free.push(slot);
            // Dropped after the lock: a group's last reference may go here.
            drop(shard);
            drop(taken);
        }
    }

    /// Every live record now, copied out of the shards (one lock at a time, held only to copy).
    pub(super) fn all(&self) -> Vec<Live> {
        let mut all = Vec::new();
        for index in 0..self.shards.len() {
            if let Some(shard) = self.shard(index) {
                all.extend(shard.slots.iter().flatten().cloned());
            }
        }
        all
    }
}
