//! The Restate workflow a durable run is: `GolatoRun`, keyed by run ID. Its `run` handler
//! runs once per ID; its shared handlers give the outcome and take the messages the run's inbox
//! delivers (see [`crate::inbox`]).

use std::sync::Arc;

use restate_sdk::prelude::*;

use super::journal::{Driver, RestateJournal};
use super::publish::Publisher;
use super::slots::{slot_name, Delivery, Slot};
use super::{Outcome, Submission};
use golato::agent::Agent;

/// The state key holding a finished run's outcome.
const OUTCOME: &str = "outcome";

/// The object's handlers, bound to the worker's agent.
pub(crate) struct RunObject {
    pub(crate) agent: Arc<Agent>,
    /// What subagents' runs are made of, when this worker runs them.
    pub(crate) subagents: Option<Arc<golato::subagent::Config>>,
    pub(crate) events: Option<EventsTo>,
}

impl RunObject {
    /// The agent that runs `submission`: the worker's, or for a subagent's run the one its
    /// `task` call asked for; `Err` says why such a run cannot run here.
    fn agent_for(&self, submission: &Submission) -> Result<Arc<Agent>, String> {
        let Some(child) = &submission.child else {
            return Ok(Arc::clone(&self.agent));
        };
        let Some(config) = &self.subagents else {
            return Err("this worker runs no subagents' runs: start every worker with the same tools, `task` among them (golato serve --tools …,task)".to_owned());
        };
        golato::subagent::child_agent(config, child)
            .map(Arc::new)
            .map_err(|error| error.to_string())
    }
}

/// Where a worker publishes its runs' events.
#[derive(Debug, Clone)]
pub(crate) struct EventsTo {
    pub(crate) ingress: reqwest::Url,
    pub(crate) http: reqwest::Client,
}

// A run's outcome is kept 365 days after it ended: the same ID submitted again within them
// gives that outcome (after them, the ID names a new run).
#[restate_sdk::workflow(
    name = "GolatoRun",
    client_visibility = "pub(crate)",
    workflow_completion_retention = "365 days"
)]
impl RunObject {
    /// Runs the submitted prompt to its end, journaling every model turn and tool call result
    /// in the invocation. Restate runs it once per ID (a second submission attaches to it).
    #[handler]
    async fn run(
        &self,
        ctx: WorkflowContext<'_>,
        submission: Json<Submission>,
    ) -> Result<Json<Outcome>, HandlerError> {
        let Json(submission) = submission;
        let run_id = ctx.key().to_owned();
        let agent = match self.agent_for(&submission) {
            Ok(agent) => agent,
            Err(why) => {
                tracing::warn!(run = %run_id, %why, "a subagent's run was refused");
                let outcome = Outcome::refused(run_id, why);
                ctx.set(OUTCOME, Json(outcome.clone()));
                return Ok(Json(outcome));
            }
        };
        let (journal, requests) = RestateJournal::new(run_id.clone());
        let run = agent.start_journaled(submission.into_input(), Arc::new(journal));
        let token = run.cancellation_token();
        // The handler's future is dropped when the worker loses its invocation (the server went
        // away, the invocation was suspended or killed): the run must stop with it.
        let _stop_with_invocation = token.clone().drop_guard();
        let mut driver = Driver::new(&ctx, requests);
        let mut publisher = self
            .events
            .as_ref()
            .map(|to| Publisher::new(to.http.clone(), &to.ingress, &run_id));
        // Events are read (and sent) only when they are published: otherwise the run does
        // not build them at all.
        let finished = async {
            match publisher.as_mut() {
                Some(publisher) => publisher.forward(run).await,
                None => run.finish().await,
            }
        };
        let result = tracing::Instrument::instrument(
            driver.drive(finished, &token),
            tracing::info_span!("durable_run", run = %run_id),
        )
        .await;
        tracing::info!(
            run = %run_id,
            turns_asked = driver.turns_asked,
            entries_written = driver.entries_written,
            bytes_written = driver.bytes_written,
            events_sent = publisher.as_ref().map_or(0, |publisher| publisher.sent),
            event_batches = publisher.as_ref().map_or(0, |publisher| publisher.batches),
            events_lost = publisher.as_ref().map_or(0, |publisher| publisher.lost),
            "run ended"
        );
        drop(driver);
        let spent = publisher.as_ref().and_then(|publisher| publisher.spent);
        let outcome = Outcome::from_result(run_id, result, spent);
        ctx.set(OUTCOME, Json(outcome.clone()));
        Ok(Json(outcome))
    }

    /// The outcome of the run with this ID, if it ended.
    #[handler]
    async fn outcome(
        &self,
        ctx: SharedWorkflowContext<'_>,
    ) -> Result<Json<Option<Outcome>>, HandlerError> {
        Ok(Json(
            ctx.get::<Json<Outcome>>(OUTCOME)
                .await?
                .map(|Json(outcome)| outcome),
        ))
    }

    /// Completes slot `slot`'s promise with a posted message, for the inbox (which hands out
    /// the slots one at a time); `false` when the run had closed the slot first (it ended).
    /// Private to the ingress: a slot given out of turn would never be read.
    #[handler(ingress_private)]
    async fn deliver(
        &self,
        ctx: SharedWorkflowContext<'_>,
        delivery: Json<Delivery>,
    ) -> Result<Json<bool>, HandlerError> {
        let Json(Delivery { slot, post }) = delivery;
        let name = slot_name(slot);
        ctx.resolve_promise(
            &name,
            Json(Slot::Post {
                text: post.text,
                follow_up: post.follow_up,
            }),
        );
        // Whoever completed it first: this message, or the run closing its inbox.
        let taken = ctx.peek_promise::<Json<Slot>>(&name).await?;
        Ok(Json(matches!(taken, Some(Json(Slot::Post { .. })))))
    }
}
