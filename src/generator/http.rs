//! What the provider clients share: an HTTP POST with retries, and its streamed body turned into
//! [`StreamEvent`]s through a wire decoder.

use std::collections::VecDeque;
use std::time::Duration;

use futures::StreamExt;

use super::sse::SseDecoder;
use super::{Delta, Error, EventStream, StreamEvent};
use crate::message::AssistantMessage;

/// How a provider client retries a request that failed with HTTP 429, a 5xx status or a broken
/// connection before any of the response was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt; 0 disables retrying.
    pub max_retries: u32,
    /// Wait before the first retry; it doubles for each further one.
    pub initial_backoff: Duration,
    /// Longest wait, also the cap on a server's `Retry-After`.
    pub max_backoff: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 3,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(30),
        }
    }
}

/// How long a stream may go without a byte before it counts as broken.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(120);

/// A wire format's decoder.
pub(crate) trait WireDecoder: Default + Send + 'static {
    fn decode(&mut self, data: &str) -> Result<Vec<Delta>, Error>;
    /// Whether the stream said it was complete.
    fn is_complete(&self) -> bool;
    fn finish(self) -> AssistantMessage;
}

/// What went wrong, down to the root cause: reqwest's own message ("error sending request for
/// url …") names neither the cause nor anything the caller does not know, so each cause is
/// added once, and a message a cause repeats is left out.
fn causes(error: &(dyn std::error::Error + 'static)) -> String {
    let mut chain: Vec<String> = Vec::new();
    let mut next = Some(error);
    while let Some(error) = next {
        let text = error.to_string();
        if !text.starts_with("error sending request")
            && !chain.iter().any(|seen| seen.contains(&text))
        {
            chain.push(text);
        }
        next = error.source();
    }
    if chain.is_empty() {
        return error.to_string();
    }
    chain.join(": ")
}

/// Headers whose value is a credential.
fn is_secret_header(name: &str) -> bool {
    name.eq_ignore_ascii_case("authorization") || name.eq_ignore_ascii_case("x-api-key")
}

/// `text` with every credential sent in `headers` replaced by [`REDACTED`].
fn redact_secrets(mut text: String, headers: &[(&'static str, String)]) -> String {
    for (name, value) in headers.iter().filter(|(name, _)| is_secret_header(name)) {
        let secret = value.strip_prefix("Bearer ").unwrap_or(value).trim();
        // A key of a few characters (a test's "k") would cut words apart, and is no secret.
        if secret.len() >= 8 && text.contains(secret) {
            tracing::debug!(header = %name, "the provider's error quoted a credential; redacted");
            text = text.replace(secret, REDACTED);
        }
    }
    text
}

/// A provider client's check before it sends anything: the request names a real model, not
/// the placeholder an agent without a configured model has.
pub(crate) fn refuse_unchosen_model(model: &super::Model) -> Option<EventStream> {
    let id = model.id.trim();
    if !id.is_empty() && id != super::Model::default().id {
        return None;
    }
    let error = Error::NoModel {
        id: model.id.clone(),
    };
    Some(futures::stream::once(async move { Err(error) }).boxed())
}

/// What a secret shows as in `Debug` output.
pub(crate) const REDACTED: &str = "<redacted>";

/// The HTTP side of a provider client.
#[derive(Debug, Clone)]
pub(crate) struct Transport {
    pub(crate) client: reqwest::Client,
    pub(crate) retry: RetryPolicy,
    pub(crate) idle_timeout: Duration,
}

impl Transport {
    pub(crate) fn new() -> Result<Transport, Error> {
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(30))
            .build()
            .map_err(|error| Error::Http {
                reason: format!("could not build the HTTP client: {}", causes(&error)),
                source: Some(Box::new(error)),
            })?;
        Ok(Transport {
            client,
            retry: RetryPolicy::default(),
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
        })
    }

    /// POSTs `body` to `url` and streams the response through `D`.
    pub(crate) fn stream<D: WireDecoder>(
        &self,
        url: String,
        headers: Vec<(&'static str, String)>,
        body: Vec<u8>,
    ) -> EventStream {
        let transport = self.clone();
        let state = State::Start {
            transport,
            url,
            headers,
            body,
        };
        futures::stream::unfold(state, step::<D>).boxed()
    }

    async fn send(
        &self,
        url: &str,
        headers: &[(&'static str, String)],
        body: &[u8],
    ) -> Result<reqwest::Response, Error> {
        let mut attempt = 0;
        loop {
            let mut request = self
                .client
                .post(url)
                .header("content-type", "application/json")
                .header("accept", "text/event-stream")
                .body(body.to_vec());
            for (name, value) in headers {
                match reqwest::header::HeaderValue::from_str(value) {
                    Ok(mut value) => {
                        // Kept out of the HTTP client's own debug output and logs.
                        value.set_sensitive(is_secret_header(name));
                        request = request.header(*name, value);
                    }
                    Err(_) => {
                        return Err(Error::Http {
                            reason: format!(
                                "the {name} header's value is not valid in HTTP (a line break or other control character in it?)"
                            ),
                            source: None,
                        })
                    }
                }
            }
            let outcome = request.send().await;
            let retry_after = match &outcome {
                Ok(response) if response.status().is_success() => None,
                Ok(response)
                    if response.status().as_u16() == 429 || response.status().is_server_error() =>
                {
                    Some(retry_after(response))
                }
                Ok(_) => None,
                Err(error) if error.is_connect() || error.is_timeout() => Some(None),
                Err(_) => None,
            };
            match (retry_after, attempt < self.retry.max_retries) {
                (Some(hint), true) => {
                    let backoff = self
                        .retry
                        .initial_backoff
                        .saturating_mul(1 << attempt.min(16));
                    let wait = hint.unwrap_or(backoff).min(self.retry.max_backoff);
                    tracing::debug!(
                        attempt,
                        wait_ms = wait.as_millis() as u64,
                        "retrying the provider request"
                    );
                    tokio::time::sleep(wait).await;
                    attempt += 1;
                }
                _ => {
                    let response = outcome.map_err(|error| Error::Http {
                        reason: format!("the request to {url} failed: {}", causes(&error)),
                        source: Some(Box::new(error)),
                    })?;
                    if response.status().is_success() {
                        return Ok(response);
                    }
                    let status = response.status().as_u16();
                    let text = response.text().await.unwrap_or_default();
                    return Err(Error::Provider {
                        status: Some(status),
                        // A server may quote the key it refused (some do, in part or whole).
                        message: redact_secrets(provider_message(&text), headers),
                    });
                }
            }
        }
    }
}

/// The wait a 429 or 5xx response asks for, from `Retry-After` (seconds) or `retry-after-ms`.
fn retry_after(response: &reqwest::Response) -> Option<Duration> {
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|value| value.to_str().ok())
            .map(str::trim)
    };
    if let Some(millis) = header("retry-after-ms").and_then(|value| value.parse::<f64>().ok()) {
        return Some(Duration::from_secs_f64((millis / 1000.0).max(0.0)));
    }
    header("retry-after")
        .and_then(|value| value.parse::<f64>().ok())
        .filter(|seconds| seconds.is_finite())
        .map(|seconds| Duration::from_secs_f64(seconds.max(0.0)))
}

/// The provider's own error message from an error body (`{"error": {"message": ...}}`), else the
/// body itself.
fn provider_message(body: &str) -> String {
    let parsed: Option<serde_json::Value> = serde_json::from_str(body).ok();
    parsed
        .as_ref()
        .and_then(|value| {
            value
                .pointer("/error/message")
                .or_else(|| value.get("message"))
        })
        .and_then(serde_json::Value::as_str)
        .map_or_else(|| super::openai::excerpt(body.trim()), str::to_owned)
}

enum State<D> {
    Start {
        transport: Transport,
        url: String,
        headers: Vec<(&'static str, String)>,
        body: Vec<u8>,
    },
    Streaming {
        body: futures::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
        idle_timeout: Duration,
        sse: SseDecoder,
        decoder: D,
        pending: VecDeque<Delta>,
    },
    /// The body ended: the last items, then nothing.
    Tail(VecDeque<StreamEvent>),
    Done,
}

async fn step<D: WireDecoder>(
    mut state: State<D>,
) -> Option<(Result<StreamEvent, Error>, State<D>)> {
    loop {
        state = match state {
            State::Done => return None,
            State::Tail(mut items) => {
                let item = items.pop_front()?;
                return Some((Ok(item), State::Tail(items)));
            }
            State::Start {
                transport,
                url,
                headers,
                body,
            } => match transport.send(&url, &headers, &body).await {
                Ok(response) => State::Streaming {
                    body: response.bytes_stream().boxed(),
                    idle_timeout: transport.idle_timeout,
                    sse: SseDecoder::default(),
                    decoder: D::default(),
                    pending: VecDeque::new(),
                },
                Err(error) => return Some((Err(error), State::Done)),
            },
            State::Streaming {
                mut body,
                idle_timeout,
                mut sse,
                mut decoder,
                mut pending,
            } => {
                if let Some(delta) = pending.pop_front() {
                    return Some((
                        Ok(StreamEvent::Delta(delta)),
                        State::Streaming {
                            body,
                            idle_timeout,
                            sse,
                            decoder,
                            pending,
                        },
                    ));
                }
                let events = match tokio::time::timeout(idle_timeout, body.next()).await {
                    Err(_) => {
                        return Some((
                            Err(Error::IdleTimeout {
                                seconds: idle_timeout.as_secs_f64(),
                            }),
                            State::Done,
                        ))
                    }
                    Ok(Some(Err(error))) => {
                        return Some((
                            Err(Error::Http {
                                reason: format!("the response stream broke: {}", causes(&error)),
                                source: Some(Box::new(error)),
                            }),
                            State::Done,
                        ))
                    }
                    Ok(Some(Ok(bytes))) => sse.feed(&bytes),
                    Ok(None) => {
                        if let Some(event) = sse.finish() {
                            match decoder.decode(&event.data) {
                                Ok(deltas) => pending.extend(deltas),
                                Err(error) => return Some((Err(error), State::Done)),
                            }
                        }
                        if !decoder.is_complete() {
                            return Some((Err(Error::IncompleteStream), State::Done));
                        }
                        let mut tail: VecDeque<StreamEvent> =
                            pending.into_iter().map(StreamEvent::Delta).collect();
                        tail.push_back(StreamEvent::Done(decoder.finish()));
                        state = State::Tail(tail);
                        continue;
                    }
                };
                for event in events {
                    match decoder.decode(&event.data) {
                        Ok(deltas) => pending.extend(deltas),
                        Err(error) => return Some((Err(error), State::Done)),
                    }
                }
                State::Streaming {
                    body,
                    idle_timeout,
                    sse,
                    decoder,
                    pending,
                }
            }
        };
    }
}
