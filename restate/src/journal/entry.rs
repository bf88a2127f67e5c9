//! A step's entries as the run's Restate journal keeps them: their shape (started, running,
//! done), the `ctx.run` family a step's key names, and recording one (read back as plain JSON, so
//! one this golato cannot read is the run's clear error).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use futures::future::BoxFuture;
use golato::journal::StepKey;
use restate_sdk::prelude::*;
use serde_json::Value;

/// One journal entry (see the module's docs).
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(tag = "entry", rename_all = "snake_case")]
pub(super) enum Entry {
    Started {
        steps: Vec<String>,
    },
    /// Work was still running (see [`Driver::heartbeat`]); a replay skips it.
    Running,
    Done {
        step: String,
        value: Value,
    },
}

/// The `ctx.run` name of a step's entries.
pub(super) fn family(key: &StepKey) -> String {
    match key {
        StepKey::Input => "input".to_owned(),
        StepKey::Turn { turn } => format!("turn-{turn}"),
        // A call's approval is asked while its batch runs: the batch's family.
        StepKey::Call { turn, .. }
        | StepKey::Approval { turn, .. }
        | StepKey::Hook { turn, .. } => {
            format!("batch-{turn}")
        }
        StepKey::Inbox { turn, .. } => format!("inbox-{turn}"),
        StepKey::Compaction { turn, index } => format!("compaction-{turn}-{index}"),
    }
}

/// Whether step `name` is a person's answer (`turn-N/approval-ID`, see `StepKey::Approval`).
pub(super) fn is_approval(name: &str) -> bool {
    name.split_once('/')
        .is_some_and(|(_, step)| step.starts_with("approval-"))
}

/// Why an entry could not be recorded or read.
#[derive(Debug)]
pub(crate) enum Refusal {
    /// Restate refused it (a cancelled invocation: 409).
    Restate(TerminalError),
    /// The journal holds something this golato does not read there.
    Unreadable { family: String, reason: String },
}

impl From<TerminalError> for Refusal {
    fn from(error: TerminalError) -> Self {
        Refusal::Restate(error)
    }
}

/// Reads a journaled entry, or says what is wrong with it.
pub(super) fn parse_entry(value: Value) -> Result<Entry, String> {
    serde_json::from_value(value).map_err(|error| error.to_string())
}

/// Records `entry` under `family` in the invocation's journal: `(entry, true)` when it was
/// recorded now (the closure ran), `(recorded, false)` when the journal already held one there.
/// A free function, not a method: the future must not borrow the driver, which is not `Sync`.
/// Entries are journaled as plain JSON and read here, so that one this golato cannot read is a
/// run's clear error rather than the SDK's endless retries.
pub(super) async fn record<'a>(
    ctx: &'a WorkflowContext<'a>,
    family: String,
    entry: impl FnOnce() -> BoxFuture<'static, Entry> + Send + 'static,
) -> Result<(Entry, bool), Refusal> {
    let fresh = Arc::new(AtomicBool::new(false));
    let ran = Arc::clone(&fresh);
    let Json(value) = ctx
        .run(move || async move {
            ran.store(true, Ordering::SeqCst);
            Ok(Json(
                serde_json::to_value(entry().await).unwrap_or_default(),
            ))
        })
        .name(family.clone())
        .await?;
    let entry = parse_entry(value).map_err(|reason| Refusal::Unreadable { family, reason })?;
    Ok((entry, fresh.load(Ordering::SeqCst)))
}
