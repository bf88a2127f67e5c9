//! How golato's work runs: an actor runtime on actix and tokio that knows nothing about models or
//! tools.
//!
//! The crate gives its users (the `golato` crate first) four things:
//!
//! - [`Host`]: a library-owned actix `System` on a dedicated thread, over a library-owned
//!   multi-thread tokio runtime. Actors live on the host's arbiter threads; the work they start
//!   runs on the runtime's workers ([`Host::spawn`]), its blocking pool
//!   ([`Host::spawn_blocking`]), or, for a tool's task, beside them ([`Host::spawn_tool`]). Because the host owns its threads, callers may be a plain
//!   `fn main`, any tokio runtime or another actix system.
//! - [`batch`]: a [`BatchSupervisor`](batch::BatchSupervisor) that runs a batch of jobs, in parallel
//!   or one after another, through one per-call actor per job (the caller's own, or a [`WorkActor`](batch::WorkActor)), and reports each
//!   outcome by source index. A panic or a lost actor becomes an outcome, never a hang.
//! - [`envelope`]: every message between actors travels in an [`Envelope`] stamped at send time,
//!   and is handled inside a `tracing` span naming the actor, the message type, the time it waited
//!   in the mailbox and the queue depth behind it.
//! - [`embed`]: the host's actix side, for actix applications (golato's actors on their own
//!   arbiters) and for the crates built on this one (starting actors, tying work to shutdown).
//! - [`path_lock`]: a [`PathLock`](path_lock::PathLock) actor granting FIFO leases per path, for
//!   serializing work on one file across concurrent runs.
//!
//! # Example
//!
//! ```
//! use golato_actors::Host;
//!
//! let host = Host::global()?;
//! let (tx, rx) = std::sync::mpsc::channel();
//! host.spawn(async move { tx.send(40 + 2) });
//! assert_eq!(rx.recv()?, 42);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod batch;
pub mod console;
pub mod embed;
pub mod envelope;
mod host;
pub mod path_lock;
mod stats;

pub use envelope::{Envelope, Mailbox, TracedActor, TracedRecipient};
pub use host::{Host, HostConfig, HostError, ShutdownReport, ToolTasks};
pub use stats::{ActorStats, HostStats, WaitBucket, WaitHistogram};
