//! The one hook a [`CallPolicy`] becomes: `PreToolUse` command hooks, then the rules, then the
//! caller's default and questions, before a call; `PostToolUse` command hooks after it.

use std::sync::Arc;

use futures::future::BoxFuture;
use futures::FutureExt as _;
use serde_json::{json, Value};

use super::command_hook::HookSession;
use super::{CallPolicy, Decision, HookEvent};
use crate::agent::compaction::CompactionReason;
use crate::hook::{AfterToolCall, BeforeToolCall, CompactionContext, Hook, HookContext};
use crate::journal::{NotRecorded, StepError, StepKey, StepWork};
use crate::message::Content;
use crate::tool::{BoxError, ToolResult};

/// Who answers for the calls the rules leave open or want asked: the command line's
/// `--approve`, an embedder's own approval flow.
pub trait Approver: Send + Sync + 'static {
    /// What applies to a call no rule and no hook decides (`--approve`'s mode).
    fn default_decision(&self, ctx: &HookContext) -> Decision;

    /// Asks whether the call may run; `why` says what asks (a rule, a hook, the default).
    /// `Err` carries the result the model reads when nobody can answer.
    fn ask(&self, ctx: HookContext, why: String) -> BoxFuture<'static, Result<Approval, String>>;

    /// Tells the user something that does not stop the run (a hook that failed or timed out).
    fn note(&self, text: &str) {
        tracing::warn!(target: "golato::policy", "{text}");
    }
}

/// A person's answer to a call an [`Approver`] asked about.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Approval {
    /// Run the call as the model made it.
    Allow,
    /// Run it with these arguments instead (a command the person corrected first); they are
    /// checked against the tool's schema again, and the model sees the call as it ran.
    AllowWith(Value),
    /// Do not run it. The model is told the user refused, and `reason` (the person's own
    /// words) when they gave one, so it can do better than guess.
    Refuse {
        /// Why, as the person typed it.
        reason: Option<String>,
    },
}

/// Nobody to ask: a call that must be asked is refused, and notes go to `tracing`.
struct Nobody;

impl Approver for Nobody {
    fn default_decision(&self, _ctx: &HookContext) -> Decision {
        Decision::Allow
    }

    fn ask(&self, ctx: HookContext, why: String) -> BoxFuture<'static, Result<Approval, String>> {
        let tool = ctx.call.name;
        async move {
            Err(format!(
                "This {tool} call was not run: it needs a person's yes ({why}) and nobody can answer here."
            ))
        }
        .boxed()
    }
}

struct Gate(Arc<Inner>);

struct Inner {
    policy: Arc<CallPolicy>,
    approver: Arc<dyn Approver>,
    session: tokio::sync::watch::Receiver<HookSession>,
    /// Calls the person changed before they ran, by call ID, with the arguments they ran
    /// with: the model's transcript keeps the call as it made it, so its result says so.
    changed: std::sync::Mutex<std::collections::HashMap<String, Value>>,
}

impl CallPolicy {
    /// The hook that applies this policy to every tool call: `PreToolUse` hooks (which may
    /// block, rewrite, allow or ask), then the rules (a deny always wins), then `approver`'s
    /// default; questions go to `approver` (without one, a call that must be asked is
    /// refused). `PostToolUse` hooks then see each result, and what they say is added to it.
    /// Hooks get `session` as it stands when they run (a session's ID may come later).
    pub fn hook(
        self: Arc<Self>,
        approver: Option<Arc<dyn Approver>>,
        session: tokio::sync::watch::Receiver<HookSession>,
    ) -> Arc<dyn Hook> {
        Arc::new(Gate(Arc::new(Inner {
            policy: self,
            approver: approver.unwrap_or_else(|| Arc::new(Nobody)),
            session,
            changed: Default::default(),
        })))
    }
}

/// The arguments as a hook script sees them: `file_path` beside `path`, as Claude Code's file
/// tools name it.
fn tool_input(tool: &str, arguments: &Value) -> Value {
    let mut input = arguments.clone();
    if matches!(tool, "read" | "edit" | "write") {
        if let Value::Object(map) = &mut input {
            if let Some(path) = map.get("path").cloned() {
                map.entry("file_path").or_insert(path);
            }
        }
    }
    input
}

/// Arguments a hook gave back, without the `file_path` golato's tools do not take.
fn from_tool_input(tool: &str, mut input: Value) -> Value {
    if matches!(tool, "read" | "edit" | "write") {
        if let Value::Object(map) = &mut input {
            if let Some(path) = map.remove("file_path") {
                map.entry("path").or_insert(path);
            }
        }
    }
    input
}

/// A result's details with `ran`: the arguments a call ran with after the person changed
/// them. Details that are not an object are kept under `details`.
fn with_ran(details: Option<Value>, arguments: &Value) -> Value {
    let mut details = match details {
        None | Some(Value::Null) => serde_json::Map::new(),
        Some(Value::Object(map)) => map,
        Some(other) => serde_json::Map::from_iter([("details".to_owned(), other)]),
    };
    details.insert(RAN_WITH_KEY.to_owned(), arguments.clone());
    Value::Object(details)
}

/// The key of a result's details that holds the arguments a call ran with when the person
/// changed them before it ran (`e` on a question): the transcript's call is the model's.
pub const RAN_WITH_KEY: &str = "ran";

impl Inner {
    async fn ask(&self, ctx: HookContext, why: String) -> BeforeToolCall {
        let tool = ctx.call.name.clone();
        if self
            .policy
            .hooks_for(HookEvent::Notification, "")
            .next()
            .is_some()
        {
            // Told while the question waits, not before it is shown.
            let policy = Arc::clone(&self.policy);
            let session = self.session.borrow().clone();
            let message = format!("golato needs your permission to use {tool}");
            tokio::spawn(async move {
                let fired = policy
                    .fire(
                        HookEvent::Notification,
                        "",
                        &session,
                        json!({ "message": message }),
                    )
                    .await;
                if let Some(note) = fired.note {
                    tracing::warn!(target: "golato::policy", "{note}");
                }
            });
        }
        let id = ctx.call.id.clone();
        // On the actor console the call waits on a person until answered (an approver that
        // asks someone else first, such as a reviewer model, says so meanwhile).
        let probe = ctx.probe();
        probe.waiting(|| golato_actors::console::WaitingOn::Person);
        let answer = self.answer(ctx, why).await;
        probe.running(|| "its before-hooks".into());
        match answer {
            Ok(Approval::Allow) => BeforeToolCall::Run,
            Ok(Approval::AllowWith(arguments)) => {
                self.changed
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .insert(id, arguments.clone());
                BeforeToolCall::Rewrite(arguments)
            }
            Ok(Approval::Refuse { reason: None }) => BeforeToolCall::Block(format!(
                "The user did not allow this {tool} call; it was not run. Ask them, or do it another way."
            )),
            Ok(Approval::Refuse {
                reason: Some(reason),
            }) => BeforeToolCall::Block(format!(
                "The user did not allow this {tool} call; it was not run. They said why: {reason}"
            )),
            Err(reason) => BeforeToolCall::Block(reason),
        }
    }

    /// The approver's answer; in a journaled run a step of its journal, so that a run picked
    /// up again (a durable run on another worker) gets the answer given, or waits on for the
    /// same question, and never asks twice.
    async fn answer(&self, ctx: HookContext, why: String) -> Result<Approval, String> {
        let (Some(journaled), Some(turn)) = (ctx.journal.clone(), ctx.turn) else {
            return self.approver.ask(ctx, why).await;
        };
        let key = StepKey::Approval {
            turn,
            call_id: ctx.call.id.clone(),
        };
        let step = key.to_string();
        let tool = ctx.call.name.clone();
        // Asked only when the journal runs the step: a recorded answer asks nobody.
        let approver = Arc::clone(&self.approver);
        let asked_here = Arc::clone(&journaled.asked_here);
        let cancel = ctx.cancel.clone();
        let work = StepWork::new(async move {
            asked_here.store(true, std::sync::atomic::Ordering::SeqCst);
            let answer = approver.ask(ctx, why).await;
            // Nobody answered because the run is ending: not an answer to keep (picked up
            // again, the run asks again).
            if answer.is_err() && cancel.is_cancelled() {
                return Err(NotRecorded);
            }
            serde_json::to_value(&answer)
                .map(crate::journal::seal)
                .map_err(|_| NotRecorded)
        });
        let unreadable = |reason: String| {
            format!("This {tool} call was not run: its approval could not be recorded or read ({reason}).")
        };
        match journaled.journal.step(key, work).await {
            Ok(record) => crate::journal::unseal(record, &step)
                .map_err(|error| error.to_string())
                .and_then(|value| {
                    serde_json::from_value::<Result<Approval, String>>(value)
                        .map_err(|error| error.to_string())
                })
                .unwrap_or_else(|reason| Err(unreadable(reason))),
            Err(StepError::NotRecorded) => Err(format!(
                "This {tool} call was not run: the run was cancelled while it waited for an answer."
            )),
            Err(StepError::Journal(error)) => Err(unreadable(error.to_string())),
        }
    }

    async fn before(self: Arc<Self>, ctx: HookContext) -> BeforeToolCall {
        let session = self.session.borrow().clone();
        let tool = ctx.call.name.clone();
        let mut arguments = ctx.arguments.clone();
        let mut allowed_by_hook = false;
        let mut asked_by_hook = None;
        for hook in self.policy.hooks_for(HookEvent::PreToolUse, &tool) {
            let input = session.input(
                HookEvent::PreToolUse,
                json!({
                    "tool_name": tool,
                    "tool_input": tool_input(&tool, &arguments),
                    "tool_use_id": ctx.call.id,
                }),
            );
            let decision = hook.run(&input, &session.cwd).await.decision(hook);
            if let Some(note) = &decision.note {
                self.approver.note(note);
            }
            if let Some(reason) = decision.block {
                return BeforeToolCall::Block(reason);
            }
            if let Some(updated) = decision.updated_input {
                arguments = from_tool_input(&tool, updated);
            }
            allowed_by_hook |= decision.allow;
            asked_by_hook = asked_by_hook.or(decision.ask);
        }
        let mut ctx = ctx;
        let rewritten = arguments != ctx.arguments;
        ctx.arguments = arguments.clone();
        let run = || match rewritten {
            true => BeforeToolCall::Rewrite(arguments.clone()),
            false => BeforeToolCall::Run,
        };
        let verdict = self
            .policy
            .rules
            .decide(&tool, &ctx.arguments, &session.cwd);
        let outcome = match verdict {
            Some(verdict) if verdict.decision == Decision::Deny => {
                return BeforeToolCall::Block(format!(
                    "This {tool} call was not run: the rule `deny {}` ({}) forbids it. Do it another way, or ask the user to change the rule.",
                    verdict.rule.text, verdict.rule.source
                ))
            }
            // A rule that asks is the person's word and outranks a hook's allow: a hook
            // (perhaps a project's) may spare a question only where no rule asks for one.
            Some(verdict) if verdict.decision == Decision::Ask => {
                let why = format!("the rule `ask {}` ({})", verdict.rule.text, verdict.rule.source);
                self.ask(ctx, why).await
            }
            _ if allowed_by_hook => BeforeToolCall::Run,
            _ if asked_by_hook.is_some() => {
                let why = asked_by_hook.unwrap_or_default();
                self.ask(ctx, why).await
            }
            Some(_) => BeforeToolCall::Run,
            None => match self.approver.default_decision(&ctx) {
                Decision::Allow => BeforeToolCall::Run,
                Decision::Ask => self.ask(ctx, "the approval mode".into()).await,
                Decision::Deny => {
                    return BeforeToolCall::Block(format!(
                        "This {tool} call was not run: no rule allows it and the default is to refuse."
                    ))
                }
            },
        };
        match outcome {
            BeforeToolCall::Run => run(),
            other => other,
        }
    }

    /// Whether the person changed this call (left for `after` to take).
    fn was_changed(&self, id: &str) -> bool {
        self.changed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .contains_key(id)
    }

    /// The arguments the person changed this call to, taken once.
    fn take_changed(&self, id: &str) -> Option<Value> {
        self.changed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(id)
    }

    async fn after(self: Arc<Self>, ctx: HookContext, result: ToolResult) -> AfterToolCall {
        let tool = ctx.call.name.clone();
        let mut result = result;
        let changed = self.take_changed(&ctx.call.id);
        if let Some(arguments) = &changed {
            result.content.insert(
                0,
                Content::text(format!(
                    "[The user changed this call before it ran; it ran with the arguments {arguments}]"
                )),
            );
            // Kept with the result (and so in a session and a journal): what ran, beside the
            // model's call, which the transcript keeps as the model sent it.
            result.details = Some(with_ran(result.details.take(), arguments));
        }
        let text: String = result
            .content
            .iter()
            .filter_map(Content::as_text)
            .collect::<Vec<_>>()
            .join("\n");
        let fields = json!({
            "tool_name": tool,
            "tool_input": tool_input(&tool, &ctx.arguments),
            "tool_use_id": ctx.call.id,
            "tool_response": { "content": text, "is_error": result.is_error, "details": result.details },
        });
        let mut added = Vec::new();
        let session = self.session.borrow().clone();
        let input = session.input(HookEvent::PostToolUse, fields);
        for hook in self.policy.hooks_for(HookEvent::PostToolUse, &tool) {
            let decision = hook.run(&input, &session.cwd).await.decision(hook);
            if let Some(note) = &decision.note {
                self.approver.note(note);
            }
            added.extend(decision.block);
            added.extend(decision.context);
        }
        if added.is_empty() {
            return match changed {
                Some(_) => AfterToolCall::Replace(result),
                None => AfterToolCall::Keep,
            };
        }
        result.content.push(Content::text(format!(
            "[PostToolUse hook] {}",
            added.join("\n")
        )));
        AfterToolCall::Replace(result)
    }
}

impl Hook for Gate {
    fn before_compaction(&self, ctx: CompactionContext) -> BoxFuture<'static, ()> {
        let trigger = match ctx.reason {
            CompactionReason::Requested => "manual",
            _ => "auto",
        };
        if self
            .0
            .policy
            .hooks_for(HookEvent::PreCompact, trigger)
            .next()
            .is_none()
        {
            return async {}.boxed();
        }
        let inner = Arc::clone(&self.0);
        async move {
            let session = inner.session.borrow().clone();
            let fired = inner
                .policy
                .fire(
                    HookEvent::PreCompact,
                    trigger,
                    &session,
                    json!({ "trigger": trigger, "custom_instructions": "" }),
                )
                .await;
            if let Some(note) = fired.note {
                inner.approver.note(&note);
            }
        }
        .boxed()
    }

    fn before_tool_call(
        &self,
        ctx: HookContext,
    ) -> BoxFuture<'static, Result<BeforeToolCall, BoxError>> {
        let inner = Arc::clone(&self.0);
        async move { Ok(inner.before(ctx).await) }.boxed()
    }

    fn after_tool_call(
        &self,
        ctx: HookContext,
        result: ToolResult,
    ) -> BoxFuture<'static, Result<AfterToolCall, BoxError>> {
        let quiet = self
            .0
            .policy
            .hooks_for(HookEvent::PostToolUse, &ctx.call.name)
            .next()
            .is_none();
        if quiet && !self.0.was_changed(&ctx.call.id) {
            return async { Ok(AfterToolCall::Keep) }.boxed();
        }
        let inner = Arc::clone(&self.0);
        async move { Ok(inner.after(ctx, result).await) }.boxed()
    }
}
