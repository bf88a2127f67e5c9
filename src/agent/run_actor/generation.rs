//! Asking the generator for the next message: the request, its stream of deltas, and what
//! became of it (a message, a failure, a cancellation), with what had streamed in.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use actix::fut::ActorFutureExt;
use actix::{AsyncContext, Context, Handler, Message, WrapFuture};
use futures::{FutureExt, StreamExt};
use tracing::Instrument;

use super::RunActor;
use crate::agent::event::*;
use crate::agent::Error;
use crate::generator::{self, Delta, Request, StreamEvent};
use crate::message::{AssistantMessage, Content, Message as TranscriptMessage, StopReason};

impl RunActor {
    pub(super) fn request_turn(&mut self, ctx: &mut Context<Self>) {
        if self.plan.cancel.is_cancelled() {
            return self.cancelled(ctx);
        }
        if let Some(limit) = self.plan.agent.max_turns {
            if self.turn >= limit {
                let messages = self.take_messages();
                return self.end(Err(Error::MaxTurns { limit, messages }), ctx);
            }
        }
        if let Some(budget) = &self.plan.agent.budget {
            let (usage, cost) = self.spent();
            if let Some(reached) = budget.reached(&usage, cost) {
                let messages = self.take_messages();
                return self.end(Err(Error::Budget { reached, messages }), ctx);
            }
        }
        // A child run draws from its parent's budget with its siblings: none of them asks
        // again once what the parent has left is spent.
        if let Some(reached) = self
            .plan
            .parent
            .as_ref()
            .and_then(|parent| parent.budget_left())
            .and_then(|left| left.spent_out())
        {
            let messages = self.take_messages();
            return self.end(Err(Error::Budget { reached, messages }), ctx);
        }
        self.turn += 1;
        let turn = self.turn;
        self.turn_span = tracing::debug_span!(parent: &self.plan.span, "turn", turn);
        self.emit(|| Event::TurnStart(TurnStartEvent { turn }));
        self.refusal_compacted = false;
        self.compactions_this_turn = 0;
        self.prepare_request(ctx);
    }

    /// Asks the generator for the current turn's message.
    pub(super) fn generate(&mut self, ctx: &mut Context<Self>) {
        let turn = self.turn;
        self.emit(|| Event::MessageStart(MessageStartEvent { turn }));
        let (messages, compacted_turns) = self.request_messages();
        let request = Request {
            model: self.plan.agent.model.clone(),
            system_prompt: self.plan.agent.system_prompt.clone(),
            messages,
            tools: Arc::clone(&self.plan.agent.definitions),
            compacted_turns,
        };
        // The model request, with OpenTelemetry's GenAI field names; usage is recorded when
        // the message arrives.
        let generate_span = tracing::debug_span!(
            parent: &self.turn_span,
            "generate",
            gen_ai.operation.name = "chat",
            gen_ai.request.model = %request.model.id,
            gen_ai.usage.input_tokens = tracing::field::Empty,
            gen_ai.usage.output_tokens = tracing::field::Empty,
            otel.name = %format_args!("chat {}", request.model.id),
            otel.kind = "client",
        );
        let generator = Arc::clone(&self.plan.agent.generator);
        self.mailbox
            .probe()
            .waiting(|| golato_actors::console::WaitingOn::Model);
        let mailbox = self.mailbox.clone();
        let cancel = self.plan.cancel.clone();
        let channel = Arc::clone(&self.plan.channel);
        let deltas = Arc::new(PendingDeltas::default());
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
                        if channel.wants_events() && deltas.push(delta) {
                            mailbox.do_send(GeneratorDelta {
                                turn,
                                deltas: Arc::clone(&deltas),
                            });
                        }
                    }
                    Some(Ok(StreamEvent::Retrying(retrying))) => {
                        if channel.wants_events() {
                            mailbox.do_send(GeneratorRetrying { turn, retrying });
                        }
                    }
                    Some(Ok(StreamEvent::Done(message))) => {
                        let usage = &message.usage;
                        // Zero is "not reported" (Scripted, servers without usage).
                        if usage.total_tokens() > 0 {
                            let span = tracing::Span::current();
                            // As signed integers: OpenTelemetry has no unsigned ones, and
                            // an unsigned field would be exported as text.
                            let tokens = |count: u64| i64::try_from(count).unwrap_or(i64::MAX);
                            span.record("gen_ai.usage.input_tokens", tokens(usage.input_tokens));
                            span.record("gen_ai.usage.output_tokens", tokens(usage.output_tokens));
                        }
                        return Generated::Message(message);
                    }
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
            generated
        };
        // A journaled run takes the turn from its journal when it is recorded there, and
        // records it when the model finished it; a run without one pays only this branch (the
        // journaled future is boxed so that it does not make every run's future larger).
        let generate = match self.plan.journal.clone() {
            None => futures::future::Either::Left(generate),
            Some(journal) => {
                futures::future::Either::Right(journaled_turn(journal, turn, generate).boxed())
            }
        };
        // The outcome is handled here, on the actor, when no delta went through the mailbox
        // (nobody reads events); otherwise it is queued behind them, so that every update
        // event comes before the message's end.
        let generate = generate.instrument(generate_span).into_actor(self);
        ctx.spawn(generate.map(move |generated, this, ctx| {
            if this.plan.channel.wants_events() {
                mailbox.do_send(GeneratorDone { turn, generated });
            } else {
                this.on_generated(turn, generated, ctx);
            }
        }));
    }

    fn on_generated(&mut self, turn: usize, generated: Generated, ctx: &mut Context<Self>) {
        if self.ended || turn != self.turn {
            return;
        }
        let _entered = self.turn_span.clone().entered();
        match generated {
            Generated::Message(assistant) => self.on_message(assistant, ctx),
            Generated::Cancelled(partial) => {
                self.record_partial(partial, StopReason::Aborted, None);
                self.cancelled(ctx);
            }
            Generated::Failed(source, partial) => {
                // Refused as too long before anything streamed in: compact and ask again.
                let source = if partial.text.is_empty() && partial.reasoning.is_empty() {
                    match self.compact_refused(source, ctx) {
                        Ok(()) => return,
                        Err(source) => source,
                    }
                } else {
                    source
                };
                self.record_partial(partial, StopReason::Error, Some(source.to_string()));
                let messages = self.take_messages();
                self.end(Err(Error::Generator { source, messages }), ctx);
            }
            Generated::JournalFailed(source) => {
                let messages = self.take_messages();
                self.end(Err(Error::Journal { source, messages }), ctx);
            }
        }
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
                cost: self.cost_of(&message.usage),
            })
        });
        self.append([TranscriptMessage::Assistant(message)]);
    }
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

/// Turn `turn` through `journal`: its recorded message, or `generate`'s, recorded. A turn
/// that failed or was cancelled is not recorded and comes back as it was.
async fn journaled_turn(
    journal: Arc<dyn crate::journal::Journal>,
    turn: usize,
    generate: impl std::future::Future<Output = Generated> + Send + 'static,
) -> Generated {
    use crate::journal::{Error as JournalError, NotRecorded, StepError, StepKey};
    let unrecorded = Arc::new(std::sync::Mutex::new(None));
    let slot = Arc::clone(&unrecorded);
    let work = async move {
        let generated = generate.await;
        if let Generated::Message(message) = &generated {
            if let Ok(value) = serde_json::to_value(message) {
                return Ok(crate::journal::seal(value));
            }
        }
        *slot
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(generated);
        Err(NotRecorded)
    };
    let key = StepKey::Turn { turn };
    let step = key.to_string();
    match journal.step(key, crate::journal::StepWork::new(work)).await {
        Ok(record) => match crate::journal::unseal(record, &step).and_then(|value| {
            serde_json::from_value::<AssistantMessage>(value).map_err(|error| JournalError {
                step: step.clone(),
                reason: format!("what it holds is not an assistant message ({error})"),
            })
        }) {
            Ok(message) => Generated::Message(message),
            Err(error) => Generated::JournalFailed(error),
        },
        Err(StepError::NotRecorded) => unrecorded
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
            .unwrap_or(Generated::Failed(
                generator::Error::IncompleteStream,
                Partial::default(),
            )),
        Err(StepError::Journal(error)) => Generated::JournalFailed(error),
    }
}

/// What became of a generator request.
enum Generated {
    Message(AssistantMessage),
    /// The run's journal failed.
    JournalFailed(crate::journal::Error),
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

/// The deltas streamed in and not yet taken by the run actor. The stream can run far ahead of
/// the actor (a provider sending a 10 MB answer in one-byte deltas): one message per delta
/// would queue an envelope each in the mailbox, about 100 times the answer. Instead the deltas
/// wait here, merged, and at most one message is in the mailbox to say they are there.
#[derive(Default)]
struct PendingDeltas {
    state: std::sync::Mutex<(Vec<Delta>, bool)>,
}

impl PendingDeltas {
    /// Adds `delta`; true when no message is in the mailbox for the pending ones (the caller
    /// sends one).
    fn push(&self, delta: Delta) -> bool {
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let (pending, announced) = &mut *state;
        let rest = match pending.last_mut() {
            Some(last) => last.merge(delta),
            None => Some(delta),
        };
        pending.extend(rest);
        !std::mem::replace(announced, true)
    }

    /// Takes the pending deltas; the next push announces itself again.
    fn take(&self) -> Vec<Delta> {
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        state.1 = false;
        std::mem::take(&mut state.0)
    }
}

#[derive(Message)]
#[rtype(result = "()")]
pub(crate) struct GeneratorDelta {
    turn: usize,
    deltas: Arc<PendingDeltas>,
}

#[derive(Message)]
#[rtype(result = "()")]
pub(crate) struct GeneratorDone {
    turn: usize,
    generated: Generated,
}

impl Handler<GeneratorDelta> for RunActor {
    type Result = ();

    fn handle(&mut self, message: GeneratorDelta, _: &mut Context<Self>) {
        let deltas = message.deltas.take();
        if self.ended || message.turn != self.turn || deltas.is_empty() {
            return;
        }
        self.emit(|| {
            Event::MessageUpdate(MessageUpdateEvent {
                turn: message.turn,
                deltas,
            })
        });
    }
}

/// The generator is sending the turn's request again.
#[derive(Message)]
#[rtype(result = "()")]
pub(crate) struct GeneratorRetrying {
    turn: usize,
    retrying: generator::Retrying,
}

impl Handler<GeneratorRetrying> for RunActor {
    type Result = ();

    fn handle(&mut self, message: GeneratorRetrying, _: &mut Context<Self>) {
        if self.ended || message.turn != self.turn {
            return;
        }
        let GeneratorRetrying { turn, retrying } = message;
        self.emit(|| Event::Retry(crate::agent::event::RetryEvent { turn, retrying }));
    }
}

impl Handler<GeneratorDone> for RunActor {
    type Result = ();

    fn handle(&mut self, message: GeneratorDone, ctx: &mut Context<Self>) {
        self.on_generated(message.turn, message.generated, ctx);
    }
}
