//! A turn's batch of tool calls, as the run actor sees it: validation, the supervisor and its
//! tool actors, each call's start, updates and end events, and the results in source order.

use std::sync::Arc;

use actix::{Context, Handler, Message};
use golato_actors::batch::{
    BatchObserver, BatchReport, BatchSupervisor, Job, JobOutcome, Mode, RunBatch, Work,
};

use super::RunActor;
use crate::agent::batch_calls::{CallNotice, Notice, SharedBatch};
use crate::agent::event::*;
use crate::agent::tool_actor::{self, CallOutcome, ToolSetup};
use crate::agent::validation::{self, Prepared};
use crate::message::{AssistantMessage, Message as TranscriptMessage, ToolCall};
use crate::tool::Execution;

/// A batch's calls, and where they came from.
pub(super) struct BatchCalls {
    pub(super) calls: Vec<ToolCall>,
    /// Moved out of the transcript's assistant message: they go back when the batch ends.
    pub(super) borrowed_from_transcript: bool,
}

/// Argument bytes above which a batch is validated on the blocking pool rather than inline,
/// so that parsing a huge argument never stalls the actor thread.
const INLINE_VALIDATION_BYTES: usize = 64 * 1024;

/// The calls in flight.
pub(super) struct Batch {
    /// Index of the assistant message in the transcript.
    message_index: usize,
    /// The calls and what they share, with every tool actor and `ToolContext` of the batch.
    shared: Arc<SharedBatch>,
    /// Whether `calls` were moved out of the transcript's message (to be shared without a
    /// copy) and must be put back when the batch ends.
    borrowed_from_transcript: bool,
    /// Where each call is, by source index.
    progress: Vec<Progress>,
    /// The outcomes recorded so far, in the order they came: nothing is set aside for a call
    /// before its result exists (a batch in flight holds only its calls).
    outcomes: Vec<(usize, CallOutcome)>,
}

/// How far a call has got, as the run actor has reported it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Progress {
    Waiting,
    /// Its start event was emitted.
    Started,
    /// Its result was recorded (and its end event emitted).
    Recorded,
}

impl RunActor {
    pub(super) fn open_batch(&mut self, message_index: usize, calls: BatchCalls) -> Batch {
        self.batch_id += 1;
        let count = calls.calls.len();
        Batch {
            message_index,
            shared: SharedBatch::new(
                self.batch_id,
                calls.calls,
                self.plan.cancel.child_token(),
                self.mailbox.recipient(),
                self.plan
                    .journal
                    .as_ref()
                    .map(|journal| (Arc::clone(journal), self.turn)),
                Arc::clone(&self.share),
                self.plan
                    .agent
                    .budget
                    .map(|budget| (budget, self.own_spent())),
            ),
            borrowed_from_transcript: calls.borrowed_from_transcript,
            progress: vec![Progress::Waiting; count],
            outcomes: Vec::new(),
        }
    }

    /// Output hit the token limit: no call runs; each gets an error result.
    pub(super) fn truncated(&mut self, batch: Batch, ctx: &mut Context<Self>) {
        self.batch = Some(batch);
        let count = self
            .batch
            .as_ref()
            .map_or(0, |batch| batch.shared.calls().len());
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

    pub(super) fn execute(
        &mut self,
        message_index: usize,
        calls: BatchCalls,
        ctx: &mut Context<Self>,
    ) {
        let batch = self.open_batch(message_index, calls);
        let argument_bytes: usize = batch
            .shared
            .calls()
            .iter()
            .map(|call| call.arguments.len())
            .sum();
        if argument_bytes <= INLINE_VALIDATION_BYTES {
            let prepared = validation::prepare(&self.plan.agent.registry, batch.shared.calls());
            self.batch = Some(batch);
            self.dispatch(prepared, ctx);
        } else {
            let agent = Arc::clone(&self.plan.agent);
            let shared = Arc::clone(&batch.shared);
            let mailbox = self.mailbox.clone();
            let id = batch.shared.id();
            self.batch = Some(batch);
            self.plan.agent.host.spawn_blocking(move || {
                let prepared = validation::prepare(&agent.registry, shared.calls());
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
        let shared = Arc::clone(&batch.shared);
        let batch_id = shared.id();
        let calls = shared.calls();
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
        // Over `max_parallel_calls`, calls wait for a slot and each is announced as it starts;
        // otherwise every start is emitted now, in source order, before anything runs.
        let max_running = self
            .plan
            .agent
            .max_parallel_calls
            .filter(|limit| !sequential && calls.len() > limit.get());
        let announced = sequential || max_running.is_some();
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
                Prepared::Valid { tool } => {
                    if !announced {
                        self.start_call(index);
                    }
                    // Field names follow OpenTelemetry's GenAI conventions, so an OTel exporter
                    // shows the call as a tool execution.
                    let span = tracing::debug_span!(
                        parent: &batch_span,
                        "call",
                        index,
                        gen_ai.operation.name = "execute_tool",
                        gen_ai.tool.name = %call.name,
                        gen_ai.tool.call.id = %call.id,
                        otel.name = %format_args!("execute_tool {}", call.name),
                        otel.status_code = tracing::field::Empty,
                    );
                    jobs.push(tool_actor::job(ToolSetup {
                        agent: Arc::clone(&self.plan.agent),
                        run_id: self.plan.id,
                        shared: Arc::clone(&shared),
                        index,
                        tool,
                        span,
                    }));
                }
            }
        }
        if jobs.is_empty() {
            return self.conclude_batch(ctx);
        }
        let supervisor = BatchSupervisor::spawn(&self.plan.agent.host, batch_span);
        let (run, batch) = (self.plan.id, self.batch_id);
        supervisor.probe().identify(|identity| {
            identity.run = Some(run);
            identity.batch = Some(batch);
        });
        self.mailbox
            .probe()
            .waiting(|| golato_actors::console::WaitingOn::Calls);
        supervisor.do_send(RunBatch {
            jobs,
            mode,
            max_running,
            cancel: shared.batch_token().clone(),
            observer: BatchObserver {
                reports: self.mailbox.recipient(),
                announce_starts: announced,
                // Without events, outcomes are only stored: one report for the whole batch.
                each_outcome: self.plan.channel.wants_events(),
            },
        });
    }

    /// Emits a call's start event, once.
    fn start_call(&mut self, index: usize) {
        let Some(batch) = self.batch.as_mut() else {
            return;
        };
        let Some(progress) = batch.progress.get_mut(index) else {
            return;
        };
        if *progress != Progress::Waiting {
            return;
        }
        *progress = Progress::Started;
        let shared = Arc::clone(&batch.shared);
        let Some(call) = shared.calls().get(index) else {
            return;
        };
        self.emit(|| {
            Event::ToolExecutionStart(ToolExecutionStartEvent {
                index,
                call: ToolCall::clone(call),
            })
        });
    }

    /// Records a call's result (emitting its start first if it was not emitted) and its end
    /// event. A call that already has a result keeps it.
    fn record(&mut self, index: usize, outcome: impl FnOnce(&ToolCall) -> CallOutcome) {
        #[cfg(feature = "fault-injection")]
        self.plan.channel.crash_if_injected();
        self.start_call(index);
        let Some(batch) = self.batch.as_mut() else {
            return;
        };
        let (Some(progress), Some(call)) = (
            batch.progress.get_mut(index),
            batch.shared.calls().get(index),
        ) else {
            return;
        };
        if *progress == Progress::Recorded {
            return;
        }
        *progress = Progress::Recorded;
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
        if batch.outcomes.is_empty() {
            batch.outcomes.reserve_exact(batch.progress.len());
        }
        batch.outcomes.push((index, outcome));
        if let Some(event) = event {
            self.emit(|| Event::ToolExecutionEnd(event));
        }
    }

    /// Every call has its result: record them in source order and decide what comes next.
    fn conclude_batch(&mut self, ctx: &mut Context<Self>) {
        let count = self
            .batch
            .as_ref()
            .map_or(0, |batch| batch.shared.calls().len());
        for index in 0..count {
            self.record(index, |call| {
                CallOutcome::error(call, "The call's actor stopped before it reported a result (the actor host is shutting down).")
            });
        }
        let Some(batch) = self.batch.take() else {
            return;
        };
        let message_index = batch.message_index;
        // A resumed transcript may have answered some of the message's calls already.
        let resumed = !batch.borrowed_from_transcript;
        let mut outcomes = self.give_back_calls(batch);
        outcomes.sort_unstable_by_key(|(index, _)| *index);
        let journal_error = outcomes
            .iter_mut()
            .find_map(|(_, outcome)| outcome.journal_error.take());
        let terminate = !outcomes.is_empty()
            && outcomes
                .iter()
                .all(|(_, outcome)| outcome.terminate && !outcome.message.is_error);
        let results: Vec<_> = outcomes
            .into_iter()
            .map(|(_, outcome)| outcome.message)
            .collect();
        let assistant = |messages: &[TranscriptMessage]| match messages.get(message_index) {
            Some(TranscriptMessage::Assistant(message)) => message.clone(),
            _ => AssistantMessage::default(),
        };
        self.emit(|| {
            let message = assistant(&self.plan.messages);
            let cost = self.cost_of(&message.usage);
            Event::TurnEnd(TurnEndEvent {
                turn: self.turn,
                message,
                tool_results: results.clone(),
                cost,
            })
        });
        // Room for the results and the answer that usually follows them, in one step (the
        // transcript would otherwise grow twice, the second time to twice what it needs).
        Arc::make_mut(&mut self.plan.messages).reserve(results.len() + 1);
        self.append(results.into_iter().map(TranscriptMessage::ToolResult));
        if resumed {
            self.order_results(message_index);
        }
        if let Some(source) = journal_error {
            let messages = self.take_messages();
            return self.end(
                Err(super::Error::Journal {
                    source: *source,
                    messages,
                }),
                ctx,
            );
        }
        if self.plan.cancel.is_cancelled() {
            return self.cancelled(ctx);
        }
        if terminate {
            let message = assistant(&self.plan.messages);
            return self.finish_or_continue(message, ctx);
        }
        self.after_batch(ctx);
    }

    /// Puts the results after the assistant message at `message_index` in the order of its
    /// calls: results a resumed transcript already had come first otherwise.
    fn order_results(&mut self, message_index: usize) {
        let messages = Arc::make_mut(&mut self.plan.messages);
        let Some(TranscriptMessage::Assistant(assistant)) = messages.get(message_index) else {
            return;
        };
        let ids: Vec<String> = assistant
            .tool_calls
            .iter()
            .map(|call| call.id.clone())
            .collect();
        if let Some(results) = messages.get_mut(message_index + 1..) {
            results.sort_by_key(|message| match message {
                TranscriptMessage::ToolResult(result) => ids
                    .iter()
                    .position(|id| *id == result.tool_call_id)
                    .unwrap_or(usize::MAX),
                _ => usize::MAX,
            });
        }
    }

    /// Puts calls moved out of the transcript's message back into it (copying them only if a
    /// tool still holds its context).
    pub(super) fn give_back_calls(&mut self, batch: Batch) -> Vec<(usize, CallOutcome)> {
        let Batch {
            shared,
            message_index,
            borrowed_from_transcript,
            outcomes,
            ..
        } = batch;
        if borrowed_from_transcript {
            let calls = SharedBatch::into_calls(shared);
            let messages = Arc::make_mut(&mut self.plan.messages);
            if let Some(TranscriptMessage::Assistant(message)) = messages.get_mut(message_index) {
                message.tool_calls = calls;
            }
        }
        outcomes
    }
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

/// A batch validated off the actor thread.
#[derive(Message)]
#[rtype(result = "()")]
pub(super) struct Validated {
    batch: u64,
    prepared: Vec<Prepared>,
}

impl Handler<Validated> for RunActor {
    type Result = ();

    fn handle(&mut self, message: Validated, ctx: &mut Context<Self>) {
        if self
            .batch
            .as_ref()
            .is_some_and(|batch| batch.shared.id() == message.batch)
        {
            self.dispatch(message.prepared, ctx);
        }
    }
}

impl Handler<CallNotice> for RunActor {
    type Result = ();

    fn handle(&mut self, message: CallNotice, _: &mut Context<Self>) {
        let Some(batch) = self
            .batch
            .as_ref()
            .filter(|batch| batch.shared.id() == message.batch)
        else {
            return;
        };
        if matches!(message.notice, Notice::Update(_)) {
            batch.shared.update_delivered(message.index);
        }
        // A call with its result already recorded gets no more events.
        let open = batch
            .progress
            .get(message.index)
            .is_some_and(|progress| *progress != Progress::Recorded);
        let shared = Arc::clone(&batch.shared);
        let Some(call) = shared.calls().get(message.index).filter(|_| open) else {
            return;
        };
        let index = message.index;
        match message.notice {
            Notice::Update(partial_result) => {
                if batch.progress.get(index) != Some(&Progress::Started) {
                    return;
                }
                self.emit(|| {
                    Event::ToolExecutionUpdate(ToolExecutionUpdateEvent {
                        index,
                        call: ToolCall::clone(call),
                        partial_result,
                    })
                });
            }
            Notice::Hook(action) => {
                self.start_call(index);
                self.emit(|| {
                    Event::ToolHook(ToolHookEvent {
                        index,
                        call: ToolCall::clone(call),
                        action,
                    })
                });
            }
        }
    }
}

impl Handler<BatchReport<CallOutcome>> for RunActor {
    type Result = ();

    fn handle(&mut self, report: BatchReport<CallOutcome>, ctx: &mut Context<Self>) {
        match report {
            BatchReport::Starting { index } => self.start_call(index),
            BatchReport::Finished { index, outcome } => self.finished(index, outcome),
            BatchReport::Done => self.batch_done(ctx),
            BatchReport::Collected { outcomes } => {
                for (index, outcome) in outcomes {
                    self.finished(index, outcome);
                }
                self.batch_done(ctx);
            }
        }
    }
}

impl RunActor {
    fn finished(&mut self, index: usize, outcome: JobOutcome<CallOutcome>) {
        self.record(index, |call| match outcome {
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

    fn batch_done(&mut self, ctx: &mut Context<Self>) {
        if self.batch.is_some() {
            self.conclude_batch(ctx);
        }
    }
}
