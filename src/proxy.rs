//! golato's network proxy for sandboxed commands whose network goes by domain
//! ([`sandbox::Policy::domains`](crate::sandbox::Policy::domains)): it opens HTTP `CONNECT`
//! and SOCKS5 tunnels (on the same port) and forwards plain HTTP requests to the hosts a
//! [`NetworkPolicy`] allows, and answers every other HTTP request with `403`, a header
//! ([`REFUSAL_HEADER`]) and a body naming the host and the flag that would allow it (a SOCKS5
//! one with "connection not allowed").
//!
//! Each request is judged twice: the host asked for, before anything is resolved; then every
//! address it resolved to, before connecting (a name pointed or rebound at a local address is
//! refused unless a pattern names it exactly). The proxy resolves names itself, so a command
//! behind it needs no DNS. It does not terminate TLS, but reads a tunnel's ClientHello: one
//! whose TLS name (SNI) is another host than the tunnel's is closed before any of it reaches
//! the host. In `read` mode only `GET`, `HEAD` and `OPTIONS` pass, and tunnels are refused
//! (what they carry cannot be seen).
//!
//! One [`Proxy`] per tool set (its policy, resolver and logs; `builtin::new` makes it),
//! serving one listener per sandboxed call: `bash` receives the listening socket of the call's
//! own network namespace and serves it until the call ends, so a call's connections are its
//! own, told to it, and cut when it ends.
//!
//! ```no_run
//! # async fn example() -> std::io::Result<()> {
//! use std::sync::Arc;
//! use golato::proxy::{Proxy, SystemResolver};
//! use golato::sandbox::network::{Methods, NetworkPolicy};
//!
//! let policy = NetworkPolicy::new(&["@crates"], &[], Methods::All).expect("a valid pattern");
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! let cancel = tokio_util::sync::CancellationToken::new();
//! tokio::spawn(Proxy::new(policy, Arc::new(SystemResolver)).serve(listener, cancel.clone()));
//! # Ok(()) }
//! ```

mod counted;
mod forward;
mod hello;
mod socks;
mod tunnel;

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use futures::future::BoxFuture;
use golato_sandbox::network::{NetworkPolicy, Refusal};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::json;
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use counted::{Counted, Counters};

/// How the proxy turns a name into addresses (a seam: tests resolve their own names to their
/// own loopback servers).
pub trait Resolve: Send + Sync + std::fmt::Debug + 'static {
    /// The addresses of `host` on `port`.
    fn resolve(
        &self,
        host: &str,
        port: u16,
    ) -> BoxFuture<'static, std::io::Result<Vec<SocketAddr>>>;
}

/// The system's resolver (`getaddrinfo`, through tokio).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemResolver;

impl Resolve for SystemResolver {
    fn resolve(
        &self,
        host: &str,
        port: u16,
    ) -> BoxFuture<'static, std::io::Result<Vec<SocketAddr>>> {
        let target = format!("{host}:{port}");
        Box::pin(async move { Ok(tokio::net::lookup_host(target).await?.collect()) })
    }
}

/// A tunnel's first bytes read as the SNI check reads them, fed `chunk` bytes at a time (the
/// whole hello read again after each, as a tunnel does): the name a whole ClientHello gives
/// (`Some(None)`: none), or `None` when it is refused, not TLS, or not whole. For the fuzz
/// targets and benches (feature `fuzzing`).
#[cfg(feature = "fuzzing")]
pub(crate) fn hello_name(bytes: &[u8], chunk: usize) -> Option<Option<Vec<u8>>> {
    let chunk = chunk.max(1);
    let mut end = 0;
    while end < bytes.len() {
        end = (end + chunk).min(bytes.len());
        match hello::read(&bytes[..end]) {
            hello::Hello::Partial => {}
            hello::Hello::Named(name) => return Some(name),
            hello::Hello::NotTls | hello::Hello::Unreadable(_) => return None,
        }
    }
    None
}

/// What became of a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Let through.
    Allowed,
    /// Refused by the policy: the client was answered with the refusal's text.
    Refused(Refusal),
    /// Allowed, but the host could not be reached (it does not resolve, it refused the
    /// connection…): the text the client was answered.
    Failed(String),
}

/// A request the proxy was asked for, as it ended: what a run shows and keeps of its network.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Connection {
    /// The host asked for, as asked.
    pub host: String,
    /// Its port.
    pub port: u16,
    /// `CONNECT` for a tunnel, else the plain request's method.
    pub method: String,
    /// What became of it.
    pub verdict: Verdict,
    /// Bytes from the command to the host.
    pub sent: u64,
    /// Bytes from the host to the command.
    pub received: u64,
    /// The tool call whose command asked ([`Proxy::for_call`]).
    pub call_id: Option<String>,
}

impl Connection {
    /// Whether it was let through.
    pub fn allowed(&self) -> bool {
        !matches!(self.verdict, Verdict::Refused(_))
    }

    /// As JSON: `host`, `port`, `method`, `allowed`, `refused` (the text answered) or
    /// `failed`, `sent`, `received`, and `call` when known.
    pub fn to_json(&self) -> serde_json::Value {
        let mut value = json!({
            "host": self.host,
            "port": self.port,
            "method": self.method,
            "allowed": self.allowed(),
            "sent": self.sent,
            "received": self.received,
        });
        match &self.verdict {
            Verdict::Allowed => {}
            Verdict::Refused(refusal) => {
                value["refused"] = json!(refusal.to_string());
                value["reason"] = json!(refusal.reason());
            }
            Verdict::Failed(why) => value["failed"] = json!(why),
        }
        if let Some(call) = &self.call_id {
            value["call"] = json!(call);
        }
        value
    }
}

/// Where the proxy tells each [`Connection`] as it ends.
#[derive(Clone)]
pub struct ConnectionLog(Arc<dyn Fn(&Connection) + Send + Sync>);

impl ConnectionLog {
    /// A log calling `tell` with each connection (refused ones at once, the others when they
    /// end). It runs on the proxy's tasks: keep it short.
    pub fn new(tell: impl Fn(&Connection) + Send + Sync + 'static) -> ConnectionLog {
        ConnectionLog(Arc::new(tell))
    }
}

impl std::fmt::Debug for ConnectionLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ConnectionLog")
    }
}

/// The proxy: a policy, a resolver, and where connections are told.
#[derive(Debug, Clone)]
pub struct Proxy {
    policy: Arc<NetworkPolicy>,
    resolver: Arc<dyn Resolve>,
    logs: Vec<ConnectionLog>,
    call_id: Option<Arc<str>>,
    max_connections: usize,
}

/// The header a refusal carries, for a client to tell golato's refusals from a server's.
pub const REFUSAL_HEADER: &str = "x-golato-refused";

/// The body of every answer.
type Body = http_body_util::combinators::BoxBody<Bytes, hyper::Error>;

impl Proxy {
    /// A proxy applying `policy`, resolving with `resolver`.
    pub fn new(policy: NetworkPolicy, resolver: Arc<dyn Resolve>) -> Proxy {
        Proxy {
            policy: Arc::new(policy),
            resolver,
            logs: Vec::new(),
            call_id: None,
            max_connections: DEFAULT_MAX_CONNECTIONS,
        }
    }

    /// The proxy, serving at most `max` connections at once ([`DEFAULT_MAX_CONNECTIONS`]
    /// unless set; at least 1).
    pub fn with_max_connections(mut self, max: usize) -> Proxy {
        self.max_connections = max.max(1);
        self
    }

    /// The proxy, also telling `log` of each connection when it ends (refused ones at once).
    pub fn with_log(mut self, log: ConnectionLog) -> Proxy {
        self.logs.push(log);
        self
    }

    /// The proxy, its connections marked as asked by the tool call `id`.
    pub fn for_call(mut self, id: &str) -> Proxy {
        self.call_id = Some(id.into());
        self
    }

    /// The policy it applies.
    pub fn policy(&self) -> &NetworkPolicy {
        &self.policy
    }

    fn tell(&self, host: String, port: u16, method: String, verdict: Verdict, bytes: &Counters) {
        let connection = Connection {
            host,
            port,
            method,
            verdict,
            sent: bytes.sent(),
            received: bytes.received(),
            call_id: self.call_id.as_deref().map(str::to_owned),
        };
        for log in &self.logs {
            (log.0)(&connection);
        }
    }

    /// Serves the connections `listener` accepts until `cancel`; then closes the requests and
    /// tunnels still open, and returns once each has been told.
    ///
    /// At most [`Proxy::with_max_connections`] connections are served at once (a tunnel counts
    /// until it closes); more wait in the listener's queue, so a command that opens thousands
    /// slows only itself and never runs golato out of descriptors.
    pub async fn serve(self, listener: TcpListener, cancel: CancellationToken) {
        let tracker = TaskTracker::new();
        let open = Arc::new(tokio::sync::Semaphore::new(self.max_connections));
        loop {
            let permit = tokio::select! {
                () = cancel.cancelled() => break,
                permit = Arc::clone(&open).acquire_owned() => match permit {
                    Ok(permit) => Arc::new(permit),
                    Err(_) => break,
                },
            };
            let accepted = tokio::select! {
                () = cancel.cancelled() => break,
                accepted = listener.accept() => accepted,
            };
            let stream = match accepted {
                Ok((stream, _)) => stream,
                Err(error) => {
                    // Out of descriptors, say: accepting again at once would spin.
                    tracing::warn!(%error, "the proxy could not accept a connection");
                    tokio::select! {
                        () = cancel.cancelled() => break,
                        () = tokio::time::sleep(ACCEPT_BACKOFF) => continue,
                    }
                }
            };
            let proxy = self.clone();
            let cancel = cancel.clone();
            let inner = tracker.clone();
            tracker.spawn(async move {
                // SOCKS5 and HTTP share the port: a SOCKS5 greeting starts with its version.
                let mut first = [0u8; 1];
                let peeked = tokio::select! {
                    () = cancel.cancelled() => return,
                    peeked = stream.peek(&mut first) => peeked,
                };
                if matches!(peeked, Ok(1)) && first[0] == socks::VERSION {
                    proxy.socks(stream, cancel).await;
                    drop(permit);
                    return;
                }
                let service = hyper::service::service_fn({
                    let cancel = cancel.clone();
                    let permit = Arc::clone(&permit);
                    move |request| {
                        let proxy = proxy.clone();
                        let cancel = cancel.clone();
                        let tracker = inner.clone();
                        let held = Held {
                            tracker,
                            _permit: Arc::clone(&permit),
                        };
                        async move {
                            Ok::<_, std::convert::Infallible>(
                                proxy.handle(request, cancel, held).await,
                            )
                        }
                    }
                });
                let connection = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .with_upgrades();
                tokio::select! {
                    () = cancel.cancelled() => {}
                    ended = connection => if let Err(error) = ended {
                        tracing::debug!(%error, "a proxy connection ended with an error");
                    },
                }
            });
        }
        tracker.close();
        tracker.wait().await;
    }

    async fn handle(
        &self,
        request: Request<hyper::body::Incoming>,
        cancel: CancellationToken,
        held: Held,
    ) -> Response<Body> {
        if request.method() != Method::CONNECT {
            return self.forward(request, cancel, held).await;
        }
        let Some(authority) = request.uri().authority().cloned() else {
            return text(
                StatusCode::BAD_REQUEST,
                "golato: CONNECT needs host:port".to_owned(),
                false,
            );
        };
        let host = authority
            .host()
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        let port = authority.port_u16().unwrap_or(443);
        let method = Method::CONNECT.as_str();
        let judged = self
            .policy
            .judge_host(&host, port)
            .and_then(|()| self.policy.judge_method(&host, method));
        if let Err(refusal) = judged {
            return self.refuse(&host, port, method, refusal);
        }
        let counters = Arc::new(Counters::default());
        let upstream = match self.open(&host, port).await {
            Ok(upstream) => Counted::new(upstream, Arc::clone(&counters)),
            Err(Opened::Refused(refusal)) => return self.refuse(&host, port, method, refusal),
            Err(Opened::Failed(why)) => return self.fail(&host, port, method, why),
        };
        let proxy = self.clone();
        let tracker = held.tracker.clone();
        tracker.spawn(async move {
            let _held = held;
            let upgraded = tokio::select! {
                () = cancel.cancelled() => None,
                upgraded = hyper::upgrade::on(request) => upgraded.ok(),
            };
            let closed = match upgraded {
                Some(upgraded) => tokio::select! {
                    () = cancel.cancelled() => None,
                    closed = tunnel::carry(TokioIo::new(upgraded), upstream, &host) => closed,
                },
                None => None,
            };
            let verdict = match closed {
                Some(closed) => Verdict::Refused(closed.refusal(host.clone())),
                None => Verdict::Allowed,
            };
            proxy.tell(host, port, Method::CONNECT.to_string(), verdict, &counters);
        });
        Response::new(forward::full(Bytes::new()))
    }

    /// The connection to `host`, judged after it is resolved.
    async fn open(&self, host: &str, port: u16) -> Result<TcpStream, Opened> {
        let addresses = self
            .resolver
            .resolve(host, port)
            .await
            .map_err(|error| Opened::Failed(format!("it does not resolve ({error})")))?;
        let mut last = String::from("it resolves to no address");
        for address in addresses {
            self.policy
                .judge_address(host, address.ip(), port)
                .map_err(Opened::Refused)?;
            match TcpStream::connect(address).await {
                Ok(stream) => return Ok(stream),
                Err(error) => last = format!("{address}: {error}"),
            }
        }
        Err(Opened::Failed(last))
    }
}

/// What a request's tasks hold while they run: where they are tracked, and the connection's
/// place among those served at once.
pub(crate) struct Held {
    tracker: TaskTracker,
    _permit: Arc<tokio::sync::OwnedSemaphorePermit>,
}

/// How long the proxy waits before accepting again after a failed accept.
const ACCEPT_BACKOFF: std::time::Duration = std::time::Duration::from_millis(100);

/// The most connections one [`Proxy::serve`] serves at once by default.
pub const DEFAULT_MAX_CONNECTIONS: usize = 512;

enum Opened {
    Refused(Refusal),
    Failed(String),
}

/// An answer of the proxy's own; `refused` marks it with [`REFUSAL_HEADER`].
fn text(status: StatusCode, body: String, refused: bool) -> Response<Body> {
    let mut response = Response::new(forward::full(Bytes::from(format!("{body}\n"))));
    *response.status_mut() = status;
    if refused {
        response
            .headers_mut()
            .insert(REFUSAL_HEADER, hyper::header::HeaderValue::from_static("1"));
    }
    response
}
