//! What the SNI check costs a tunnel (issue 54): a real TLS ClientHello (rustls, as a client
//! on this machine sends one) read as the proxy reads a tunnel's first bytes, 4 KiB at a time,
//! by golato's own reader (which must now read the whole hello) and, for the figure before, by
//! rustls's `Acceptor` as the proxy used it until it failed open. Also a 20 KiB hello (a
//! padded one, past what the old check read). `cargo bench -p golato --bench sni --features
//! fuzzing`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::{Duration, Instant};

/// A ClientHello for `name`, with a padding extension making it about `padding` bytes longer.
fn hello(name: &str, padding: usize) -> Vec<u8> {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap_or_else(|error| panic!("{error}"))
        .with_root_certificates(rustls::RootCertStore::empty())
        .with_no_client_auth();
    config.alpn_protocols = vec![vec![b'x'; 200]; padding / 201];
    let name = rustls::pki_types::ServerName::try_from(name.to_owned())
        .unwrap_or_else(|error| panic!("{error}"));
    let mut connection = rustls::ClientConnection::new(Arc::new(config), name)
        .unwrap_or_else(|error| panic!("{error}"));
    let mut bytes = Vec::new();
    while connection.wants_write() {
        connection
            .write_tls(&mut bytes)
            .unwrap_or_else(|error| panic!("{error}"));
    }
    bytes
}

/// The old check: rustls's Acceptor fed 4 KiB at a time, as the proxy did.
fn acceptor(bytes: &[u8]) -> Option<String> {
    let mut acceptor = rustls::server::Acceptor::default();
    for chunk in bytes.chunks(4096) {
        acceptor.read_tls(&mut &chunk[..]).ok()?;
        match acceptor.accept() {
            Ok(Some(accepted)) => return accepted.client_hello().server_name().map(str::to_owned),
            Ok(None) => {}
            Err(_) => return None,
        }
    }
    None
}

/// Nanoseconds per call of `check` on `bytes`: the median of 15 rounds of `per_round` calls.
fn time(per_round: u32, mut check: impl FnMut() -> bool) -> f64 {
    let mut rounds: Vec<Duration> = (0..15)
        .map(|_| {
            let started = Instant::now();
            for _ in 0..per_round {
                assert!(std::hint::black_box(check()));
            }
            started.elapsed()
        })
        .collect();
    rounds.sort();
    rounds[rounds.len() / 2].as_nanos() as f64 / f64::from(per_round)
}

fn main() {
    for (what, bytes) in [
        ("rustls's own hello", hello("registry.test", 0)),
        ("a browser-sized hello", hello("registry.test", 1600)),
        ("a 20 KiB hello", hello("registry.test", 20 * 1024)),
    ] {
        let ours = time(20_000, || {
            golato::fuzzing::client_hello_name(&bytes, 4096)
                == Some(Some(b"registry.test".to_vec()))
        });
        let before = time(20_000, || {
            let named = acceptor(&bytes);
            // Past 16 KiB the old check gave up (and let the tunnel through unchecked).
            named.as_deref() == Some("registry.test") || bytes.len() > 16 * 1024
        });
        println!(
            "{what} ({} bytes): golato's reader {ours:.0} ns, rustls Acceptor (before) {before:.0} ns",
            bytes.len()
        );
    }
}
