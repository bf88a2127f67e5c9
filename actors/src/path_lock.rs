//! FIFO leases per key: the path-lock actor that serializes work on one file across runs.
//!
//! [`PathLock::acquire`] resolves with a [`Lease`] once every earlier holder of the same key has
//! released it, in the order the requests arrived; different keys never wait for each other.
//! Dropping a lease (or the future still waiting for one) lets the next waiter in, and an idle
//! key leaves no entry behind.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

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
        let addr = host.start(|_: &mut Context<PathLockActor>| PathLockActor {
            keys: HashMap::new(),
            span: tracing::debug_span!(target: "golato", "path_lock"),
        })?;
        Ok(PathLock {
            mailbox: Mailbox::new(addr),
            next_ticket: Arc::new(AtomicU64::new(0)),
        })
    }

    /// Waits for the lease on `key`, after every earlier request for the same key.
    ///
    /// # Errors
    /// [`LockError::Stopped`] if the actor stopped.
    ///
    /// # Cancel safety
    /// Cancel safe: dropping the future gives up the place in the queue (or the lease, if it
    /// was granted meanwhile).
    pub async fn acquire(&self, key: PathBuf) -> Result<Lease, LockError> {
        let ticket = self.next_ticket.fetch_add(1, Ordering::Relaxed);
        let (granted_tx, granted_rx) = oneshot::channel();
        // Built before asking, so that dropping this future while it waits releases the place.
        let mut lease = Lease {
            key: Some(key.clone()),
            ticket,
            mailbox: self.mailbox.clone(),
        };
        self.mailbox.do_send(Acquire {
            key,
            ticket,
            granted: granted_tx,
        });
        match granted_rx.await {
            Ok(()) => Ok(lease),
            Err(_) => {
                lease.key = None;
                Err(LockError::Stopped)
            }
        }
    }

    /// Keys currently held (for tests and metrics): an idle key leaves no entry.
    ///
    /// # Errors
    /// [`LockError::Stopped`] if the actor stopped.
    pub async fn held_keys(&self) -> Result<usize, LockError> {
        self.mailbox
            .send(HeldKeys)
            .await
            .map_err(|_| LockError::Stopped)
    }
}

/// The right to work on one key; released when dropped.
#[must_use = "the lease is released as soon as it is dropped"]
pub struct Lease {
    key: Option<PathBuf>,
    ticket: u64,
    mailbox: Mailbox<PathLockActor>,
}

impl fmt::Debug for Lease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lease").field("key", &self.key).finish()
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            self.mailbox.do_send(Release {
                key,
                ticket: self.ticket,
            });
        }
    }
}

struct PathLockActor {
    /// Per held key: who holds it and who waits, oldest first. No entry: nobody holds it.
    keys: HashMap<PathBuf, KeyState>,
    span: tracing::Span,
}

struct KeyState {
    holder: u64,
    waiters: VecDeque<(u64, oneshot::Sender<()>)>,
}

impl Actor for PathLockActor {
    type Context = Context<Self>;
}

impl TracedActor for PathLockActor {
    fn span(&self) -> &tracing::Span {
        &self.span
    }
}

#[derive(Message)]
#[rtype(result = "()")]
struct Acquire {
    key: PathBuf,
    ticket: u64,
    granted: oneshot::Sender<()>,
}

#[derive(Message)]
#[rtype(result = "()")]
struct Release {
    key: PathBuf,
    ticket: u64,
}

#[derive(Message)]
#[rtype(result = "usize")]
struct HeldKeys;

impl Handler<Acquire> for PathLockActor {
    type Result = ();

    fn handle(&mut self, acquire: Acquire, _: &mut Context<Self>) {
        match self.keys.get_mut(&acquire.key) {
            Some(state) => state.waiters.push_back((acquire.ticket, acquire.granted)),
            None => {
                // Held from now on even if the requester is gone: its lease's release, already
                // on its way, frees it.
                let _ = acquire.granted.send(());
                self.keys.insert(
                    acquire.key,
                    KeyState {
                        holder: acquire.ticket,
                        waiters: VecDeque::new(),
                    },
                );
            }
        }
    }
}

impl Handler<Release> for PathLockActor {
    type Result = ();

    fn handle(&mut self, release: Release, _: &mut Context<Self>) {
        let Some(state) = self.keys.get_mut(&release.key) else {
            return;
        };
        if state.holder != release.ticket {
            // A waiter that gave up before its turn.
            state
                .waiters
                .retain(|(ticket, _)| *ticket != release.ticket);
            return;
        }
        // Pass the lease to the oldest waiter still waiting. One whose future was dropped is
        // skipped; its own release, when it comes, matches nothing and is ignored.
        while let Some((ticket, waiter)) = state.waiters.pop_front() {
            if waiter.send(()).is_ok() {
                state.holder = ticket;
                return;
            }
        }
        self.keys.remove(&release.key);
    }
}

impl Handler<HeldKeys> for PathLockActor {
    type Result = usize;

    fn handle(&mut self, _: HeldKeys, _: &mut Context<Self>) -> usize {
        self.keys.len()
    }
}

traced_handlers!(PathLockActor {
    Acquire,
    Release,
    HeldKeys
});
