#![doc = include_str!("../README.md")]
//!
//! # Tour of the crate
//! - [`message`]: the transcript (user, assistant and tool-result messages), serde-stable.
//! - [`tool`]: [`Tool`], its [`ToolResult`] and [`ToolContext`](tool::ToolContext); typed tools
//!   derive their schema from a Rust type.
//! - [`generator`]: the streaming [`Generator`](generator::Generator) trait and the offline
//!   [`Scripted`](generator::Scripted) generator.
//! - [`agent`]: [`Agent`], its [`Run`] handle and [`Event`]s.
//! - [`hook`]: code of yours around every tool call (block, rewrite, replace the result).
//! - `observe` (default feature `observe`): every actor message as a span, in one line.
//! - [`Host`]: where runs execute; [`embed`]: golato inside an actix application, under its
//!   supervisor.
//!
//! # Threads
//! Runs are actors on a host (from the `golato-actors` crate): by default a library-owned actix
//! system on its own threads over a library-owned multi-thread tokio runtime. Tool functions run
//! on the runtime's workers or its blocking pool, never on an actor thread, so golato works the
//! same from a plain `fn main`, `#[tokio::main]` (either flavour) and `#[actix::main]`. An
//! application can lend the host its own tokio runtime ([`HostConfig::runtime`]) or, with
//! [`embed`], its actix arbiters. Every
//! actor message is handled in a `tracing` span; `RUST_LOG=golato=debug` with a
//! `tracing-subscriber` shows a run's whole story, run → turn → batch → call.
//!
//! # Example
//! See [`agent`] for a complete run, and `examples/registering_a_tool.rs`.

pub mod agent;
pub mod builtin;
pub mod embed;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
pub mod generator;
pub mod hook;
#[cfg(feature = "mcp")]
pub mod mcp;
pub mod message;
#[cfg(feature = "observe")]
pub mod observe;
/// What the built-in tools may touch: the [`golato-sandbox`](golato_sandbox) crate, re-exported.
#[doc(inline)]
pub use golato_sandbox as sandbox;
pub mod tool;

pub use agent::journal;
pub use agent::{Agent, Event, Input, Run, RunResult};
pub use golato_actors::{
    ActorStats, Host, HostConfig, HostError, HostStats, ShutdownReport, WaitBucket, WaitHistogram,
};
pub use tool::{Tool, ToolResult};
