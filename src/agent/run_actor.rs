//! The run actor: one per run, the loop of the page's diagram.
//!
//! It keeps turns, batches, events and the transcript: it asks the generator for a message
//! ([`generation`]), validates the calls of that message and hands them to a batch supervisor
//! that starts one tool actor per call ([`batch`]), records the results in source order, and
//! loops. It never reaches into a call: a call's life is its tool actor's. It is the only writer
//! of the run's event channel, so events come out in the order it handled what happened.

mod batch;
mod compact;
mod generation;
mod inbox;

use std::sync::Arc;

use actix::{Actor, ActorContext, AsyncContext, Context};
use golato_actors::batch::BatchReport;
use golato_actors::console::Kind;
use golato_actors::embed::WorkGuard;
use golato_actors::{traced_handlers, Mailbox, TracedActor};
use tokio_util::sync::CancellationToken;

use super::batch_calls::CallNotice;
use super::event::*;
use super::run::Channel;
use super::tool_actor::CallOutcome;
use super::{AgentInner, Error, RunResult};
use crate::message::{
    AssistantMessage, Message as TranscriptMessage, StopReason, Usage, UserMessage,
};

use batch::{Batch, BatchCalls, Validated};
use generation::{GeneratorDelta, GeneratorDone, GeneratorRetrying};

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
    /// The run's place under `max_concurrent_runs`, held until the run actor is gone.
    pub(crate) admission: Option<super::admission::Permit>,
    pub(crate) span: tracing::Span,
    pub(crate) id: u64,
    /// Where the run's steps are recorded and found again; `None` for a run without one.
    pub(crate) journal: Option<Arc<dyn crate::journal::Journal>>,
    /// How an earlier run compacted the input's transcript (checked against it).
    pub(crate) summary: Option<super::Summary>,
    /// The tool call this run is a child of (a subagent's): its spending is counted there as
    /// it goes, and the parent's budget is checked before each request.
    pub(crate) parent: Option<crate::tool::ToolContext>,
}

impl RunPlan {
    /// A run cancelled while it waited to be admitted: it ends with its input as transcript.
    pub(crate) fn cancel_before_start(mut self) {
        let messages = unshare(std::mem::take(&mut self.messages));
        self.channel.finish(Err(Error::Cancelled { messages }));
    }

    pub(crate) fn into_actor(mut self, ctx: &mut Context<RunActor>) -> RunActor {
        let view = self
            .summary
            .take()
            .map(|summary| compact::View::new(summary, &self.messages));
        // Usage reported before this run measured other requests than the view's.
        let anchor_from = view.as_ref().map_or(0, |_| self.messages.len());
        RunActor {
            share: super::batch_calls::RunShare::new(
                Arc::clone(&self.channel),
                self.parent.clone(),
                self.agent
                    .host
                    .console()
                    .map(|console| (console.clone(), self.id)),
            ),
            mailbox: run_mailbox(ctx, &self),
            plan: self,
            turn: 0,
            usage: Usage::default(),
            summarizer_usage: Usage::default(),
            summarizer_price: None,
            anchor_from,
            view,
            refusal_compacted: false,
            compactions_this_turn: 0,
            output_retried: false,
            batch_id: 0,
            batch: None,
            ended: false,
            turn_span: tracing::Span::none(),
        }
    }
}

/// The run actor's mailbox, counted in the host's stats and, with its console on, shown there
/// as the run (and its parent's, for a subagent's).
fn run_mailbox(ctx: &mut Context<RunActor>, plan: &RunPlan) -> Mailbox<RunActor> {
    let mailbox = Mailbox::counted_as(ctx.address(), &plan.agent.host, Kind::Run);
    let probe = mailbox.probe();
    if probe.is_on() {
        let parent_run = plan
            .parent
            .as_ref()
            .and_then(|call| call.probe().identity())
            .and_then(|identity| identity.run);
        probe.identify(|identity| {
            identity.run = Some(plan.id);
            identity.parent_run = parent_run;
        });
    }
    mailbox
}

pub(crate) struct RunActor {
    plan: RunPlan,
    /// What the run's batches share with their calls: events of child runs, what they spent.
    share: Arc<super::batch_calls::RunShare>,
    mailbox: Mailbox<RunActor>,
    turn: usize,
    /// Tokens of the run's model: its turns, and the summaries it wrote.
    usage: Usage,
    /// Tokens of a separate summarizer, at its own price.
    summarizer_usage: Usage,
    summarizer_price: Option<crate::generator::Price>,
    /// What requests send once the run has compacted; `None`: the transcript.
    view: Option<compact::View>,
    /// The transcript index from which reported usage measures the current view.
    anchor_from: usize,
    /// Whether this turn compacted after a refusal already.
    refusal_compacted: bool,
    compactions_this_turn: usize,
    /// Whether an answer that failed the output schema was sent back once already.
    output_retried: bool,
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
        match self.plan.journal.clone() {
            None => self.proceed(ctx),
            Some(journal) => self.check_input(journal, ctx),
        }
    }
}

impl TracedActor for RunActor {
    /// The current turn's span once there is one, so that the messages of a turn (deltas,
    /// tool reports) nest under it: run → turn → message.
    fn span(&self) -> &tracing::Span {
        if self.turn_span.is_none() {
            &self.plan.span
        } else {
            &self.turn_span
        }
    }
}

impl Drop for RunActor {
    fn drop(&mut self) {
        if self.ended {
            return;
        }
        // Its tools are told to stop: nobody will record what they return.
        self.plan.cancel.cancel();
        let messages = self.take_messages();
        // Unwinding means a handler panicked (the actor's task dies with it); otherwise the
        // host stopped its actors.
        let error = if std::thread::panicking() {
            tracing::error!(
                run_id = self.plan.id,
                "a run's actor crashed; the run ends with its transcript"
            );
            Error::Crashed { messages }
        } else {
            Error::Lost { messages }
        };
        self.plan.channel.finish(Err(error));
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
        self.mailbox.probe().event();
        if self.plan.channel.wants_events() {
            self.plan.channel.push(build());
        }
    }

    pub(super) fn end(&mut self, outcome: Result<RunResult, Error>, ctx: &mut Context<Self>) {
        if self.ended {
            return;
        }
        self.ended = true;
        let error = outcome.as_ref().err().map(ToString::to_string);
        match &error {
            Some(error) => tracing::debug!(%error, turns = self.turn, "run ended with an error"),
            None => tracing::debug!(turns = self.turn, "run ended"),
        }
        let (usage, cost) = self.spent();
        self.emit(|| Event::RunEnd(RunEndEvent { error, usage, cost }));
        self.plan.channel.finish(outcome);
        ctx.stop();
    }

    /// What `usage` costs at the model's price, if it has one.
    pub(super) fn cost_of(&self, usage: &Usage) -> Option<f64> {
        self.plan.agent.model.price.map(|price| price.cost(usage))
    }

    /// Every token the run used (a summarizer's and child runs' included) and what they cost,
    /// when every model involved has a price.
    pub(super) fn spent(&self) -> (Usage, Option<f64>) {
        let mut spent = self.own_spent();
        spent.add(&self.share.spent());
        (spent.usage, (!spent.unpriced).then_some(spent.cost))
    }

    /// What the run spent itself (its model's and summarizer's tokens), without its calls'.
    pub(super) fn own_spent(&self) -> super::batch_calls::Spent {
        let mut usage = self.usage;
        usage += self.summarizer_usage;
        let summaries = if self.summarizer_usage == Usage::default() {
            Some(0.0)
        } else {
            self.summarizer_price
                .map(|price| price.cost(&self.summarizer_usage))
        };
        let cost = self.cost_of(&self.usage).zip(summaries).map(|(a, b)| a + b);
        super::batch_calls::Spent {
            usage,
            cost: cost.unwrap_or(0.0),
            unpriced: cost.is_none(),
        }
    }

    fn take_messages(&mut self) -> Vec<TranscriptMessage> {
        // A run that ends with a batch in flight (its actor stopped) must not lose its calls.
        if let Some(batch) = self.batch.take() {
            self.give_back_calls(batch);
        }
        unshare(std::mem::take(&mut self.plan.messages))
    }

    fn append(&mut self, messages: impl IntoIterator<Item = TranscriptMessage>) {
        Arc::make_mut(&mut self.plan.messages).extend(messages);
    }

    pub(super) fn succeed(&mut self, final_message: AssistantMessage, ctx: &mut Context<Self>) {
        let output = match &self.plan.agent.output {
            None => None,
            Some(check) => match check.check(&final_message.text()) {
                Ok(value) => Some(value),
                Err(reason) if !self.output_retried => {
                    // One more turn, saying what was wrong.
                    self.output_retried = true;
                    let correction = UserMessage::new(format!(
                        "Your answer cannot be used: {reason}. Answer again with only a JSON value valid against the output schema."
                    ));
                    self.append([TranscriptMessage::User(correction)]);
                    return self.request_turn(ctx);
                }
                Err(reason) => {
                    let messages = self.take_messages();
                    return self.end(Err(Error::InvalidOutput { reason, messages }), ctx);
                }
            },
        };
        let (usage, cost) = self.spent();
        let summary = self.view.as_ref().map(compact::View::summary);
        let result = RunResult {
            summary,
            output,
            final_message,
            messages: self.take_messages(),
            usage,
            cost,
            turns: self.turn,
        };
        self.end(Ok(result), ctx);
    }

    pub(super) fn deliver(&mut self, delivery: Delivery, messages: Vec<UserMessage>) {
        for message in messages {
            self.emit(|| {
                Event::UserMessage(UserMessageEvent {
                    turn: self.turn,
                    message: message.clone(),
                    delivery,
                })
            });
            self.append([TranscriptMessage::User(message)]);
        }
    }

    fn cancelled(&mut self, ctx: &mut Context<Self>) {
        let messages = self.take_messages();
        self.end(Err(Error::Cancelled { messages }), ctx);
    }

    /// A journaled run records what it starts from, or checks it against what its journal
    /// recorded: a journal picked up with another input would hand that run's turns to this one.
    fn check_input(&mut self, journal: Arc<dyn crate::journal::Journal>, ctx: &mut Context<Self>) {
        use crate::journal::{seal, unseal, StepError, StepKey};
        use actix::fut::ActorFutureExt;
        use actix::WrapFuture;
        let Ok(expected) = serde_json::to_value(&*self.plan.messages) else {
            return self.proceed(ctx);
        };
        let input = seal(expected.clone());
        let recorded = journal.step(
            StepKey::Input,
            crate::journal::StepWork::new(async move { Ok(input) }),
        );
        ctx.spawn(recorded.into_actor(self).map(move |recorded, this, ctx| {
            let refused = |reason: String| crate::journal::Error {
                step: StepKey::Input.to_string(),
                reason,
            };
            let step = StepKey::Input.to_string();
            let error = match recorded.map(|record| unseal(record, &step)) {
                Ok(Ok(input)) if input == expected => return this.proceed(ctx),
                Ok(Err(error)) => error,
                Ok(Ok(_)) => refused("the journal records a run started with another input (another prompt or transcript); start that run's input again, or give this run a new journal".to_owned()),
                Err(StepError::Journal(error)) => error,
                Err(StepError::NotRecorded) => refused("the input could not be recorded".to_owned()),
            };
            let messages = this.take_messages();
            this.end(Err(Error::Journal { source: error, messages }), ctx);
        }));
    }

    /// Decides the next step from the transcript: run the pending calls of a trailing assistant
    /// message, or ask the generator.
    fn proceed(&mut self, ctx: &mut Context<Self>) {
        let pending = super::input::pending_calls(&self.plan.messages);
        match pending {
            Some((message_index, calls)) if !calls.is_empty() => {
                // Copies: the message may have answered some of its calls already.
                let calls = BatchCalls {
                    calls,
                    borrowed_from_transcript: false,
                };
                self.execute(message_index, calls, ctx);
            }
            _ => self.request_turn(ctx),
        }
    }

    fn on_message(&mut self, mut message: AssistantMessage, ctx: &mut Context<Self>) {
        self.usage += message.usage;
        if let Some(parent) = &self.plan.parent {
            parent.spend(&message.usage, self.cost_of(&message.usage));
        }
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
                    cost: self.cost_of(&message.usage),
                })
            });
            self.append([TranscriptMessage::Assistant(message.clone())]);
            return self.finish_or_continue(message, ctx);
        }
        // The calls move to the batch, shared by its tool actors without a copy, and go back
        // into the message when the batch ends.
        let calls = BatchCalls {
            calls: std::mem::take(&mut message.tool_calls),
            borrowed_from_transcript: true,
        };
        let stop_reason = message.stop_reason;
        self.append([TranscriptMessage::Assistant(message)]);
        let message_index = self.plan.messages.len() - 1;
        if stop_reason == StopReason::Length {
            let batch = self.open_batch(message_index, calls);
            return self.truncated(batch, ctx);
        }
        self.execute(message_index, calls, ctx);
    }
}

/// The transcript out of its `Arc`, copied only if a request still shares it.
fn unshare(messages: Arc<Vec<TranscriptMessage>>) -> Vec<TranscriptMessage> {
    Arc::try_unwrap(messages).unwrap_or_else(|shared| Vec::clone(&shared))
}

traced_handlers!(RunActor {
    GeneratorDelta,
    GeneratorRetrying,
    GeneratorDone,
    Validated,
    CallNotice,
    BatchReport<CallOutcome>,
});
