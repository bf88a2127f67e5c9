//! What a hostile command tries against golato's proxy, each once a way through (issue 54):
//! a port the pattern did not name, a Host header of its own, a denied address under another
//! name, a GET that sends, control bytes in a SOCKS name, and ClientHellos the SNI check could
//! not read (past 16 KiB, after an empty record, with a duplicated extension, naming odd host
//! forms). The hellos are crafted here and first shown to a real OpenSSL server, which
//! answers each: through the proxy, none of their bytes reaches the host.

use std::net::{IpAddr, SocketAddr};
use std::process::{Child, Command, Stdio};

use golato::proxy::Verdict;
use golato::sandbox::network::Methods;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::proxy::{connect, plain, serving_names, socks, web_server_at, Running};
use crate::support::TestNames;

const SECOND_LOOPBACK: &str = "127.0.0.2";

async fn proxy(allow: &[&str], deny: &[&str], methods: Methods, names: TestNames) -> Running {
    serving_names(allow, deny, methods, names, |proxy| proxy)
        .await
        .0
}

fn second_loopback() -> IpAddr {
    SECOND_LOOPBACK.parse().unwrap()
}

#[tokio::test]
async fn a_port_in_a_pattern_binds_it_for_local_addresses_through_http_connect_and_socks() {
    let named = web_server_at(&format!("{SECOND_LOOPBACK}:0")).await;
    let other = web_server_at(&format!("{SECOND_LOOPBACK}:0")).await;
    let (pa, pb) = (named.port(), other.port());
    let local = second_loopback();
    let Running {
        address: proxy,
        cancel,
        ..
    } = proxy(
        &[
            &format!("{SECOND_LOOPBACK}:{pa}"),
            "*.allowed.test",
            &format!("api.allowed.test:{pa}"),
        ],
        &[],
        Methods::All,
        TestNames::by_address(&[
            (SECOND_LOOPBACK, local),
            ("sub.allowed.test", local),
            ("api.allowed.test", local),
        ]),
    )
    .await;
    // The port named: reached, by address and by either name.
    for host in [SECOND_LOOPBACK, "sub.allowed.test", "api.allowed.test"] {
        let (head, _) = plain(
            proxy,
            &format!("GET http://{host}:{pa}/ HTTP/1.1\r\nHost: {host}\r\n\r\n"),
        )
        .await;
        assert!(head.starts_with("HTTP/1.1 200"), "{host}:{pa}: {head}");
    }
    // Another port of the same local address: refused by every door.
    for host in ["sub.allowed.test", "api.allowed.test"] {
        let (head, body) = plain(
            proxy,
            &format!("GET http://{host}:{pb}/ HTTP/1.1\r\nHost: {host}\r\n\r\n"),
        )
        .await;
        assert!(head.starts_with("HTTP/1.1 403"), "{host}:{pb}: {head}");
        assert!(body.contains("a local address"), "{body}");
        let (head, _) = connect(proxy, &format!("{host}:{pb}")).await;
        assert!(
            head.starts_with("HTTP/1.1 403"),
            "CONNECT {host}:{pb}: {head}"
        );
        let answer = socks(proxy, &[0], 1, host.as_bytes(), pb).await;
        assert_eq!(answer[..4], [5, 0, 5, 2], "SOCKS {host}:{pb}: not allowed");
    }
    cancel.cancel();
}

#[tokio::test]
async fn the_host_judged_is_the_host_header_the_server_reads() {
    let server = web_server_at("127.0.0.1:0").await;
    let port = server.port();
    let Running {
        address: proxy,
        cancel,
        ..
    } = proxy(
        &["allowed.test"],
        &[],
        Methods::All,
        TestNames::new(&[("allowed.test", server)]),
    )
    .await;
    for (version, headers) in [
        ("HTTP/1.1", "Host: evil.test\r\n"),
        ("HTTP/1.1", "Host: allowed.test\r\nHost: evil.test\r\n"),
        ("HTTP/1.0", "Host: evil.test\r\n"),
        ("HTTP/1.0", ""),
    ] {
        let (head, body) = plain(
            proxy,
            &format!("GET http://allowed.test:{port}/x {version}\r\n{headers}\r\n"),
        )
        .await;
        assert!(head.contains(" 200 "), "{head}");
        assert_eq!(
            body,
            format!("GET /x host=allowed.test:{port} body=0"),
            "{version} {headers:?}"
        );
    }
    cancel.cancel();
}

#[tokio::test]
async fn a_denied_address_denies_every_name_resolving_to_it() {
    let server = web_server_at(&format!("{SECOND_LOOPBACK}:0")).await;
    let port = server.port();
    let Running {
        address: proxy,
        cancel,
        mut log,
    } = proxy(
        &["friendly.test"],
        &[SECOND_LOOPBACK],
        Methods::All,
        TestNames::by_address(&[("friendly.test", second_loopback())]),
    )
    .await;
    let (head, body) = plain(
        proxy,
        &format!("GET http://friendly.test:{port}/ HTTP/1.1\r\nHost: friendly.test\r\n\r\n"),
    )
    .await;
    assert!(head.starts_with("HTTP/1.1 403"), "{head}");
    assert!(
        body.contains("resolves to 127.0.0.2, which is denied (--deny-domain 127.0.0.2)"),
        "{body}"
    );
    assert!(matches!(
        log.recv().await.unwrap().verdict,
        Verdict::Refused(_)
    ));
    cancel.cancel();
}

#[tokio::test]
async fn read_mode_refuses_a_get_that_sends_a_body_or_another_method() {
    let server = web_server_at("127.0.0.1:0").await;
    let port = server.port();
    let Running {
        address: proxy,
        cancel,
        ..
    } = proxy(
        &["allowed.test"],
        &[],
        Methods::Read,
        TestNames::new(&[("allowed.test", server)]),
    )
    .await;
    let target = format!("http://allowed.test:{port}/");
    for (extra, refused) in [
        ("Content-Length: 5\r\n\r\nhello", "GET with a body"),
        (
            "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
            "GET with a body",
        ),
        (
            "X-HTTP-Method-Override: DELETE\r\n\r\n",
            "GET with x-http-method-override",
        ),
        (
            "X-Method-Override: PUT\r\n\r\n",
            "GET with x-method-override",
        ),
    ] {
        let request = format!("GET {target} HTTP/1.1\r\nHost: allowed.test\r\n{extra}");
        let (head, body) = plain(proxy, &request).await;
        assert!(head.starts_with("HTTP/1.1 403"), "{extra:?}: {head}");
        assert!(
            body.contains(&format!("{refused} to allowed.test is refused"))
                && body.contains("(--network-methods read)"),
            "{body}"
        );
    }
    let (head, body) = plain(
        proxy,
        &format!("GET {target} HTTP/1.1\r\nHost: allowed.test\r\nContent-Length: 0\r\n\r\n"),
    )
    .await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(body.ends_with("body=0"), "{body}");
    cancel.cancel();
}

#[tokio::test]
async fn control_bytes_of_a_socks_name_are_told_escaped() {
    let Running {
        address: proxy,
        cancel,
        mut log,
    } = proxy(&["allowed.test"], &[], Methods::All, TestNames::new(&[])).await;
    let answer = socks(proxy, &[0], 1, b"evil\x1b]0;owned\x07.test", 443).await;
    assert_eq!(answer[..4], [5, 0, 5, 2]);
    let told = log.recv().await.unwrap();
    assert!(!told.host.chars().any(char::is_control), "{:?}", told.host);
    assert!(told.host.contains("\\u{1b}"), "{:?}", told.host);
    cancel.cancel();
}

// ---- The SNI check, against crafted ClientHellos and a real OpenSSL server. ----

/// A TLS 1.2 ClientHello's body an OpenSSL server answers (ECDHE with an ECDSA certificate),
/// naming `name` when given, with `extra` extensions after the usual ones.
fn hello_body(name: Option<&[u8]>, extra: &[(u16, Vec<u8>)]) -> Vec<u8> {
    let mut body = vec![3, 3];
    body.extend([0x42; 32]);
    body.push(0);
    body.extend([0, 4, 0xc0, 0x2b, 0xc0, 0x2c, 1, 0]);
    let mut extensions: Vec<(u16, Vec<u8>)> = Vec::new();
    if let Some(name) = name {
        let mut entry = vec![0];
        entry.extend((name.len() as u16).to_be_bytes());
        entry.extend(name);
        let mut data = (entry.len() as u16).to_be_bytes().to_vec();
        data.extend(entry);
        extensions.push((0, data));
    }
    extensions.push((10, vec![0, 2, 0, 23]));
    extensions.push((11, vec![1, 0]));
    extensions.push((13, vec![0, 4, 4, 3, 5, 3]));
    extensions.extend(extra.iter().cloned());
    let mut list = Vec::new();
    for (kind, data) in extensions {
        list.extend(kind.to_be_bytes());
        list.extend((data.len() as u16).to_be_bytes());
        list.extend(data);
    }
    body.extend((list.len() as u16).to_be_bytes());
    body.extend(list);
    body
}

/// `body` as a ClientHello message in handshake records of at most `fragment` bytes, after
/// the records `before`.
fn hello_records(body: &[u8], fragment: usize, before: &[u8]) -> Vec<u8> {
    let mut message = vec![1];
    message.extend(&(body.len() as u32).to_be_bytes()[1..]);
    message.extend(body);
    let mut bytes = before.to_vec();
    for piece in message.chunks(fragment) {
        bytes.extend([22, 3, 1]);
        bytes.extend((piece.len() as u16).to_be_bytes());
        bytes.extend(piece);
    }
    bytes
}

/// `openssl s_server` on loopback with a fresh certificate for `registry.test`.
struct OpenSsl {
    child: Child,
    address: SocketAddr,
    _dir: tempfile::TempDir,
}

impl Drop for OpenSsl {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn openssl_server() -> OpenSsl {
    let dir = tempfile::tempdir().unwrap();
    let made = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
        ])
        .args([
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=registry.test",
            "-keyout",
            "key.pem",
            "-out",
            "cert.pem",
        ])
        .current_dir(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("the openssl command is on the test machine");
    assert!(made.success());
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new("openssl")
        .args([
            "s_server",
            "-accept",
            &format!("127.0.0.1:{port}"),
            "-cert",
            "cert.pem",
            "-key",
            "key.pem",
            "-quiet",
        ])
        .current_dir(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let server = OpenSsl {
        child,
        address: ([127, 0, 0, 1], port).into(),
        _dir: dir,
    };
    // Ready when it accepts (a connection of its own, not a sleep).
    for _ in 0..500 {
        if std::net::TcpStream::connect(server.address).is_ok() {
            return server;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    panic!("openssl s_server did not start");
}

/// The first bytes a server answers to `hello` (sent then left open), or none when it closed.
async fn first_answer(mut stream: TcpStream, hello: &[u8]) -> Vec<u8> {
    stream.write_all(hello).await.unwrap();
    let mut answer = vec![0u8; 5];
    match tokio::time::timeout(std::time::Duration::from_secs(20), stream.read(&mut answer)).await {
        Ok(Ok(count)) => answer[..count].to_vec(),
        _ => Vec::new(),
    }
}

/// A host that counts every byte it is sent.
async fn counting_server() -> (SocketAddr, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::Ordering;
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let seen = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = std::sync::Arc::clone(&seen);
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let counted = std::sync::Arc::clone(&counted);
            tokio::spawn(async move {
                let mut buffer = [0u8; 4096];
                while let Ok(count) = stream.read(&mut buffer).await {
                    if count == 0 {
                        break;
                    }
                    counted.fetch_add(count, Ordering::SeqCst);
                }
            });
        }
    });
    (address, seen)
}

#[tokio::test]
async fn hellos_the_sni_check_once_gave_up_on_are_read_whole_and_refused() {
    let openssl = openssl_server();
    let evil = Some(&b"evil.test"[..]);
    let padding = vec![(21u16, vec![0u8; 17 * 1024])];
    let twice = vec![(0x4a4a, Vec::new()), (0x4a4a, Vec::new())];
    let empty_record = [22u8, 3, 1, 0, 0];
    let hostile: Vec<(&str, Vec<u8>)> = vec![
        (
            "over 16 KiB",
            hello_records(&hello_body(evil, &padding), 16 * 1024, &[]),
        ),
        (
            "after an empty record",
            hello_records(&hello_body(evil, &[]), 16 * 1024, &empty_record),
        ),
        (
            "a duplicated unknown extension",
            hello_records(&hello_body(evil, &twice), 16 * 1024, &[]),
        ),
        (
            "cut into 1-byte records",
            hello_records(&hello_body(evil, &[]), 1, &[]),
        ),
    ];
    let odd_names: Vec<(String, Vec<u8>)> = [
        &b"registry.test.."[..],
        b"registry..test",
        b"registry.test:443",
        b"127.0.0.1",
        b"-registry.test",
        b"registry.test ",
        b"evil.test",
    ]
    .iter()
    .map(|name| {
        (
            String::from_utf8_lossy(name).into_owned(),
            hello_records(&hello_body(Some(name), &[]), 16 * 1024, &[]),
        )
    })
    .collect();
    // Each is a hello a real server takes: it answers with a handshake record.
    for (what, hello) in hostile
        .iter()
        .map(|(what, hello)| (what.to_string(), hello))
        .chain(
            odd_names
                .iter()
                .map(|(what, hello)| (format!("SNI {what:?}"), hello)),
        )
    {
        let answer = first_answer(TcpStream::connect(openssl.address).await.unwrap(), hello).await;
        assert_eq!(
            answer.first(),
            Some(&22),
            "OpenSSL did not take the hello {what}: {answer:?}"
        );
    }
    // Through the proxy, the host gets none of it and the tunnel is told refused.
    let (host, seen) = counting_server().await;
    let Running {
        address: proxy,
        cancel,
        mut log,
    } = proxy(
        &["registry.test"],
        &[],
        Methods::All,
        TestNames::new(&[("registry.test", host)]),
    )
    .await;
    for (what, hello) in hostile
        .iter()
        .map(|(what, hello)| (what.to_string(), hello))
        .chain(
            odd_names
                .iter()
                .map(|(what, hello)| (format!("SNI {what:?}"), hello)),
        )
    {
        let (head, mut tunnel) = connect(proxy, &format!("registry.test:{}", host.port())).await;
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        tunnel.write_all(hello).await.unwrap();
        let mut rest = Vec::new();
        let closed = tokio::time::timeout(
            std::time::Duration::from_secs(30),
            tunnel.read_to_end(&mut rest),
        )
        .await;
        assert!(closed.is_ok(), "{what}: the tunnel was carried, not closed");
        let told = log.recv().await.unwrap();
        assert!(
            matches!(&told.verdict, Verdict::Refused(_)) && told.sent == 0,
            "{what}: {told:?}"
        );
    }
    cancel.cancel();
    assert_eq!(
        seen.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "bytes reached the host"
    );
}

#[tokio::test]
async fn a_hello_naming_the_tunnels_host_completes_a_real_handshake_however_it_is_cut() {
    let openssl = openssl_server();
    let Running {
        address: proxy,
        cancel,
        mut log,
    } = proxy(
        &["registry.test"],
        &[],
        Methods::All,
        TestNames::new(&[("registry.test", openssl.address)]),
    )
    .await;
    let name = Some(&b"Registry.Test"[..]);
    let padding = vec![(21u16, vec![0u8; 17 * 1024])];
    for (what, hello) in [
        (
            "plain",
            hello_records(&hello_body(name, &[]), 16 * 1024, &[]),
        ),
        (
            "over 16 KiB",
            hello_records(&hello_body(name, &padding), 16 * 1024, &[]),
        ),
        (
            "in 3-byte records",
            hello_records(&hello_body(name, &[]), 3, &[]),
        ),
        (
            "naming nothing",
            hello_records(&hello_body(None, &[]), 16 * 1024, &[]),
        ),
    ] {
        let (head, tunnel) =
            connect(proxy, &format!("registry.test:{}", openssl.address.port())).await;
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        let answer = first_answer(tunnel, &hello).await;
        assert_eq!(
            answer.first(),
            Some(&22),
            "{what}: the server's hello did not come back"
        );
        let told = log.recv().await.unwrap();
        assert_eq!(told.verdict, Verdict::Allowed, "{what}");
        assert_eq!(told.sent, hello.len() as u64, "{what}");
    }
    cancel.cancel();
}
