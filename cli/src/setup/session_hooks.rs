//! The command hooks of the session's life that the command line fires itself
//! (`SessionStart`, `UserPromptSubmit`, `Stop`, `SessionEnd`); the tool calls' hooks, the
//! rules, `Notification` and `PreCompact` are `golato::policy`'s hook.

use golato::message::{Content, UserMessage};
use golato::policy::{CallPolicy, HookEvent, HookSession};
use serde_json::json;

use crate::error::CliError;

/// Fires `SessionStart` (`startup`, or `resume` when going on); what the hooks add, for the
/// first prompt.
pub(crate) async fn session_start(
    policy: &CallPolicy,
    session: &HookSession,
    resumed: bool,
) -> Option<String> {
    let source = if resumed { "resume" } else { "startup" };
    // Nothing to fire (and no process to start) without a hook for the event.
    policy.hooks_for(HookEvent::SessionStart, source).next()?;
    let started = policy
        .fire(
            HookEvent::SessionStart,
            source,
            session,
            json!({ "source": source }),
        )
        .await;
    note(started.note.as_deref());
    started.context
}

/// `prompt` with `context` (from `SessionStart` hooks) as more text for the model.
pub(crate) fn with_context(mut prompt: UserMessage, context: Option<String>) -> UserMessage {
    if let Some(context) = context {
        prompt.content.push(Content::text(context));
    }
    prompt
}

/// Fires `UserPromptSubmit` for `prompt`: a block refuses it (nothing is sent), what the hooks
/// add joins it as more text for the model.
pub(crate) async fn prompt_submit(
    policy: &CallPolicy,
    session: &HookSession,
    mut prompt: UserMessage,
) -> Result<UserMessage, CliError> {
    if policy
        .hooks_for(HookEvent::UserPromptSubmit, "")
        .next()
        .is_none()
    {
        return Ok(prompt);
    }
    let submitted = policy
        .fire(
            HookEvent::UserPromptSubmit,
            "",
            session,
            json!({ "prompt": prompt.text() }),
        )
        .await;
    note(submitted.note.as_deref());
    if let Some(reason) = submitted.block {
        return Err(CliError::usage(format!(
            "a UserPromptSubmit hook blocked the prompt: {reason}"
        )));
    }
    if let Some(context) = submitted.context {
        prompt.content.push(Content::text(context));
    }
    Ok(prompt)
}

/// How many times Stop hooks may send the model on in one `golato run`.
pub(crate) const MAX_STOP_CONTINUATIONS: usize = 8;

/// Fires `Stop` once the model has answered; the reason to go on when a hook blocks the
/// stop (exit 2), unless the hooks already sent the model on [`MAX_STOP_CONTINUATIONS`]
/// times (`stop_hook_active` tells a hook it did).
pub(crate) async fn stop(
    policy: &CallPolicy,
    session: &HookSession,
    sent_on: usize,
) -> Option<String> {
    policy.hooks_for(HookEvent::Stop, "").next()?;
    let fired = policy
        .fire(
            HookEvent::Stop,
            "",
            session,
            json!({ "stop_hook_active": sent_on > 0 }),
        )
        .await;
    note(fired.note.as_deref());
    let reason = fired.block?;
    if sent_on >= MAX_STOP_CONTINUATIONS {
        note(Some(&format!(
            "a Stop hook sent the model on {MAX_STOP_CONTINUATIONS} times; the run ends here ({reason})"
        )));
        return None;
    }
    Some(reason)
}

/// Fires `SessionEnd` once the run is over.
pub(crate) async fn session_end(policy: &CallPolicy, session: &HookSession) {
    if policy.hooks_for(HookEvent::SessionEnd, "").next().is_none() {
        return;
    }
    let ended = policy
        .fire(
            HookEvent::SessionEnd,
            "",
            session,
            json!({ "reason": "exit" }),
        )
        .await;
    note(ended.note.as_deref());
}

fn note(text: Option<&str>) {
    if let Some(text) = text {
        eprintln!("golato: {}", crate::view::shown::visible(text));
    }
}
