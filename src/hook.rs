//! Hooks: code of yours that runs around every tool call, in the call's tool actor.
//!
//! A [`Hook`] sees each valid call twice: [`Hook::before_tool_call`] before its function runs
//! (run it, rewrite its arguments, or block it with a reason the model sees) and
//! [`Hook::after_tool_call`] once it has a result (keep it or replace it). An agent's hooks
//! (`agent::Config::hooks`) run in order: each before-hook sees the arguments as the previous
//! one left them, and the first block wins; each after-hook sees the result as the previous one
//! left it. Rewritten arguments are checked against the tool's schema again and replaced results
//! are checked like any result; a hook that fails or panics gives that call an error result, and
//! nothing else breaks. `ToolHook` events say when a hook blocked a call, rewrote its arguments
//! or replaced its result.
//!
//! Hooks run on the host runtime's worker threads, never on an actor thread, and only for calls
//! that passed validation (an invalid call's error result goes straight to the model).
//!
//! ```
//! use std::sync::Arc;
//! use golato::hook::{self, BeforeToolCall};
//!
//! // Blocks any bash command that mentions `rm -rf`.
//! let guard = hook::before(|ctx| async move {
//!     let command = ctx.arguments["command"].as_str().unwrap_or_default();
//!     if ctx.call.name == "bash" && command.contains("rm -rf") {
//!         return Ok(BeforeToolCall::Block("rm -rf is not allowed here".into()));
//!     }
//!     Ok(BeforeToolCall::Run)
//! });
//! let config = golato::agent::Config { hooks: vec![guard], ..Default::default() };
//! # let _ = config;
//! ```

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;
use futures::FutureExt;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::message::ToolCall;
use crate::tool::{BoxError, ToolResult};

/// What a hook knows about the call.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct HookContext {
    /// The run's ID (as in its events and tracing span).
    pub run_id: u64,
    /// Position of the call in the assistant message.
    pub index: usize,
    /// The call as the model sent it.
    pub call: ToolCall,
    /// The arguments as they stand: the model's, or an earlier hook's rewrite.
    pub arguments: Value,
    /// Cancelled when the run is cancelled or the call times out; a slow hook should stop.
    pub cancel: CancellationToken,
    /// For a call of a subagent: the IDs of the `task` calls that started its run, from the
    /// top run's down (see [`crate::subagent`]); empty for a call of the run the caller
    /// started.
    pub path: Vec<String>,
    /// The turn the call belongs to (from 1), when the run is journaled.
    pub turn: Option<usize>,
    /// The key of a journaled run that names it across processes (a durable run's ID; see
    /// [`ToolContext::run_key`](crate::tool::ToolContext::run_key)).
    pub run_key: Option<String>,
    /// Where a journaled run's hooks record what must not be asked twice (an approval).
    pub(crate) journal: Option<HookJournal>,
    /// The call's batch, where what a hook spends for the call is counted.
    pub(crate) host: Option<HookHost>,
}

/// The batch a hook's call belongs to (see [`HookContext::spend`]).
#[derive(Clone)]
pub(crate) struct HookHost(pub(crate) Arc<dyn crate::tool::CallHost>);

impl std::fmt::Debug for HookHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HookHost").finish_non_exhaustive()
    }
}

impl HookContext {
    /// Runs `work` once for this call, under `name` (ASCII letters, digits and `_`): for work
    /// that costs, or whose answer must not change if the run is picked up again, such as
    /// asking a second model about the call.
    ///
    /// In a journaled run (a durable run, a [`FileJournal`](crate::journal::FileJournal)'s)
    /// the work is a step of the journal ([`StepKey::Hook`](crate::journal::StepKey::Hook)):
    /// its value is recorded, and a run picked up again gets the recorded value without
    /// running the work. Its start is recorded first, so work cut short (its process died) is
    /// started again as attempt 2 ([`StepWork::with_attempt`](crate::journal::StepWork::with_attempt))
    /// and may refuse to do it twice. Without a journal the work simply runs, as attempt 1.
    ///
    /// # Errors
    ///
    /// [`StepError::NotRecorded`](crate::journal::StepError::NotRecorded) when the work gave
    /// nothing to record; [`StepError::Journal`](crate::journal::StepError::Journal) when the
    /// journal failed, or `name` is not a name it can hold.
    ///
    /// ```
    /// use golato::hook::{self, BeforeToolCall};
    /// use golato::journal::StepWork;
    ///
    /// let reviewed = hook::before(|ctx| async move {
    ///     let verdict = ctx
    ///         .step("verdict", StepWork::new(async { Ok(serde_json::json!("allow")) }))
    ///         .await;
    ///     match verdict {
    ///         Ok(value) if value == "allow" => Ok(BeforeToolCall::Run),
    ///         _ => Ok(BeforeToolCall::Block("not reviewed".into())),
    ///     }
    /// });
    /// # let _ = reviewed;
    /// ```
    pub fn step(
        &self,
        name: &str,
        work: crate::journal::StepWork,
    ) -> BoxFuture<'static, Result<Value, crate::journal::StepError>> {
        use crate::journal::{StepError, StepKey};
        let (Some(journaled), Some(turn)) = (&self.journal, self.turn) else {
            return work
                .run()
                .map(|done| done.map_err(|_| StepError::NotRecorded))
                .boxed();
        };
        let key = StepKey::Hook {
            turn,
            call_id: self.call.id.clone(),
            name: name.to_owned(),
        };
        let step = key.to_string();
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            let error = crate::journal::Error {
                step,
                reason: "a hook's step is named with ASCII letters, digits and `_` only".to_owned(),
            };
            return futures::future::ready(Err(StepError::Journal(error))).boxed();
        }
        let work = crate::journal::StepWork::with_attempt(move |attempt| {
            work.run_attempt(attempt)
                .map(|done| done.map(crate::journal::seal))
        });
        let recorded = journaled.journal.step(key, work);
        async move {
            let record = recorded.await?;
            crate::journal::unseal(record, &step).map_err(StepError::Journal)
        }
        .boxed()
    }

    /// Counts tokens and money a hook spent on this call (a second model's review of it): they
    /// join the run's usage and cost and its budget checks, as a tool's
    /// [`ToolContext::spend`](crate::tool::ToolContext::spend) does. `cost` is `None` when the
    /// price is unknown, which makes the run's cost unknown too.
    pub fn spend(&self, usage: &crate::message::Usage, cost: Option<f64>) {
        if let Some(HookHost(host)) = &self.host {
            host.spend(self.index, usage, cost);
        }
    }

    /// The call's entry on the host's actor console ([`Probe::none`] when the console is off or
    /// the hook runs outside an agent), as [`ToolContext::probe`](crate::tool::ToolContext::probe)
    /// gives a tool's: a hook may say what the call waits on meanwhile (a person's answer, a
    /// second model).
    ///
    /// [`Probe::none`]: golato_actors::console::Probe::none
    pub fn probe(&self) -> golato_actors::console::Probe {
        match &self.host {
            Some(HookHost(host)) => host.probe(self.index),
            None => golato_actors::console::Probe::none(),
        }
    }
}

/// A journaled run's journal as its hooks use it: steps of the call's turn, and the call's
/// mark that it asked a question in this attempt (it never got further before).
#[derive(Clone)]
pub(crate) struct HookJournal {
    pub(crate) journal: Arc<dyn crate::journal::Journal>,
    pub(crate) asked_here: Arc<std::sync::atomic::AtomicBool>,
}

impl std::fmt::Debug for HookJournal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HookJournal").finish_non_exhaustive()
    }
}

/// What a hook knows about a compaction about to happen.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct CompactionContext {
    /// The run's ID.
    pub run_id: u64,
    /// Why it compacts.
    pub reason: crate::agent::compaction::CompactionReason,
    /// How many messages the summary replaces.
    pub replaced: usize,
    /// The context's size in tokens before.
    pub tokens_before: u64,
}

/// A before-hook's decision.
#[derive(Debug, Clone, PartialEq)]
pub enum BeforeToolCall {
    /// Run the call as it stands.
    Run,
    /// Run it with these arguments instead (checked against the tool's schema again).
    Rewrite(Value),
    /// Do not run it: the call gets an error result with this reason, which the model sees.
    Block(String),
}

/// An after-hook's decision.
#[derive(Debug, Clone, PartialEq)]
pub enum AfterToolCall {
    /// Keep the result.
    Keep,
    /// Replace the result (checked like any result).
    Replace(ToolResult),
}

/// Code that runs around every valid tool call. Both methods have defaults that change
/// nothing, so a hook implements only what it needs.
pub trait Hook: Send + Sync + 'static {
    /// Decides whether and how the call runs.
    ///
    /// # Errors
    /// An error gives the call an error result naming the hook's message; the function does
    /// not run.
    fn before_tool_call(
        &self,
        ctx: HookContext,
    ) -> BoxFuture<'static, Result<BeforeToolCall, BoxError>> {
        let _ = ctx;
        async { Ok(BeforeToolCall::Run) }.boxed()
    }

    /// Runs before the run's older messages are summarized (automatic compaction); the
    /// summary waits for it. It cannot stop the compaction.
    fn before_compaction(&self, ctx: CompactionContext) -> BoxFuture<'static, ()> {
        let _ = ctx;
        async {}.boxed()
    }

    /// Sees the call's result and may replace it.
    ///
    /// # Errors
    /// An error replaces the result with an error result naming the hook's message.
    fn after_tool_call(
        &self,
        ctx: HookContext,
        result: ToolResult,
    ) -> BoxFuture<'static, Result<AfterToolCall, BoxError>> {
        let _ = (ctx, result);
        async { Ok(AfterToolCall::Keep) }.boxed()
    }
}

/// A hook with only a before-hook, from an async closure.
pub fn before<F, Fut>(function: F) -> Arc<dyn Hook>
where
    F: Fn(HookContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<BeforeToolCall, BoxError>> + Send + 'static,
{
    Arc::new(Before(function))
}

/// A hook with only an after-hook, from an async closure.
pub fn after<F, Fut>(function: F) -> Arc<dyn Hook>
where
    F: Fn(HookContext, ToolResult) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<AfterToolCall, BoxError>> + Send + 'static,
{
    Arc::new(After(function))
}

struct Before<F>(F);

impl<F, Fut> Hook for Before<F>
where
    F: Fn(HookContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<BeforeToolCall, BoxError>> + Send + 'static,
{
    fn before_tool_call(
        &self,
        ctx: HookContext,
    ) -> BoxFuture<'static, Result<BeforeToolCall, BoxError>> {
        (self.0)(ctx).boxed()
    }
}

struct After<F>(F);

impl<F, Fut> Hook for After<F>
where
    F: Fn(HookContext, ToolResult) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<AfterToolCall, BoxError>> + Send + 'static,
{
    fn after_tool_call(
        &self,
        ctx: HookContext,
        result: ToolResult,
    ) -> BoxFuture<'static, Result<AfterToolCall, BoxError>> {
        (self.0)(ctx, result).boxed()
    }
}

impl fmt::Debug for dyn Hook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("dyn Hook")
    }
}

/// What a hook did to a call, as the `ToolHook` event reports it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum HookAction {
    /// A before-hook blocked the call; its function did not run.
    Blocked {
        /// The hook's reason, also the call's error result.
        reason: String,
    },
    /// A before-hook rewrote the arguments; the function ran with these.
    Rewrote {
        /// The arguments the function got.
        arguments: Value,
    },
    /// An after-hook replaced the result.
    ReplacedResult,
    /// A hook failed or panicked; the call got an error result saying so.
    Failed {
        /// What went wrong.
        error: String,
    },
}
