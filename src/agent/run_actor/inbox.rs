//! The run's inbox: steering and follow-up messages queued from outside (`Run::steer`,
//! `Run::follow_up`) join the transcript after a batch, or when the run would end. In a
//! journaled run each of those points is a step ([`StepKey::Inbox`]): a run picked up from its
//! journal takes the messages recorded there, not whatever is queued now.

use std::sync::Arc;

use actix::fut::ActorFutureExt;
use actix::{AsyncContext, Context, WrapFuture};

use super::RunActor;
use crate::agent::{Delivery, Error};
use crate::journal::{seal, unseal, InboxRecord, StepError, StepKey, StepWork};
use crate::journal::{Error as JournalError, Journal};
use crate::message::AssistantMessage;

impl RunActor {
    /// After a batch: the steering queued while it ran joins the transcript, then the next turn.
    pub(super) fn after_batch(&mut self, ctx: &mut Context<Self>) {
        match self.plan.journal.clone() {
            None => {
                let messages = self.plan.channel.take_steering();
                if !messages.is_empty() {
                    self.deliver(Delivery::Steer, messages);
                }
                self.request_turn(ctx);
            }
            Some(journal) => self.journaled_inbox(journal, None, ctx),
        }
    }

    /// The run would end here with `final_message`, unless steering or follow-up messages are
    /// queued: then they join the transcript and the run goes on.
    pub(super) fn finish_or_continue(
        &mut self,
        final_message: AssistantMessage,
        ctx: &mut Context<Self>,
    ) {
        match self.plan.journal.clone() {
            None => match self.plan.channel.take_before_end() {
                None => self.succeed(final_message, ctx),
                Some((delivery, messages)) => {
                    self.deliver(delivery, messages);
                    self.request_turn(ctx);
                }
            },
            Some(journal) => self.journaled_inbox(journal, Some(final_message), ctx),
        }
    }

    /// The inbox as a step of `journal`: after a batch (`ending` is `None`), or when the run
    /// would end with the message in `ending`.
    fn journaled_inbox(
        &mut self,
        journal: Arc<dyn Journal>,
        ending: Option<AssistantMessage>,
        ctx: &mut Context<Self>,
    ) {
        let key = StepKey::Inbox {
            turn: self.turn,
            ending: ending.is_some(),
        };
        let step = key.to_string();
        let channel = Arc::clone(&self.plan.channel);
        let at_end = ending.is_some();
        let work = StepWork::new(async move {
            let taken = if at_end {
                channel.take_before_end()
            } else {
                let messages = channel.take_steering();
                (!messages.is_empty()).then_some((Delivery::Steer, messages))
            };
            let record = taken.map(|(delivery, messages)| InboxRecord { delivery, messages });
            Ok(seal(serde_json::to_value(record).unwrap_or_default()))
        });
        ctx.spawn(
            journal
                .step(key, work)
                .into_actor(self)
                .map(move |recorded, this, ctx| {
                    let record = match recorded {
                        Ok(record) => unseal(record, &step).and_then(|value| {
                            serde_json::from_value::<Option<InboxRecord>>(value).map_err(|error| {
                                JournalError {
                                    step: step.clone(),
                                    reason: format!(
                                        "what it holds is not an inbox's messages ({error})"
                                    ),
                                }
                            })
                        }),
                        // Nothing could be taken: as if nothing was queued.
                        Err(StepError::NotRecorded) => Ok(None),
                        Err(StepError::Journal(error)) => Err(error),
                    };
                    match (record, ending) {
                        (Ok(Some(record)), _) => {
                            this.deliver(record.delivery, record.messages);
                            this.request_turn(ctx);
                        }
                        (Ok(None), Some(final_message)) => this.succeed(final_message, ctx),
                        (Ok(None), None) => this.request_turn(ctx),
                        (Err(source), _) => {
                            let messages = this.take_messages();
                            this.end(Err(Error::Journal { source, messages }), ctx);
                        }
                    }
                }),
        );
    }
}
