//! What golato-restate's client promises on its own, against a fake ingress on loopback (a raw
//! socket that answers a script of statuses and counts the requests): run IDs are checked
//! before anything is sent, a server restarting (502-504) is asked again until it answers or
//! the reconnect window ends, and an answer that is not worth waiting for is not retried.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use golato_restate::{check_run_id, Client, Error, MAX_RUN_ID};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

/// A server answering the statuses of `script` in turn (the last one for every later
/// request); the counter is the number of requests it read.
async fn ingress(script: Vec<u16>) -> (String, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let asked = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&asked);
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let counter = Arc::clone(&counter);
            let script = script.clone();
            tokio::spawn(async move {
                // One request per connection: the head, then its body by content-length.
                let mut request = Vec::new();
                let mut buffer = [0u8; 4096];
                loop {
                    let Ok(read) = socket.read(&mut buffer).await else {
                        return;
                    };
                    if read == 0 {
                        return;
                    }
                    request.extend_from_slice(&buffer[..read]);
                    if complete(&request) {
                        break;
                    }
                }
                let n = counter.fetch_add(1, Ordering::SeqCst);
                let status = script[n.min(script.len() - 1)];
                let reply = format!(
                    "HTTP/1.1 {status} Status\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                );
                let _ = socket.write_all(reply.as_bytes()).await;
            });
        }
    });
    (format!("http://{address}"), asked)
}

/// Whether `request` holds a whole HTTP request (head and the body its length announces).
fn complete(request: &[u8]) -> bool {
    let Some(end) = request.windows(4).position(|w| w == b"\r\n\r\n") else {
        return false;
    };
    let head = String::from_utf8_lossy(&request[..end]).to_ascii_lowercase();
    let length = head
        .lines()
        .find_map(|line| line.strip_prefix("content-length:"))
        .and_then(|value| value.trim().parse::<usize>().ok())
        .unwrap_or(0);
    request.len() >= end + 4 + length
}

#[test]
fn run_ids_that_would_not_name_one_run_everywhere_are_refused() {
    for good in ["run-1", "a..b", "ns:run_2.x", &"r".repeat(MAX_RUN_ID)] {
        assert!(check_run_id(good).is_ok(), "{good:?}");
    }
    let too_long = "r".repeat(MAX_RUN_ID + 1);
    for (bad, why) in [
        ("", "empty"),
        (".", "dot segment"),
        ("..", "dot segment"),
        (too_long.as_str(), "bytes long"),
        ("tab\tid", "\\t"),
        ("two words", "' '"),
        ("café", "'é'"),
        ("a/b", "'/'"),
        ("a?b", "'?'"),
    ] {
        let error = check_run_id(bad).unwrap_err();
        assert!(
            matches!(error, Error::BadRunId { .. }),
            "{bad:?}: {error:?}"
        );
        assert!(error.to_string().contains(why), "{bad:?}: {error}");
    }
}

#[tokio::test]
async fn a_refused_run_id_never_reaches_the_server() {
    let (url, asked) = ingress(vec![200]).await;
    let client = Client::new(&url).unwrap();
    for id in ["..", "a/../b", "x\ny"] {
        let error = client.steer(id, "hi").await.unwrap_err();
        assert!(matches!(error, Error::BadRunId { .. }), "{error:?}");
    }
    assert_eq!(asked.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_server_restarting_is_asked_again_until_it_answers() {
    let (url, asked) = ingress(vec![502, 503, 504, 200]).await;
    let client = Client::new(&url).unwrap();
    client.steer("run-1", "go on").await.unwrap();
    assert_eq!(asked.load(Ordering::SeqCst), 4);
}

#[tokio::test]
async fn a_server_that_stays_unavailable_is_given_up_on_naming_what_it_answered() {
    let (url, asked) = ingress(vec![503]).await;
    let client = Client::new(&url)
        .unwrap()
        .with_reconnect_for(Duration::from_millis(300));
    let error = client.steer("run-1", "go on").await.unwrap_err();
    assert!(matches!(error, Error::Unreachable { .. }), "{error:?}");
    assert!(error.to_string().contains("503"), "{error}");
    assert!(asked.load(Ordering::SeqCst) >= 2, "it asked again");
}

#[tokio::test]
async fn a_refusal_is_not_asked_again_and_says_what_to_do() {
    // A 404 from a server that answered at once is no restart: no worker is registered.
    let (url, asked) = ingress(vec![404, 200]).await;
    let client = Client::new(&url).unwrap();
    let error = client.steer("run-1", "go on").await.unwrap_err();
    assert!(
        matches!(error, Error::Refused { status: 404, .. }),
        "{error:?}"
    );
    assert!(error.to_string().contains("golato serve"), "{error}");
    assert_eq!(asked.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_server_that_cannot_be_reached_is_given_up_on_after_the_window() {
    // A port nothing listens on: bound, then closed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let client = Client::new(&format!("http://127.0.0.1:{port}"))
        .unwrap()
        .with_reconnect_for(Duration::from_millis(200));
    let error = client.steer("run-1", "go on").await.unwrap_err();
    assert!(matches!(error, Error::Unreachable { .. }), "{error:?}");
}

#[test]
fn an_address_that_is_not_a_url_is_refused_up_front() {
    for bad in ["", "localhost:8080", "ftp://example.com"] {
        assert!(Client::new(bad).is_err(), "{bad:?}");
    }
}
