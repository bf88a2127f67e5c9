//! The actor host: where golato's actors live and where the work they start runs.
//!
//! By default the host owns everything: one actix `System` on a dedicated thread, further
//! arbiter threads, and a multi-thread tokio runtime for tool functions. Plain `Actor::start`
//! panics outside an actix system, and a tokio runtime cannot be dropped inside async code;
//! owning both on threads of our own is what lets golato be called from a plain `fn main`,
//! from any tokio runtime and from another actix system alike.
//!
//! An application can instead lend its own: its tokio runtime ([`HostConfig::runtime`]: no
//! second worker pool), or, in an actix application, its arbiters
//! ([`embed::host_on_arbiters`](crate::embed::host_on_arbiters)).

mod config;
mod event_loops;

pub use config::{HostConfig, HostError, ShutdownReport, ToolTasks};
use event_loops::{checked_runtime, left_behind, thread_grace, worker_runtime, EventLoops};

use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use actix_rt::{Arbiter, ArbiterHandle, System};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// A handle to the actor host. Cheap to clone; all clones share one host.
///
/// The host is created lazily once per process by [`Host::global`], or explicitly with
/// [`Host::new`] by users who want to size it, give it their tokio runtime, or own its
/// lifetime. [`Host::shutdown`] stops it cleanly. Dropping the last handle without a shutdown
/// cancels what still runs and stops the host in the background: it never waits and never
/// panics, wherever it happens (in async code and on an actor thread included).
///
/// ```
/// use golato_actors::{Host, HostConfig};
/// use std::time::Duration;
///
/// # #[tokio::main]
/// # async fn main() -> Result<(), golato_actors::HostError> {
/// // Tool functions run on this application's runtime; golato adds only its actor threads.
/// let host = Host::new(HostConfig {
///     runtime: Some(tokio::runtime::Handle::current()),
///     ..HostConfig::default()
/// })?;
/// assert_eq!(host.spawn(async { 40 + 2 }).await.ok(), Some(42));
/// let report = host.shutdown(Duration::from_secs(5)).await;
/// assert_eq!(report.unfinished, 0);
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Host {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    runtime: tokio::runtime::Handle,
    tool_tasks: config::ToolTasks,
    arbiters: Vec<ArbiterHandle>,
    next_arbiter: AtomicUsize,
    /// The actix System and its thread, when the host owns them.
    owned: Option<OwnedSystem>,
    /// A worker runtime built for a host on an application's arbiters, shut down in the
    /// background when the host stops (dropping a runtime inside async code panics).
    workers: Mutex<Option<tokio::runtime::Runtime>>,
    stopped: AtomicBool,
    /// Cancelled by `shutdown`: every run's token is a child of it.
    pub(crate) shutdown: CancellationToken,
    pub(crate) active: Arc<ActiveWork>,
    /// Counters per actor type, bumped by counted mailboxes.
    pub(crate) stats: crate::stats::Registry,
    /// Every actor instance, when the console is on.
    pub(crate) console: Option<crate::console::Console>,
    /// The console's server, when the configuration said where.
    console_server: Mutex<Option<crate::console::ConsoleServer>>,
}

struct OwnedSystem {
    system: System,
    thread: Mutex<Option<JoinHandle<()>>>,
    /// Closed when the host thread ends, for an async shutdown to wait on without blocking.
    exited: Mutex<Option<tokio::sync::oneshot::Receiver<()>>>,
    /// The same, for a blocking shutdown to wait on with a timeout.
    exited_blocking: Mutex<Option<std::sync::mpsc::Receiver<()>>>,
}

/// Units of work in progress (runs), which a shutdown waits for.
#[derive(Default)]
pub(crate) struct ActiveWork {
    pub(crate) count: Mutex<usize>,
    idle: Condvar,
    idle_async: Notify,
}

impl ActiveWork {
    pub(crate) fn finished_one(&self) {
        let mut count = self.count.lock().unwrap_or_else(PoisonError::into_inner);
        *count = count.saturating_sub(1);
        if *count == 0 {
            self.idle.notify_all();
            self.idle_async.notify_waiters();
        }
    }

    fn current(&self) -> usize {
        *self.count.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits until no work is left or `deadline` passes; returns what is left.
    fn wait_blocking(&self, deadline: Instant) -> usize {
        let mut count = self.count.lock().unwrap_or_else(PoisonError::into_inner);
        while *count > 0 {
            let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                break;
            };
            count = self
                .idle
                .wait_timeout(count, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        *count
    }

    async fn wait_async(&self, deadline: Instant) -> usize {
        let sleep = tokio::time::sleep_until(deadline.into());
        tokio::pin!(sleep);
        loop {
            let idle = self.idle_async.notified();
            tokio::pin!(idle);
            idle.as_mut().enable();
            let left = self.current();
            if left == 0 {
                return 0;
            }
            tokio::select! {
                () = &mut sleep => return self.current(),
                () = idle => {}
            }
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

    /// Makes `host` the process-wide host that [`Host::global`] returns from now on (for
    /// instance one with its console on, made before the first agent); the host it replaces,
    /// if any, keeps running for whoever holds it.
    pub fn set_global(host: &Host) {
        *GLOBAL.lock().unwrap_or_else(PoisonError::into_inner) = Some(host.clone());
    }

    /// Starts a new host: an actix system on a thread of its own, `config.arbiters - 1`
    /// further arbiter threads, and (unless [`HostConfig::runtime`] lends one) a tokio runtime
    /// for tool functions, which the arbiters share.
    ///
    /// # Errors
    /// [`HostError::Start`] when a thread or the runtime cannot be created,
    /// [`HostError::StartAborted`] when the system thread dies during start-up,
    /// [`HostError::CurrentThreadRuntime`] for a current-thread [`HostConfig::runtime`].
    pub fn new(config: HostConfig) -> Result<Host, HostError> {
        // Either a runtime of our own, shared by the tools and the arbiters, or the caller's
        // for the tools, with a small event loop per arbiter (`EventLoops`).
        let (handle, shared) = match &config.runtime {
            Some(handle) => (checked_runtime(handle)?, None),
            None => {
                let runtime = Arc::new(worker_runtime(&config)?);
                (runtime.handle().clone(), Some(runtime))
            }
        };
        let extra_arbiters = config.arbiters.max(1) - 1;
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (exited_tx, exited_rx) = tokio::sync::oneshot::channel::<()>();
        let (exited_blocking_tx, exited_blocking_rx) = std::sync::mpsc::channel::<()>();

        let thread = std::thread::Builder::new()
            .name(format!("{}-actors", config.thread_name))
            .spawn(move || {
                let _exited = (exited_tx, exited_blocking_tx);
                let loops = EventLoops {
                    shared,
                    own: Arc::default(),
                };
                let runner = match loops.next() {
                    Ok(runtime) => System::with_tokio_rt(move || runtime),
                    Err(error) => {
                        let _ = ready_tx.send(Err(error));
                        return;
                    }
                };
                let arbiter_loops = loops.clone();
                let started = runner.block_on(async move {
                    let mut handles = vec![Arbiter::current()];
                    let mut owned = Vec::with_capacity(extra_arbiters);
                    for _ in 0..extra_arbiters {
                        let loops = arbiter_loops.clone();
                        let arbiter = Arbiter::try_with_tokio_rt(move || loops.next())?;
                        handles.push(arbiter.handle());
                        owned.push(arbiter);
                    }
                    Ok::<_, std::io::Error>((System::current(), handles, owned))
                });
                match started {
                    Ok((system, handles, owned)) => {
                        if ready_tx.send(Ok((system, handles))).is_ok() {
                            if let Err(error) = runner.run() {
                                tracing::error!(%error, "golato actor system ended with an error");
                            }
                        } else {
                            drop(runner);
                        }
                        for arbiter in owned {
                            arbiter.stop();
                            let _ = arbiter.join();
                        }
                    }
                    Err(error) => {
                        drop(runner);
                        let _ = ready_tx.send(Err(error));
                    }
                }
                loops.abandon();
            })
            .map_err(HostError::Start)?;

        let (system, arbiters) = match ready_rx.recv() {
            Ok(Ok(ready)) => ready,
            Ok(Err(error)) => return Err(HostError::Start(error)),
            Err(_) => return Err(HostError::StartAborted),
        };
        tracing::debug!(arbiters = arbiters.len(), "golato actor host started");
        Host::assemble(
            &config,
            handle,
            arbiters,
            Some(OwnedSystem {
                system,
                thread: Mutex::new(Some(thread)),
                exited: Mutex::new(Some(exited_rx)),
                exited_blocking: Mutex::new(Some(exited_blocking_rx)),
            }),
            None,
        )
    }

    /// A host on an application's arbiters; see [`crate::embed::host_on_arbiters`].
    pub(crate) fn on_arbiters(
        arbiters: Vec<ArbiterHandle>,
        config: &HostConfig,
    ) -> Result<Host, HostError> {
        if arbiters.is_empty() {
            return Err(HostError::NoArbiters);
        }
        let (handle, workers) = match &config.runtime {
            Some(handle) => (checked_runtime(handle)?, None),
            None => {
                let runtime = worker_runtime(config)?;
                (runtime.handle().clone(), Some(runtime))
            }
        };
        Host::assemble(config, handle, arbiters, None, workers)
    }

    /// The host, with its console served if the configuration says where (a host whose console
    /// cannot be served is dropped, which stops it).
    fn assemble(
        config: &HostConfig,
        runtime: tokio::runtime::Handle,
        arbiters: Vec<ArbiterHandle>,
        owned: Option<OwnedSystem>,
        workers: Option<tokio::runtime::Runtime>,
    ) -> Result<Host, HostError> {
        let console = config.console.clone().map(crate::console::Console::new);
        let server = match (
            &console,
            config.console.as_ref().and_then(|c| c.listen.as_ref()),
        ) {
            (Some(console), Some(addr)) => Some(console.serve(addr, &runtime)?),
            _ => None,
        };
        Ok(Host {
            inner: Arc::new(Inner {
                runtime,
                tool_tasks: config.tool_tasks,
                arbiters,
                next_arbiter: AtomicUsize::new(0),
                owned,
                workers: Mutex::new(workers),
                stopped: AtomicBool::new(false),
                shutdown: CancellationToken::new(),
                active: Arc::default(),
                stats: crate::stats::Registry::default(),
                console,
                console_server: Mutex::new(server),
            }),
        })
    }

    /// The host's actor console, when [`HostConfig::console`] turned it on.
    pub fn console(&self) -> Option<&crate::console::Console> {
        self.inner.console.as_ref()
    }

    /// Where the host serves its console, when it does.
    pub fn console_addr(&self) -> Option<crate::console::ConsoleAddr> {
        self.inner
            .console_server
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .map(|server| server.addr().clone())
    }

    /// A console entry for work of `kind` that has no mailbox of its own (a tool call run by
    /// its task); [`Probe::none`](crate::console::Probe::none) with the console off. The entry
    /// ends when the last clone of the probe is dropped.
    pub fn probe(&self, kind: crate::console::Kind, name: &'static str) -> crate::console::Probe {
        match &self.inner.console {
            Some(console) => console.register(kind, name),
            None => crate::console::Probe::none(),
        }
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

    /// Runs the task of a tool function where [`HostConfig::tool_tasks`] says: on the calling
    /// actor's arbiter thread with [`ToolTasks::RunThread`] (when called on one; elsewhere, and
    /// with [`ToolTasks::Workers`], on the worker runtime).
    pub fn spawn_tool<F>(&self, future: F) -> tokio::task::JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        if self.inner.tool_tasks == config::ToolTasks::RunThread && Arbiter::try_current().is_some()
        {
            actix_rt::spawn(future)
        } else {
            self.inner.runtime.spawn(future)
        }
    }

    /// Whether tool tasks run on their actor's thread ([`HostConfig::tool_tasks`]).
    pub fn tool_tasks(&self) -> config::ToolTasks {
        self.inner.tool_tasks
    }

    /// Runs blocking or CPU-heavy `work` on the host runtime's blocking pool.
    pub fn spawn_blocking<F, R>(&self, work: F) -> tokio::task::JoinHandle<R>
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        self.inner.runtime.spawn_blocking(work)
    }

    /// The next arbiter, round-robin, while the host runs.
    pub(crate) fn next_arbiter(&self) -> Option<&ArbiterHandle> {
        if !self.is_running() {
            return None;
        }
        let count = self.inner.arbiters.len();
        if count == 0 {
            return None;
        }
        let index = self.inner.next_arbiter.fetch_add(1, Ordering::Relaxed) % count;
        self.inner.arbiters.get(index)
    }

    /// What the host's actors have done so far, per actor type: messages handled, the current
    /// mailbox depth and a histogram of mailbox waits, for a service to export as metrics.
    /// Reading them takes a snapshot; keeping them up costs a few relaxed atomic additions per
    /// message.
    ///
    /// ```
    /// # use golato_actors::Host;
    /// let stats = Host::global()?.stats();
    /// for actor in &stats.actors {
    ///     println!("{}: {} handled, {} waiting", actor.actor, actor.messages_handled, actor.mailbox_depth);
    /// }
    /// # Ok::<(), golato_actors::HostError>(())
    /// ```
    pub fn stats(&self) -> crate::HostStats {
        self.inner.stats.snapshot()
    }

    /// Whether the host still accepts work.
    pub fn is_running(&self) -> bool {
        !self.inner.stopped.load(Ordering::Acquire)
    }

    /// Stops the host: cancels every run, waits until each has ended (so started tool
    /// functions are waited for) or `deadline` has passed, then stops the host's actors and
    /// abandons whatever still runs: a run still going ends with an error outcome carrying its
    /// transcript. It waits for the host's actor threads to end until the deadline (at least a
    /// second); a thread an async tool function blocks is left behind, to end when the function
    /// returns. Runs started afterwards fail at once with [`HostError::Stopped`]. A host on
    /// an application's arbiters ([`crate::embed::host_on_arbiters`]) leaves the
    /// application's actix system running. Calling it again returns at once.
    ///
    /// # Cancel safety
    /// Dropping the future after its first poll leaves the host stopping in the background.
    pub async fn shutdown(&self, deadline: Duration) -> ShutdownReport {
        let Some(deadline) = self.begin_shutdown(deadline) else {
            return ShutdownReport { unfinished: 0 };
        };
        let unfinished = self.inner.active.wait_async(deadline).await;
        let exited = self.stop_actors();
        if let Some(exited) = exited {
            // Timed on the host's runtime, so that this future needs none of its caller's.
            let grace = thread_grace(deadline);
            let waited = self
                .inner
                .runtime
                .spawn(async move { tokio::time::timeout(grace, exited).await.is_ok() });
            if matches!(waited.await, Ok(false)) {
                left_behind();
            }
        }
        self.report(unfinished)
    }

    /// [`Host::shutdown`] for synchronous code: blocks the calling thread. Called on one of the
    /// host's own actor threads, where waiting would deadlock, it stops without waiting.
    pub fn shutdown_blocking(&self, deadline: Duration) -> ShutdownReport {
        let Some(deadline) = self.begin_shutdown(deadline) else {
            return ShutdownReport { unfinished: 0 };
        };
        if self.on_host_thread() {
            tracing::warn!(
                "Host::shutdown_blocking called on a host thread; stopping without waiting"
            );
            let unfinished = self.inner.active.current();
            let _ = self.stop_actors();
            return self.report(unfinished);
        }
        let unfinished = self.inner.active.wait_blocking(deadline);
        let _ = self.stop_actors();
        if let Some(owned) = &self.inner.owned {
            let exited = owned
                .exited_blocking
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take();
            let ended = exited.is_none_or(|exited| {
                exited.recv_timeout(thread_grace(deadline))
                    != Err(std::sync::mpsc::RecvTimeoutError::Timeout)
            });
            let thread = owned
                .thread
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take();
            match thread {
                Some(thread) if ended => drop(thread.join()),
                Some(_) => left_behind(),
                None => {}
            }
        }
        self.report(unfinished)
    }

    /// Marks the host stopped and cancels its runs; `None` when it already was.
    fn begin_shutdown(&self, deadline: Duration) -> Option<Instant> {
        if self.inner.stopped.swap(true, Ordering::AcqRel) {
            return None;
        }
        self.inner.shutdown.cancel();
        Some(Instant::now() + deadline)
    }

    /// Stops the actor system the host owns (dropping every actor still alive, which ends its
    /// run with an error outcome) and abandons the tools still running. Returns what closes
    /// when the host thread has ended, unless that is this thread.
    fn stop_actors(&self) -> Option<tokio::sync::oneshot::Receiver<()>> {
        // The console's viewers are told the host is gone: their streams end.
        drop(
            self.inner
                .console_server
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take(),
        );
        if let Some(workers) = self
            .inner
            .workers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            workers.shutdown_background();
        }
        let owned = self.inner.owned.as_ref()?;
        owned.system.stop();
        if self.on_host_thread() {
            return None;
        }
        owned
            .exited
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    fn on_host_thread(&self) -> bool {
        match &self.inner.owned {
            Some(owned) => {
                System::try_current().is_some_and(|system| system.id() == owned.system.id())
            }
            None => false,
        }
    }

    fn report(&self, unfinished: usize) -> ShutdownReport {
        if unfinished == 0 {
            tracing::debug!("golato actor host stopped");
        } else {
            tracing::warn!(
                unfinished,
                "golato actor host stopped with runs still going; they end with an error"
            );
        }
        ShutdownReport { unfinished }
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        if self.stopped.swap(true, Ordering::AcqRel) {
            return;
        }
        self.shutdown.cancel();
        if let Some(owned) = &self.owned {
            owned.system.stop();
        }
        if let Some(workers) = self
            .workers
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            workers.shutdown_background();
        }
    }
}

impl fmt::Debug for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Host")
            .field("arbiters", &self.inner.arbiters.len())
            .field("owns_system", &self.inner.owned.is_some())
            .field("running", &self.is_running())
            .finish_non_exhaustive()
    }
}
