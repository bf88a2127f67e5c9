//! FIFO leases per key: the path-lock actor that serializes work on one file across runs.
//!
//! [`PathLock::acquire`] resolves with a [`Lease`] once every earlier holder of the same key has
//! released it, in the order the requests arrived; different keys never wait for each other.
//! Dropping a lease (or the future still waiting for one) lets the next waiter in, and an idle
//! key leaves no entry behind.
//!
//! # How it is cheap when nobody waits
//! A shared table (a sharded `DashMap`, so runs on different files rarely touch the same lock)
//! records which keys are taken and how many requests
//! for each are queued at the actor. Taking a free key, or releasing one nobody waits for, is a
//! table update and never a message: no thread wakes. Only contention goes to the actor, which
//! keeps the FIFO queues and hands a released key to the oldest waiter still waiting. A key
//! stays in the table while anyone holds or waits for it, so a newcomer can never overtake the
//! queue.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use dashmap::mapref::entry::Entry;
use dashmap::DashMap;

use actix::{Actor, Context, Handler, Message};
use tokio::sync::oneshot;

use crate::{traced_handlers, Host, HostError, Mailbox, TracedActor};

/// Why a lease could not be had.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// The path-lock actor has stopped (its host shut down).
    #[error("the path lock's actor has stopped (the actor host is shutting down); retry on a running host")]
    Stopped,
}

/// A handle to one path-lock actor. Cheap to clone; clones share the same leases. Another
/// `PathLock` has separate coordination.
#[derive(Clone)]
pub struct PathLock {
    taken: Arc<TakenKeys>,
    mailbox: Mailbox<PathLockActor>,
    next_ticket: Arc<AtomicU64>,
}

impl fmt::Debug for PathLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PathLock").finish_non_exhaustive()
    }
}

impl PathLock {
    /// Starts a path-lock actor on `host`.
    ///
    /// # Errors
    /// [`HostError::Stopped`] after the host shut down.
    pub fn new(host: &Host) -> Result<PathLock, HostError> {
        let taken = Arc::new(TakenKeys::default());
        let actor_taken = Arc::clone(&taken);
        let addr =
            crate::embed::start(host, move |_: &mut Context<PathLockActor>| PathLockActor {
                taken: actor_taken,
                queues: HashMap::new(),
                span: tracing::debug_span!(target: "golato", "path_lock"),
            })?;
        Ok(PathLock {
            taken,
            mailbox: Mailbox::counted_as(addr, host, crate::console::Kind::PathLock),
            next_ticket: Arc::new(AtomicU64::new(0)),
        })
    }

    /// Waits for the lease on `key`, after every earlier request for the same key.
    ///
    /// A free key is granted at once, without a message to the actor.
    ///
    /// # Errors
    /// [`LockError::Stopped`] if the key was taken and the actor that queues waiters stopped.
    ///
    /// # Cancel safety
    /// Cancel safe: dropping the future gives up the place in the queue (or the lease, if it
    /// was granted meanwhile).
    pub async fn acquire(&self, key: PathBuf) -> Result<Lease, LockError> {
        match self.taken.entry(key.clone()) {
            Entry::Vacant(free) => {
                free.insert(0);
                return Ok(self.lease(key));
            }
            Entry::Occupied(mut held) => *held.get_mut() += 1,
        }
        let ticket = self.next_ticket.fetch_add(1, Ordering::Relaxed);
        let (granted_tx, granted_rx) = oneshot::channel();
        // Built before asking, so that dropping this future while it waits gives the place up.
        let mut waiting = Waiting {
            key: Some(key.clone()),
            ticket,
            granted: granted_rx,
            lock: self.clone(),
        };
        self.mailbox.do_send(Enqueue {
            key,
            ticket,
            granted: granted_tx,
        });
        let granted = (&mut waiting.granted).await;
        let key = waiting.key.take();
        match (granted, key) {
            (Ok(()), Some(key)) => Ok(self.lease(key)),
            _ => Err(LockError::Stopped),
        }
    }

    /// Keys currently held or waited for (for tests and metrics): an idle key leaves no entry.
    ///
    /// Answered after the actor has handled every request sent before this call, so a test can
    /// use it to know that earlier waiters are queued.
    ///
    /// # Errors
    /// [`LockError::Stopped`] if the actor stopped.
    pub async fn held_keys(&self) -> Result<usize, LockError> {
        self.mailbox
            .send(Flush)
            .await
            .map_err(|_| LockError::Stopped)?;
        Ok(self.taken.len())
    }

    fn lease(&self, key: PathBuf) -> Lease {
        Lease {
            key: Some(key),
            lock: self.clone(),
        }
    }

    /// Frees `key`, or hands it to the actor when someone waits for it.
    fn release(&self, key: PathBuf) {
        // Checked and removed under the entry's lock, so no request can slip in between.
        match self.taken.entry(key) {
            Entry::Occupied(free) if *free.get() == 0 => {
                free.remove();
            }
            Entry::Occupied(waited_for) => {
                let key = waited_for.key().clone();
                drop(waited_for);
                self.mailbox.do_send(HandOver { key });
            }
            Entry::Vacant(unknown) => {
                let key = unknown.key();
                tracing::warn!(target: "golato", ?key, "released a path lease that was not held")
            }
        }
    }
}

/// Keys taken, each with the number of its requests queued at the actor and not yet settled
/// (granted, skipped or given up). No entry: the key is free.
type TakenKeys = DashMap<PathBuf, usize>;

/// The right to work on one key; released when dropped.
#[must_use = "the lease is released as soon as it is dropped"]
pub struct Lease {
    key: Option<PathBuf>,
    lock: PathLock,
}

impl fmt::Debug for Lease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lease").field("key", &self.key).finish()
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            self.lock.release(key);
        }
    }
}

/// A queued request; dropping it before the grant gives the place up.
struct Waiting {
    key: Option<PathBuf>,
    ticket: u64,
    granted: oneshot::Receiver<()>,
    lock: PathLock,
}

impl Drop for Waiting {
    fn drop(&mut self) {
        let Some(key) = self.key.take() else { return };
        // After `close`, either the grant already arrived (and is ours to release) or it can no
        // longer be sent: never both, so a key is never lost or doubly held.
        self.granted.close();
        if self.granted.try_recv().is_ok() {
            self.lock.release(key);
        } else {
            self.lock.mailbox.do_send(GiveUp {
                key,
                ticket: self.ticket,
            });
        }
    }
}

struct PathLockActor {
    taken: Arc<TakenKeys>,
    /// Per contended key: the requests waiting, oldest first, and whether the key is free for
    /// the next request to arrive.
    queues: HashMap<PathBuf, Queue>,
    span: tracing::Span,
}

#[derive(Default)]
struct Queue {
    waiters: VecDeque<(u64, oneshot::Sender<()>)>,
    /// Released while the requests counted in the table were still on their way here.
    owed: bool,
}

impl PathLockActor {
    /// Gives `key` to the oldest waiter still waiting, or frees it.
    fn hand_over(&mut self, key: PathBuf) {
        let queue = self.queues.entry(key.clone()).or_default();
        queue.owed = false;
        loop {
            let next = queue.waiters.pop_front();
            // Held for the whole decision, so that removing the key and a newcomer counting
            // itself in cannot interleave.
            let Entry::Occupied(mut waiting) = self.taken.entry(key.clone()) else {
                tracing::warn!(target: "golato", ?key, "handed over a path lease that was not held");
                break;
            };
            match next {
                Some((_, granted)) => {
                    let count = waiting.get_mut();
                    *count = count.saturating_sub(1);
                    drop(waiting);
                    // A waiter that gave up has closed its receiver: skip it.
                    if granted.send(()).is_ok() {
                        break;
                    }
                }
                None if *waiting.get() == 0 => {
                    waiting.remove();
                    break;
                }
                None => {
                    // Requests counted in the table whose Enqueue has not arrived yet: the first
                    // of them gets the key.
                    queue.owed = true;
                    break;
                }
            }
        }
        if queue.waiters.is_empty() && !queue.owed {
            self.queues.remove(&key);
        }
    }
}

impl Actor for PathLockActor {
    type Context = Context<Self>;
}

impl TracedActor for PathLockActor {
    fn span(&self) -> &tracing::Span {
        &self.span
    }
}

/// A request for a taken key, to be granted in turn.
#[derive(Message)]
#[rtype(result = "()")]
struct Enqueue {
    key: PathBuf,
    ticket: u64,
    granted: oneshot::Sender<()>,
}

/// A holder released a key that has waiters.
#[derive(Message)]
#[rtype(result = "()")]
struct HandOver {
    key: PathBuf,
}

/// A waiter stopped waiting before it was granted.
#[derive(Message)]
#[rtype(result = "()")]
struct GiveUp {
    key: PathBuf,
    ticket: u64,
}

/// Answered once every earlier message was handled.
#[derive(Message)]
#[rtype(result = "()")]
struct Flush;

impl Handler<Enqueue> for PathLockActor {
    type Result = ();

    fn handle(&mut self, enqueue: Enqueue, _: &mut Context<Self>) {
        let queue = self.queues.entry(enqueue.key.clone()).or_default();
        queue.waiters.push_back((enqueue.ticket, enqueue.granted));
        if queue.owed {
            self.hand_over(enqueue.key);
        }
    }
}

impl Handler<HandOver> for PathLockActor {
    type Result = ();

    fn handle(&mut self, hand_over: HandOver, _: &mut Context<Self>) {
        self.hand_over(hand_over.key);
    }
}

impl Handler<GiveUp> for PathLockActor {
    type Result = ();

    fn handle(&mut self, give_up: GiveUp, _: &mut Context<Self>) {
        let Some(queue) = self.queues.get_mut(&give_up.key) else {
            return;
        };
        // Absent: it was already granted (and released through its lease) or skipped.
        let Some(position) = queue
            .waiters
            .iter()
            .position(|(ticket, _)| *ticket == give_up.ticket)
        else {
            return;
        };
        queue.waiters.remove(position);
        if let Some(mut waiting) = self.taken.get_mut(&give_up.key) {
            *waiting = waiting.saturating_sub(1);
        }
        if queue.waiters.is_empty() && !queue.owed {
            self.queues.remove(&give_up.key);
        }
    }
}

impl Handler<Flush> for PathLockActor {
    type Result = ();

    fn handle(&mut self, _: Flush, _: &mut Context<Self>) {}
}

traced_handlers!(PathLockActor {
    Enqueue,
    HandOver,
    GiveUp,
    Flush
});
