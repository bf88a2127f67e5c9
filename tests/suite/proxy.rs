//! golato's network proxy on loopback only: names resolved by the test to its own servers, a
//! tunnel to an allowed name carries bytes both ways, every other request is refused with a
//! 403 naming the host and the flag, and a name resolving to a local address needs a pattern
//! naming it exactly.

use std::net::SocketAddr;
use std::sync::Arc;

use crate::support;
use golato::proxy::{Connection, ConnectionLog, Proxy, Verdict, REFUSAL_HEADER};
use golato::sandbox::network::{Methods, NetworkPolicy};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

/// A server that answers each line with the line upper-cased.
async fn shouting_server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buffer = [0u8; 1024];
                while let Ok(count) = stream.read(&mut buffer).await {
                    if count == 0 {
                        break;
                    }
                    let loud = buffer[..count].to_ascii_uppercase();
                    if stream.write_all(&loud).await.is_err() {
                        break;
                    }
                }
            });
        }
    });
    address
}

pub(super) struct Running {
    pub(super) address: SocketAddr,
    pub(super) cancel: CancellationToken,
    /// Each connection as the proxy tells it.
    pub(super) log: tokio::sync::mpsc::UnboundedReceiver<Connection>,
}

async fn proxy(allow: &[&str], deny: &[&str], names: &[(&str, SocketAddr)]) -> Running {
    proxy_with(allow, deny, Methods::All, names).await
}

async fn proxy_with(
    allow: &[&str],
    deny: &[&str],
    methods: Methods,
    names: &[(&str, SocketAddr)],
) -> Running {
    serving(allow, deny, methods, names, |proxy| proxy).await.0
}

/// The proxy `shape` makes of the usual one, served; and the task serving it.
async fn serving(
    allow: &[&str],
    deny: &[&str],
    methods: Methods,
    names: &[(&str, SocketAddr)],
    shape: impl FnOnce(Proxy) -> Proxy,
) -> (Running, tokio::task::JoinHandle<()>) {
    serving_names(allow, deny, methods, support::TestNames::new(names), shape).await
}

/// The proxy `shape` makes of the usual one resolving with `names`, served; and its task.
pub(super) async fn serving_names(
    allow: &[&str],
    deny: &[&str],
    methods: Methods,
    names: support::TestNames,
    shape: impl FnOnce(Proxy) -> Proxy,
) -> (Running, tokio::task::JoinHandle<()>) {
    let policy = NetworkPolicy::new(allow, deny, methods).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let cancel = CancellationToken::new();
    let (told, log) = tokio::sync::mpsc::unbounded_channel();
    let proxy =
        Proxy::new(policy, Arc::new(names)).with_log(ConnectionLog::new(move |connection| {
            let _ = told.send(connection.clone());
        }));
    let served = tokio::spawn(shape(proxy).serve(listener, cancel.clone()));
    let running = Running {
        address,
        cancel,
        log,
    };
    (running, served)
}

/// Sends CONNECT for `target` and returns the response head and the open stream.
pub(super) async fn connect(proxy: SocketAddr, target: &str) -> (String, TcpStream) {
    let mut stream = TcpStream::connect(proxy).await.unwrap();
    stream
        .write_all(format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        assert_eq!(
            stream.read(&mut byte).await.unwrap(),
            1,
            "the proxy hung up: {head:?}"
        );
        head.push(byte[0]);
    }
    (String::from_utf8(head).unwrap(), stream)
}

#[tokio::test]
async fn an_allowed_name_is_tunnelled_and_any_other_is_refused_naming_the_flag() {
    let server = shouting_server().await;
    let Running {
        address: proxy,
        cancel,
        mut log,
    } = proxy(
        &["registry.test"],
        &["blocked.test"],
        &[
            ("registry.test", server),
            ("elsewhere.test", server),
            ("blocked.test", server),
            ("sub.wide.test", server),
        ],
    )
    .await;
    // Allowed, and named exactly: its loopback address is allowed too.
    let (head, mut tunnel) = connect(proxy, &format!("registry.test:{}", server.port())).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    tunnel.write_all(b"hello through the tunnel").await.unwrap();
    let mut answer = [0u8; 24];
    tunnel.read_exact(&mut answer).await.unwrap();
    assert_eq!(&answer, b"HELLO THROUGH THE TUNNEL");
    // Closed: the connection is told, with its bytes each way.
    drop(tunnel);
    let told = log.recv().await.unwrap();
    assert_eq!(
        (told.host.as_str(), &told.verdict, told.sent, told.received),
        ("registry.test", &Verdict::Allowed, 24, 24)
    );

    // Not allowed: 403, golato's header, and what would allow it.
    let (head, mut refused) = connect(proxy, &format!("elsewhere.test:{}", server.port())).await;
    assert!(head.starts_with("HTTP/1.1 403"), "{head}");
    assert!(head.to_ascii_lowercase().contains(REFUSAL_HEADER), "{head}");
    let mut body = vec![0u8; 256];
    let count = refused.read(&mut body).await.unwrap();
    let body = String::from_utf8_lossy(&body[..count]).into_owned();
    assert!(
        body.contains("golato: elsewhere.test is not allowed; --allow-domain elsewhere.test"),
        "{body}"
    );
    let (head, _) = connect(proxy, &format!("blocked.test:{}", server.port())).await;
    assert!(head.starts_with("HTTP/1.1 403"), "{head}");
    // Both refusals are told, with what the client was answered.
    let first = log.recv().await.unwrap();
    assert_eq!(first.host, "elsewhere.test");
    assert!(first.to_json()["refused"]
        .as_str()
        .unwrap()
        .contains("not allowed"));
    assert_eq!(first.to_json()["reason"], "not in the allowed domains");
    let second = log.recv().await.unwrap();
    assert!(
        second.to_json()["refused"]
            .as_str()
            .unwrap_or_default()
            .contains("is denied"),
        "{second:?}"
    );
    cancel.cancel();
}

#[tokio::test]
async fn a_wildcard_never_reaches_a_local_address() {
    let server = shouting_server().await;
    let Running {
        address: proxy,
        cancel,
        ..
    } = proxy(&["*.wide.test"], &[], &[("sub.wide.test", server)]).await;
    // Allowed by the wildcard, but it resolves to loopback: only an exact name allows that.
    let (head, mut refused) = connect(proxy, &format!("sub.wide.test:{}", server.port())).await;
    assert!(head.starts_with("HTTP/1.1 403"), "{head}");
    let mut body = vec![0u8; 256];
    let count = refused.read(&mut body).await.unwrap();
    assert!(
        String::from_utf8_lossy(&body[..count]).contains("a local address"),
        "{:?}",
        String::from_utf8_lossy(&body[..count])
    );
    // The same for a plain request.
    let (head, _) = plain(
        proxy,
        "GET http://sub.wide.test/ HTTP/1.1\r\nHost: sub.wide.test\r\n\r\n",
    )
    .await;
    assert!(head.starts_with("HTTP/1.1 403"), "{head}");
    cancel.cancel();
}

/// A web server that answers every request with its method and path, and a body as long as
/// the request's.
pub(super) async fn web_server() -> SocketAddr {
    web_server_at("127.0.0.1:0").await
}

/// [`web_server`] listening on `address`.
pub(super) async fn web_server_at(address: &str) -> SocketAddr {
    let listener = TcpListener::bind(address).await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let service = hyper::service::service_fn(
                    |request: hyper::Request<hyper::body::Incoming>| async move {
                        use http_body_util::BodyExt as _;
                        let said = format!("{} {}", request.method(), request.uri());
                        let host = request
                            .headers()
                            .get_all("host")
                            .iter()
                            .map(|host| host.to_str().unwrap_or(""))
                            .collect::<Vec<_>>()
                            .join(",");
                        let length = request
                            .into_body()
                            .collect()
                            .await
                            .map(|body| body.to_bytes().len())
                            .unwrap_or(0);
                        Ok::<_, std::convert::Infallible>(hyper::Response::new(
                            http_body_util::Full::new(bytes::Bytes::from(format!(
                                "{said} host={host} body={length}"
                            ))),
                        ))
                    },
                );
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    address
}

/// Sends `request` as it is and returns everything answered until the proxy closes (the
/// request asks to close), split into head and body.
pub(super) async fn plain(proxy: SocketAddr, request: &str) -> (String, String) {
    let mut stream = TcpStream::connect(proxy).await.unwrap();
    let request = request.replacen("\r\n\r\n", "\r\nConnection: close\r\n\r\n", 1);
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer).await;
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    (head.to_owned(), body.to_owned())
}

#[tokio::test]
async fn plain_http_is_forwarded_to_allowed_hosts_and_read_mode_refuses_what_sends() {
    let server = web_server().await;
    let Running {
        address: proxy,
        cancel,
        mut log,
    } = proxy(
        &["registry.test"],
        &[],
        &[("registry.test", server), ("other.test", server)],
    )
    .await;
    let port = server.port();
    let (head, body) = plain(
        proxy,
        &format!("GET http://registry.test:{port}/index?q=1 HTTP/1.1\r\nHost: registry.test:{port}\r\nProxy-Connection: keep-alive\r\n\r\n"),
    )
    .await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    // The host sees the origin form and the Host header.
    assert_eq!(
        body,
        format!("GET /index?q=1 host=registry.test:{port} body=0")
    );
    let told = log.recv().await.unwrap();
    assert_eq!(
        (told.method.as_str(), &told.verdict),
        ("GET", &Verdict::Allowed)
    );
    assert!(
        told.sent > 0 && told.received > body.len() as u64,
        "{told:?}"
    );
    let (head, body) = plain(
        proxy,
        &format!("POST http://registry.test:{port}/upload HTTP/1.1\r\nHost: registry.test:{port}\r\nContent-Length: 5\r\n\r\nhello"),
    )
    .await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(body.ends_with("body=5"), "{body}");
    let (head, body) = plain(
        proxy,
        &format!("GET http://other.test:{port}/ HTTP/1.1\r\nHost: other.test\r\n\r\n"),
    )
    .await;
    assert!(head.starts_with("HTTP/1.1 403"), "{head}");
    assert!(body.contains("--allow-domain other.test"), "{body}");
    // Not a proxy request at all.
    let (head, body) = plain(proxy, "GET / HTTP/1.1\r\nHost: x\r\n\r\n").await;
    assert!(head.starts_with("HTTP/1.1 400"), "{head}");
    assert!(body.contains("absolute http:// URL"), "{body}");
    cancel.cancel();

    // Read mode: GET passes, POST and tunnels are refused.
    let Running {
        address: proxy,
        cancel,
        ..
    } = proxy_with(
        &["registry.test"],
        &[],
        Methods::Read,
        &[("registry.test", server)],
    )
    .await;
    let (head, _) = plain(
        proxy,
        &format!("HEAD http://registry.test:{port}/ HTTP/1.1\r\nHost: registry.test\r\n\r\n"),
    )
    .await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let (head, body) = plain(
        proxy,
        &format!("POST http://registry.test:{port}/ HTTP/1.1\r\nHost: registry.test\r\nContent-Length: 1\r\n\r\nx"),
    )
    .await;
    assert!(head.starts_with("HTTP/1.1 403"), "{head}");
    assert!(body.contains("POST to registry.test is refused"), "{body}");
    let (head, mut tunnel) = connect(proxy, &format!("registry.test:{port}")).await;
    assert!(head.starts_with("HTTP/1.1 403"), "{head}");
    let mut body = vec![0u8; 512];
    let count = tunnel.read(&mut body).await.unwrap();
    let body = String::from_utf8_lossy(&body[..count]);
    assert!(
        body.contains("a tunnel (CONNECT) to registry.test is refused"),
        "{body}"
    );
    cancel.cancel();
}

#[tokio::test]
async fn cancelling_ends_open_tunnels_and_tells_what_they_carried() {
    let server = shouting_server().await;
    let (
        Running {
            address,
            cancel,
            mut log,
        },
        served,
    ) = serving(
        &["registry.test"],
        &[],
        Methods::All,
        &[("registry.test", server)],
        |proxy| proxy.for_call("call-7"),
    )
    .await;
    let (head, mut tunnel) = connect(address, &format!("registry.test:{}", server.port())).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    tunnel.write_all(b"abc").await.unwrap();
    let mut back = [0u8; 3];
    tunnel.read_exact(&mut back).await.unwrap();
    // Still open when the call ends: serve returns once the tunnel is closed and told.
    cancel.cancel();
    served.await.unwrap();
    let mut told = Vec::new();
    while let Ok(connection) = log.try_recv() {
        told.push(connection);
    }
    assert_eq!(told.len(), 1, "{told:?}");
    assert_eq!((told[0].sent, told[0].received), (3, 3));
    assert_eq!(told[0].call_id.as_deref(), Some("call-7"));
    let mut rest = Vec::new();
    assert_eq!(tunnel.read_to_end(&mut rest).await.unwrap_or(0), 0);
}

/// A TLS ClientHello naming `name`, as a TLS client opens with.
pub(super) fn client_hello(name: &str) -> Vec<u8> {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(rustls::RootCertStore::empty())
        .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from(name.to_owned()).unwrap();
    let mut connection = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
    let mut hello = Vec::new();
    connection.write_tls(&mut hello).unwrap();
    hello
}

#[tokio::test]
async fn a_tls_hello_naming_another_host_than_the_tunnels_is_refused() {
    let server = shouting_server().await;
    let Running {
        address: proxy,
        cancel,
        mut log,
    } = proxy(&["registry.test"], &[], &[("registry.test", server)]).await;
    let target = format!("registry.test:{}", server.port());
    // The same name: carried to the host (which shouts it back).
    let (head, mut tunnel) = connect(proxy, &target).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let hello = client_hello("registry.test");
    tunnel.write_all(&hello).await.unwrap();
    let mut back = vec![0u8; hello.len()];
    tunnel.read_exact(&mut back).await.unwrap();
    assert_eq!(back, hello.to_ascii_uppercase());
    drop(tunnel);
    let told = log.recv().await.unwrap();
    assert_eq!(
        (told.verdict, told.sent),
        (Verdict::Allowed, hello.len() as u64)
    );
    // Another name than the tunnel's: the tunnel ends, nothing reaches the host.
    let (head, mut tunnel) = connect(proxy, &target).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    tunnel.write_all(&client_hello("evil.test")).await.unwrap();
    let mut rest = Vec::new();
    let _ = tunnel.read_to_end(&mut rest).await;
    assert!(rest.is_empty(), "the host answered: {rest:?}");
    let told = log.recv().await.unwrap();
    assert!(
        told.to_json()["refused"].as_str().is_some_and(
            |why| why.contains("SNI) evil.test is not the tunnel's host registry.test")
        ),
        "{told:?}"
    );
    assert_eq!(told.sent, 0);
    cancel.cancel();
}

#[tokio::test]
async fn connections_past_the_cap_wait_their_turn_and_are_served_when_one_closes() {
    let server = shouting_server().await;
    let (
        Running {
            address, cancel, ..
        },
        _,
    ) = serving(
        &["registry.test"],
        &[],
        Methods::All,
        &[("registry.test", server)],
        |proxy| proxy.with_max_connections(2),
    )
    .await;
    let target = format!("registry.test:{}", server.port());
    // Two tunnels open: the cap.
    let (_, first) = connect(address, &target).await;
    let (_, _second) = connect(address, &target).await;
    // A third is queued by the kernel, not served, while both stay open.
    let mut third = TcpStream::connect(address).await.unwrap();
    third
        .write_all(format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut byte = [0u8; 1];
    let waited =
        tokio::time::timeout(std::time::Duration::from_millis(300), third.read(&mut byte)).await;
    assert!(waited.is_err(), "served past the cap: {waited:?}");
    // One closes: the third is served.
    drop(first);
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        assert_eq!(third.read(&mut byte).await.unwrap(), 1);
        head.push(byte[0]);
    }
    assert!(
        head.starts_with(b"HTTP/1.1 200"),
        "{:?}",
        String::from_utf8_lossy(&head)
    );
    cancel.cancel();
}

/// A SOCKS5 greeting offering `methods`, then (when the proxy accepts no authentication) a
/// request of `command` for `name`:`port`; every byte the proxy answered until it closed.
pub(super) async fn socks(
    proxy: SocketAddr,
    methods: &[u8],
    command: u8,
    name: &[u8],
    port: u16,
) -> Vec<u8> {
    let mut stream = TcpStream::connect(proxy).await.unwrap();
    let mut hello = vec![5, methods.len() as u8];
    hello.extend_from_slice(methods);
    stream.write_all(&hello).await.unwrap();
    let mut chosen = [0u8; 2];
    stream.read_exact(&mut chosen).await.unwrap();
    let mut answer = chosen.to_vec();
    if chosen[1] == 0 {
        let mut request = vec![5, command, 0, 3, name.len() as u8];
        request.extend_from_slice(name);
        request.extend_from_slice(&port.to_be_bytes());
        stream.write_all(&request).await.unwrap();
        let mut rest = Vec::new();
        let _ = stream.read_to_end(&mut rest).await;
        answer.extend(rest);
    }
    answer
}

/// What a hostile command could send the proxy: every one answered or closed, none taking it
/// down (the last request is served as usual).
#[tokio::test]
async fn hostile_requests_are_answered_or_closed_and_the_proxy_goes_on() {
    let server = shouting_server().await;
    let Running {
        address: proxy,
        cancel,
        mut log,
    } = proxy(&["registry.test"], &[], &[("registry.test", server)]).await;
    let port = server.port();
    // SOCKS5 with only username/password offered: no acceptable method.
    assert_eq!(
        socks(proxy, &[2], 1, b"registry.test", port).await,
        [5, 0xff]
    );
    // UDP ASSOCIATE and BIND: not supported (7).
    for command in [2u8, 3] {
        let answer = socks(proxy, &[0], command, b"registry.test", port).await;
        assert_eq!(answer.get(..4), Some(&[5u8, 0, 5, 7][..]), "{answer:?}");
    }
    // A name that is not UTF-8 is judged as the text it makes: not allowed (2).
    let answer = socks(proxy, &[0], 1, &[0xff, 0xfe, b'.', b't'], port).await;
    assert_eq!(answer.get(..4), Some(&[5u8, 0, 5, 2][..]), "{answer:?}");
    let told = log.recv().await.unwrap();
    assert!(!told.allowed(), "{told:?}");
    // A 10 KB host, and bytes that are neither HTTP nor SOCKS.
    let long = format!("{}.test", "a".repeat(10_000));
    let (head, _) = connect(proxy, &format!("{long}:{port}")).await;
    assert!(
        head.starts_with("HTTP/1.1 4"),
        "{}",
        &head[..head.len().min(200)]
    );
    let mut garbage = TcpStream::connect(proxy).await.unwrap();
    garbage
        .write_all(&[0u8, 1, 2, 3, 0xff, b'\n', b'\n'])
        .await
        .unwrap();
    let mut rest = Vec::new();
    let _ = garbage.read_to_end(&mut rest).await;
    // Still serving.
    let (head, mut tunnel) = connect(proxy, &format!("registry.test:{port}")).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    tunnel.write_all(b"still here").await.unwrap();
    let mut back = [0u8; 10];
    tunnel.read_exact(&mut back).await.unwrap();
    assert_eq!(&back, b"STILL HERE");
    cancel.cancel();
}
