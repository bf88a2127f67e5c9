//! The tool actor: the one home of a validated call, from launch to its result.
//!
//! One per call, started by the batch supervisor. It runs the before-hooks, launches the
//! function (an async one on its run's thread unless `HostConfig::tool_tasks` says workers, a
//! blocking one on the blocking pool) with a context whose partial updates
//! go through the call's gate in the batch's [`SharedBatch`] (checked there, forwarded without a
//! hop through this actor, and cut off when the function returns), enforces the call's timeout,
//! checks the returned result, runs the after-hooks, and reports exactly one [`CallOutcome`]
//! through its [`Reporter`] (whose `Drop` reports the call lost if the actor dies first).
//! Everything about one call happens here; the run actor only hears of updates and hook
//! decisions (`CallNotice`) and of the outcome.
//!
//! Without hooks or a timeout there is nothing left to control once the function is launched:
//! the actor hands the call to the function's task, which concludes it with the same code (gate,
//! result checks, report) and the actor stops. A call in flight then holds its task, not an idle
//! actor (about 760 bytes less each), and its result reaches the run actor in one hop.

mod conclusion;
mod journaled;

pub(crate) use conclusion::CallOutcome;

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use actix::fut::ActorFutureExt;
use actix::{Actor, ActorContext, AsyncContext, Context, SpawnHandle, WrapFuture};
use conclusion::{conclude, error_result, report, result_of, returned, seconds, GateShutter};
use futures::FutureExt;
use golato_actors::batch::{outcome_of, Job, JobOutcome, Reporter, Work};
use journaled::journaled;
use serde_json::Value;
use tokio::task::AbortHandle;
use tracing::Instrument;

use super::batch_calls::{Notice, SharedBatch};
use super::validation::Registered;
use super::AgentInner;
use crate::hook::{AfterToolCall, BeforeToolCall, HookAction, HookContext};
use crate::journal::Error as JournalError;
use crate::message::ToolCall;
use crate::tool::{
    check_result, shown, BoxError, CallHost, Function, Replay, ToolContext, ToolResult,
};

/// Everything a tool actor needs for its call.
pub(crate) struct ToolSetup {
    pub(crate) agent: Arc<AgentInner>,
    pub(crate) run_id: u64,
    /// The batch's shared state; this call is number `index` in it.
    pub(crate) shared: Arc<SharedBatch>,
    pub(crate) index: usize,
    /// The tool and its compiled schema.
    pub(crate) tool: Arc<Registered>,
    pub(crate) span: tracing::Span,
}

/// The batch job that starts a tool actor for `setup`'s call: at once, or in a journaled run
/// through the run's journal (which may give back a recorded result instead).
pub(crate) fn job(setup: ToolSetup) -> Job<CallOutcome> {
    Job {
        index: setup.index,
        span: setup.span.clone(),
        work: Work::Actor(Box::new(move |reporter| {
            match setup
                .shared
                .journal()
                .map(|(journal, turn)| (Arc::clone(journal), turn))
            {
                None => start(setup, reporter),
                Some((journal, turn)) => journaled(setup, journal, turn, reporter),
            }
        })),
    }
}

/// Starts the tool actor for `setup`'s call, reporting to `reporter`.
fn start(setup: ToolSetup, reporter: Reporter<CallOutcome>) {
    setup.shared.start_probe(setup.index);
    let actor = ToolActor {
        setup,
        asked_here: Arc::default(),
        reporter: Some(reporter),
        arguments: None,
        stage: Stage::Before,
        timed_out: None,
        function: None,
        timer: None,
    };
    // Nobody sends a tool actor messages, so it is started without taking an address
    // (`Actor::start` makes one, two allocations, only to drop it).
    actix::spawn(Context::new().into_future(actor));
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// Before-hooks are running (or about to).
    Before,
    /// The function is running.
    Running,
    /// The function returned (or was abandoned); after-hooks may be running.
    After,
}

pub(crate) struct ToolActor {
    setup: ToolSetup,
    /// Set when a hook asked a person in this attempt (a journaled run's approval step ran
    /// here): an earlier attempt never got past that question, so the call never ran.
    asked_here: Arc<AtomicBool>,
    reporter: Option<Reporter<CallOutcome>>,
    /// The arguments as the before-hooks left them. Without hooks the function's task parses
    /// the call's arguments itself (validation checked them), off this thread.
    arguments: Option<Value>,
    stage: Stage,
    /// The timeout that expired, if one did.
    timed_out: Option<Duration>,
    function: Option<AbortHandle>,
    timer: Option<SpawnHandle>,
}

impl Actor for ToolActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        let span = self.setup.span.clone();
        let _entered = span.enter();
        if self.setup.agent.hooks.is_empty() {
            self.launch(ctx);
        } else {
            self.run_before_hooks(ctx);
        }
    }
}

/// What the before-hooks decided, all of them in order.
enum Before {
    Run { arguments: Value, rewrote: bool },
    Blocked(String),
    Failed(String),
}

impl ToolSetup {
    fn call(&self) -> &ToolCall {
        self.shared.call(self.index)
    }

    /// Whether the call may run again after an interruption: its tool's class, or `Safe` by
    /// one of the agent's rules.
    fn replay(&self) -> Replay {
        let own = self.tool.tool.replay();
        if own == Replay::Safe || self.agent.safe_to_replay.is_empty() {
            return own;
        }
        let call = self.call();
        let arguments = serde_json::from_str(&call.arguments).unwrap_or(Value::Null);
        self.agent.safe_to_replay.class(&call.name, own, &arguments)
    }

    fn cancel(&self) {
        self.shared.cancel_call(self.index);
    }
}

impl ToolActor {
    fn hook_context(&self, arguments: Value) -> HookContext {
        let journaled = self.setup.shared.journal();
        HookContext {
            run_id: self.setup.run_id,
            index: self.setup.index,
            call: ToolCall::clone(self.setup.call()),
            arguments,
            cancel: self.setup.shared.token(self.setup.index).clone(),
            path: Vec::new(),
            turn: journaled.map(|(_, turn)| turn),
            run_key: journaled.and_then(|(journal, _)| journal.run_key().map(str::to_owned)),
            journal: journaled.map(|(journal, _)| crate::hook::HookJournal {
                journal: Arc::clone(journal),
                asked_here: Arc::clone(&self.asked_here),
            }),
            host: Some(crate::hook::HookHost(
                Arc::clone(&self.setup.shared) as Arc<dyn CallHost>
            )),
        }
    }

    /// The result of a call a journaled run started before (its process died meanwhile) that
    /// must not run again: `None` when it may run.
    fn interrupted(&self) -> Option<ToolResult> {
        self.setup.shared.journal()?;
        let attempt = CallHost::attempt(&*self.setup.shared, self.setup.index);
        if attempt <= 1
            || self.asked_here.load(Ordering::SeqCst)
            || self.setup.replay() == Replay::Safe
        {
            return None;
        }
        tracing::info!(
            call = %self.setup.call().id,
            attempt,
            "not running an interrupted call again: its tool runs calls at most once"
        );
        Some(super::interrupted::result(
            &self.setup.tool.tool,
            self.setup.call(),
            attempt,
        ))
    }

    fn notify(&self, notice: Notice) {
        self.setup.shared.notify(self.setup.index, notice);
    }

    /// Reports the outcome (once) and stops.
    fn finish(&mut self, result: ToolResult, ctx: &mut Context<Self>) {
        if let Some(reporter) = self.reporter.take() {
            report(&self.setup.span, &self.setup.shared, reporter, result);
        }
        ctx.stop();
    }

    fn run_before_hooks(&mut self, ctx: &mut Context<Self>) {
        self.setup
            .shared
            .probe(self.setup.index)
            .running(|| "its before-hooks".into());
        let hooks = Arc::clone(&self.setup.agent.hooks);
        let mut context = self.hook_context(Value::Null);
        let decide = async move {
            context.arguments = match parse_arguments(&context.call) {
                Ok(arguments) => arguments,
                Err(error) => return Before::Failed(error.to_string()),
            };
            let mut rewrote = false;
            for hook in hooks.iter() {
                match hook.before_tool_call(context.clone()).await {
                    Ok(BeforeToolCall::Run) => {}
                    Ok(BeforeToolCall::Rewrite(arguments)) => {
                        context.arguments = arguments;
                        rewrote = true;
                    }
                    Ok(BeforeToolCall::Block(reason)) => return Before::Blocked(reason),
                    Err(error) => return Before::Failed(error.to_string()),
                }
            }
            Before::Run {
                arguments: context.arguments,
                rewrote,
            }
        };
        self.on_runtime(decide, ctx, |joined, this, ctx| {
            let decided = match joined {
                JobOutcome::Completed(decided) => decided,
                JobOutcome::Panicked(panic) => Before::Failed(format!("it panicked: {panic}")),
                JobOutcome::Lost | JobOutcome::NotStarted => {
                    Before::Failed("its task was lost".to_owned())
                }
            };
            this.before_decided(decided, ctx);
        });
    }

    fn before_decided(&mut self, decided: Before, ctx: &mut Context<Self>) {
        let name = &self.setup.call().name;
        match decided {
            Before::Blocked(reason) => {
                self.notify(Notice::Hook(HookAction::Blocked {
                    reason: reason.clone(),
                }));
                self.finish(error_result(reason), ctx);
            }
            Before::Failed(error) => {
                let text = format!("A before_tool_call hook failed for this call to {name}, so it did not run: {error}");
                self.notify(Notice::Hook(HookAction::Failed { error }));
                self.finish(error_result(text), ctx);
            }
            Before::Run { arguments, rewrote } => {
                if rewrote {
                    if let Err(reason) = self.check_rewrite(&arguments) {
                        let text = format!("A before_tool_call hook rewrote the arguments of {name} into ones the tool rejects, so it did not run. {reason}");
                        self.notify(Notice::Hook(HookAction::Failed { error: reason }));
                        return self.finish(error_result(text), ctx);
                    }
                    self.notify(Notice::Hook(HookAction::Rewrote {
                        arguments: arguments.clone(),
                    }));
                }
                self.arguments = Some(arguments);
                // Its console entry began as running its tool (`start_probe`); the hooks
                // (and a person's approval) said otherwise since.
                self.setup
                    .shared
                    .probe(self.setup.index)
                    .running(|| "its tool".into());
                self.launch(ctx);
            }
        }
    }

    /// Rewritten arguments pass the same checks as the model's: a JSON object satisfying the
    /// schema compiled at `Agent::new`.
    fn check_rewrite(&self, arguments: &Value) -> Result<(), String> {
        if !arguments.is_object() {
            return Err(format!(
                "The arguments must be a JSON object, got {}",
                shown(arguments)
            ));
        }
        self.setup.tool.schema.check(arguments)
    }

    /// Launches the function on the runtime, with the call's timeout.
    ///
    /// With no timeout to enforce and no after-hooks to run, nothing about the call is left for
    /// the actor to control: the function's task finishes the call itself (the same checks, the
    /// same report) and the actor stops at once. A call in flight then holds only its task, not
    /// an idle actor, and its result reaches the run actor without a hop through this one.
    fn launch(&mut self, ctx: &mut Context<Self>) {
        if let Some(result) = self.interrupted() {
            return self.finish(result, ctx);
        }
        self.stage = Stage::Running;
        let timeout = self
            .setup
            .tool
            .tool
            .timeout()
            .or(self.setup.agent.tool_timeout);
        let hooks = !self.setup.agent.hooks.is_empty();
        if timeout.is_none() && !hooks {
            if let Some(reporter) = self.reporter.take() {
                self.hand_off(reporter);
            }
            return ctx.stop();
        }
        let host: Arc<dyn CallHost> = self.setup.shared.clone();
        let context = ToolContext::hosted(host, self.setup.index);
        let (shared, index) = (Arc::clone(&self.setup.shared), self.setup.index);
        // After-hooks see the arguments the function got; without hooks nothing needs a copy.
        let arguments = if hooks {
            self.arguments.clone()
        } else {
            self.arguments.take()
        };
        let host = &self.setup.agent.host;
        let span = self.setup.span.clone();
        // The gate closes the moment the function returns or panics, on its own thread, so an
        // update a detached task publishes afterwards is never forwarded.
        let handle = match self.setup.tool.tool.function().clone() {
            Function::Async(function) => host.spawn_tool(
                async move {
                    let _gate = GateShutter(&shared, index);
                    match arguments.map_or_else(|| parse_arguments(shared.call(index)), Ok) {
                        Ok(arguments) => function(context, arguments).await,
                        Err(error) => Err(error),
                    }
                }
                .instrument(span),
            ),
            Function::Blocking(function) => host.spawn_blocking(move || {
                let _gate = GateShutter(&shared, index);
                span.in_scope(|| {
                    let arguments =
                        arguments.map_or_else(|| parse_arguments(shared.call(index)), Ok)?;
                    function(context, arguments)
                })
            }),
        };
        self.function = Some(handle.abort_handle());
        if let Some(timeout) = timeout {
            self.timer = Some(ctx.run_later(timeout, move |this, ctx| this.time_out(timeout, ctx)));
        }
        ctx.spawn(handle.into_actor(self).map(|joined, this, ctx| {
            let returned = returned(this.setup.call(), outcome_of(joined));
            this.returned(returned, ctx);
        }));
    }

    /// Runs the function on the runtime and has its task conclude the call: close the gate,
    /// check the result, report it. If the task is lost (the host shutting down), the reporter's
    /// drop reports the call lost.
    fn hand_off(&mut self, reporter: Reporter<CallOutcome>) {
        let host = &self.setup.agent.host;
        let span = self.setup.span.clone();
        let shared = Arc::clone(&self.setup.shared);
        // The task holds only what it needs (its size is what a parked call costs): the
        // context is made inside it, and the span is attached only when someone records it.
        match self.setup.tool.tool.function().clone() {
            Function::Async(function) => {
                let task = async move {
                    let index = reporter.index();
                    let joined = match parse_arguments(shared.call(index)) {
                        Ok(arguments) => {
                            let context = ToolContext::hosted(shared.clone(), index);
                            // A function may panic while making its future, too.
                            let made = std::panic::catch_unwind(AssertUnwindSafe(|| {
                                function(context, arguments)
                            }));
                            match made {
                                Ok(future) => AssertUnwindSafe(future).catch_unwind().await,
                                Err(panic) => Err(panic),
                            }
                        }
                        Err(error) => Ok(Err(error)),
                    };
                    conclude(&shared, reporter, joined);
                };
                if span.is_disabled() {
                    host.spawn_tool(task);
                } else {
                    host.spawn_tool(task.instrument(span));
                }
            }
            Function::Blocking(function) => {
                host.spawn_blocking(move || {
                    let _entered = span.enter();
                    let index = reporter.index();
                    let context = ToolContext::hosted(shared.clone(), index);
                    let joined = std::panic::catch_unwind(AssertUnwindSafe(|| {
                        function(context, parse_arguments(shared.call(index))?)
                    }));
                    conclude(&shared, reporter, joined);
                });
            }
        }
    }

    fn time_out(&mut self, timeout: Duration, ctx: &mut Context<Self>) {
        if self.stage != Stage::Running {
            return;
        }
        self.timed_out = Some(timeout);
        self.setup.cancel();
        let grace = self.setup.agent.tool_timeout_grace;
        self.timer = Some(ctx.run_later(grace, move |this, ctx| this.abandon(timeout, grace, ctx)));
    }

    /// The function ignored its cancellation for the whole grace period: give up on it. An
    /// async function is aborted at its next await point; a blocking one runs on to its end on
    /// the blocking pool, its result discarded.
    fn abandon(&mut self, timeout: Duration, grace: Duration, ctx: &mut Context<Self>) {
        if self.stage != Stage::Running {
            return;
        }
        self.stage = Stage::After;
        self.setup.shared.close_gate(self.setup.index);
        if let Some(function) = self.function.take() {
            function.abort();
        }
        let text = format!(
            "Tool {} timed out after {} and did not stop within {} of being cancelled, so it was abandoned. It may still be running; what it does from now on is not recorded (the built-in write and edit check for this last and then leave the file unchanged, and keep it locked until they stop).",
            self.setup.call().name,
            seconds(timeout),
            seconds(grace)
        );
        self.finish(error_result(text), ctx);
    }

    fn returned(&mut self, returned: Result<ToolResult, String>, ctx: &mut Context<Self>) {
        if self.stage != Stage::Running {
            return;
        }
        self.stage = Stage::After;
        if let Some(timer) = self.timer.take() {
            ctx.cancel_future(timer);
        }
        let result = result_of(
            &self.setup.shared,
            self.setup.index,
            self.timed_out,
            returned,
        );
        if self.setup.agent.hooks.is_empty() {
            self.finish(result, ctx);
        } else {
            self.run_after_hooks(result, ctx);
        }
    }

    fn run_after_hooks(&mut self, result: ToolResult, ctx: &mut Context<Self>) {
        let hooks = Arc::clone(&self.setup.agent.hooks);
        let arguments = self.arguments.take().unwrap_or_default();
        let context = self.hook_context(arguments);
        let name = self.setup.call().name.clone();
        let decide = async move {
            let mut result = result;
            let mut replaced = false;
            for hook in hooks.iter() {
                match hook.after_tool_call(context.clone(), result.clone()).await {
                    Ok(AfterToolCall::Keep) => {}
                    Ok(AfterToolCall::Replace(replacement)) => {
                        if let Err(reason) = check_result(&replacement) {
                            let text = format!("An after_tool_call hook replaced the result of {name} with an invalid one: {reason}");
                            return (
                                error_result(text),
                                Some(HookAction::Failed { error: reason }),
                            );
                        }
                        result = replacement;
                        replaced = true;
                    }
                    Err(error) => {
                        let error = error.to_string();
                        let text = format!(
                            "An after_tool_call hook failed for this call to {name}: {error}"
                        );
                        return (error_result(text), Some(HookAction::Failed { error }));
                    }
                }
            }
            (result, replaced.then_some(HookAction::ReplacedResult))
        };
        self.on_runtime(decide, ctx, |joined, this, ctx| {
            let (result, action) = match joined {
                JobOutcome::Completed(decided) => decided,
                JobOutcome::Panicked(panic) => {
                    let error = format!("it panicked: {panic}");
                    let text = format!(
                        "An after_tool_call hook failed for this call to {}: {error}",
                        this.setup.call().name
                    );
                    (error_result(text), Some(HookAction::Failed { error }))
                }
                JobOutcome::Lost | JobOutcome::NotStarted => {
                    let error = "its task was lost".to_owned();
                    (
                        error_result(error.clone()),
                        Some(HookAction::Failed { error }),
                    )
                }
            };
            if let Some(action) = action {
                this.notify(Notice::Hook(action));
            }
            this.finish(result, ctx);
        });
    }

    /// Runs `work` (a hook) on the host runtime, never on this actor's thread, and hands what
    /// became of it (a panic included) to `then` back on the actor.
    fn on_runtime<T: Send + Unpin + 'static>(
        &mut self,
        work: impl std::future::Future<Output = T> + Send + 'static,
        ctx: &mut Context<Self>,
        then: impl FnOnce(JobOutcome<T>, &mut Self, &mut Context<Self>) + 'static,
    ) {
        let runtime = self.setup.agent.host.runtime();
        let handle = runtime.spawn(work.instrument(self.setup.span.clone()));
        ctx.spawn(
            handle
                .into_actor(self)
                .map(move |joined, this, ctx| then(outcome_of(joined), this, ctx)),
        );
    }
}

/// The call's arguments, parsed again where the call runs (validation parsed and checked them,
/// so this fails only if something is badly wrong).
fn parse_arguments(call: &ToolCall) -> Result<Value, BoxError> {
    serde_json::from_str(&call.arguments).map_err(|error| {
        format!(
            "The arguments of {} passed validation but no longer parse as JSON ({error}).",
            call.name
        )
        .into()
    })
}
