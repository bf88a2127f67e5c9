//! The locks `write` and `edit` take on a file: the process's own per-path lease (the path-lock
//! actor), then, when configured, a lock shared with other processes ([`SharedLock`]).

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::future::BoxFuture;
use golato_actors::console::{Holding, WaitingOn};
use golato_actors::path_lock::{Lease, PathLock};

use crate::tool::ToolContext;

/// A lock on a path shared with other processes, so that two processes (durable workers on one
/// file system) never interleave their writes of one file: `write` and `edit` take it after the
/// process's own lease on the path and hold it until the file is written.
/// `golato_restate::SharedPathLock` (the golato-restate crate) is one, on Restate.
pub trait SharedLock: Send + Sync + fmt::Debug + 'static {
    /// Waits until this process holds `path` (canonical, as far as it exists) and returns the
    /// guard that releases it when dropped; an error says why the lock could not be taken.
    fn lock(&self, path: &Path) -> BoxFuture<'static, Result<SharedLease, String>>;
}

/// What a [`SharedLock`] gives while held: dropping it releases the path.
pub type SharedLease = Box<dyn Send + Sync>;

/// Both locks of the built-in set.
#[derive(Clone)]
pub(super) struct Locks {
    local: PathLock,
    shared: Option<Arc<dyn SharedLock>>,
}

/// Both locks, held: dropped (on the thread that did the write) when the write is over.
pub(super) struct Held {
    // Released in this order: the shared lock first, then the local lease.
    _shared: Option<SharedLease>,
    _local: Lease,
    /// The console's note that the call holds the lease, dropped with it.
    _holding: Holding,
}

impl Locks {
    pub(super) fn new(local: PathLock, shared: Option<Arc<dyn SharedLock>>) -> Locks {
        Locks { local, shared }
    }

    /// Takes the locks on `key` for call `ctx` (`what` names the tool in the errors).
    pub(super) async fn acquire(
        &self,
        key: PathBuf,
        ctx: &ToolContext,
        what: &str,
    ) -> Result<Held, String> {
        let probe = ctx.probe();
        probe.waiting(|| WaitingOn::PathLease {
            path: key.display().to_string(),
        });
        let local = tokio::select! {
            lease = self.local.acquire(key.clone()) => lease.map_err(|error| error.to_string())?,
            () = ctx.cancelled() => return Err(format!("{what} was cancelled before it started")),
        };
        let holding = probe.holding(&key);
        probe.running(|| "its tool".into());
        let shared = match &self.shared {
            None => None,
            Some(shared) => Some(tokio::select! {
                lease = shared.lock(&key) => lease.map_err(|error| {
                    format!("{what} could not lock {} across processes: {error}", super::paths::shown_path(&key))
                })?,
                () = ctx.cancelled() => return Err(format!("{what} was cancelled before it started")),
            }),
        };
        Ok(Held {
            _shared: shared,
            _local: local,
            _holding: holding,
        })
    }
}
