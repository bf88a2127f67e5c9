//! Which model `golato run` talks to: flags first, then the environment.

use std::sync::Arc;

use golato::generator::{
    anthropic, openai, Anthropic, Generator, Model, OpenAiChat, OpenAiResponses,
};

use crate::args::ProviderKind;
use crate::error::CliError;
use crate::settings::Settings;

const OPENAI_DEFAULT_MODEL: &str = "gpt-4o-mini";
const ANTHROPIC_DEFAULT_MODEL: &str = "claude-sonnet-4-5";

/// A real model client, chosen by `--provider`, `--model` and `--base-url`, falling back to
/// `OPENAI_BASE_URL`, `OPENAI_MODEL`, `ANTHROPIC_BASE_URL` and `ANTHROPIC_MODEL` (see
/// [`provider_kind`] for which provider).
///
/// # Errors
/// A usage error naming the variable to set when the key the provider needs is missing.
pub(crate) fn from_args(
    settings: &Settings,
) -> Result<(Arc<dyn Generator>, Model, Endpoint), CliError> {
    from_args_retrying(settings, None)
}

/// As [`from_args`], with `retry` in place of the clients' default (the reviewer tries once:
/// its own timeout bounds it, and a failure is told, never waited out).
pub(crate) fn from_args_retrying(
    settings: &Settings,
    retry: Option<golato::generator::RetryPolicy>,
) -> Result<(Arc<dyn Generator>, Model, Endpoint), CliError> {
    let kind = provider_kind(settings);
    if settings.web_search.is_some() && kind == ProviderKind::Openai {
        return Err(CliError::usage(
            "--web-search: OpenAI's Chat Completions API (--provider openai, and the servers that speak it) has no web search of its own, and golato scrapes no search engine; use --provider openai-responses or --provider anthropic, or read pages with the web_fetch tool (--tools …,web_fetch)",
        ));
    }
    match kind {
        ProviderKind::Openai | ProviderKind::OpenaiResponses => {
            let base_url = settings
                .base_url
                .clone()
                .or_else(|| env("OPENAI_BASE_URL"))
                .unwrap_or_else(|| openai::DEFAULT_BASE_URL.to_owned());
            let key = env("OPENAI_API_KEY");
            if key.is_none() && base_url.trim_end_matches('/') == openai::DEFAULT_BASE_URL {
                return Err(CliError::usage(
                    "no API key for OpenAI: set OPENAI_API_KEY, or point --base-url (or OPENAI_BASE_URL) at an OpenAI-compatible server such as Ollama (http://localhost:11434/v1), or use --provider anthropic with ANTHROPIC_API_KEY",
                ));
            }
            let model = model_id(settings, "OPENAI_MODEL", OPENAI_DEFAULT_MODEL);
            let endpoint = Endpoint {
                provider: if kind == ProviderKind::OpenaiResponses {
                    "openai-responses"
                } else {
                    "openai"
                },
                host: crate::view::header::host_of(&base_url),
            };
            let client: Arc<dyn Generator> = match (kind == ProviderKind::OpenaiResponses, retry) {
                (true, Some(retry)) => Arc::new(
                    OpenAiResponses::new(base_url, key)
                        .map_err(client_error)?
                        .with_retry(retry),
                ),
                (true, None) => {
                    Arc::new(OpenAiResponses::new(base_url, key).map_err(client_error)?)
                }
                (false, Some(retry)) => Arc::new(
                    OpenAiChat::new(base_url, key)
                        .map_err(client_error)?
                        .with_retry(retry),
                ),
                (false, None) => Arc::new(OpenAiChat::new(base_url, key).map_err(client_error)?),
            };
            Ok((
                client,
                with_model_settings(settings, Model::new(model), kind),
                endpoint,
            ))
        }
        ProviderKind::Anthropic => {
            let key = env("ANTHROPIC_API_KEY").ok_or_else(|| {
                CliError::usage(
                    "no API key for Anthropic: set ANTHROPIC_API_KEY, or use --provider openai",
                )
            })?;
            let base_url = settings
                .base_url
                .clone()
                .or_else(|| env("ANTHROPIC_BASE_URL"))
                .unwrap_or_else(|| anthropic::DEFAULT_BASE_URL.to_owned());
            let model = model_id(settings, "ANTHROPIC_MODEL", ANTHROPIC_DEFAULT_MODEL);
            let endpoint = Endpoint {
                provider: "anthropic",
                host: crate::view::header::host_of(&base_url),
            };
            let client = Anthropic::new(base_url, key).map_err(client_error)?;
            let client = match retry {
                Some(retry) => client.with_retry(retry),
                None => client,
            };
            Ok((
                Arc::new(client),
                with_model_settings(settings, Model::new(model), kind),
                endpoint,
            ))
        }
    }
}

/// The provider chosen and the host its client talks to.
pub(crate) struct Endpoint {
    pub(crate) provider: &'static str,
    pub(crate) host: String,
}

/// Which provider, never by surprise: `--provider` wins; a `--base-url` without one is an
/// OpenAI-compatible server (local servers speak that API); then a base URL set for one
/// provider in the environment picks it; only then does a key break the tie (Anthropic's alone
/// picks Anthropic). An exported `ANTHROPIC_API_KEY` no longer turns a `--base-url` run into
/// Anthropic requests to an OpenAI-compatible server.
fn provider_kind(settings: &Settings) -> ProviderKind {
    if let Some(kind) = settings.provider {
        return kind;
    }
    if settings.base_url.is_some() || env("OPENAI_BASE_URL").is_some() {
        return ProviderKind::Openai;
    }
    if env("ANTHROPIC_BASE_URL").is_some() {
        return ProviderKind::Anthropic;
    }
    if env("ANTHROPIC_API_KEY").is_some() && env("OPENAI_API_KEY").is_none() {
        return ProviderKind::Anthropic;
    }
    ProviderKind::Openai
}

/// A variable's value, treating an empty one as unset.
fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|value| !value.is_empty())
}

fn model_id(settings: &Settings, variable: &str, default: &str) -> String {
    settings
        .model
        .clone()
        .or_else(|| env(variable))
        .unwrap_or_else(|| default.to_owned())
}

/// `--temperature`, `--max-output-tokens` and `--reasoning-effort` in each API's terms.
/// The model `id` of the provider the flags choose, with their settings (temperature,
/// reasoning effort), as `/model` switches to it.
pub(crate) fn model_named(settings: &Settings, id: &str) -> Model {
    with_model_settings(settings, Model::new(id), provider_kind(settings))
}

fn with_model_settings(settings: &Settings, mut model: Model, kind: ProviderKind) -> Model {
    use crate::args::ReasoningEffort;
    use serde_json::json;
    // `from_args` refused it for a provider without one.
    if let (Some(domains), false) = (&settings.web_search, kind == ProviderKind::Openai) {
        model.web_search =
            Some(golato::generator::WebSearchTool::default().with_allowed_domains(domains.clone()));
    }
    model.temperature = settings.temperature;
    model.max_output_tokens = settings.max_output_tokens.map(std::num::NonZeroU32::get);
    let Some(effort) = settings.reasoning_effort else {
        return model;
    };
    let name = match effort {
        ReasoningEffort::Low => "low",
        ReasoningEffort::Medium => "medium",
        ReasoningEffort::High => "high",
    };
    match kind {
        ProviderKind::Openai => {
            model.extra.insert("reasoning_effort".into(), json!(name));
            // Reasoning models refuse `max_tokens`; they take `max_completion_tokens`.
            if let Some(limit) = model.max_output_tokens.take() {
                model
                    .extra
                    .insert("max_completion_tokens".into(), json!(limit));
            }
        }
        ProviderKind::OpenaiResponses => {
            model
                .extra
                .insert("reasoning".into(), json!({ "effort": name }));
        }
        ProviderKind::Anthropic => {
            let budget: u32 = match effort {
                ReasoningEffort::Low => 2_048,
                ReasoningEffort::Medium => 8_192,
                ReasoningEffort::High => 24_576,
            };
            model.extra.insert(
                "thinking".into(),
                json!({ "type": "enabled", "budget_tokens": budget }),
            );
            // The answer must have room beyond the thinking.
            let floor = budget + 4_096;
            model.max_output_tokens =
                Some(model.max_output_tokens.map_or(floor, |max| max.max(floor)));
        }
    }
    model
}

fn client_error(error: golato::generator::Error) -> CliError {
    CliError::Failed(format!("could not build the HTTP client: {error}"))
}

/// The models to offer in place of `current` for `provider` (`anthropic`, `openai`…): `current`
/// first, then the ones golato knows of that provider (their prices and context windows).
/// The models an OpenAI-compatible server other than OpenAI's own lists, for `/model` (whose
/// names there are the server's, not OpenAI's); `None` for OpenAI and Anthropic themselves,
/// whose models golato knows.
pub(crate) async fn server_models(settings: &Settings) -> Option<Result<Vec<String>, String>> {
    if settings.script.is_some() || provider_kind(settings) == ProviderKind::Anthropic {
        return None;
    }
    let base_url = settings
        .base_url
        .clone()
        .or_else(|| env("OPENAI_BASE_URL"))?;
    if base_url.trim_end_matches('/') == openai::DEFAULT_BASE_URL {
        return None;
    }
    let listed = match OpenAiChat::new(base_url.clone(), env("OPENAI_API_KEY")) {
        Ok(client) => client.models().await.map_err(|error| error.to_string()),
        Err(error) => Err(error.to_string()),
    };
    Some(listed.map_err(|why| {
        format!(
            "{} did not list its models ({why})",
            crate::view::header::host_of(&base_url)
        )
    }))
}

/// The models `/model` offers for `provider`: the current one, then the ones golato knows of
/// that provider.
pub(crate) fn offered_models(provider: &str, current: &str) -> Vec<String> {
    let family = match provider {
        "anthropic" => Some("claude-"),
        "openai" | "openai-responses" => Some("gpt-"),
        _ => None,
    };
    let mut models: Vec<String> = vec![current.to_owned()];
    for known in golato::generator::known_models() {
        if family.is_some_and(|family| known.starts_with(family)) && known != current {
            models.push(known.to_owned());
        }
    }
    models
}
