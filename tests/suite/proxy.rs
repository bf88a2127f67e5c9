//! golato's network proxy on loopback only: names resolved by the test to its own servers, a
//! tunnel to an allowed name carries bytes both ways, every other request is refused with a
//! 403 naming the host and the flag, and a name resolving to a local address needs a pattern
//! naming it exactly.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use futures::future::BoxFuture;
use golato::proxy::{Connection, Proxy, Resolve, REFUSAL_HEADER};
use golato::sandbox::network::{Methods, NetworkPolicy};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

/// Names of the test's own, each to an address of its servers.
struct Names(HashMap<String, SocketAddr>);

impl Resolve for Names {
    fn resolve(&self, host: &str, _: u16) -> BoxFuture<'static, std::io::Result<Vec<SocketAddr>>> {
        let found = self.0.get(host).copied();
        Box::pin(async move {
            found.map(|address| vec![address]).ok_or_else(|| {
                std::io::Error::new(std::io::ErrorKind::NotFound, "no such test name")
            })
        })
    }
}

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

struct Running {
    address: SocketAddr,
    cancel: CancellationToken,
    /// Each connection as the proxy tells it.
    log: tokio::sync::mpsc::UnboundedReceiver<Connection>,
}

async fn proxy(allow: &[&str], deny: &[&str], names: &[(&str, SocketAddr)]) -> Running {
    let policy = NetworkPolicy::new(allow, deny, Methods::All).unwrap();
    let names = Names(
        names
            .iter()
            .map(|(name, address)| ((*name).to_owned(), *address))
            .collect(),
    );
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let cancel = CancellationToken::new();
    let (told, log) = tokio::sync::mpsc::unbounded_channel();
    let proxy = Proxy::new(policy, Arc::new(names)).with_log(Arc::new(move |connection| {
        let _ = told.send(connection);
    }));
    tokio::spawn(proxy.serve(listener, cancel.clone()));
    Running {
        address,
        cancel,
        log,
    }
}

/// Sends CONNECT for `target` and returns the response head and the open stream.
async fn connect(proxy: SocketAddr, target: &str) -> (String, TcpStream) {
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
        (
            told.host.as_str(),
            told.refused.as_deref(),
            told.sent,
            told.received
        ),
        ("registry.test", None, 24, 24)
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
    assert!(first.refused.unwrap().contains("not allowed"));
    let second = log.recv().await.unwrap();
    assert!(
        second
            .refused
            .as_deref()
            .unwrap_or_default()
            .contains("is denied"),
        "{second:?}"
    );
    cancel.cancel();
}

#[tokio::test]
async fn a_wildcard_never_reaches_a_local_address_and_a_plain_request_is_not_forwarded() {
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
    // A plain request is not forwarded (yet): refused, not passed on.
    let mut plain = TcpStream::connect(proxy).await.unwrap();
    plain
        .write_all(b"GET http://sub.wide.test/ HTTP/1.1\r\nHost: sub.wide.test\r\n\r\n")
        .await
        .unwrap();
    let mut head = vec![0u8; 64];
    let count = plain.read(&mut head).await.unwrap();
    assert!(
        head[..count].starts_with(b"HTTP/1.1 405"),
        "{:?}",
        String::from_utf8_lossy(&head[..count])
    );
    cancel.cancel();
}

/// A TLS ClientHello naming `name`, as a TLS client opens with.
fn client_hello(name: &str) -> Vec<u8> {
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
    assert_eq!((told.refused, told.sent), (None, hello.len() as u64));
    // Another name than the tunnel's: the tunnel ends, nothing reaches the host.
    let (head, mut tunnel) = connect(proxy, &target).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    tunnel.write_all(&client_hello("evil.test")).await.unwrap();
    let mut rest = Vec::new();
    let _ = tunnel.read_to_end(&mut rest).await;
    assert!(rest.is_empty(), "the host answered: {rest:?}");
    let told = log.recv().await.unwrap();
    assert!(
        told.refused.as_deref().is_some_and(
            |why| why.contains("SNI) evil.test is not the tunnel's host registry.test")
        ),
        "{told:?}"
    );
    assert_eq!(told.sent, 0);
    cancel.cancel();
}
