//! For actix applications, and for the crates built on this one: the host's actix side.
//!
//! A [`Host`]'s own API speaks only tokio. What needs actix types, or reaches into the host's
//! bookkeeping, is here, so that using it is a visible choice:
//!
//! - [`host_on_arbiters`] puts golato's actors on an actix application's own arbiters (its
//!   `System`, its threads) instead of threads of the host's own.
//! - [`start`] starts an actor on one of the host's arbiters.
//! - [`track`] and [`shutdown_token`] tie a unit of work (a run) to the host's shutdown.
//!
//! ```
//! use golato_actors::{embed, HostConfig};
//! use std::time::Duration;
//!
//! #[actix::main]
//! async fn main() -> Result<(), golato_actors::HostError> {
//!     // golato's actors share this application's arbiter; its tools run on a worker pool.
//!     let host = embed::host_on_arbiters(vec![actix::Arbiter::current()], HostConfig::default())?;
//!     assert_eq!(host.spawn(async { 40 + 2 }).await.ok(), Some(42));
//!     host.shutdown(Duration::from_secs(1)).await;
//!     Ok(())
//! }
//! ```

use std::fmt;
use std::sync::{Arc, PoisonError};

use actix::{Actor, Addr, Context};
pub use actix_rt::ArbiterHandle;
use tokio_util::sync::CancellationToken;

use crate::host::ActiveWork;
use crate::{Host, HostConfig, HostError};

/// A host whose actors live on `arbiters`, an actix application's own (for instance
/// `actix::Arbiter::current()` inside `#[actix::main]`, or arbiters it started), spread over
/// them round-robin. Tool functions run on [`HostConfig::runtime`] if set (a multi-thread
/// runtime), else on a worker runtime the host builds (`worker_threads` sized). The
/// `arbiters` and `thread_name` fields of `config` are not used.
///
/// [`Host::shutdown`] on such a host cancels and waits for its runs, stops its worker runtime
/// and leaves the application's system running; dropping it does the same without waiting.
///
/// # Errors
/// [`HostError::NoArbiters`] for an empty list; [`HostError::CurrentThreadRuntime`] or
/// [`HostError::Start`] for the tools' runtime.
pub fn host_on_arbiters(
    arbiters: Vec<ArbiterHandle>,
    config: HostConfig,
) -> Result<Host, HostError> {
    Host::on_arbiters(arbiters, &config)
}

/// Starts an actor on one of the host's arbiters (round-robin) and returns its address.
///
/// The constructor runs on the arbiter thread. If the host stops before it runs, the
/// constructor is dropped unrun, so state it owns is dropped as well (golato relies on this to
/// report a lost run instead of hanging).
///
/// # Errors
/// [`HostError::Stopped`] after [`Host::shutdown`].
pub fn start<A, F>(host: &Host, constructor: F) -> Result<Addr<A>, HostError>
where
    A: Actor<Context = Context<A>>,
    F: FnOnce(&mut Context<A>) -> A + Send + 'static,
{
    let arbiter = host.next_arbiter().ok_or(HostError::Stopped)?;
    Ok(A::start_in_arbiter(arbiter, constructor))
}

/// Registers a unit of work that [`Host::shutdown`] waits for (up to its deadline) until the
/// returned guard is dropped.
pub fn track(host: &Host) -> WorkGuard {
    let active = &host.inner.active;
    *active.count.lock().unwrap_or_else(PoisonError::into_inner) += 1;
    WorkGuard {
        active: Arc::clone(active),
    }
}

/// A token cancelled when the host shuts down; make each unit of work's token a child of it.
pub fn shutdown_token(host: &Host) -> &CancellationToken {
    &host.inner.shutdown
}

/// Proof that a unit of work (a run) is in progress on a [`Host`], from [`track`].
#[must_use = "the work counts as finished as soon as the guard is dropped"]
pub struct WorkGuard {
    active: Arc<ActiveWork>,
}

impl fmt::Debug for WorkGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WorkGuard").finish_non_exhaustive()
    }
}

impl Drop for WorkGuard {
    fn drop(&mut self) {
        self.active.finished_one();
    }
}
