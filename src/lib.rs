//! golato runs LLM agents. It asks a model (a [`Generator`](generator::Generator)) for the next
//! message; when the model returns tool calls, golato validates every call, runs the batch (in
//! parallel by default, serially when asked), records one result message per call in source
//! order, streams [`Event`]s while the tools run, and asks the model again until the run ends.
//! It ships the four tools a coding agent needs ([`builtin`]: read, bash, edit, write), clients
//! for OpenAI-compatible and Anthropic endpoints, and an optional kernel [`sandbox`].
//!
//! # A run
//! ```
//! use std::sync::Arc;
//! use golato::agent::{self, Agent, Event, Input};
//! use golato::generator::Scripted;
//! use golato::message::{AssistantMessage, ToolCall, UserMessage};
//! use golato::tool::{Tool, ToolResult};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let lookup = Tool::new(
//!     "lookup_customer",
//!     "Looks up a customer's plan.",
//!     serde_json::json!({"type": "object", "properties": {"customer_id": {"type": "string"}}}),
//!     |_ctx, _args| async { Ok(ToolResult::text("Pro")) },
//! );
//! // A model that answers from a script; `generator::OpenAiChat` and `generator::Anthropic`
//! // are real ones.
//! let model = Scripted::new([
//!     AssistantMessage::with_tool_calls([ToolCall::new("1", "lookup_customer", r#"{"customer_id": "C-100"}"#)]),
//!     AssistantMessage::with_text("C-100 uses the Pro plan."),
//! ]);
//! let assistant = Agent::new(agent::Config {
//!     generator: Some(Arc::new(model)),
//!     tools: vec![lookup],
//!     ..Default::default()
//! })?;
//! let run = assistant.start(Input::from(UserMessage::new("Which plan does C-100 use?")));
//! for event in run.events() {
//!     if let Event::ToolExecutionEnd(end) = event {
//!         assert_eq!(end.result.text(), "Pro");
//!     }
//! }
//! assert_eq!(run.wait()?.final_message.text(), "C-100 uses the Pro plan.");
//! # Ok(())
//! # }
//! ```
//! From async code: `run.next_event().await`, then `run.finish().await`, or just
//! `assistant.run(input).await`.
//!
//! # Tour of the crate
//! - [`message`]: the transcript (user, assistant and tool-result messages), serde-stable.
//! - [`tool`]: [`Tool`], its [`ToolResult`] and [`ToolContext`](tool::ToolContext); typed tools
//!   derive their schema from a Rust type.
//! - [`generator`]: the streaming [`Generator`](generator::Generator) trait, the offline
//!   [`Scripted`](generator::Scripted) generator and the provider clients.
//! - [`agent`]: [`Agent`], its [`Run`] handle and [`Event`]s; budgets, compaction, structured
//!   output, steering.
//! - [`builtin`]: read, bash, edit and write, with their limits; [`sandbox`]: what they may touch.
//! - [`hook`]: code of yours around every tool call (block, rewrite, replace the result).
//! - [`policy`]: allow, ask and deny rules and command hooks (Claude Code's protocol) read from
//!   TOML files, applied as one hook.
//! - [`journal`]: a run's steps recorded, so a run picked up again skips what is done.
//! - `mcp` (default feature): tools from MCP servers. `observe` (default feature): every actor
//!   message as a span, in one line; `observe::otel` (feature `otel`): as OpenTelemetry spans.
//! - [`Host`]: where runs execute; [`embed`]: golato inside an actix application, under its
//!   supervisor.
//!
//! # Cargo features
//! | feature | default | what it adds |
//! |---|---|---|
//! | `observe` | yes | `golato::observe`: a ready `tracing-subscriber` layer showing every actor message |
//! | `mcp` | yes | `golato::mcp`: tools from MCP servers over stdio or streamable HTTP (rmcp) |
//! | `otel` | no | `golato::observe::otel`: golato's spans as OpenTelemetry spans, exported over OTLP/HTTP |
//! | `fault-injection` | no | test-only hooks that crash a run's actor (`Run::inject_crash`); never in production |
//! | `fuzzing` | no | entry points for the fuzz targets in `fuzz/`; not an API |
//! | `dhat-heap` | no | for `examples/stress.rs` only: counts its heap with dhat |
//!
//! # The other crates
//! - `golato-actors`: how work runs (host, supervisors, per-call actors, the path lock, traced
//!   mailboxes); it knows nothing about models or tools. Its public types are re-exported here.
//! - `golato-sandbox`: the sandbox's policy and helper, re-exported as [`sandbox`].
//! - `golato-restate`: durable runs on a Restate server, built on [`journal`].
//! - `golato-cli`: the `golato` command line.
//!
//! # Threads
//! Runs are actors on a host: by default a library-owned actix system on its own threads over a
//! library-owned multi-thread tokio runtime. A run's actors and its async tool functions share one
//! arbiter thread ([`HostConfig::tool_tasks`]); blocking functions and hooks run on the
//! runtime's blocking pool and workers, so golato works the same from a plain `fn main`,
//! `#[tokio::main]` (either flavour) and `#[actix::main]`. An application can lend the host its
//! own tokio runtime ([`HostConfig::runtime`]) or, with [`embed`], its actix arbiters. Every
//! actor message is handled in a `tracing` span; `RUST_LOG=golato=debug` with a
//! `tracing-subscriber` shows a run's whole story, run → turn → batch → call.

#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod agent;
pub mod builtin;
pub mod diagnostics;
pub mod embed;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
pub mod generator;
pub mod hook;
pub mod journal;
#[cfg(feature = "mcp")]
pub mod mcp;
pub mod message;
pub mod name;
#[cfg(feature = "observe")]
pub mod observe;
pub mod policy;
pub mod proxy;
pub mod subagent;
/// What the built-in tools may touch: the [`golato-sandbox`](golato_sandbox) crate, re-exported.
#[doc(inline)]
pub use golato_sandbox as sandbox;
pub mod tool;

pub use agent::{Agent, Event, Input, Run, RunResult};
pub use golato_actors::{Host, HostConfig, HostError, ShutdownReport, ToolTasks};

/// The actor host runs run on, and what it measures of itself: [`Host::stats`](host::Host::stats)
/// gives each actor's message counts, mailbox depth and a histogram of mailbox waits, for
/// export as metrics.
pub mod host {
    /// The actor console: every actor instance, what it does and waits on, the path locks and
    /// what looks wrong ([`HostConfig::console`]).
    pub use golato_actors::console;
    pub use golato_actors::{
        ActorStats, Host, HostConfig, HostError, HostStats, ShutdownReport, ToolTasks, WaitBucket,
        WaitHistogram,
    };
}
pub use tool::{Tool, ToolResult};

/// The README's Rust examples, compiled and run as doctests so that a newcomer can paste them.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
