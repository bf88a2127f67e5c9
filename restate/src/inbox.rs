//! Steering and follow-up messages for a durable run: the `GolatoInbox` virtual object (keyed by
//! run ID) keeps what clients posted until the run takes it at one of its inbox steps
//! ([`StepKey::Inbox`](golato::journal::StepKey::Inbox)). The run's handler takes them with a
//! Restate call, which its journal records: a replay gets the same messages at the same place.

use restate_sdk::prelude::*;

use golato::agent::event::Delivery;
use golato::journal::InboxRecord;
use golato::message::UserMessage;

/// The name of the inbox object, as registered.
pub const INBOX_OBJECT: &str = "GolatoInbox";

const STEERING: &str = "steering";
const FOLLOW_UPS: &str = "follow_ups";
const CLOSED: &str = "closed";

/// A message posted to a run.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct Post {
    pub(crate) text: String,
    pub(crate) follow_up: bool,
}

pub(crate) struct InboxObject;

#[restate_sdk::object(name = "GolatoInbox", client_visibility = "pub(crate)")]
impl InboxObject {
    /// Queues a message for the run; refused once the run has ended.
    #[handler]
    async fn post(&self, ctx: ObjectContext<'_>, post: Json<Post>) -> Result<(), HandlerError> {
        let Json(post) = post;
        if ctx.get::<bool>(CLOSED).await?.unwrap_or(false) {
            return Err(TerminalError::new_with_code(
                409,
                "the run has ended: nothing posted to it now is read; submit a new run (its outcome has the transcript to start from)",
            )
            .into());
        }
        let key = if post.follow_up { FOLLOW_UPS } else { STEERING };
        let mut queued = queued(&ctx, key).await?;
        queued.push(UserMessage::new(post.text));
        ctx.set(key, Json(queued));
        Ok(())
    }

    /// What the run takes at an inbox step: the steering queued; when it would end
    /// (`ending`), the steering, else the follow-ups, else nothing, and the inbox closes.
    #[handler]
    async fn take(
        &self,
        ctx: ObjectContext<'_>,
        ending: Json<bool>,
    ) -> Result<Json<Option<InboxRecord>>, HandlerError> {
        let Json(ending) = ending;
        let steering = queued(&ctx, STEERING).await?;
        if !steering.is_empty() {
            ctx.clear(STEERING);
            return Ok(Json(Some(InboxRecord {
                delivery: Delivery::Steer,
                messages: steering,
            })));
        }
        if !ending {
            return Ok(Json(None));
        }
        let follow_ups = queued(&ctx, FOLLOW_UPS).await?;
        if !follow_ups.is_empty() {
            ctx.clear(FOLLOW_UPS);
            return Ok(Json(Some(InboxRecord {
                delivery: Delivery::FollowUp,
                messages: follow_ups,
            })));
        }
        ctx.set(CLOSED, true);
        Ok(Json(None))
    }
}

async fn queued(ctx: &ObjectContext<'_>, key: &str) -> Result<Vec<UserMessage>, HandlerError> {
    Ok(ctx
        .get::<Json<Vec<UserMessage>>>(key)
        .await?
        .map(|Json(messages)| messages)
        .unwrap_or_default())
}
