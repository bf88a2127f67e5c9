//! What a host is made of ([`HostConfig`]), why it could not start ([`HostError`]), and what its
//! shutdown left ([`ShutdownReport`]).

/// How to build a [`Host`](crate::Host).
#[derive(Debug, Clone)]
pub struct HostConfig {
    /// Worker threads of the tokio runtime the host builds for tool functions. `None` uses one
    /// per core. Ignored when [`HostConfig::runtime`] is set.
    pub worker_threads: Option<usize>,
    /// Threads that host actors (actix arbiters). Runs are spread over them round-robin. The
    /// default is one per core: with trivial tools the actor thread is the bottleneck, and a
    /// second arbiter doubled the stress bench's throughput on two cores (see BENCHMARKS.md).
    /// Values below 1 are treated as 1.
    pub arbiters: usize,
    /// Prefix of the names of the host's threads, as shown by debuggers and `top -H`.
    pub thread_name: String,
    /// Your multi-thread tokio runtime, to run hooks, blocking work and (with
    /// [`ToolTasks::Workers`]) tool functions on it instead of on a runtime of the host's own: golato then starts no worker threads, only
    /// its actor threads, each of which drives a small event loop of its own (actix needs one
    /// per arbiter). `None` (the default) builds a runtime. A current-thread runtime is refused
    /// ([`HostError::CurrentThreadRuntime`]): tools would run only while your thread awaits.
    pub runtime: Option<tokio::runtime::Handle>,
    /// Where the task of an async tool function runs: on the thread of the actor that starts
    /// it (the default), or on the worker runtime. See [`ToolTasks`].
    pub tool_tasks: ToolTasks,
    /// The actor console: `None` (the default) records nothing and costs nothing; `Some`
    /// keeps an entry per actor instance for [`Host::console`](crate::Host::console), and serves it when
    /// [`ConsoleConfig::listen`](crate::console::ConsoleConfig::listen) says where.
    pub console: Option<crate::console::ConsoleConfig>,
}

impl Default for HostConfig {
    fn default() -> Self {
        HostConfig {
            worker_threads: None,
            arbiters: std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get),
            thread_name: "golato".to_owned(),
            runtime: None,
            tool_tasks: ToolTasks::default(),
            console: None,
        }
    }
}

/// Where the task of an async tool function runs ([`HostConfig::tool_tasks`]).
///
/// A run's actors (its run actor, batch supervisor and tool actors) always share one arbiter
/// thread; this says whether a call's function joins them there. Blocking functions run on
/// the blocking pool either way.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToolTasks {
    /// On the run's own arbiter thread, so that a call's messages never cross threads unless
    /// the tool's own work does: on two cores the stress example runs 1.2-1.4x the calls a
    /// second with a fifth less memory (BENCHMARKS.md, "Runs that stay on one thread"). An
    /// async function that blocks its thread (a long loop without an `.await`, a synchronous
    /// read) holds up every run on that arbiter until it returns, and its timeout cannot fire
    /// before then; such work belongs in a blocking function or `spawn_blocking`. Calls of one
    /// batch still run at once (each awaits on its own), and blocking functions in parallel.
    /// What the function itself spawns goes where the arbiter's thread runs: the host's worker
    /// runtime, or with [`HostConfig::runtime`] the arbiter's own small event loop.
    #[default]
    RunThread,
    /// On the worker runtime's threads ([`HostConfig::worker_threads`] or
    /// [`HostConfig::runtime`]): a function that blocks its thread holds up only that worker, at
    /// the price of two thread crossings per call.
    Workers,
}

/// Why the host could not do what was asked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HostError {
    /// The host's threads or runtime could not be created.
    #[error(
        "could not start golato's actor host: {0}; check the process's limits on open files, threads and memory (ulimit -n, ulimit -u, ulimit -v)"
    )]
    Start(#[source] std::io::Error),
    /// The host thread ended before it reported that it was ready.
    #[error("golato's actor host thread exited during start-up; see the log for a panic message")]
    StartAborted,
    /// [`Host::shutdown`](crate::Host::shutdown) was called, or the host's actor thread has gone.
    #[error("golato's actor host has shut down; create a new Host (or use Host::global) to run more work")]
    Stopped,
    /// [`HostConfig::runtime`] is a current-thread runtime.
    #[error("golato needs a multi-thread tokio runtime for tool functions, and the handle given in HostConfig::runtime is a current-thread one; pass a multi-thread runtime's handle, or leave it None to let golato build one")]
    CurrentThreadRuntime,
    /// The console could not be served where [`ConsoleConfig::listen`](crate::console::ConsoleConfig::listen) says.
    #[error(transparent)]
    Console(#[from] crate::console::ServeError),
    /// [`embed::host_on_arbiters`](crate::embed::host_on_arbiters) got no arbiter.
    #[error("golato needs at least one arbiter to host its actors; pass Arbiter::current() or the handles of arbiters you started")]
    NoArbiters,
}

/// What [`Host::shutdown`](crate::Host::shutdown) found when it stopped the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ShutdownReport {
    /// Runs (units of work) still going at the deadline. Their tools were abandoned and each
    /// run ended with an error outcome carrying its transcript. Zero when all ended in time.
    pub unfinished: usize,
}
