//! The network proxy's cost, all on loopback in one process: a web server (hyper), golato's
//! proxy (`golato::proxy::Proxy`, a resolver naming the server `files.test`), and clients.
//!
//! - latency per request: a fresh connection and one small GET, direct against through a
//!   CONNECT tunnel and through plain HTTP forwarding (p50/p99 of 2,000 each);
//! - throughput: 100 downloads of 10 MiB at once, direct against through tunnels (wall time,
//!   MiB/s, each download's p50/p99);
//! - memory: the resident set added by 1,000 open tunnels, less what 1,000 open direct
//!   connections add (the clients' and the server's share), per connection.
//!
//! What the sandbox adds on top is nothing on the data path: the command's connection reaches
//! the same listener, only created in its network namespace.
//!
//! `cargo bench -p golato --bench proxy`

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::future::BoxFuture;
use golato::proxy::{Proxy, Resolve};
use golato::sandbox::network::{Methods, NetworkPolicy};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const SMALL: usize = 64;
const BIG: usize = 10 * 1024 * 1024;

#[derive(Debug)]
struct One(SocketAddr);

impl Resolve for One {
    fn resolve(&self, _: &str, _: u16) -> BoxFuture<'static, std::io::Result<Vec<SocketAddr>>> {
        let address = self.0;
        Box::pin(async move { Ok(vec![address]) })
    }
}

async fn server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let small = Bytes::from(vec![b's'; SMALL]);
    let big = Bytes::from(vec![b'b'; BIG]);
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let (small, big) = (small.clone(), big.clone());
            tokio::spawn(async move {
                let service = hyper::service::service_fn(
                    move |request: hyper::Request<hyper::body::Incoming>| {
                        let body = match request.uri().path() {
                            "/big" => big.clone(),
                            _ => small.clone(),
                        };
                        async move {
                            Ok::<_, std::convert::Infallible>(hyper::Response::new(
                                http_body_util::Full::new(body),
                            ))
                        }
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

#[derive(Clone, Copy, PartialEq)]
enum Route {
    Direct,
    Tunnel,
    Forward,
}

/// One GET of `path` on a fresh connection; the body's length.
async fn get(route: Route, server: SocketAddr, proxy: SocketAddr, path: &str) -> usize {
    let mut stream = match route {
        Route::Direct => TcpStream::connect(server).await.unwrap(),
        _ => TcpStream::connect(proxy).await.unwrap(),
    };
    stream.set_nodelay(true).unwrap();
    let target = format!("files.test:{}", server.port());
    if route == Route::Tunnel {
        stream
            .write_all(format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n").as_bytes())
            .await
            .unwrap();
        read_head(&mut stream).await;
    }
    let line = match route {
        Route::Forward => format!("GET http://{target}{path} HTTP/1.1"),
        _ => format!("GET {path} HTTP/1.1"),
    };
    stream
        .write_all(format!("{line}\r\nHost: {target}\r\nConnection: close\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let head = read_head(&mut stream).await;
    let length: usize = head
        .lines()
        .find_map(|line| {
            line.to_ascii_lowercase()
                .strip_prefix("content-length:")
                .map(|v| v.trim().parse().unwrap())
        })
        .unwrap();
    let mut body = vec![0u8; 64 * 1024];
    let mut read = 0;
    while read < length {
        let count = stream.read(&mut body).await.unwrap();
        assert!(count > 0, "cut short at {read} of {length}");
        read += count;
    }
    read
}

async fn read_head(stream: &mut TcpStream) -> String {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        stream.read_exact(&mut byte).await.unwrap();
        head.push(byte[0]);
    }
    let head = String::from_utf8(head).unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    head
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn rss_kib() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4
}

/// Opens `count` connections along `route` that stay open (a request sent, its answer not
/// read); the streams.
async fn hold(route: Route, server: SocketAddr, proxy: SocketAddr, count: usize) -> Vec<TcpStream> {
    let mut held = Vec::new();
    let target = format!("files.test:{}", server.port());
    for _ in 0..count {
        let mut stream = match route {
            Route::Direct => TcpStream::connect(server).await.unwrap(),
            _ => {
                let mut stream = TcpStream::connect(proxy).await.unwrap();
                stream
                    .write_all(
                        format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n").as_bytes(),
                    )
                    .await
                    .unwrap();
                read_head(&mut stream).await;
                stream
            }
        };
        stream
            .write_all(format!("GET /small HTTP/1.1\r\nHost: {target}\r\n\r\n").as_bytes())
            .await
            .unwrap();
        read_head(&mut stream).await;
        let mut body = [0u8; SMALL];
        stream.read_exact(&mut body).await.unwrap();
        held.push(stream);
    }
    held
}

fn main() {
    // 1,000 connections held each way, direct and through the proxy: about 6,000 descriptors.
    let _ = rustix::process::setrlimit(
        rustix::process::Resource::Nofile,
        rustix::process::Rlimit {
            current: Some(16_384),
            maximum: Some(16_384),
        },
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let server = server().await;
        let policy = NetworkPolicy::new(&["files.test"], &[], Methods::All).unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let proxy = listener.local_addr().unwrap();
        let cancel = tokio_util::sync::CancellationToken::new();
        tokio::spawn(Proxy::new(policy, Arc::new(One(server))).serve(listener, cancel.clone()));

        println!("proxy: latency of one small GET on a fresh connection (2,000 each)");
        for (name, route) in [("direct", Route::Direct), ("tunnel (CONNECT)", Route::Tunnel), ("forwarded (plain HTTP)", Route::Forward)] {
            for _ in 0..200 {
                get(route, server, proxy, "/small").await;
            }
            let mut times = Vec::new();
            for _ in 0..2_000 {
                let started = Instant::now();
                assert_eq!(get(route, server, proxy, "/small").await, SMALL);
                times.push(started.elapsed());
            }
            times.sort();
            println!(
                "  {name:<24} p50 {:>7.1} µs  p99 {:>7.1} µs",
                percentile(&times, 0.5).as_secs_f64() * 1e6,
                percentile(&times, 0.99).as_secs_f64() * 1e6
            );
        }

        println!("proxy: 100 downloads of 10 MiB at once");
        for (name, route) in [("direct", Route::Direct), ("tunnel (CONNECT)", Route::Tunnel), ("forwarded (plain HTTP)", Route::Forward)] {
            let mut best: Option<(Duration, Vec<Duration>)> = None;
            for _ in 0..3 {
                let started = Instant::now();
                let downloads = (0..100).map(|_| {
                    tokio::spawn(async move {
                        let began = Instant::now();
                        assert_eq!(get(route, server, proxy, "/big").await, BIG);
                        began.elapsed()
                    })
                });
                let mut each: Vec<Duration> = futures::future::join_all(downloads)
                    .await
                    .into_iter()
                    .map(Result::unwrap)
                    .collect();
                let wall = started.elapsed();
                each.sort();
                if best.as_ref().is_none_or(|(fastest, _)| wall < *fastest) {
                    best = Some((wall, each));
                }
            }
            let (wall, each) = best.unwrap();
            println!(
                "  {name:<24} wall {:>6.0} ms  {:>6.0} MiB/s  each p50 {:>6.0} ms  p99 {:>6.0} ms  (best of 3)",
                wall.as_secs_f64() * 1e3,
                1000.0 / wall.as_secs_f64(),
                percentile(&each, 0.5).as_secs_f64() * 1e3,
                percentile(&each, 0.99).as_secs_f64() * 1e3
            );
        }

        println!("proxy: resident memory of 1,000 open connections");
        let before = rss_kib();
        let direct = hold(Route::Direct, server, proxy, 1_000).await;
        let after_direct = rss_kib();
        let tunnels = hold(Route::Tunnel, server, proxy, 1_000).await;
        let after_tunnels = rss_kib();
        let direct_cost = after_direct.saturating_sub(before);
        let tunnel_cost = after_tunnels.saturating_sub(after_direct);
        println!(
            "  direct {:.1} MiB, tunnels {:.1} MiB: the proxy's share {:.1} KiB a connection",
            direct_cost as f64 / 1024.0,
            tunnel_cost as f64 / 1024.0,
            tunnel_cost.saturating_sub(direct_cost) as f64 / 1000.0
        );
        drop((direct, tunnels));
        cancel.cancel();
    });
}
