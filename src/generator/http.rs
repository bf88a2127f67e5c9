//! What the provider clients share: an HTTP POST with retries, and its streamed body turned into
//! [`StreamEvent`]s through a wire decoder.

mod stream;

use std::time::Duration;

use futures::StreamExt;
use stream::{step, Posting, State};

use super::{Delta, Error, EventStream};
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

/// How long a provider may take to send its response headers, and then each part of the
/// answer, before the stream counts as broken. Keep-alive comments and events that carry
/// nothing of the answer do not count as parts.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(120);

/// The largest server-sent event a provider client takes (its data and unfinished line
/// together): 16 MiB. A line that never ends fails the request here instead of filling memory.
pub const MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

/// The largest assistant message a provider client assembles (its text, reasoning and tool-call
/// arguments together): 16 MiB.
pub const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// How much of an error response's body is read (64 KiB); the rest is never read.
pub const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;

/// A wire format's decoder.
pub(crate) trait WireDecoder: Default + Send + 'static {
    fn decode(&mut self, data: &str) -> Result<Vec<Delta>, Error>;
    /// Whether the stream said it was complete.
    fn is_complete(&self) -> bool;
    fn finish(self) -> AssistantMessage;
}

/// What went wrong, down to the root cause, in one line: reqwest's own message ("error sending
/// request for url …") names neither the cause nor anything the caller does not know, so each
/// cause is added once, and a message a cause repeats is left out. golato-restate's client
/// says its HTTP errors the same way.
///
/// ```
/// let error = std::io::Error::other("connection refused");
/// assert_eq!(golato::generator::causes(&error), "connection refused");
/// ```
pub fn causes(error: &(dyn std::error::Error + 'static)) -> String {
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

/// Where a provider client sends its requests and how it proves who it is: what the three
/// clients share (the base URL, the key, the transport with its retries and idle timeout).
/// Its `Debug` never shows the key.
#[derive(Clone)]
pub(crate) struct Endpoint {
    base_url: String,
    api_key: Option<String>,
    /// How the key is sent: `authorization: Bearer KEY`, or under this header as it is.
    key_header: Option<&'static str>,
    /// Sent with every request (an API version).
    fixed_headers: &'static [(&'static str, &'static str)],
    pub(crate) transport: Transport,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| REDACTED))
            .finish_non_exhaustive()
    }
}

impl Endpoint {
    /// An endpoint sending `api_key` as a bearer token (OpenAI's APIs).
    pub(crate) fn bearer(base_url: String, api_key: Option<String>) -> Result<Endpoint, Error> {
        Ok(Endpoint {
            base_url: base_url.trim_end_matches('/').to_owned(),
            api_key,
            key_header: None,
            fixed_headers: &[],
            transport: Transport::new()?,
        })
    }

    /// An endpoint sending `api_key` under `header`, and `fixed_headers` with every request
    /// (Anthropic's API).
    pub(crate) fn keyed(
        base_url: String,
        api_key: String,
        header: &'static str,
        fixed_headers: &'static [(&'static str, &'static str)],
    ) -> Result<Endpoint, Error> {
        Ok(Endpoint {
            key_header: Some(header),
            fixed_headers,
            ..Endpoint::bearer(base_url, Some(api_key))?
        })
    }

    /// The JSON body of a GET of `{base_url}/{path}`: read within `deadline`, at most `limit`
    /// bytes of it.
    pub(crate) async fn get_json(
        &self,
        path: &str,
        limit: usize,
        deadline: Duration,
    ) -> Result<serde_json::Value, Error> {
        let url = format!("{}/{path}", self.base_url);
        let mut request = self.transport.client.get(&url);
        for (name, value) in self.fixed_headers {
            request = request.header(*name, *value);
        }
        if let Some(key) = &self.api_key {
            request = match self.key_header {
                Some(header) => request.header(header, key),
                None => request.bearer_auth(key),
            };
        }
        let read = async {
            let mut response = request.send().await.map_err(|error| Error::Http {
                reason: format!("GET {url} failed: {}", causes(&error)),
                source: Some(Box::new(error)),
            })?;
            let status = response.status();
            let mut body = Vec::new();
            while let Some(chunk) = response.chunk().await.map_err(|error| Error::Http {
                reason: format!("reading {url} failed: {}", causes(&error)),
                source: Some(Box::new(error)),
            })? {
                if body.len() + chunk.len() > limit {
                    return Err(Error::Http {
                        reason: format!("{url} answered more than {limit} bytes"),
                        source: None,
                    });
                }
                body.extend_from_slice(&chunk);
            }
            if !status.is_success() {
                return Err(Error::Provider {
                    status: Some(status.as_u16()),
                    message: String::from_utf8_lossy(&body).chars().take(300).collect(),
                });
            }
            serde_json::from_slice(&body).map_err(|error| Error::Http {
                reason: format!("{url} did not answer JSON: {error}"),
                source: None,
            })
        };
        tokio::time::timeout(deadline, read)
            .await
            .map_err(|_| Error::Http {
                reason: format!("{url} did not answer within {} s", deadline.as_secs_f64()),
                source: None,
            })?
    }

    /// Streams the answer to `body`, POSTed to `{base_url}/{path}`, through `D`.
    pub(crate) fn post<D: WireDecoder>(&self, path: &str, body: Vec<u8>) -> EventStream {
        let mut headers: Vec<(&'static str, String)> = self
            .fixed_headers
            .iter()
            .map(|(name, value)| (*name, (*value).to_owned()))
            .collect();
        if let Some(key) = &self.api_key {
            match self.key_header {
                Some(header) => headers.push((header, key.clone())),
                None => headers.push(("authorization", format!("Bearer {key}"))),
            }
        }
        self.transport
            .stream::<D>(format!("{}/{path}", self.base_url), headers, body)
    }
}

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
        let posting = Posting {
            transport: self.clone(),
            url,
            headers,
            body,
        };
        let state = State::Start(posting, 0);
        futures::stream::unfold(state, step::<D>).boxed()
    }

    /// Sends the request once (`attempt` retries were made before it): the response, or the
    /// retry the policy allows after this failure, or the failure.
    async fn send(
        &self,
        url: &str,
        headers: &[(&'static str, String)],
        body: &[u8],
        attempt: u32,
    ) -> Result<Sent, Error> {
        {
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
            let outcome = match tokio::time::timeout(self.idle_timeout, request.send()).await {
                Ok(outcome) => outcome,
                Err(_) => {
                    return Err(Error::NoResponse {
                        seconds: self.idle_timeout.as_secs_f64(),
                    })
                }
            };
            let retry_after = match &outcome {
                Ok(response) if response.status().is_success() => None,
                Ok(response)
                    if response.status().as_u16() == 429 || response.status().is_server_error() =>
                {
                    Some((
                        retry_after(response),
                        format!("HTTP {}", response.status().as_u16()),
                    ))
                }
                Ok(_) => None,
                Err(error) if error.is_connect() || error.is_timeout() => {
                    // The innermost cause says it: "Connection refused (os error 111)".
                    let causes = causes(error);
                    let last = causes.rsplit(": ").next().unwrap_or(&causes).to_owned();
                    Some((None, last))
                }
                Err(_) => None,
            };
            match (retry_after, attempt < self.retry.max_retries) {
                (Some((hint, reason)), true) => {
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
                    Ok(Sent::Retry(super::Retrying {
                        attempt: attempt + 1,
                        retries: self.retry.max_retries,
                        wait_ms: u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
                        reason,
                    }))
                }
                _ => {
                    let response = outcome.map_err(|error| Error::Http {
                        reason: format!("the request to {url} failed: {}", causes(&error)),
                        source: Some(Box::new(error)),
                    })?;
                    if response.status().is_success() {
                        return self.event_stream(response).await.map(Sent::Response);
                    }
                    let status = response.status().as_u16();
                    let (body, _) =
                        read_start(response, MAX_ERROR_BODY_BYTES, self.idle_timeout).await;
                    let text = String::from_utf8_lossy(&body);
                    Err(Error::Provider {
                        status: Some(status),
                        // A server may quote the key it refused (some do, in part or whole).
                        message: redact_secrets(provider_message(&text), headers),
                    })
                }
            }
        }
    }
}

/// What one attempt at a request came to, short of a failure.
enum Sent {
    Response(reqwest::Response),
    /// Try again after the wait it says.
    Retry(super::Retrying),
}

impl Transport {
    /// `response`, unless its content type says it is a document rather than a stream (an HTML
    /// page, JSON, XML): then what it is instead. Other types are taken at their word, as some
    /// compatible servers label their streams loosely (`text/plain`, none at all).
    async fn event_stream(&self, response: reqwest::Response) -> Result<reqwest::Response, Error> {
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned());
        let Some(content_type) = content_type else {
            return Ok(response);
        };
        let essence = content_type
            .split(';')
            .next()
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase();
        let document = matches!(
            essence.as_str(),
            "text/html"
                | "application/xhtml+xml"
                | "application/json"
                | "application/xml"
                | "text/xml"
        ) || essence.ends_with("+json");
        if !document {
            return Ok(response);
        }
        let (start, _) = read_start(response, 200, self.idle_timeout).await;
        Err(Error::NotAnEventStream {
            content_type,
            start: String::from_utf8_lossy(&start).into_owned(),
        })
    }
}

/// The first `limit` bytes of `response`'s body (fewer if it ends sooner, or takes longer than
/// `idle` in all), and whether it was cut. Nothing past `limit` is read: a body that never
/// ends, one of gigabytes, or one sent a byte at a time costs at most `limit` bytes and `idle`.
async fn read_start(
    mut response: reqwest::Response,
    limit: usize,
    idle: Duration,
) -> (Vec<u8>, bool) {
    let deadline = tokio::time::Instant::now() + idle;
    let mut body = Vec::new();
    while body.len() < limit {
        match tokio::time::timeout_at(deadline, response.chunk()).await {
            Ok(Ok(Some(chunk))) => {
                let room = limit - body.len();
                body.extend_from_slice(&chunk[..chunk.len().min(room)]);
                if chunk.len() > room {
                    return (body, true);
                }
            }
            Ok(Ok(None)) | Ok(Err(_)) => return (body, false),
            Err(_) => return (body, true),
        }
    }
    (body, true)
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
    // Any number a server sends (1e300, inf, NaN, negative) becomes a wait a Duration holds;
    // the retry policy caps it further.
    let wait = |seconds: f64| {
        (!seconds.is_nan()).then(|| Duration::from_secs_f64(seconds.clamp(0.0, ONE_DAY_SECONDS)))
    };
    if let Some(millis) = header("retry-after-ms").and_then(|value| value.parse::<f64>().ok()) {
        return wait(millis / 1000.0);
    }
    header("retry-after")
        .and_then(|value| value.parse::<f64>().ok())
        .and_then(wait)
}

/// The longest wait a server's `Retry-After` is read as (the retry policy's cap then applies).
const ONE_DAY_SECONDS: f64 = 86_400.0;

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
        .map_or_else(|| excerpt(body.trim()), str::to_owned)
}

/// The first 200 characters of a provider's text that golato could not use (a chunk that is
/// not JSON, an error body), for error messages.
pub(super) fn excerpt(text: &str) -> String {
    match text.char_indices().nth(200) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

/// The builder methods every HTTP provider shares, which set its transport (a field
/// `endpoint.transport`): written once, expanded in each provider's `impl`.
macro_rules! transport_settings {
    () => {
        /// Sets the retry policy: how many times, and after how long, a failed request is sent
        /// again.
        pub fn with_retry(mut self, retry: $crate::generator::RetryPolicy) -> Self {
            self.endpoint.transport.retry = retry;
            self
        }

        /// Sets how long the stream may stay silent before it counts as broken.
        pub fn with_idle_timeout(mut self, idle_timeout: std::time::Duration) -> Self {
            self.endpoint.transport.idle_timeout = idle_timeout;
            self
        }
    };
}
pub(crate) use transport_settings;
