//! The lints, computed at each sample from the actors' views and the lock table: a handler running
//! long, a mailbox stalled, a lease held while others wait, a silent run, an orphan call.

use std::time::Duration;

use super::view::{ActorView, Lint, LintKind, LockView};
use super::ConsoleConfig;

/// The lints' thresholds in microseconds.
pub(super) struct Limits {
    pub(super) handler: u64,
    pub(super) mailbox: u64,
    pub(super) lease: u64,
    pub(super) silent_run: u64,
}

impl Limits {
    pub(super) fn of(config: &ConsoleConfig) -> Limits {
        let us = |duration: Duration| u64::try_from(duration.as_micros()).unwrap_or(u64::MAX);
        Limits {
            handler: us(config.handler_threshold),
            mailbox: us(config.mailbox_threshold),
            lease: us(config.lease_threshold),
            silent_run: us(config.silent_run_threshold),
        }
    }
}

/// The lints of the flagged actors, and of the leases held too long while others wait.
pub(super) fn lints(
    notable: &[(ActorView, Vec<LintKind>)],
    locks: &[LockView],
    limits: &Limits,
) -> Vec<Lint> {
    let mut lints = Vec::new();
    let mut flag = |lint: LintKind, view: &ActorView, for_ms: u64, message: String| {
        lints.push(Lint {
            lint,
            actor: view.id,
            run: view.identity.run,
            call: view.identity.call.clone(),
            for_ms,
            message,
        });
    };
    for (view, flags) in notable {
        let label = view.label();
        for lint in flags {
            match lint {
                LintKind::HandlerRunning => flag(
                    *lint,
                    view,
                    view.for_ms,
                    format!("{label} has been {} for {} ms", view.activity, view.for_ms),
                ),
                LintKind::MailboxStalled => flag(
                    *lint,
                    view,
                    view.for_ms,
                    format!(
                        "{label} has {} messages waiting and handles none",
                        view.mailbox_depth
                    ),
                ),
                LintKind::SilentRun => {
                    let silent = view.since_event_ms.unwrap_or(view.age_ms);
                    flag(
                        *lint,
                        view,
                        silent,
                        format!("{label} has told no event for {silent} ms"),
                    );
                }
                LintKind::OrphanCall => flag(
                    *lint,
                    view,
                    view.age_ms,
                    format!(
                        "{label} is still alive and its run {} has ended",
                        view.identity.run.unwrap_or_default()
                    ),
                ),
                LintKind::LeaseHeld => {}
            }
        }
    }
    for lock in locks {
        let Some(holder) = &lock.holder else { continue };
        if lock.waiting.is_empty() || holder.for_ms.saturating_mul(1_000) <= limits.lease {
            continue;
        }
        if let Some((view, _)) = notable.iter().find(|(view, _)| view.id == holder.actor) {
            flag(
                LintKind::LeaseHeld,
                view,
                holder.for_ms,
                format!(
                    "{} has held {} for {} ms while {} wait",
                    view.label(),
                    lock.path,
                    holder.for_ms,
                    lock.waiting.len()
                ),
            );
        }
    }
    lints
}

pub(super) fn empty_lock(path: &str) -> LockView {
    LockView {
        path: path.to_owned(),
        holder: None,
        waiting: Vec::new(),
    }
}
