//! A call as a step of the run's journal: the step's work starts the tool actor and waits for its
//! outcome; a result the journal recorded before is given to the batch without starting anything
//! (the replay decision).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use golato_actors::batch::{JobOutcome, Reporter};

use super::super::batch_calls::Spent;
use super::{start, CallOutcome, ToolSetup};
use crate::journal::{
    Error as JournalError, Journal, NotRecorded, RecordedCall, RecordedSpend, StepError, StepKey,
    StepWork,
};
use crate::message::ToolCall;

/// The call of `setup` as a step of the run's journal: the step's work starts the tool actor
/// (on this arbiter) and waits for its outcome; a result the journal recorded before is given
/// to the batch without starting anything.
pub(super) fn journaled(
    setup: ToolSetup,
    journal: Arc<dyn Journal>,
    turn: usize,
    reporter: Reporter<CallOutcome>,
) {
    let call = setup.call().clone();
    let key = StepKey::Call {
        turn,
        call_id: call.id.clone(),
    };
    let step = key.to_string();
    let index = setup.index;
    let host = setup.agent.host.clone();
    let arbiter = actix::Arbiter::current();
    // An outcome that is not recorded (the actor was lost) goes to the batch as it is.
    let unrecorded = Arc::new(std::sync::Mutex::new(None));
    let slot = Arc::clone(&unrecorded);
    let attempts = Arc::clone(&setup.shared);
    let batch = Arc::clone(&setup.shared);
    // Whether the call ran here: what a call that did not (its result recorded before) spent
    // is counted from the record.
    let ran_here = Arc::new(AtomicBool::new(false));
    let ran = Arc::clone(&ran_here);
    let work = move |attempt: u32| async move {
        ran.store(true, Ordering::SeqCst);
        attempts.set_attempt(index, attempt);
        let (forward, receiver) = Reporter::forwarding(index);
        if !arbiter.spawn_fn(move || start(setup, forward)) {
            return Err(NotRecorded);
        }
        let mut outcome = receiver.await.unwrap_or(JobOutcome::Lost);
        if let JobOutcome::Completed(outcome) = &mut outcome {
            if attempt > 1 {
                outcome.message.attempt = Some(attempt);
            }
            let recorded = RecordedCall {
                message: outcome.message.clone(),
                terminate: outcome.terminate,
                spent: attempts
                    .spent_by(index)
                    .filter(|spent| !spent.is_nothing())
                    .map(|spent| RecordedSpend {
                        usage: spent.usage,
                        cost: (!spent.unpriced).then_some(spent.cost),
                    }),
            };
            if let Ok(value) = serde_json::to_value(&recorded) {
                return Ok(crate::journal::seal(value));
            }
        }
        *slot
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(outcome);
        Err(NotRecorded)
    };
    // Asked for here, in the order the batch starts its calls (source order), not when a
    // task first polls it: an engine whose journal is positional needs the same order on every
    // replay.
    let recorded = journal.step(key, StepWork::with_attempt(work));
    host.runtime().spawn(async move {
        let outcome = match recorded.await {
            Ok(record) => match crate::journal::unseal(record, &step).and_then(|value| {
                serde_json::from_value::<RecordedCall>(value).map_err(|error| JournalError {
                    step: step.clone(),
                    reason: format!("what it holds is not a call's result ({error})"),
                })
            }) {
                Ok(recorded) => {
                    if let (Some(spent), false) = (recorded.spent, ran_here.load(Ordering::SeqCst))
                    {
                        batch.spend_recorded(&Spent::of(&spent.usage, spent.cost));
                    }
                    JobOutcome::Completed(CallOutcome {
                        message: recorded.message,
                        terminate: recorded.terminate,
                        journal_error: None,
                    })
                }
                Err(error) => failed_in_journal(&call, error),
            },
            Err(StepError::NotRecorded) => unrecorded
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .take()
                .unwrap_or(JobOutcome::Lost),
            Err(StepError::Journal(error)) => failed_in_journal(&call, error),
        };
        reporter.report(outcome);
    });
}

/// The outcome of a call the journal failed on: an error result saying so, and the failure for
/// the run actor, which ends the run once the batch is over.
pub(super) fn failed_in_journal(call: &ToolCall, error: JournalError) -> JobOutcome<CallOutcome> {
    let mut outcome = CallOutcome::error(call, error.to_string());
    outcome.journal_error = Some(Box::new(error));
    JobOutcome::Completed(outcome)
}
