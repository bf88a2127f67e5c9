//! The runtimes under the host's threads: the worker runtime it builds for tools, and the event
//! loops its actor threads run on; and how long a shutdown waits for those threads.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::{HostConfig, HostError};

/// The runtimes the host's actor threads run on: the host's own worker runtime, shared by the
/// tools and the arbiters, or (when the application lends its runtime for the tools) a small
/// event loop per arbiter. Either way the host keeps a handle to each, so that no actor
/// thread's exit drops one: dropping a runtime waits for its blocking tasks, and work a tool
/// gave `spawn_blocking` on its arbiter may never end.
#[derive(Clone)]
pub(super) struct EventLoops {
    pub(super) shared: Option<Arc<tokio::runtime::Runtime>>,
    pub(super) own: Arc<Mutex<Vec<Arc<tokio::runtime::Runtime>>>>,
}

impl EventLoops {
    /// The runtime of the next actor thread.
    pub(super) fn next(&self) -> std::io::Result<Arc<tokio::runtime::Runtime>> {
        if let Some(shared) = &self.shared {
            return Ok(Arc::clone(shared));
        }
        let runtime = Arc::new(
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?,
        );
        self.own
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Arc::clone(&runtime));
        Ok(runtime)
    }

    /// Once every actor thread has ended: tools still running past a shutdown's deadline are
    /// abandoned, not awaited.
    pub(super) fn abandon(self) {
        let own = std::mem::take(&mut *self.own.lock().unwrap_or_else(PoisonError::into_inner));
        for runtime in self.shared.into_iter().chain(own) {
            if let Ok(runtime) = Arc::try_unwrap(runtime) {
                runtime.shutdown_background();
            }
        }
    }
}

/// A runtime of the host's own for tool functions.
pub(super) fn worker_runtime(config: &HostConfig) -> Result<tokio::runtime::Runtime, HostError> {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder
        .enable_all()
        .thread_name(format!("{}-worker", config.thread_name));
    if let Some(threads) = config.worker_threads {
        builder.worker_threads(threads.max(1));
    }
    builder.build().map_err(HostError::Start)
}

pub(super) fn checked_runtime(
    handle: &tokio::runtime::Handle,
) -> Result<tokio::runtime::Handle, HostError> {
    match handle.runtime_flavor() {
        tokio::runtime::RuntimeFlavor::CurrentThread => Err(HostError::CurrentThreadRuntime),
        _ => Ok(handle.clone()),
    }
}

/// How long a shutdown waits for the actor threads to end once its deadline has passed. A
/// thread an async tool function blocks (it never yields) cannot end until the function
/// returns: the shutdown leaves it behind rather than wait for ever.
pub(super) const THREAD_GRACE: Duration = Duration::from_secs(1);

/// How long to wait for the actor threads: what is left of the deadline, at least the grace.
pub(super) fn thread_grace(deadline: Instant) -> Duration {
    deadline
        .saturating_duration_since(Instant::now())
        .max(THREAD_GRACE)
}

/// Says that a shutdown stopped waiting for an actor thread a tool function blocks.
pub(super) fn left_behind() {
    tracing::warn!(
        "golato's host stopped without its actor threads: one is held by a tool function that blocks it (an async function that never yields); it ends when the function returns. Give such work to Tool::blocking or spawn_blocking"
    );
}
