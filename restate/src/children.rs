//! Subagents of durable runs: each child a `task` call starts is a durable run of its own,
//! keyed under its parent's ([`child_run_id`]), submitted through the ingress by the call.
//!
//! The call is a step of the parent's journal like any other. While it runs, the child goes on
//! on the server whatever happens to the parent's worker: a worker that dies mid-call takes the
//! call's attempt with it, not the child; the call's next attempt (on another worker) submits
//! the same ID, which attaches to the child already running (or ended) instead of starting
//! another. So a child runs exactly once, its recorded steps once each, as any durable run.

use std::time::Duration;

use futures::future::BoxFuture;
use futures::StreamExt as _;

use golato::subagent::{Child, ChildOutcome, Runner};
use golato::tool::{BoxError, ToolContext};

use super::{check_run_id, Client, Error, Outcome, Submission, MAX_RUN_ID};

/// How long the events of a child that ended may take to arrive after its outcome: the child's
/// worker publishes them before it answers, so this bounds only an ingress that loses them.
const LAST_EVENTS_WAIT: Duration = Duration::from_secs(10);

/// How often a cancel that found no child yet is tried again.
const CANCEL_AGAIN: Duration = Duration::from_millis(250);

/// The ID of the durable run a `task` call of run `parent` starts: `PARENT.TURN.CALL`, the turn
/// whose message made the call and the call's ID (a model may give the same ID in two turns).
/// A call ID that is not made of a run ID's characters, or an ID that would pass
/// [`MAX_RUN_ID`], becomes a hash of the whole, so every call has one ID and keeps it.
///
/// ```
/// use golato_restate::child_run_id;
/// assert_eq!(child_run_id("run-7", 2, "toolu_01A"), "run-7.2.toolu_01A");
/// assert!(child_run_id("run-7", 2, "call/with spaces").starts_with("run-7.2.h"));
/// ```
pub fn child_run_id(parent: &str, turn: usize, call_id: &str) -> String {
    let plain = format!("{parent}.{turn}.{call_id}");
    if check_run_id(&plain).is_ok() {
        return plain;
    }
    let hashed = format!("h{:016x}", fnv1a(plain.as_bytes()));
    let keep = MAX_RUN_ID.saturating_sub(hashed.len() + 1);
    let prefix: String = format!("{parent}.{turn}")
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'))
        .take(keep)
        .collect();
    format!("{prefix}.{hashed}")
}

/// FNV-1a, 64 bits: stable across builds and platforms (std's hasher is not promised to be),
/// so a call keeps its child's ID on every worker and version.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Runs the children of durable runs as durable runs of their own (see the module's docs):
/// give it as [`subagent::Config::runner`](golato::subagent::Config::runner) of the workers'
/// `task` tool, and the same subagent configuration to the workers
/// ([`Worker::with_subagents`](crate::Worker::with_subagents)), which build each child's agent
/// from it.
///
/// Its client needs the admin API ([`Client::with_admin`]): a cancelled call cancels its
/// child there. The workers must publish their runs' events
/// ([`Worker::publish_events`](crate::Worker::publish_events)): a child's events reach its
/// parent's that way.
#[derive(Debug, Clone)]
pub struct DurableChildren {
    client: Client,
}

impl DurableChildren {
    /// Children submitted through `client`'s ingress and cancelled through its admin API.
    ///
    /// # Errors
    /// [`Error::BadUrl`] when the client has no admin API.
    pub fn new(client: Client) -> Result<DurableChildren, Error> {
        if !client.has_admin() {
            return Err(Error::BadUrl {
                url: String::new(),
                reason: "durable subagents are cancelled through the server's admin API: give the client one (Client::with_admin, or --restate-admin)".to_owned(),
            });
        }
        Ok(DurableChildren { client })
    }
}

impl Runner for DurableChildren {
    /// The call's next attempt attaches to the same child, which goes on from its journal.
    fn replay(&self) -> golato::tool::Replay {
        golato::tool::Replay::Safe
    }

    fn run(
        &self,
        child: Child,
        ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ChildOutcome, BoxError>> {
        let client = self.client.clone();
        Box::pin(async move {
            let (Some(parent), Some(turn)) = (ctx.run_key(), ctx.turn()) else {
                return Err(
                    "durable subagents run only under a durable run (golato serve); this run has no journal"
                        .into(),
                );
            };
            let id = child_run_id(parent, turn, &ctx.call().id);
            tracing::info!(child = %id, attempt = ctx.attempt(), "subagent submitted as a durable run");
            let outcome = follow(&client, &id, child, &ctx).await?;
            Ok(child_outcome(outcome))
        })
    }
}

/// Submits (or attaches to) child `id`, forwarding its events to the call until it ended, and
/// cancelling it when the call is cancelled.
async fn follow(
    client: &Client,
    id: &str,
    child: Child,
    ctx: &ToolContext,
) -> Result<Outcome, BoxError> {
    let mut submission = Submission::new(child.prompt.clone());
    submission.child = Some(child);
    let mut outcome = std::pin::pin!(client.submit_with(id, &submission));
    let mut events = std::pin::pin!(client.watch(id, 0));
    let mut watching = true;
    let mut cancelled = false;
    let mut cancel_found = false;
    // A cancel that came before the child reached the server finds nothing to cancel: it is
    // tried again until it finds the child (or the child ended).
    let mut cancel_again = tokio::time::interval(CANCEL_AGAIN);
    let outcome = loop {
        tokio::select! {
            outcome = &mut outcome => break outcome?,
            event = events.next(), if watching => match event {
                Some(Ok(event)) => ctx.forward(event.event),
                Some(Err(error)) => {
                    tracing::warn!(child = %id, %error, "the subagent's events are not shown: reading them failed");
                    watching = false;
                }
                None => watching = false,
            },
            () = ctx.cancelled(), if !cancelled => {
                cancelled = true;
                cancel_again.reset_immediately();
            }
            _ = cancel_again.tick(), if cancelled && !cancel_found => {
                match client.cancel(id).await {
                    Ok(found) => cancel_found = found,
                    Err(error) => {
                        tracing::warn!(child = %id, %error, "the subagent could not be cancelled");
                        cancel_found = true;
                    }
                }
            }
        }
    };
    // Its last events (published before its outcome) come after it here: the call's end must
    // not come before them.
    if watching {
        let rest = async {
            while let Some(Ok(event)) = events.next().await {
                ctx.forward(event.event);
            }
        };
        if tokio::time::timeout(LAST_EVENTS_WAIT, rest).await.is_err() {
            tracing::warn!(child = %id, "the subagent's last events did not arrive; its answer is whole");
        }
    }
    Ok(outcome)
}

fn child_outcome(outcome: Outcome) -> ChildOutcome {
    let Outcome {
        messages,
        final_message,
        error,
        usage,
        cost,
        ..
    } = outcome;
    match (final_message, error) {
        (Some(answer), None) => ChildOutcome::finished(messages, answer),
        (_, error) => ChildOutcome::failed(
            messages,
            error.unwrap_or_else(|| "it gave no answer".to_owned()),
        ),
    }
    .with_spent(usage, cost)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_call_gets_one_valid_id_under_its_parent() {
        assert_eq!(child_run_id("p", 1, "t1"), "p.1.t1");
        let odd = child_run_id("p", 1, "a/b");
        assert!(check_run_id(&odd).is_ok(), "{odd}");
        assert_ne!(odd, child_run_id("p", 1, "a_b"));
        assert_eq!(odd, child_run_id("p", 1, "a/b"));
        assert_ne!(child_run_id("p", 1, "t1"), child_run_id("p", 2, "t1"));
        let long = child_run_id(&"r".repeat(MAX_RUN_ID), 3, "t1");
        assert!(check_run_id(&long).is_ok(), "{long}");
        assert_eq!(long.len(), MAX_RUN_ID);
        let grandchild = child_run_id(&child_run_id("p", 1, "t1"), 2, "t7");
        assert_eq!(grandchild, "p.1.t1.2.t7");
    }
}
