//! The run actor: one per run, the loop of the page's diagram.
//!
//! It asks the generator for a message (on a worker task that forwards deltas to it), validates
//! the calls of that message, hands the batch to a `BatchSupervisor`, collects the results by
//! source index, and loops. It is the only writer of the run's event channel, so events come out
//! in the order it handled what happened.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use actix::{Actor, ActorContext, AsyncContext, Context, Handler, Message, WrapFuture};
use futures::{FutureExt, StreamExt};
use golato_actors::batch::{
    BatchDone, BatchObserver, BatchSupervisor, Job, JobFinished, JobOutcome, JobStarting, Mode,
    RunBatch, Work,
};
use golato_actors::{traced_handlers, Mailbox, TracedActor, WorkGuard};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::calls::{self, CallOutcome, JobSetup, Prepared};
use super::event::*;
use super::run::Channel;
use super::{AgentInner, Error, RunResult};
use crate::generator::{self, Delta, Request, StreamEvent};
use crate::message::{
    AssistantMessage, Content, Message as TranscriptMessage, StopReason, ToolCall, Usage,
};
use crate::tool::{Execution, ToolResult};

/// Argument bytes above which a batch is validated on the blocking pool rather than inline,
/// so that parsing a huge argument never stalls the actor thread.
const INLINE_VALIDATION_BYTES: usize = 64 * 1024;

/// What the run starts from.
pub(crate) struct RunPlan {
    pub(crate) agent: Arc<AgentInner>,
    pub(crate) channel: Arc<Channel>,
    pub(crate) cancel: CancellationToken,
    /// The transcript, shared with the generator's request without copying (copied on write
    /// only if a generator still holds a request when the run appends).
    pub(crate) messages: Arc<Vec<TranscriptMessage>>,
    /// Held until the run actor is gone, so `Host::shutdown` waits for the run.
    pub(crate) _work: WorkGuard,
    pub(crate) span: tracing::Span,
    pub(crate) id: u64,
}

impl RunPlan {
    pub(crate) fn into_actor(self, ctx: &mut Context<RunActor>) -> RunActor {
        RunActor {
            mailbox: Mailbox::new(ctx.address()),
            plan: self,
            turn: 0,
            usage: Usage::default(),
            batch_id: 0,
            batch: None,
            ended: false,
            turn_span: tracing::Span::none(),
        }
    }
}

/// The calls in flight.
struct Batch {
    id: u64,
    /// Index of the assistant message in the transcript.
    message_index: usize,
    calls: Vec<Arc<ToolCall>>,
    started: Vec<bool>,
    results: Vec<Option<CallOutcome>>,
}

pub(crate) struct RunActor {
    plan: RunPlan,
    mailbox: Mailbox<RunActor>,
    turn: usize,
    usage: Usage,
    batch_id: u64,
    batch: Option<Batch>,
    ended: bool,
    turn_span: tracing::Span,
}

impl Actor for RunActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        let span = self.plan.span.clone();
        let _entered = span.enter();
        self.emit(|| {
            Event::RunStart(RunStartEvent {
                run_id: self.plan.id,
            })
        });
        self.proceed(ctx);
    }
}

impl TracedActor for RunActor {
    fn span(&self) -> &tracing::Span {
        &self.plan.span
    }
}

impl Drop for RunActor {
    fn drop(&mut self) {
        if !self.ended {
            let messages = self.take_messages();
            self.plan.channel.finish(Err(Error::Lost { messages }));
        }
    }
}

impl Drop for RunPlan {
    fn drop(&mut self) {
        // A plan dropped before it became an actor: the host stopped before the run began.
        if !self.channel.is_finished() {
            let messages = unshare(std::mem::take(&mut self.messages));
            self.channel.finish(Err(Error::Lost { messages }));
        }
    }
}

impl RunActor {
    /// Queues the event `build` makes, building it only if someone may read it (`Agent::run`
    /// reads none, and building events clones messages).
    fn emit(&self, build: impl FnOnce() -> Event) {
        if self.plan.channel.wants_events() {
            self.plan.channel.push(build());
        }
    }

    fn end(&mut self, outcome: Result<RunResult, Error>, ctx: &mut Context<Self>) {
        if self.ended {
            return;
        }
        self.ended = true;
        let error = outcome.as_ref().err().map(ToString::to_string);
        match &error {
            Some(error) => tracing::debug!(%error, turns = self.turn, "run ended with an error"),
            None => tracing::debug!(turns = self.turn, "run ended"),
        }
        self.emit(|| Event::RunEnd(RunEndEvent { error }));
        self.plan.channel.finish(outcome);
        ctx.stop();
    }

    fn take_messages(&mut self) -> Vec<TranscriptMessage> {
        unshare(std::mem::take(&mut self.plan.messages))
    }

    fn append(&mut self, messages: impl IntoIterator<Item = TranscriptMessage>) {
        Arc::make_mut(&mut self.plan.messages).extend(messages);
    }

    fn succeed(&mut self, final_message: AssistantMessage, ctx: &mut Context<Self>) {
        let result = RunResult {
            final_message,
            messages: self.take_messages(),
            usage: self.usage,
            turns: self.turn,
        };
        self.end(Ok(result), ctx);
    }

    fn cancelled(&mut self, ctx: &mut Context<Self>) {
        let messages = self.take_messages();
        self.end(Err(Error::Cancelled { messages }), ctx);
    }

    /// Decides the next step from the transcript: run the pending calls of a trailing assistant
    /// message, or ask the generator.
    fn proceed(&mut self, ctx: &mut Context<Self>) {
        let pending = pending_calls(&self.plan.messages);
        match pending {
            Some((message_index, calls)) if !calls.is_empty() => {
                let calls = calls.into_iter().map(Arc::new).collect();
                self.execute(message_index, calls, ctx);
            }
            _ => self.request_turn(ctx),
        }
    }

    fn request_turn(&mut self, ctx: &mut Context<Self>) {
        if self.plan.cancel.is_cancelled() {
            return self.cancelled(ctx);
        }
        if let Some(limit) = self.plan.agent.max_turns {
            if self.turn >= limit {
                let messages = self.take_messages();
                return self.end(Err(Error::MaxTurns { limit, messages }), ctx);
            }
        }
        self.turn += 1;
        let turn = self.turn;
        self.turn_span = tracing::debug_span!(parent: &self.plan.span, "turn", turn);
        self.emit(|| Event::TurnStart(TurnStartEvent { turn }));
        self.emit(|| Event::MessageStart(MessageStartEvent { turn }));

        let request = Request {
            model: self.plan.agent.model.clone(),
            system_prompt: self.plan.agent.system_prompt.clone(),
            messages: Arc::clone(&self.plan.messages),
            tools: Arc::clone(&self.plan.agent.definitions),
        };
        let generator = Arc::clone(&self.plan.agent.generator);
        let mailbox = self.mailbox.clone();
        let cancel = self.plan.cancel.clone();
        let channel = Arc::clone(&self.plan.channel);
        let streaming = async move {
            let mut stream = generator.stream(request);
            let mut partial = Partial::default();
            loop {
                let item = tokio::select! {
                    biased;
                    () = cancel.cancelled() => return Generated::Cancelled(partial),
                    item = stream.next() => item,
                };
                match item {
                    Some(Ok(StreamEvent::Delta(delta))) => {
                        partial.absorb(&delta);
                        // Deltas only become events; skip the message when none is read.
                        if channel.wants_events() {
                            mailbox.do_send(GeneratorDelta { turn, delta });
                        }
                    }
                    Some(Ok(StreamEvent::Done(message))) => return Generated::Message(message),
                    Some(Err(error)) => return Generated::Failed(error, partial),
                    None => return Generated::Failed(generator::Error::IncompleteStream, partial),
                }
            }
        };
        // The stream is polled on this actor's thread: a generator is I/O plus light parsing,
        // and polling it here saves two thread hops per turn (see BENCHMARKS.md). Its deltas
        // still go through the mailbox, so they are ordered with everything else.
        let mailbox = self.mailbox.clone();
        let generate = async move {
            let generated = match AssertUnwindSafe(streaming).catch_unwind().await {
                Ok(generated) => generated,
                Err(payload) => Generated::Failed(
                    generator::Error::Panicked {
                        message: panic_text(payload.as_ref()),
                    },
                    Partial::default(),
                ),
            };
            mailbox.do_send(GeneratorDone { turn, generated });
        };
        ctx.spawn(generate.instrument(self.turn_span.clone()).into_actor(self));
    }

    fn on_message(&mut self, message: AssistantMessage, ctx: &mut Context<Self>) {
        self.usage += message.usage;
        self.emit(|| {
            Event::MessageEnd(MessageEndEvent {
                turn: self.turn,
                message: message.clone(),
            })
        });
        if message.tool_calls.is_empty() {
            self.emit(|| {
                Event::TurnEnd(TurnEndEvent {
                    turn: self.turn,
                    message: message.clone(),
                    tool_results: Vec::new(),
                })
            });
            self.append([TranscriptMessage::Assistant(message.clone())]);
            return self.succeed(message, ctx);
        }
        let calls = message.tool_calls.iter().cloned().map(Arc::new).collect();
        let stop_reason = message.stop_reason;
        self.append([TranscriptMessage::Assistant(message)]);
        let message_index = self.plan.messages.len() - 1;
        if stop_reason == StopReason::Length {
            let batch = self.open_batch(message_index, calls);
            return self.truncated(batch, ctx);
        }
        self.execute(message_index, calls, ctx);
    }

    /// Records the part of an answer that had streamed in when the request was cancelled or
    /// failed, so that nothing seen in events is missing from the transcript. Its tool-call
    /// fragments are left out: a call cut short must never run, also not on resume.
    fn record_partial(
        &mut self,
        partial: Partial,
        stop_reason: StopReason,
        error_message: Option<String>,
    ) {
        if partial.text.is_empty() && partial.reasoning.is_empty() {
            return;
        }
        let message = AssistantMessage {
            content: if partial.text.is_empty() {
                Vec::new()
            } else {
                vec![Content::text(partial.text)]
            },
            reasoning: partial.reasoning,
            stop_reason,
            model: Some(self.plan.agent.model.id.clone()),
            error_message,
            ..AssistantMessage::default()
        };
        self.emit(|| {
            Event::MessageEnd(MessageEndEvent {
                turn: self.turn,
                message: message.clone(),
            })
        });
        self.emit(|| {
            Event::TurnEnd(TurnEndEvent {
                turn: self.turn,
                message: message.clone(),
                tool_results: Vec::new(),
            })
        });
        self.append([TranscriptMessage::Assistant(message)]);
    }

    fn open_batch(&mut self, message_index: usize, calls: Vec<Arc<ToolCall>>) -> Batch {
        self.batch_id += 1;
        let count = calls.len();
        Batch {
            id: self.batch_id,
            message_index,
            calls,
            started: vec![false; count],
            results: (0..count).map(|_| None).collect(),
        }
    }

    /// Output hit the token limit: no call runs; each gets an error result.
    fn truncated(&mut self, batch: Batch, ctx: &mut Context<Self>) {
        self.batch = Some(batch);
        let count = self.batch.as_ref().map_or(0, |batch| batch.calls.len());
        for index in 0..count {
            self.record(
                index,
                |call| {
                    CallOutcome::error(
                        call,
                        format!(
                            "The response hit the output token limit, so the arguments of this call to {} may be truncated; it was not run. Re-issue it with complete arguments.",
                            call.name
                        ),
                    )
                },
            );
        }
        self.conclude_batch(ctx);
    }

    fn execute(
        &mut self,
        message_index: usize,
        calls: Vec<Arc<ToolCall>>,
        ctx: &mut Context<Self>,
    ) {
        let batch = self.open_batch(message_index, calls);
        let argument_bytes: usize = batch.calls.iter().map(|call| call.arguments.len()).sum();
        if argument_bytes <= INLINE_VALIDATION_BYTES {
            let prepared = calls::prepare(&self.plan.agent.registry, &batch.calls);
            self.batch = Some(batch);
            self.dispatch(prepared, ctx);
        } else {
            let agent = Arc::clone(&self.plan.agent);
            let calls = batch.calls.clone();
            let mailbox = self.mailbox.clone();
            let id = batch.id;
            self.batch = Some(batch);
            self.plan.agent.host.spawn_blocking(move || {
                let prepared = calls::prepare(&agent.registry, &calls);
                mailbox.do_send(Validated {
                    batch: id,
                    prepared,
                });
            });
        }
    }

    fn dispatch(&mut self, prepared: Vec<Prepared>, ctx: &mut Context<Self>) {
        let Some(batch) = self.batch.as_ref() else {
            return;
        };
        let batch_id = batch.id;
        let calls = batch.calls.clone();
        let batch_span = tracing::debug_span!(parent: &self.turn_span, "batch", batch = batch_id, calls = calls.len());

        if self.plan.cancel.is_cancelled() {
            for index in 0..calls.len() {
                self.record(index, not_started);
            }
            return self.conclude_batch(ctx);
        }

        let sequential = self.plan.agent.tool_execution == Execution::Sequential
            || calls.iter().any(|call| {
                self.plan
                    .agent
                    .registry
                    .get(&call.name)
                    .is_some_and(|registered| registered.tool.execution() == Execution::Sequential)
            });
        let mode = if sequential {
            Mode::Sequential
        } else {
            Mode::Parallel
        };
        let batch_cancel = self.plan.cancel.child_token();
        let mut jobs = Vec::with_capacity(calls.len());
        for (index, (call, prepared)) in calls.iter().zip(prepared).enumerate() {
            match prepared {
                Prepared::Invalid(text) => {
                    let outcome = CallOutcome::error(call, text);
                    if sequential {
                        jobs.push(Job {
                            index,
                            work: Work::Ready(outcome),
                            span: tracing::Span::none(),
                        });
                    } else {
                        self.record(index, |_| outcome);
                    }
                }
                Prepared::Valid { tool, arguments } => {
                    if !sequential {
                        self.start_call(index);
                    }
                    let span = tracing::debug_span!(parent: &batch_span, "call", index, tool = %call.name, call_id = %call.id);
                    let setup = JobSetup {
                        mailbox: self.mailbox.clone(),
                        batch: batch_id,
                        index,
                        call: Arc::clone(call),
                        cancel: batch_cancel.child_token(),
                        span,
                    };
                    jobs.push(calls::job(setup, tool, arguments));
                }
            }
        }
        if jobs.is_empty() {
            return self.conclude_batch(ctx);
        }
        let supervisor = BatchSupervisor::spawn(self.plan.agent.host.runtime().clone(), batch_span);
        supervisor.do_send(RunBatch {
            jobs,
            mode,
            cancel: batch_cancel,
            observer: BatchObserver {
                starting: sequential.then(|| self.mailbox.recipient()),
                finished: self.mailbox.recipient(),
                done: self.mailbox.recipient(),
            },
        });
    }

    /// Emits a call's start event, once.
    fn start_call(&mut self, index: usize) {
        let Some(batch) = self.batch.as_mut() else {
            return;
        };
        let (Some(started), Some(call)) = (batch.started.get_mut(index), batch.calls.get(index))
        else {
            return;
        };
        if *started {
            return;
        }
        *started = true;
        let call = Arc::clone(call);
        self.emit(|| {
            Event::ToolExecutionStart(ToolExecutionStartEvent {
                index,
                call: ToolCall::clone(&call),
            })
        });
    }

    /// Records a call's result (emitting its start first if it was not emitted) and its end
    /// event. A call that already has a result keeps it.
    fn record(&mut self, index: usize, outcome: impl FnOnce(&ToolCall) -> CallOutcome) {
        self.start_call(index);
        let Some(batch) = self.batch.as_mut() else {
            return;
        };
        let (Some(slot), Some(call)) = (batch.results.get_mut(index), batch.calls.get(index))
        else {
            return;
        };
        if slot.is_some() {
            return;
        }
        let outcome = outcome(call);
        let event = self
            .plan
            .channel
            .wants_events()
            .then(|| ToolExecutionEndEvent {
                index,
                call: ToolCall::clone(call),
                result: outcome.message.clone(),
            });
        *slot = Some(outcome);
        if let Some(event) = event {
            self.emit(|| Event::ToolExecutionEnd(event));
        }
    }

    /// Every call has its result: record them in source order and decide what comes next.
    fn conclude_batch(&mut self, ctx: &mut Context<Self>) {
        let count = self.batch.as_ref().map_or(0, |batch| batch.calls.len());
        for index in 0..count {
            self.record(index, |call| {
                CallOutcome::error(call, "The call's actor stopped before it reported a result (the actor host is shutting down).")
            });
        }
        let Some(batch) = self.batch.take() else {
            return;
        };
        let outcomes: Vec<CallOutcome> = batch.results.into_iter().flatten().collect();
        let terminate = !outcomes.is_empty()
            && outcomes
                .iter()
                .all(|outcome| outcome.terminate && !outcome.message.is_error);
        let results: Vec<_> = outcomes
            .into_iter()
            .map(|outcome| outcome.message)
            .collect();
        let assistant = |messages: &[TranscriptMessage]| match messages.get(batch.message_index) {
            Some(TranscriptMessage::Assistant(message)) => message.clone(),
            _ => AssistantMessage::default(),
        };
        self.emit(|| {
            Event::TurnEnd(TurnEndEvent {
                turn: self.turn,
                message: assistant(&self.plan.messages),
                tool_results: results.clone(),
            })
        });
        self.append(results.into_iter().map(TranscriptMessage::ToolResult));
        if self.plan.cancel.is_cancelled() {
            return self.cancelled(ctx);
        }
        if terminate {
            let message = assistant(&self.plan.messages);
            return self.succeed(message, ctx);
        }
        self.request_turn(ctx);
    }
}

/// The transcript out of its `Arc`, copied only if a request still shares it.
fn unshare(messages: Arc<Vec<TranscriptMessage>>) -> Vec<TranscriptMessage> {
    Arc::try_unwrap(messages).unwrap_or_else(|shared| Vec::clone(&shared))
}

fn not_started(call: &ToolCall) -> CallOutcome {
    CallOutcome::error(
        call,
        format!(
            "The run was cancelled before this call to {} ran.",
            call.name
        ),
    )
}

fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| {
            payload
                .downcast_ref::<&'static str>()
                .map(|text| (*text).to_owned())
        })
        .unwrap_or_else(|| "a panic with a non-string payload".to_owned())
}

/// The calls of a trailing assistant message that have no result yet.
pub(crate) fn pending_calls(messages: &[TranscriptMessage]) -> Option<(usize, Vec<ToolCall>)> {
    let (index, assistant) = messages
        .iter()
        .enumerate()
        .rev()
        .find_map(|(index, message)| match message {
            TranscriptMessage::Assistant(assistant) => Some((index, assistant)),
            _ => None,
        })?;
    let answered: Vec<&str> = messages[index + 1..]
        .iter()
        .filter_map(|message| match message {
            TranscriptMessage::ToolResult(result) => Some(result.tool_call_id.as_str()),
            _ => None,
        })
        .collect();
    if messages[index + 1..]
        .iter()
        .any(|message| matches!(message, TranscriptMessage::User(_)))
    {
        return None;
    }
    let pending = assistant
        .tool_calls
        .iter()
        .filter(|call| !answered.contains(&call.id.as_str()))
        .cloned()
        .collect();
    Some((index, pending))
}

/// What became of a generator request.
enum Generated {
    Message(AssistantMessage),
    /// The request failed, with what had streamed in before.
    Failed(generator::Error, Partial),
    /// The run was cancelled, with what had streamed in before.
    Cancelled(Partial),
}

/// The answer's text and reasoning streamed so far.
#[derive(Default)]
struct Partial {
    text: String,
    reasoning: String,
}

impl Partial {
    fn absorb(&mut self, delta: &Delta) {
        match delta {
            Delta::Text(text) => self.text.push_str(text),
            Delta::Reasoning(text) => self.reasoning.push_str(text),
            Delta::ToolCall { .. } => {}
        }
    }
}

#[derive(Message)]
#[rtype(result = "()")]
pub(crate) struct GeneratorDelta {
    turn: usize,
    delta: Delta,
}

#[derive(Message)]
#[rtype(result = "()")]
pub(crate) struct GeneratorDone {
    turn: usize,
    generated: Generated,
}

/// A batch validated off the actor thread.
#[derive(Message)]
#[rtype(result = "()")]
pub(crate) struct Validated {
    batch: u64,
    prepared: Vec<Prepared>,
}

/// A partial result a running call published.
#[derive(Message)]
#[rtype(result = "()")]
pub(crate) struct CallUpdate {
    pub(crate) batch: u64,
    pub(crate) index: usize,
    pub(crate) partial: ToolResult,
}

impl Handler<GeneratorDelta> for RunActor {
    type Result = ();

    fn handle(&mut self, message: GeneratorDelta, _: &mut Context<Self>) {
        if self.ended || message.turn != self.turn {
            return;
        }
        self.emit(|| {
            Event::MessageUpdate(MessageUpdateEvent {
                turn: message.turn,
                deltas: vec![message.delta],
            })
        });
    }
}

impl Handler<GeneratorDone> for RunActor {
    type Result = ();

    fn handle(&mut self, message: GeneratorDone, ctx: &mut Context<Self>) {
        if self.ended || message.turn != self.turn {
            return;
        }
        let _entered = self.turn_span.clone().entered();
        match message.generated {
            Generated::Message(assistant) => self.on_message(assistant, ctx),
            Generated::Cancelled(partial) => {
                self.record_partial(partial, StopReason::Aborted, None);
                self.cancelled(ctx);
            }
            Generated::Failed(source, partial) => {
                self.record_partial(partial, StopReason::Error, Some(source.to_string()));
                let messages = self.take_messages();
                self.end(Err(Error::Generator { source, messages }), ctx);
            }
        }
    }
}

impl Handler<Validated> for RunActor {
    type Result = ();

    fn handle(&mut self, message: Validated, ctx: &mut Context<Self>) {
        if self
            .batch
            .as_ref()
            .is_some_and(|batch| batch.id == message.batch)
        {
            self.dispatch(message.prepared, ctx);
        }
    }
}

impl Handler<CallUpdate> for RunActor {
    type Result = ();

    fn handle(&mut self, message: CallUpdate, _: &mut Context<Self>) {
        let Some(batch) = self
            .batch
            .as_ref()
            .filter(|batch| batch.id == message.batch)
        else {
            return;
        };
        let running = batch.started.get(message.index) == Some(&true)
            && batch
                .results
                .get(message.index)
                .is_some_and(Option::is_none);
        let Some(call) = batch.calls.get(message.index).filter(|_| running) else {
            return;
        };
        self.emit(|| {
            Event::ToolExecutionUpdate(ToolExecutionUpdateEvent {
                index: message.index,
                call: ToolCall::clone(call),
                partial_result: message.partial,
            })
        });
    }
}

impl Handler<JobStarting> for RunActor {
    type Result = ();

    fn handle(&mut self, message: JobStarting, _: &mut Context<Self>) {
        self.start_call(message.index);
    }
}

impl Handler<JobFinished<CallOutcome>> for RunActor {
    type Result = ();

    fn handle(&mut self, message: JobFinished<CallOutcome>, _: &mut Context<Self>) {
        self.record(message.index, |call| match message.outcome {
            JobOutcome::Completed(outcome) => outcome,
            JobOutcome::Panicked(panic) => {
                CallOutcome::error(call, format!("Tool {} panicked: {panic}", call.name))
            }
            JobOutcome::Lost => CallOutcome::error(
                call,
                "The call's actor stopped before it reported a result (the actor host is shutting down).",
            ),
            JobOutcome::NotStarted => not_started(call),
        });
    }
}

impl Handler<BatchDone> for RunActor {
    type Result = ();

    fn handle(&mut self, _: BatchDone, ctx: &mut Context<Self>) {
        if self.batch.is_some() {
            self.conclude_batch(ctx);
        }
    }
}

traced_handlers!(RunActor {
    GeneratorDelta,
    GeneratorDone,
    Validated,
    CallUpdate,
    JobStarting,
    JobFinished<CallOutcome>,
    BatchDone,
});
