//! The Restate virtual object a durable run is: `GolatoRun`, keyed by run ID.

use std::sync::Arc;

use restate_sdk::prelude::*;

use super::journal::{Driver, RestateJournal};
use super::{Outcome, Submission};
use golato::agent::Agent;
use golato::message::UserMessage;

/// The state key holding a finished run's outcome.
const OUTCOME: &str = "outcome";

/// The object's handlers, bound to the worker's agent.
pub(crate) struct RunObject {
    pub(crate) agent: Arc<Agent>,
}

#[restate_sdk::object(name = "GolatoRun", client_visibility = "pub(crate)")]
impl RunObject {
    /// Runs the submitted prompt to its end (or gives the outcome of the run this ID already
    /// ran), journaling every model turn and tool call result in the invocation.
    #[handler]
    async fn run(
        &self,
        ctx: ObjectContext<'_>,
        submission: Json<Submission>,
    ) -> Result<Json<Outcome>, HandlerError> {
        if let Some(Json(outcome)) = ctx.get::<Json<Outcome>>(OUTCOME).await? {
            return Ok(Json(outcome));
        }
        let Json(submission) = submission;
        let run_id = ctx.key().to_owned();
        let (journal, requests) = RestateJournal::new(run_id.clone());
        let run = self
            .agent
            .start_journaled(UserMessage::new(submission.prompt), Arc::new(journal));
        let token = run.cancellation_token();
        // The handler's future is dropped when the worker loses its invocation (the server went
        // away, the invocation was suspended or killed): the run must stop with it.
        let _stop_with_invocation = token.clone().drop_guard();
        let mut driver = Driver::new(&ctx, requests);
        let result = tracing::Instrument::instrument(
            driver.drive(run.finish(), &token),
            tracing::info_span!("durable_run", run = %run_id),
        )
        .await;
        tracing::info!(
            run = %run_id,
            turns_asked = driver.turns_asked,
            entries_written = driver.entries_written,
            bytes_written = driver.bytes_written,
            "run ended"
        );
        drop(driver);
        let outcome = Outcome::from_result(run_id, result);
        ctx.set(OUTCOME, Json(outcome.clone()));
        Ok(Json(outcome))
    }

    /// The outcome of the run with this ID, if it ended.
    #[handler]
    async fn outcome(
        &self,
        ctx: SharedObjectContext<'_>,
    ) -> Result<Json<Option<Outcome>>, HandlerError> {
        Ok(Json(
            ctx.get::<Json<Outcome>>(OUTCOME)
                .await?
                .map(|Json(outcome)| outcome),
        ))
    }
}
