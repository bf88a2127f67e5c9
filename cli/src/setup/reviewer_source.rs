//! Where `--approve auto`'s reviewer comes from: its own provider, server and model, each the
//! session's unless a `--reviewer-…` flag names another, and a small model by default.

use std::sync::Arc;

use crate::args::ProviderKind;
use crate::error::CliError;
use crate::settings::Settings;
use crate::setup::reviewer::Reviewer;

/// The largest policy file read: 16 KiB (it goes with every review).
const MAX_POLICY_BYTES: u64 = 16 * 1024;

/// The reviewer's model when none is named: a small one of the provider's.
fn small_model(kind: Option<ProviderKind>, settings: &Settings) -> Option<String> {
    // A local server serves the models it has: the session's own is the one sure to be there.
    if settings.base_url.is_some() && settings.reviewer.base_url.is_none() {
        return settings.model.clone();
    }
    match kind {
        Some(ProviderKind::Anthropic) => Some("claude-haiku-4-5".to_owned()),
        Some(ProviderKind::Openai | ProviderKind::OpenaiResponses) | None => {
            Some("gpt-5-mini".to_owned())
        }
    }
}

/// The reviewer `settings` describe.
///
/// # Errors
/// A usage error when no model can be reached (a scripted session names no provider).
pub(crate) fn reviewer(settings: &Settings) -> Result<Reviewer, CliError> {
    let chosen = &settings.reviewer;
    if settings.script.is_some() && chosen.base_url.is_none() && chosen.provider.is_none() {
        return Err(CliError::usage(
            "--approve auto needs a reviewer model, and a scripted session has no provider to ask: give --reviewer-base-url URL (and --reviewer-model ID)",
        ));
    }
    let mut own = settings.clone();
    own.script = None;
    own.web_search = None;
    own.reasoning_effort = None;
    own.temperature = None;
    own.max_output_tokens = None;
    if let Some(provider) = chosen.provider {
        own.provider = Some(provider);
    }
    if let Some(base_url) = &chosen.base_url {
        own.base_url = Some(base_url.clone());
    }
    own.model = chosen
        .model
        .clone()
        .or_else(|| small_model(own.provider, settings));
    // One try: the review's own timeout bounds it, and a failure goes to the person at once.
    let retry = golato::generator::RetryPolicy {
        max_retries: 0,
        ..Default::default()
    };
    let (generator, model, _) = crate::setup::provider::from_args_retrying(&own, Some(retry))
        .map_err(|error| CliError::usage(format!("--approve auto's reviewer: {error}")))?;
    let network = match (&settings.sandbox.domains, settings.sandbox.allow_network) {
        (Some(_), _) => "the allowed domains only, through golato's proxy",
        (None, true) => "any host",
        (None, false) => "none",
    };
    let context = serde_json::json!({
        "working_directory": settings.cwd.display().to_string(),
        "sandbox": settings.sandbox.mode.to_string(),
        "network": network,
    });
    let policy = match chosen.policy.as_deref() {
        None => None,
        Some(text) => Some(match text.strip_prefix('@') {
            Some(path) => {
                crate::setup::prompt::read_bounded(std::path::Path::new(path), MAX_POLICY_BYTES)
                    .map_err(|error| {
                        CliError::usage(format!("--reviewer-policy: cannot read {path}: {error}"))
                    })?
            }
            None => text.to_owned(),
        }),
    };
    Ok(Reviewer::new(
        Arc::clone(&generator),
        model,
        chosen.timeout,
        chosen.max_tokens,
        context,
    )
    .with_policy(policy))
}
