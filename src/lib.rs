//! golato runs LLM agents: it asks a model (the generator) for the next message, validates every
//! tool call in it, runs the batch (in parallel by default), records one result message per call
//! in source order, streams events while tools run, and asks again until the run ends.
//!
//! # Tour
//! - [`message`]: the transcript (user, assistant and tool-result messages), serde-stable.
//! - [`tool`]: [`Tool`], its [`ToolResult`] and [`ToolContext`](tool::ToolContext); typed tools
//!   derive their schema from a Rust type.
//! - [`generator`]: the streaming [`Generator`](generator::Generator) trait and the offline
//!   [`Scripted`](generator::Scripted) generator.
//! - [`agent`]: [`Agent`], its [`Run`] handle and [`Event`]s.
//! - [`hook`]: code of yours around every tool call (block, rewrite, replace the result).
//!
//! # Threads
//! Runs are actors on a library-owned host (an actix system on its own thread over a
//! library-owned multi-thread tokio runtime, from the `golato-actors` crate). Tool functions run
//! on the runtime's workers or its blocking pool, never on an actor thread, so golato works the
//! same from a plain `fn main`, `#[tokio::main]` (either flavour) and `#[actix::main]`. Every
//! actor message is handled in a `tracing` span; `RUST_LOG=golato=debug` with a
//! `tracing-subscriber` shows a run's whole story, run → turn → batch → call.
//!
//! # Example
//! See [`agent`] for a complete run, and `examples/registering_a_tool.rs`.

pub mod agent;
pub mod builtin;
pub mod generator;
pub mod hook;
pub mod message;
pub mod tool;

pub use agent::{Agent, Event, Input, Run, RunResult};
pub use golato_actors::{Host, HostConfig};
pub use tool::{Tool, ToolResult};
