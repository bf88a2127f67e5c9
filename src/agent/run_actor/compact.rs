//! The run's side of context compaction: what its requests send (the transcript, or a summary
//! and the recent messages), when that must shrink, and the summary's round trip (through the
//! journal for a journaled run, so that a run picked up sends what it sent before).

use std::sync::Arc;

use actix::fut::ActorFutureExt;
use actix::{AsyncContext, Context, WrapFuture};

use super::RunActor;
use crate::agent::compaction::{self, CompactionReason, SummaryError};
use crate::agent::event::{CompactionEvent, Event};
use crate::agent::Error;
use crate::generator::{self, Generator, Model};
use crate::message::{Message, Usage};

/// What requests send once a run has compacted: a summary, then the transcript from `cut`.
pub(super) struct View {
    /// The summary's text.
    summary: String,
    /// The summary message, then copies of the transcript's messages from `cut`.
    messages: Arc<Vec<Message>>,
    /// The transcript index of the first message kept.
    cut: usize,
    /// Transcript messages copied into `messages` so far.
    synced: usize,
    /// Assistant messages of the transcript before `cut`.
    compacted_turns: usize,
}

impl View {
    /// The view of `transcript` a summary of its first messages makes.
    pub(super) fn new(summary: crate::agent::compaction::Summary, transcript: &[Message]) -> View {
        let cut = summary.replaces.min(transcript.len());
        let mut messages = Vec::with_capacity(transcript.len() - cut + 1);
        messages.push(Message::User(compaction::summary_message(&summary.text)));
        messages.extend_from_slice(&transcript[cut..]);
        View {
            summary: summary.text,
            messages: Arc::new(messages),
            cut,
            synced: transcript.len(),
            compacted_turns: transcript[..cut]
                .iter()
                .filter(|message| matches!(message, Message::Assistant(_)))
                .count(),
        }
    }

    /// What it is, for the next run.
    pub(super) fn summary(&self) -> crate::agent::compaction::Summary {
        crate::agent::compaction::Summary::new(self.summary.clone(), self.cut)
    }
}

/// A compaction asked for, before its summary.
struct Plan {
    reason: CompactionReason,
    /// Transcript index of the first message kept.
    cut: usize,
    tokens_before: u64,
    /// The estimate after, less the summary's own tokens.
    kept_tokens: u64,
    /// The provider's refusal that asked for it, if one did.
    refusal: Option<generator::Error>,
    /// What the summary keeps word for word of the messages it replaces.
    facts: String,
}

/// The summary written for a plan, as a journal records it.
#[derive(serde::Serialize, serde::Deserialize)]
struct Written {
    summary: String,
    usage: Usage,
}

impl RunActor {
    /// The messages the next request sends, and how many turns its summary stands for.
    pub(super) fn request_messages(&mut self) -> (Arc<Vec<Message>>, usize) {
        let Some(view) = &mut self.view else {
            return (Arc::clone(&self.plan.messages), 0);
        };
        let transcript = &self.plan.messages;
        if view.synced < transcript.len() {
            Arc::make_mut(&mut view.messages).extend_from_slice(&transcript[view.synced..]);
            view.synced = transcript.len();
        }
        (Arc::clone(&view.messages), view.compacted_turns)
    }

    /// The transcript index of `view`'s message `index`.
    fn transcript_index(&self, index: usize) -> usize {
        match &self.view {
            None => index,
            Some(view) => view.cut + index - 1,
        }
    }

    /// The estimated tokens of the next request: what the provider counted for the newest
    /// answer made from the current view plus the messages since, else the counter's figure.
    fn estimate(&self, counts: &[u64], prelude: u64) -> u64 {
        let transcript = &self.plan.messages;
        let floor = self
            .anchor_from
            .max(self.view.as_ref().map_or(0, |view| view.cut));
        let anchored = (floor..transcript.len()).rev().find_map(|index| {
            let Message::Assistant(answer) = &transcript[index] else {
                return None;
            };
            let usage = &answer.usage;
            (usage.prompt_tokens() > 0).then_some((index, usage.total_tokens()))
        });
        match anchored {
            Some((index, tokens)) => {
                // The view ends with the transcript, so the messages after the answer are
                // the last ones of `counts`.
                let after = transcript.len() - index - 1;
                tokens.saturating_add(compaction::total(
                    &counts[counts.len().saturating_sub(after)..],
                ))
            }
            None => prelude.saturating_add(compaction::total(counts)),
        }
    }

    /// The next request's messages, each one's tokens, and the estimate of the whole.
    fn measure(
        &mut self,
        settings: &crate::agent::compaction::Compaction,
    ) -> (Arc<Vec<Message>>, Vec<u64>, u64) {
        let (messages, _) = self.request_messages();
        let counts = settings.measure(&messages);
        let estimate = self.estimate(&counts, self.plan.agent.prelude_tokens);
        (messages, counts, estimate)
    }

    /// Asks the generator for the turn's message, compacting the request first when it would
    /// reach the threshold of a known window.
    pub(super) fn prepare_request(&mut self, ctx: &mut Context<Self>) {
        let agent = Arc::clone(&self.plan.agent);
        let (Some(settings), Some(window)) = (agent.automatic_compaction(), agent.context_window)
        else {
            return self.generate(ctx);
        };
        let (messages, counts, estimate) = self.measure(settings);
        if (estimate as f64) < settings.threshold * window as f64 {
            return self.generate(ctx);
        }
        match self.plan_compaction(CompactionReason::Threshold, &messages, &counts, estimate) {
            // Nothing older to summarize: the request goes as it is.
            None => self.generate(ctx),
            Some(plan) => self.compact(plan, &messages, ctx),
        }
    }

    /// After the provider refused the turn's request: compacts and asks again, once per turn,
    /// when the refusal says the request was too long. The refusal comes back when it cannot
    /// (the caller ends the run with it).
    pub(super) fn compact_refused(
        &mut self,
        refusal: generator::Error,
        ctx: &mut Context<Self>,
    ) -> Result<(), generator::Error> {
        let agent = Arc::clone(&self.plan.agent);
        let Some(settings) = agent.automatic_compaction() else {
            return Err(refusal);
        };
        if self.refusal_compacted || !refusal.is_context_too_long() {
            return Err(refusal);
        }
        self.refusal_compacted = true;
        let (messages, counts, estimate) = self.measure(settings);
        match self.plan_compaction(
            CompactionReason::ContextTooLong,
            &messages,
            &counts,
            estimate,
        ) {
            None => Err(refusal),
            Some(mut plan) => {
                plan.refusal = Some(refusal);
                self.compact(plan, &messages, ctx);
                Ok(())
            }
        }
    }

    fn plan_compaction(
        &self,
        reason: CompactionReason,
        messages: &[Message],
        counts: &[u64],
        tokens_before: u64,
    ) -> Option<Plan> {
        let agent = &self.plan.agent;
        let settings = agent.automatic_compaction()?;
        // Refused without a known window: the request was too long, so keep a share of it.
        let basis = match (reason, agent.context_window) {
            (CompactionReason::ContextTooLong, _) | (_, None) => tokens_before,
            (_, Some(window)) => window.min(tokens_before.max(1)),
        };
        let keep = (settings.keep_recent * basis as f64) as u64;
        let cut = compaction::choose_cut(messages, counts, keep)?;
        let transcript_cut = self.transcript_index(cut);
        Some(Plan {
            reason,
            cut: transcript_cut,
            tokens_before,
            kept_tokens: agent
                .prelude_tokens
                .saturating_add(compaction::total(&counts[cut..])),
            refusal: None,
            // From the whole transcript: an earlier summary may have dropped what a newer
            // one must keep.
            facts: compaction::facts(
                &self.plan.messages[..transcript_cut.min(self.plan.messages.len())],
                agent.compaction.counter.as_ref(),
            ),
        })
    }

    /// Has the messages before the plan's cut summarized, then asks for the turn's message.
    fn compact(&mut self, plan: Plan, messages: &[Message], ctx: &mut Context<Self>) {
        let agent = Arc::clone(&self.plan.agent);
        let Some(settings) = agent.automatic_compaction() else {
            return self.generate(ctx);
        };
        let view_cut = messages.len() - (self.plan.messages.len() - plan.cut);
        let budget_bytes = compaction::render_budget(
            agent.context_window,
            plan.tokens_before,
            plan.reason == CompactionReason::ContextTooLong,
        );
        let rendered = compaction::render(&messages[..view_cut], budget_bytes);
        let (generator, model): (Arc<dyn Generator>, Model) = match &settings.summarizer {
            Some(summarizer) => (Arc::clone(&summarizer.generator), summarizer.model.clone()),
            None => (Arc::clone(&agent.generator), agent.model.clone()),
        };
        let summarizer_model = model.id.clone();
        tracing::info!(
            reason = ?plan.reason,
            tokens = plan.tokens_before,
            replaced = plan.cut,
            "compacting the run's context"
        );
        self.compactions_this_turn += 1;
        let hooks = Arc::clone(&agent.hooks);
        let notice = crate::hook::CompactionContext {
            run_id: self.plan.id,
            reason: plan.reason,
            replaced: plan.cut,
            tokens_before: plan.tokens_before,
        };
        let summarize = async move {
            // Inside the journaled step: a replayed compaction does not tell hooks again.
            for hook in hooks.iter() {
                let told = std::panic::AssertUnwindSafe(hook.before_compaction(notice.clone()));
                if futures::FutureExt::catch_unwind(told).await.is_err() {
                    tracing::warn!("a hook panicked before compaction; compacting anyway");
                }
            }
            compaction::summarize(generator, model, rendered)
                .await
                .map(|(summary, usage)| Written { summary, usage })
        };
        let summarize = match self.plan.journal.clone() {
            None => futures::future::Either::Left(summarize),
            Some(journal) => {
                let key = crate::journal::StepKey::Compaction {
                    turn: self.turn,
                    index: self.compactions_this_turn,
                };
                futures::future::Either::Right(Box::pin(journaled(journal, key, summarize)))
            }
        };
        // The summary request, as a model request of the turn (OpenTelemetry's GenAI names).
        let span = tracing::debug_span!(
            parent: &self.turn_span,
            "compact",
            reason = ?plan.reason,
            tokens_before = plan.tokens_before,
            replaced = plan.cut,
            gen_ai.operation.name = "chat",
            gen_ai.request.model = %summarizer_model,
            otel.name = %format_args!("chat {summarizer_model}"),
            otel.kind = "client",
        );
        let summarize = tracing::Instrument::instrument(summarize, span);
        let cancel = self.plan.cancel.clone();
        let turn = self.turn;
        let outcome = async move {
            tokio::select! {
                biased;
                () = cancel.cancelled() => None,
                summary = summarize => Some(summary),
            }
        };
        ctx.spawn(outcome.into_actor(self).map(move |outcome, this, ctx| {
            if this.ended || this.turn != turn {
                return;
            }
            match outcome {
                None => this.cancelled(ctx),
                Some(Ok(summary)) => this.compacted(plan, summary, ctx),
                Some(Err(error)) => {
                    let reason = match &plan.refusal {
                        Some(refusal) => {
                            format!("{error} (the provider had refused the request: {refusal})")
                        }
                        None => error.to_string(),
                    };
                    let messages = this.take_messages();
                    this.end(Err(Error::Compaction { reason, messages }), ctx);
                }
            }
        }));
    }

    fn compacted(&mut self, plan: Plan, summary: Written, ctx: &mut Context<Self>) {
        let agent = Arc::clone(&self.plan.agent);
        let cost = match &agent.compaction.summarizer {
            Some(summarizer) => {
                self.summarizer_usage += summary.usage;
                self.summarizer_price = summarizer.model.price;
                summarizer
                    .model
                    .price
                    .map(|price| price.cost(&summary.usage))
            }
            None => {
                self.usage += summary.usage;
                self.cost_of(&summary.usage)
            }
        };
        if let Some(parent) = &self.plan.parent {
            parent.spend(&summary.usage, cost);
        }
        let text = compaction::summary_text(&plan.facts, &summary.summary);
        let summary_tokens = agent
            .compaction
            .counter
            .count_message(&Message::User(compaction::summary_message(&text)));
        let transcript = &self.plan.messages;
        self.view = Some(View::new(
            crate::agent::compaction::Summary::new(text.clone(), plan.cut),
            transcript,
        ));
        self.anchor_from = transcript.len();
        self.emit(|| {
            Event::Compaction(CompactionEvent {
                turn: self.turn,
                reason: plan.reason,
                replaced: plan.cut,
                summary: text.clone(),
                tokens_before: plan.tokens_before,
                tokens_after: plan.kept_tokens.saturating_add(summary_tokens),
                usage: summary.usage,
            })
        });
        self.generate(ctx);
    }
}

/// The summary through `journal`: its record, or `summarize`'s result, recorded.
async fn journaled(
    journal: Arc<dyn crate::journal::Journal>,
    key: crate::journal::StepKey,
    summarize: impl std::future::Future<Output = Result<Written, SummaryError>> + Send + 'static,
) -> Result<Written, SummaryError> {
    use crate::journal::{NotRecorded, StepError, StepWork};
    let failure = Arc::new(std::sync::Mutex::new(None));
    let slot = Arc::clone(&failure);
    let work = async move {
        let failed = match summarize.await {
            Ok(summary) => match serde_json::to_value(&summary) {
                Ok(value) => return Ok(crate::journal::seal(value)),
                Err(error) => SummaryError::Unrecordable(error.to_string()),
            },
            Err(error) => error,
        };
        *slot
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(failed);
        Err(NotRecorded)
    };
    let step = key.to_string();
    match journal.step(key, StepWork::new(work)).await {
        Ok(record) => crate::journal::unseal(record, &step)
            .and_then(|value| {
                serde_json::from_value::<Written>(value).map_err(|error| crate::journal::Error {
                    step: step.clone(),
                    reason: format!("what it holds is not a summary ({error})"),
                })
            })
            .map_err(|error| SummaryError::Unrecordable(error.to_string())),
        Err(StepError::NotRecorded) => Err(failure
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
            .unwrap_or(SummaryError::Generator(generator::Error::IncompleteStream))),
        Err(StepError::Journal(error)) => Err(SummaryError::Unrecordable(error.to_string())),
    }
}
