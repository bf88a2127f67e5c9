//! `web_fetch`: a page by its URL, as Markdown (HTML through htmd), text or JSON as it is.
//!
//! It reaches what golato's network policy lets it reach and nothing more: every host, the
//! first and each a redirect leads to, is judged by the same [`NetworkPolicy`] as a sandboxed
//! command's proxy (denied hosts refused, and a name resolving to a loopback, private or
//! metadata address refused unless an allow pattern names it exactly); the connection goes
//! to the addresses judged, never to a second lookup's. A host no allow pattern lists is
//! refused, unless [`Unlisted::AfterApproval`] says a hook approves each call (the command
//! line asks the person about each new domain): then the call's own host may be fetched,
//! and a redirect to another unlisted host is still refused. Bounded: bytes read, time,
//! redirects, and the text returned (as `read`'s).

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use golato_sandbox::network::{NetworkPolicy, Refusal, Why};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::proxy::Resolve;
use crate::tool::{BoxError, Tool, ToolContext, ToolResult};

/// The most bytes of a page read: 5 MiB (what is past it is named, not read).
pub const DEFAULT_MAX_PAGE_BYTES: u64 = 5 * 1024 * 1024;
/// The longest a call may take, redirects included.
pub const DEFAULT_FETCH_TIMEOUT: Duration = Duration::from_secs(30);
/// The most redirects followed.
pub const MAX_REDIRECTS: usize = 5;
/// The most bytes of text one call returns (as `read`: 50 KiB); `offset` goes on.
const MAX_OUTPUT_BYTES: usize = 50 * 1024;
/// The most lines one call returns (as `read`).
const MAX_OUTPUT_LINES: usize = 2_000;

/// What `web_fetch` does with a host no allow pattern lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Unlisted {
    /// Refused, naming what would allow it (the default: nothing approves calls).
    #[default]
    Refuse,
    /// The call's own host may be fetched: a hook approves each call before it runs (the
    /// command line's approvals ask the person about each new domain, and `web_fetch(HOST)`
    /// rules decide). A redirect to another unlisted host is refused all the same.
    AfterApproval,
}

/// How `web_fetch` reaches pages.
#[derive(Debug, Clone)]
pub struct WebFetch {
    /// The hosts it may reach (`--allow-domain`, `--deny-domain`); the sandbox's own when the
    /// set has one.
    pub domains: NetworkPolicy,
    /// What it does with a host the allow patterns do not list.
    pub unlisted: Unlisted,
    /// How names become addresses; `None`: the set's resolver, else the system's.
    pub resolver: Option<Arc<dyn Resolve>>,
    /// The most bytes of a page read.
    pub max_page_bytes: u64,
    /// The longest a call may take.
    pub timeout: Duration,
}

impl Default for WebFetch {
    fn default() -> WebFetch {
        WebFetch {
            domains: NetworkPolicy::default(),
            unlisted: Unlisted::Refuse,
            resolver: None,
            max_page_bytes: DEFAULT_MAX_PAGE_BYTES,
            timeout: DEFAULT_FETCH_TIMEOUT,
        }
    }
}

/// Arguments of `web_fetch`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct FetchArgs {
    /// The page's address: http:// or https://.
    url: String,
    /// The line to start from (1-based), to go on with a long page.
    offset: Option<usize>,
}

/// The `web_fetch` tool of `config` (its resolver already chosen).
pub(super) fn tool(config: WebFetch, resolver: Arc<dyn Resolve>) -> Tool {
    let config = Arc::new((config, resolver));
    Tool::typed(
        "web_fetch",
        "Fetch a web page by its URL and read it: HTML as Markdown, plain text and JSON as they are. \
         Hosts are limited by the session's network policy; a refused host is named with what \
         would allow it. Long pages come in parts: pass offset to go on.",
        move |ctx: ToolContext, args: FetchArgs| {
            let config = Arc::clone(&config);
            async move {
                let (config, resolver) = &*config;
                let fetched = tokio::select! {
                    fetched = tokio::time::timeout(config.timeout, fetch(config, resolver, &args.url)) => match fetched {
                        Ok(fetched) => fetched?,
                        Err(_) => return Err(format!(
                            "{} did not answer within {} s; try again later or another page",
                            args.url,
                            config.timeout.as_secs()
                        ).into()),
                    },
                    () = ctx.cancelled() => return Err("cancelled".into()),
                };
                Ok(fetched.result(args.offset.unwrap_or(1)))
            }
        },
    )
}

/// A page as read: where it ended up, how, and its text.
struct Fetched {
    asked: String,
    url: String,
    status: u16,
    content_type: String,
    bytes: usize,
    cut: bool,
    redirects: Vec<String>,
    text: String,
}

impl Fetched {
    /// The result: a line saying what was read, then the text from line `offset`, bounded.
    fn result(self, offset: usize) -> ToolResult {
        let lines: Vec<&str> = self.text.lines().collect();
        let start = offset.max(1) - 1;
        let mut shown = String::new();
        let mut end = start;
        for line in lines.iter().skip(start).take(MAX_OUTPUT_LINES) {
            if shown.len() + line.len() + 1 > MAX_OUTPUT_BYTES {
                break;
            }
            shown.push_str(line);
            shown.push('\n');
            end += 1;
        }
        let mut head = format!(
            "{} ({}, {} bytes{})",
            self.url,
            self.content_type,
            self.bytes,
            match self.cut {
                true => ", only the first part was read: the page is larger than the limit",
                false => "",
            }
        );
        if self.url != self.asked {
            head.push_str(&format!("; redirected from {}", self.asked));
        }
        let mut text = format!("{head}\n\n{shown}");
        if end < lines.len() {
            text.push_str(&format!(
                "\n[Showing lines {}-{end} of {}. Use offset={} to continue.]",
                start + 1,
                lines.len(),
                end + 1
            ));
        } else if start >= lines.len() && !lines.is_empty() {
            text.push_str(&format!(
                "[offset {offset} is past the end: the page has {} lines]",
                lines.len()
            ));
        }
        let details = serde_json::json!({
            "url": self.url,
            "status": self.status,
            "content_type": self.content_type,
            "bytes": self.bytes,
            "cut": self.cut,
            "redirects": self.redirects,
        });
        let mut result = ToolResult::text(text).with_details(details);
        result.is_error = !(200..300).contains(&self.status);
        result
    }
}

/// Fetches `url`, each redirect judged again.
async fn fetch(
    config: &WebFetch,
    resolver: &Arc<dyn Resolve>,
    url: &str,
) -> Result<Fetched, BoxError> {
    let mut current = reqwest::Url::parse(url).map_err(|error| {
        format!("{url} is not a URL ({error}); give http:// or https:// and a host")
    })?;
    let mut redirects = Vec::new();
    loop {
        let (host, port) = judge(config, &current, redirects.is_empty())?;
        let addresses = addresses(config, resolver, &host, port, redirects.is_empty()).await?;
        let client = reqwest::Client::builder()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(Duration::from_secs(10))
            .user_agent(concat!("golato/", env!("CARGO_PKG_VERSION"), " web_fetch"))
            .resolve_to_addrs(&host, &addresses)
            .build()
            .map_err(|error| format!("the HTTP client could not be made: {error}"))?;
        let response = client
            .get(current.clone())
            .header(
                "accept",
                "text/html, text/markdown, text/plain, application/json;q=0.9, */*;q=0.5",
            )
            .send()
            .await
            .map_err(|error| format!("{current} could not be fetched: {}", chain(&error)))?;
        let status = response.status();
        if status.is_redirection() {
            let Some(location) = response
                .headers()
                .get("location")
                .and_then(|value| value.to_str().ok())
            else {
                return Err(format!("{current} answered {status} with no place to go").into());
            };
            let next = current.join(location).map_err(|error| {
                format!("{current} redirected to {location:?}, which is not a URL ({error})")
            })?;
            if redirects.len() >= MAX_REDIRECTS {
                return Err(format!(
                    "{url} redirected more than {MAX_REDIRECTS} times; the last was to {next}"
                )
                .into());
            }
            redirects.push(next.to_string());
            current = next;
            continue;
        }
        let content_type = response
            .headers()
            .get("content-type")
            .and_then(|value| value.to_str().ok())
            .unwrap_or("")
            .to_owned();
        let (body, cut) = read_bounded(response, config.max_page_bytes).await?;
        let bytes = body.len();
        let text = convert(&content_type, body).await?;
        return Ok(Fetched {
            asked: url.to_owned(),
            url: current.to_string(),
            status: status.as_u16(),
            content_type: match content_type.is_empty() {
                true => "no content type".to_owned(),
                false => content_type,
            },
            bytes,
            cut,
            redirects,
            text,
        });
    }
}

/// The error and its sources, in one line.
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    text
}

/// The host and port of `url` when the policy lets the call reach it; `first` says whether
/// it is the call's own (an unlisted host may then be fetched after approval).
fn judge(config: &WebFetch, url: &reqwest::Url, first: bool) -> Result<(String, u16), BoxError> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!("{url}: web_fetch reads http and https pages only").into());
    }
    let host = match url.host_str() {
        // An IPv6 address comes bracketed.
        Some(host) => host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned(),
        None => return Err(format!("{url} has no host").into()),
    };
    let port = url.port_or_known_default().unwrap_or(443);
    match config.domains.judge_host(&host, port) {
        Ok(()) => Ok((host, port)),
        Err(Refusal {
            why: Why::NotAllowed,
            ..
        }) if first && config.unlisted == Unlisted::AfterApproval => Ok((host, port)),
        Err(refusal) => Err(refused(&refusal, first).into()),
    }
}

/// What the model reads of a refusal: which host, why, and what would allow it.
fn refused(refusal: &Refusal, first: bool) -> String {
    let what = match first {
        true => format!("{} was not fetched", refusal.host),
        false => format!(
            "the page redirected to {}, which was not fetched",
            refusal.host
        ),
    };
    let allow = match refusal.why {
        Why::NotAllowed | Why::LocalAddress(_) => format!(
            "; the person can allow it with --allow-domain {} (or a rule web_fetch({}))",
            refusal.host, refusal.host
        ),
        _ => String::new(),
    };
    format!("{what}: {}{allow}", refusal.reason())
}

/// The addresses of `host` the policy lets the call connect to: every one the name resolves
/// to is judged (a name pointed at a local address is refused unless named exactly).
async fn addresses(
    config: &WebFetch,
    resolver: &Arc<dyn Resolve>,
    host: &str,
    port: u16,
    first: bool,
) -> Result<Vec<SocketAddr>, BoxError> {
    let found: Vec<SocketAddr> = match host.parse::<IpAddr>() {
        Ok(address) => vec![SocketAddr::new(address, port)],
        Err(_) => resolver
            .resolve(host, port)
            .await
            .map_err(|error| format!("{host} could not be resolved: {error}"))?,
    };
    if found.is_empty() {
        return Err(format!("{host} resolved to no address").into());
    }
    // Connected to are only the addresses judged here (never a second lookup's): a local one
    // among them is left out unless named exactly, and with none left the name is refused.
    let mut allowed = Vec::new();
    let mut refusal = None;
    for address in found {
        match config.domains.judge_address(host, address.ip(), port) {
            Ok(()) => allowed.push(SocketAddr::new(address.ip(), port)),
            Err(refused) => refusal = Some(refused),
        }
    }
    if let (true, Some(refusal)) = (allowed.is_empty(), refusal) {
        return Err(refused(&refusal, first).into());
    }
    Ok(allowed)
}

/// The body, at most `limit` bytes of it, and whether there was more.
async fn read_bounded(
    mut response: reqwest::Response,
    limit: u64,
) -> Result<(Vec<u8>, bool), BoxError> {
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|error| format!("the page was cut off while it was read: {}", chain(&error)))?
    {
        let room = (limit as usize).saturating_sub(body.len());
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            return Ok((body, true));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((body, false))
}

/// The page as text: HTML as Markdown (on the blocking pool: a large page takes tens of
/// milliseconds), text and JSON as they are.
async fn convert(content_type: &str, body: Vec<u8>) -> Result<String, BoxError> {
    let kind = content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    let html = matches!(kind.as_str(), "text/html" | "application/xhtml+xml")
        || (kind.is_empty() && looks_like_html(&body));
    if html {
        let text = String::from_utf8_lossy(&body).into_owned();
        return tokio::task::spawn_blocking(move || markdown(&text))
            .await
            .map_err(|error| format!("the page could not be converted: {error}"))?;
    }
    let textual = kind.starts_with("text/")
        || kind.ends_with("json")
        || kind.ends_with("+xml")
        || matches!(
            kind.as_str(),
            "application/xml"
                | "application/javascript"
                | "application/x-yaml"
                | "application/yaml"
                | "application/toml"
        );
    if kind == "application/pdf" {
        return Err("the page is a PDF, which web_fetch does not read; fetch an HTML version, or download it with bash and read it with a tool made for PDFs".into());
    }
    if textual || (kind.is_empty() && std::str::from_utf8(&body).is_ok()) {
        return Ok(String::from_utf8_lossy(&body).into_owned());
    }
    Err(format!(
        "the page is {} ({} bytes), which web_fetch does not read as text",
        match kind.is_empty() {
            true => "binary with no content type",
            false => kind.as_str(),
        },
        body.len()
    )
    .into())
}

fn looks_like_html(body: &[u8]) -> bool {
    let start = String::from_utf8_lossy(&body[..body.len().min(512)]).to_ascii_lowercase();
    let start = start.trim_start();
    start.starts_with("<!doctype html") || start.starts_with("<html")
}

/// HTML as Markdown, without what a reader does not read (scripts, styles).
pub(crate) fn markdown(html: &str) -> Result<String, BoxError> {
    htmd::HtmlToMarkdown::builder()
        .skip_tags(vec![
            "script", "style", "noscript", "template", "svg", "head",
        ])
        .build()
        .convert(html)
        .map_err(|error| format!("the page's HTML could not be converted: {error}").into())
}
