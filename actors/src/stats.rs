//! Per-actor-type counters of a host: messages handled, mailbox wait, mailbox depth.
//!
//! A counted [`Mailbox`](crate::Mailbox) shares one [`ActorCounters`] with every other mailbox
//! of the same actor type on the same host; its envelopes bump the counters when sent and when
//! handled. [`Host::stats`](crate::Host::stats) reads them, for a service to export as metrics.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// Upper bounds of the mailbox-wait histogram's buckets, in microseconds; a last bucket holds
/// everything above.
const BOUNDS_US: [u64; 6] = [10, 100, 1_000, 10_000, 100_000, 1_000_000];

/// The bucket of a duration of `us` microseconds.
pub(crate) fn bucket_of(us: u64) -> usize {
    BOUNDS_US
        .iter()
        .position(|bound| us <= *bound)
        .unwrap_or(BOUNDS_US.len())
}

/// The live counters of one actor type on one host.
#[derive(Debug)]
pub(crate) struct ActorCounters {
    /// `std::any::type_name` of the actor: the key.
    type_name: &'static str,
    /// Its short form, as reported.
    actor: String,
    short: Arc<str>,
    handled: AtomicU64,
    waiting: AtomicUsize,
    wait_buckets: [AtomicU64; BOUNDS_US.len() + 1],
    wait_total_us: AtomicU64,
}

impl ActorCounters {
    fn new(type_name: &'static str) -> ActorCounters {
        ActorCounters {
            type_name,
            actor: short_type_name(type_name),
            short: short_type_name(type_name).into(),
            handled: AtomicU64::new(0),
            waiting: AtomicUsize::new(0),
            wait_buckets: Default::default(),
            wait_total_us: AtomicU64::new(0),
        }
    }

    /// The actor type's short name, shared by the console's entries of this type.
    pub(crate) fn actor(&self) -> Arc<str> {
        Arc::clone(&self.short)
    }

    pub(crate) fn sent(&self) {
        self.waiting.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn dropped(&self) {
        self.waiting.fetch_sub(1, Ordering::Relaxed);
    }

    pub(crate) fn handled(&self, wait_us: u64) {
        self.waiting.fetch_sub(1, Ordering::Relaxed);
        self.handled.fetch_add(1, Ordering::Relaxed);
        if let Some(count) = self.wait_buckets.get(bucket_of(wait_us)) {
            count.fetch_add(1, Ordering::Relaxed);
        }
        self.wait_total_us.fetch_add(wait_us, Ordering::Relaxed);
    }

    fn snapshot(&self) -> ActorStats {
        let mut buckets = Vec::with_capacity(self.wait_buckets.len());
        for (index, count) in self.wait_buckets.iter().enumerate() {
            buckets.push(WaitBucket {
                up_to: BOUNDS_US
                    .get(index)
                    .map(|bound| Duration::from_micros(*bound)),
                count: count.load(Ordering::Relaxed),
            });
        }
        ActorStats {
            actor: self.actor.clone(),
            messages_handled: self.handled.load(Ordering::Relaxed),
            mailbox_depth: self.waiting.load(Ordering::Relaxed),
            mailbox_wait: WaitHistogram {
                buckets,
                total: Duration::from_micros(self.wait_total_us.load(Ordering::Relaxed)),
            },
        }
    }
}

/// The counters of every actor type a host has seen.
#[derive(Debug, Default)]
pub(crate) struct Registry {
    actors: Mutex<Vec<Arc<ActorCounters>>>,
}

impl Registry {
    /// The counters of the actor type named `type_name` (`std::any::type_name`), made on
    /// first use.
    pub(crate) fn counters(&self, type_name: &'static str) -> Arc<ActorCounters> {
        let mut actors = self.actors.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(found) = actors
            .iter()
            .find(|counters| counters.type_name == type_name)
        {
            return Arc::clone(found);
        }
        let counters = Arc::new(ActorCounters::new(type_name));
        actors.push(Arc::clone(&counters));
        counters
    }

    pub(crate) fn snapshot(&self) -> HostStats {
        let actors = self.actors.lock().unwrap_or_else(PoisonError::into_inner);
        HostStats {
            actors: actors.iter().map(|counters| counters.snapshot()).collect(),
        }
    }
}

/// What a host's actors have done so far, by actor type, from [`Host::stats`](crate::Host::stats).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct HostStats {
    /// One entry per actor type that has had a mailbox on this host, in order of first use.
    pub actors: Vec<ActorStats>,
}

impl HostStats {
    /// The entry of the actor type named `actor` (such as `"RunActor"`).
    pub fn actor(&self, actor: &str) -> Option<&ActorStats> {
        self.actors.iter().find(|stats| stats.actor == actor)
    }
}

/// The counters of one actor type.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ActorStats {
    /// The actor type, without module paths (`RunActor`, `BatchSupervisor<CallOutcome>`).
    pub actor: String,
    /// Messages handled since the host started.
    pub messages_handled: u64,
    /// Messages sent and not yet handled, over every actor of this type: the current depth.
    pub mailbox_depth: usize,
    /// How long handled messages waited in the mailbox.
    pub mailbox_wait: WaitHistogram,
}

/// A histogram of mailbox waits.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct WaitHistogram {
    /// Buckets in increasing order of their bound: 10 µs, 100 µs, 1 ms, 10 ms, 100 ms, 1 s,
    /// then everything longer. Each counts the waits above the previous bound and up to its
    /// own (not cumulative).
    pub buckets: Vec<WaitBucket>,
    /// The sum of every wait (for the mean: divide by the sum of the counts).
    pub total: Duration,
}

/// One bucket of a [`WaitHistogram`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct WaitBucket {
    /// The bucket's upper bound (inclusive); `None` for the last, unbounded one.
    pub up_to: Option<Duration>,
    /// Waits in this bucket.
    pub count: u64,
}

/// `golato_actors::batch::BatchSupervisor<golato::agent::X>` → `BatchSupervisor<X>`.
fn short_type_name(full: &str) -> String {
    let mut short = String::with_capacity(full.len());
    let mut segment = String::new();
    for ch in full.chars() {
        match ch {
            ':' => segment.clear(),
            '<' | '>' | ',' | ' ' | '(' | ')' | '[' | ']' | '&' | ';' => {
                short.push_str(&segment);
                segment.clear();
                short.push(ch);
            }
            _ => segment.push(ch),
        }
    }
    short.push_str(&segment);
    short
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn type_names_lose_their_module_paths() {
        assert_eq!(
            short_type_name(
                "golato_actors::batch::BatchSupervisor<golato::agent::tool_actor::CallOutcome>"
            ),
            "BatchSupervisor<CallOutcome>"
        );
        assert_eq!(
            short_type_name("golato::agent::run_actor::RunActor"),
            "RunActor"
        );
    }

    #[test]
    fn waits_land_in_their_bucket_and_depth_follows_sends() {
        let registry = Registry::default();
        let counters = registry.counters("A");
        for _ in 0..3 {
            counters.sent();
        }
        counters.handled(10);
        counters.handled(11);
        let stats = registry.snapshot();
        let a = stats.actor("A").unwrap();
        assert_eq!(a.messages_handled, 2);
        assert_eq!(a.mailbox_depth, 1);
        let counts: Vec<u64> = a.mailbox_wait.buckets.iter().map(|b| b.count).collect();
        assert_eq!(counts, [1, 1, 0, 0, 0, 0, 0]);
        assert_eq!(a.mailbox_wait.total, Duration::from_micros(21));
        assert!(Arc::ptr_eq(&counters, &registry.counters("A")));
    }
}
