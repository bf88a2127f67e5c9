//! The library-owned actor host: one actix `System` on a dedicated thread, over a library-owned
//! multi-thread tokio runtime.
//!
//! Plain `Actor::start` panics outside an actix system, and a tokio runtime cannot be dropped
//! inside async code. Owning both on a thread of our own is what lets golato be called from a
//! plain `fn main`, from any tokio runtime and from another actix system alike.

use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;

use actix::{Actor, Addr, Context};
use actix_rt::{Arbiter, ArbiterHandle, System};
use tokio_util::sync::CancellationToken;

/// How to build a [`Host`].
#[derive(Debug, Clone)]
pub struct HostConfig {
    /// Worker threads of the tokio runtime that runs tool functions. `None` uses one per core.
    pub worker_threads: Option<usize>,
    /// Threads that host actors (actix arbiters). Runs are spread over them round-robin. The
    /// default is one per core: with trivial tools the actor thread is the bottleneck, and a
    /// second arbiter doubled the stress bench's throughput on two cores (see BENCHMARKS.md).
    /// Values below 1 are treated as 1.
    pub arbiters: usize,
    /// Prefix of the names of the host's threads, as shown by debuggers and `top -H`.
    pub thread_name: String,
}

impl Default for HostConfig {
    fn default() -> Self {
        HostConfig {
            worker_threads: None,
            arbiters: std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get),
            thread_name: "golato".to_owned(),
        }
    }
}

/// Why the host could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// The host's threads or runtime could not be created.
    #[error(
        "could not start golato's actor host: {0}; check the process's thread and memory limits"
    )]
    Start(#[source] std::io::Error),
    /// The host thread ended before it reported that it was ready.
    #[error("golato's actor host thread exited during start-up; see the log for a panic message")]
    StartAborted,
    /// [`Host::shutdown`] was called, or the host's actor thread has gone.
    #[error("golato's actor host has shut down; create a new Host (or use Host::global) to run more work")]
    Stopped,
}

/// A handle to the actor host. Cheap to clone; all clones share one host.
///
/// The host is created lazily once per process by [`Host::global`], or explicitly with
/// [`Host::new`] by users who want to size or own it. Dropping the last handle of a host made
/// with `Host::new` stops its actor system without waiting; [`Host::shutdown`] stops it cleanly.
#[derive(Clone)]
pub struct Host {
    inner: Arc<Inner>,
}

struct Inner {
    runtime: tokio::runtime::Handle,
    arbiters: Vec<ArbiterHandle>,
    next_arbiter: AtomicUsize,
    system: System,
    stopped: AtomicBool,
    /// Cancelled by `shutdown`: every run's token is a child of it.
    shutdown: CancellationToken,
    active: Arc<ActiveWork>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

#[derive(Default)]
struct ActiveWork {
    count: Mutex<usize>,
    idle: Condvar,
}

/// Proof that a unit of work (a run) is in progress on a [`Host`]; [`Host::shutdown`] waits until
/// every guard has been dropped.
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
        let mut count = self
            .active
            .count
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        *count = count.saturating_sub(1);
        if *count == 0 {
            self.active.idle.notify_all();
        }
    }
}

static GLOBAL: Mutex<Option<Host>> = Mutex::new(None);

impl Host {
    /// The process-wide host, created with [`HostConfig::default`] on first use.
    ///
    /// # Errors
    /// [`HostError::Start`] when the host's threads cannot be created.
    pub fn global() -> Result<Host, HostError> {
        let mut global = GLOBAL.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(host) = global.as_ref().filter(|host| host.is_running()) {
            return Ok(host.clone());
        }
        let host = Host::new(HostConfig::default())?;
        *global = Some(host.clone());
        Ok(host)
    }

    /// Starts a new host: a tokio runtime, an actix system on a thread of its own, and
    /// `config.arbiters - 1` further arbiter threads sharing that runtime.
    ///
    /// # Errors
    /// [`HostError::Start`] when a thread or the runtime cannot be created,
    /// [`HostError::StartAborted`] when the system thread dies during start-up.
    pub fn new(config: HostConfig) -> Result<Host, HostError> {
        let mut builder = tokio::runtime::Builder::new_multi_thread();
        builder
            .enable_all()
            .thread_name(format!("{}-worker", config.thread_name));
        if let Some(threads) = config.worker_threads {
            builder.worker_threads(threads.max(1));
        }
        let runtime = Arc::new(builder.build().map_err(HostError::Start)?);
        let handle = runtime.handle().clone();
        let extra_arbiters = config.arbiters.max(1) - 1;
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();

        let thread = std::thread::Builder::new()
            .name(format!("{}-actors", config.thread_name))
            .spawn(move || {
                let system_runtime = Arc::clone(&runtime);
                let runner = System::with_tokio_rt(move || system_runtime);
                let started = runner.block_on(async move {
                    let mut handles = vec![Arbiter::current()];
                    let mut owned = Vec::with_capacity(extra_arbiters);
                    for _ in 0..extra_arbiters {
                        let shared = Arc::clone(&runtime);
                        let arbiter = Arbiter::try_with_tokio_rt(move || Ok(shared))?;
                        handles.push(arbiter.handle());
                        owned.push(arbiter);
                    }
                    Ok::<_, std::io::Error>((System::current(), handles, owned))
                });
                match started {
                    Ok((system, handles, owned)) => {
                        if ready_tx.send(Ok((system, handles))).is_err() {
                            return;
                        }
                        if let Err(error) = runner.run() {
                            tracing::error!(%error, "golato actor system ended with an error");
                        }
                        for arbiter in owned {
                            arbiter.stop();
                            let _ = arbiter.join();
                        }
                    }
                    Err(error) => {
                        let _ = ready_tx.send(Err(error));
                    }
                }
            })
            .map_err(HostError::Start)?;

        let (system, arbiters) = match ready_rx.recv() {
            Ok(Ok(ready)) => ready,
            Ok(Err(error)) => return Err(HostError::Start(error)),
            Err(_) => return Err(HostError::StartAborted),
        };
        tracing::debug!(arbiters = arbiters.len(), "golato actor host started");
        Ok(Host {
            inner: Arc::new(Inner {
                runtime: handle,
                arbiters,
                next_arbiter: AtomicUsize::new(0),
                system,
                stopped: AtomicBool::new(false),
                shutdown: CancellationToken::new(),
                active: Arc::default(),
                thread: Mutex::new(Some(thread)),
            }),
        })
    }

    /// The tokio runtime on which tool functions run.
    pub fn runtime(&self) -> &tokio::runtime::Handle {
        &self.inner.runtime
    }

    /// Runs `future` on the host runtime's worker threads, never on an actor thread.
    pub fn spawn<F>(&self, future: F) -> tokio::task::JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.inner.runtime.spawn(future)
    }

    /// Runs blocking or CPU-heavy `work` on the host runtime's blocking pool.
    pub fn spawn_blocking<F, R>(&self, work: F) -> tokio::task::JoinHandle<R>
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        self.inner.runtime.spawn_blocking(work)
    }

    /// Starts an actor on one of the host's arbiters (round-robin) and returns its address.
    ///
    /// The constructor runs on the arbiter thread. If the host stops before it runs, the
    /// constructor is dropped unrun, so state it owns is dropped as well (golato relies on this
    /// to report a lost run instead of hanging).
    ///
    /// # Errors
    /// [`HostError::Stopped`] after [`Host::shutdown`].
    pub fn start<A, F>(&self, constructor: F) -> Result<Addr<A>, HostError>
    where
        A: Actor<Context = Context<A>>,
        F: FnOnce(&mut Context<A>) -> A + Send + 'static,
    {
        if !self.is_running() {
            return Err(HostError::Stopped);
        }
        let arbiter = self.next_arbiter().ok_or(HostError::Stopped)?;
        Ok(A::start_in_arbiter(arbiter, constructor))
    }

    fn next_arbiter(&self) -> Option<&ArbiterHandle> {
        let count = self.inner.arbiters.len();
        if count == 0 {
            return None;
        }
        let index = self.inner.next_arbiter.fetch_add(1, Ordering::Relaxed) % count;
        self.inner.arbiters.get(index)
    }

    /// A token cancelled when the host shuts down; make each unit of work's token a child of it.
    pub fn shutdown_token(&self) -> &CancellationToken {
        &self.inner.shutdown
    }

    /// Registers a unit of work that [`Host::shutdown`] must wait for.
    pub fn track(&self) -> WorkGuard {
        let mut count = self
            .inner
            .active
            .count
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        *count += 1;
        WorkGuard {
            active: Arc::clone(&self.inner.active),
        }
    }

    /// Whether the host still accepts work.
    pub fn is_running(&self) -> bool {
        !self.inner.stopped.load(Ordering::Acquire)
    }

    /// Stops the host cleanly: cancels every unit of work through [`Host::shutdown_token`], waits
    /// until each [`WorkGuard`] is dropped (started tool functions are waited for, so a function
    /// that ignores cancellation delays this), then stops the actor system and joins its threads.
    ///
    /// This call blocks the calling thread; from async code, call it inside
    /// `tokio::task::spawn_blocking`. Calling it on a host thread itself would deadlock, so it
    /// refuses (returns at once) when called from one of the host's actor threads.
    pub fn shutdown(&self) {
        if self.inner.stopped.swap(true, Ordering::AcqRel) {
            return;
        }
        self.inner.shutdown.cancel();
        if System::try_current().is_some_and(|system| system.id() == self.inner.system.id()) {
            tracing::warn!("Host::shutdown called from a host thread; stopping without waiting");
            self.inner.system.stop();
            return;
        }
        let mut count = self
            .inner
            .active
            .count
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        while *count > 0 {
            count = self
                .inner
                .active
                .idle
                .wait(count)
                .unwrap_or_else(PoisonError::into_inner);
        }
        drop(count);
        self.inner.system.stop();
        let thread = self
            .inner
            .thread
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(thread) = thread {
            let _ = thread.join();
        }
        tracing::debug!("golato actor host stopped");
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        if !self.stopped.swap(true, Ordering::AcqRel) {
            self.shutdown.cancel();
            self.system.stop();
        }
    }
}

impl fmt::Debug for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Host")
            .field("arbiters", &self.inner.arbiters.len())
            .field("running", &self.is_running())
            .finish_non_exhaustive()
    }
}
