//! Steering and follow-up messages for a durable run, delivered without costing the run an
//! invocation: each accepted message completes one of the run workflow's durable promises,
//! `post-0`, `post-1`, ..., which the run peeks at each of its inbox steps
//! ([`StepKey::Inbox`](golato::journal::StepKey::Inbox)); a peek is an entry of the run's own
//! journal, so a replay gets the same messages at the same place.
//!
//! The `GolatoInbox` virtual object (keyed by run ID) hands out the slots, one message at a
//! time (its handler is exclusive): it asks the run workflow's `deliver` to complete the next
//! promise and learns whether the message got it. The run closes its inbox where it would end
//! by completing the next promise itself, with [`Slot::Closed`], and then reads it back: a
//! promise is completed once, so either the message came first (the run goes on with it) or
//! the run did (the message is refused, and so is every later one). Nothing posted is ever
//! dropped unread without its sender being told.

use restate_sdk::prelude::*;

use crate::slots::Delivery;
use crate::slots::Post;

/// The name of the inbox object, as registered.
pub const INBOX_OBJECT: &str = "GolatoInbox";

/// The most messages one run takes; a post beyond is refused.
pub(crate) const MAX_POSTS: u64 = 100_000;

const NEXT_SLOT: &str = "next_slot";
const CLOSED: &str = "closed";

fn ended() -> HandlerError {
    TerminalError::new_with_code(
        409,
        "the run has ended: nothing posted to it now is read; submit a new run (its outcome has the transcript to start from)",
    )
    .into()
}

pub(crate) struct InboxObject;

#[restate_sdk::object(name = "GolatoInbox", client_visibility = "pub(crate)")]
impl InboxObject {
    /// Gives the message the run's next slot; refused once the run has ended.
    #[handler]
    async fn post(&self, ctx: ObjectContext<'_>, post: Json<Post>) -> Result<(), HandlerError> {
        let Json(post) = post;
        if ctx.get::<bool>(CLOSED).await?.unwrap_or(false) {
            return Err(ended());
        }
        let slot = ctx.get::<u64>(NEXT_SLOT).await?.unwrap_or(0);
        if slot >= MAX_POSTS {
            return Err(TerminalError::new_with_code(
                429,
                format!("the run has taken {MAX_POSTS} messages, the most one run takes; submit a new run"),
            )
            .into());
        }
        let Json(taken) = ctx
            .workflow_client::<super::object::RunObjectClient>(ctx.key().to_owned())
            .deliver(Json(Delivery { slot, post }))
            .call()
            .await?;
        if !taken {
            ctx.set(CLOSED, true);
            return Err(ended());
        }
        ctx.set(NEXT_SLOT, slot + 1);
        Ok(())
    }
}
