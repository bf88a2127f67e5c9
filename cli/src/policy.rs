//! The command hooks of the session's life that the command line fires itself
//! (`SessionStart`, `UserPromptSubmit`, `SessionEnd`); the tool calls' hooks and rules are
//! `golato::policy`'s hook.

use golato::message::{Content, UserMessage};
use golato::policy::{HookEvent, HookSession, Policy};
use serde_json::json;

use crate::CliError;

/// Fires `SessionStart` (`startup`, or `resume` when going on) and `UserPromptSubmit` for
/// `prompt`: a block stops the run before anything is sent; what the hooks add joins the
/// prompt as more text for the model.
pub(crate) async fn session_start(
    policy: &Policy,
    session: &HookSession,
    resumed: bool,
    prompt: Option<UserMessage>,
) -> Result<Option<UserMessage>, CliError> {
    if policy.hooks.is_empty() {
        return Ok(prompt);
    }
    let source = if resumed { "resume" } else { "startup" };
    let started = policy
        .fire(
            HookEvent::SessionStart,
            source,
            session,
            json!({ "source": source }),
        )
        .await;
    note(started.note.as_deref());
    let mut context: Vec<String> = started.context.into_iter().collect();
    let Some(mut prompt) = prompt else {
        return Ok(None);
    };
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
    context.extend(submitted.context);
    if !context.is_empty() {
        prompt.content.push(Content::text(context.join("\n")));
    }
    Ok(Some(prompt))
}

/// Fires `SessionEnd` once the run is over.
pub(crate) async fn session_end(policy: &Policy, session: &HookSession) {
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
        eprintln!("golato: {}", crate::shown::visible(text));
    }
}
