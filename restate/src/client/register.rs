//! Registering a worker's deployment with the Restate server's admin API: bounded in time, retried
//! while the server is still starting.

use std::time::Duration;

use super::error::parse;
use crate::url::with_segments;
use crate::Error;

/// How long registering a worker may take in all, and each request of it.
pub const REGISTER_TIME: Duration = Duration::from_secs(10);

pub(super) const REGISTER_REQUEST_TIME: Duration = Duration::from_secs(5);

/// Registers the deployment at `deployment` (a worker's address, or the load balancer's in
/// front of several) with the Restate server whose admin API is at `admin`. Registering the
/// same address again with the same services is accepted; Restate refuses a changed
/// deployment at an address it knows (the error says so).
pub async fn register(admin: &str, deployment: &str) -> Result<(), Error> {
    let admin = parse(admin)?;
    parse(deployment)?;
    let url = with_segments(&admin, &["deployments"]);
    // A server that takes the connection and never answers must not hold a worker forever:
    // each request is bounded, and so is the whole registration.
    let client = reqwest::Client::builder()
        .timeout(REGISTER_REQUEST_TIME)
        .build()
        .map_err(|error| Error::Unreachable {
            url: url.to_string(),
            api: "admin",
            waited: Duration::ZERO,
            reason: crate::causes(&error),
        })?;
    let body = serde_json::json!({"uri": deployment});
    let waited = REGISTER_TIME;
    let response = retrying(waited, &url, "admin", || {
        client.post(url.clone()).json(&body).send()
    })
    .await?;
    let status = response.status();
    if status.is_success() {
        return Ok(());
    }
    let message = response.text().await.unwrap_or_default();
    Err(Error::Refused {
        url: url.to_string(),
        status: status.as_u16(),
        message: message.chars().take(2_000).collect(),
        hint: if status.as_u16() == 409 {
            "; another deployment already serves GolatoRun with other handlers: register a new address, or remove the old deployment (`restate deployments remove`)"
        } else {
            ""
        },
    })
}

/// Sends with `send` until something answers or `waited` passed.
pub(super) async fn retrying<F, Fut>(
    waited: Duration,
    url: &reqwest::Url,
    api: &'static str,
    mut send: F,
) -> Result<reqwest::Response, Error>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = reqwest::Result<reqwest::Response>>,
{
    let started = tokio::time::Instant::now();
    let mut pause = Duration::from_millis(50);
    let mut reconnecting = false;
    loop {
        match send().await {
            Ok(response) if !worth_waiting_for(response.status(), reconnecting) => {
                return Ok(response)
            }
            Ok(response) if started.elapsed() >= waited => {
                return Err(Error::Unreachable {
                    url: url.to_string(),
                    api,
                    waited,
                    reason: format!("it answered HTTP {}", response.status()),
                })
            }
            Err(error) if started.elapsed() >= waited => {
                return Err(Error::Unreachable {
                    url: url.to_string(),
                    api,
                    waited,
                    reason: crate::causes(&error),
                })
            }
            _ => reconnecting = true,
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_secs(1));
    }
}

/// A server restarting or without partitions yet answers 502-504, and one that has just come
/// back may answer 404 for a service whose registration it has not loaded yet: worth asking
/// again (the 404 only after a failed connection).
pub(super) fn worth_waiting_for(status: reqwest::StatusCode, reconnecting: bool) -> bool {
    matches!(status.as_u16(), 502..=504) || (reconnecting && status.as_u16() == 404)
}
