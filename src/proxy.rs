//! golato's network proxy for sandboxed commands (issue 45, in progress): it opens HTTP
//! `CONNECT` tunnels to the hosts a [`NetworkPolicy`] allows and answers every other request
//! with `403` and a body naming the host and the flag that would allow it.
//!
//! Each tunnel is judged twice: the host asked for, before anything is resolved; then every
//! address it resolved to, before connecting (a name pointed or rebound at a local address is
//! refused unless a pattern names it exactly). The proxy resolves names itself, so a command
//! behind it needs no DNS. It does not terminate TLS, but reads the client's ClientHello: a
//! tunnel whose TLS name (SNI) is another host than the one it was opened for is closed before
//! any of it reaches the host. Not yet: SOCKS5, plain HTTP forwarding, the sandbox's namespace
//! bridge, the flags (see the issue).
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

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use futures::future::BoxFuture;
use golato_sandbox::network::{NetworkPolicy, Refusal};
use http_body_util::Full;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

/// How the proxy turns a name into addresses (a seam: tests resolve their own names to their
/// own loopback servers).
pub trait Resolve: Send + Sync + 'static {
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

/// A connection the proxy was asked for, as it ended: what a run shows and keeps of its
/// network.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Connection {
    /// The host asked for, as asked.
    pub host: String,
    /// Its port.
    pub port: u16,
    /// Why it was refused (the text the client was answered), or `None` when it was let
    /// through.
    pub refused: Option<String>,
    /// Bytes from the command to the host.
    pub sent: u64,
    /// Bytes from the host to the command.
    pub received: u64,
}

/// Where the proxy tells each [`Connection`] as it ends.
pub type ConnectionLog = Arc<dyn Fn(Connection) + Send + Sync>;

/// The proxy: a policy, a resolver, and where connections are told.
#[derive(Clone)]
pub struct Proxy {
    policy: Arc<NetworkPolicy>,
    resolver: Arc<dyn Resolve>,
    log: Option<ConnectionLog>,
}

impl std::fmt::Debug for Proxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Proxy")
            .field("policy", &self.policy)
            .field("logged", &self.log.is_some())
            .finish_non_exhaustive()
    }
}

/// The header a refusal carries, for a client to tell golato's refusals from a server's.
pub const REFUSAL_HEADER: &str = "x-golato-refused";

impl Proxy {
    /// A proxy applying `policy`, resolving with `resolver`.
    pub fn new(policy: NetworkPolicy, resolver: Arc<dyn Resolve>) -> Proxy {
        Proxy {
            policy: Arc::new(policy),
            resolver,
            log: None,
        }
    }

    /// The proxy, telling `log` of each connection when it ends (refused ones at once).
    pub fn with_log(mut self, log: ConnectionLog) -> Proxy {
        self.log = Some(log);
        self
    }

    fn tell(&self, connection: Connection) {
        if let Some(log) = &self.log {
            log(connection);
        }
    }

    /// Serves the connections `listener` accepts until `cancel`; the tunnels open then are
    /// closed too.
    pub async fn serve(self, listener: TcpListener, cancel: CancellationToken) {
        loop {
            let accepted = tokio::select! {
                () = cancel.cancelled() => return,
                accepted = listener.accept() => accepted,
            };
            let Ok((stream, _)) = accepted else {
                continue;
            };
            let proxy = self.clone();
            let cancel = cancel.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |request| {
                    let proxy = proxy.clone();
                    let cancel = cancel.clone();
                    async move { Ok::<_, std::convert::Infallible>(proxy.handle(request, cancel).await) }
                });
                let connection = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .with_upgrades();
                if let Err(error) = connection.await {
                    tracing::debug!(%error, "a proxy connection ended with an error");
                }
            });
        }
    }

    async fn handle(
        &self,
        request: Request<hyper::body::Incoming>,
        cancel: CancellationToken,
    ) -> Response<Full<Bytes>> {
        if request.method() != Method::CONNECT {
            return text(
                StatusCode::METHOD_NOT_ALLOWED,
                "golato: this proxy opens tunnels (CONNECT) only".to_owned(),
                false,
            );
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
        let said = |refused: String| Connection {
            host: host.clone(),
            port,
            refused: Some(refused),
            sent: 0,
            received: 0,
        };
        let upstream = match self.open(&host, port).await {
            Ok(upstream) => upstream,
            Err(Opened::Refused(refusal)) => {
                tracing::debug!(%refusal, "a tunnel was refused");
                self.tell(said(refusal.to_string()));
                return text(StatusCode::FORBIDDEN, refusal.to_string(), true);
            }
            Err(Opened::Failed(why)) => {
                let why = format!("golato: {host}: {why}");
                self.tell(said(why.clone()));
                return text(StatusCode::BAD_GATEWAY, why, false);
            }
        };
        let proxy = self.clone();
        tokio::spawn(async move {
            let upgraded = match hyper::upgrade::on(request).await {
                Ok(upgraded) => upgraded,
                Err(error) => {
                    tracing::debug!(%error, "a tunnel's client went away before it opened");
                    return;
                }
            };
            let client = TokioIo::new(upgraded);
            let (sent, received, refused) = tokio::select! {
                () = cancel.cancelled() => (0, 0, None),
                carried = carry(client, upstream, &host) => carried,
            };
            proxy.tell(Connection {
                host,
                port,
                refused,
                sent,
                received,
            });
        });
        Response::new(Full::new(Bytes::new()))
    }

    /// The connection to `host`, judged before and after it is resolved.
    async fn open(&self, host: &str, port: u16) -> Result<TcpStream, Opened> {
        self.policy
            .judge_host(host, port)
            .map_err(Opened::Refused)?;
        let addresses = self
            .resolver
            .resolve(host, port)
            .await
            .map_err(|error| Opened::Failed(format!("it does not resolve ({error})")))?;
        let mut last = String::from("it resolves to no address");
        for address in addresses {
            self.policy
                .judge_address(host, address.ip())
                .map_err(Opened::Refused)?;
            match TcpStream::connect(address).await {
                Ok(stream) => return Ok(stream),
                Err(error) => last = format!("{address}: {error}"),
            }
        }
        Err(Opened::Failed(last))
    }
}

/// The most of a client's first bytes read to find a TLS ClientHello's name.
const HELLO_LIMIT: usize = 16 * 1024;

/// Carries a tunnel both ways until either side ends: bytes sent, bytes received, and the
/// refusal when the client's TLS ClientHello names (SNI) another host than the tunnel's. The
/// host's bytes flow from the start (a server that speaks first, as SSH does, is not held);
/// the client's wait until its first bytes are read as TLS or found not to be.
async fn carry<C, U>(client: C, upstream: U, host: &str) -> (u64, u64, Option<String>)
where
    C: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
    U: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let (mut from_client, mut to_client) = tokio::io::split(client);
    let (mut from_host, mut to_host) = tokio::io::split(upstream);
    let down = async {
        let received = tokio::io::copy(&mut from_host, &mut to_client)
            .await
            .unwrap_or(0);
        let _ = to_client.shutdown().await;
        received
    };
    let up = async {
        let mut first = Vec::new();
        let mut acceptor = rustls::server::Acceptor::default();
        let named = loop {
            let mut buffer = [0u8; 4096];
            let count = match from_client.read(&mut buffer).await {
                Ok(0) | Err(_) => break None,
                Ok(count) => count,
            };
            first.extend_from_slice(&buffer[..count]);
            if acceptor.read_tls(&mut &buffer[..count]).is_err() {
                break None;
            }
            match acceptor.accept() {
                Ok(Some(accepted)) => {
                    break accepted.client_hello().server_name().map(str::to_owned)
                }
                Ok(None) if first.len() < HELLO_LIMIT => {}
                // Not TLS (or no hello within the limit): the host was judged; carry it.
                Ok(None) | Err(_) => break None,
            }
        };
        if let Some(named) = named.filter(|named| !named.eq_ignore_ascii_case(host)) {
            return (
                0,
                Some(format!(
                    "golato: the TLS name (SNI) {named} is not the tunnel's host {host}; refused"
                )),
            );
        }
        if to_host.write_all(&first).await.is_err() {
            return (0, None);
        }
        let sent = tokio::io::copy(&mut from_client, &mut to_host)
            .await
            .unwrap_or(0);
        let _ = to_host.shutdown().await;
        (first.len() as u64 + sent, None)
    };
    tokio::pin!(up, down);
    let mut received = None;
    let (sent, refused) = loop {
        tokio::select! {
            carried = &mut up => break carried,
            count = &mut down, if received.is_none() => received = Some(count),
        }
    };
    // Refused: the tunnel ends here, the host's side dropped unread.
    if refused.is_some() {
        return (sent, received.unwrap_or(0), refused);
    }
    let received = match received {
        Some(count) => count,
        None => down.await,
    };
    (sent, received, None)
}

enum Opened {
    Refused(Refusal),
    Failed(String),
}

fn text(status: StatusCode, body: String, refused: bool) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(format!("{body}\n"))));
    *response.status_mut() = status;
    if refused {
        response
            .headers_mut()
            .insert(REFUSAL_HEADER, hyper::header::HeaderValue::from_static("1"));
    }
    response
}
