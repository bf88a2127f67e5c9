//! Providers that misbehave on purpose (issue 21, items 4, 6, 12 and 17): a run against any of
//! them ends, with a clear error, within bounded memory, and never panics. Each server is a raw
//! socket on loopback that counts what it sent: a bound is proven by how little the client took
//! before it hung up, not by a clock.

use crate::support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use golato::generator::{
    self, Generator, Model, OpenAiChat, Request, RetryPolicy, StreamEvent, MAX_EVENT_BYTES,
    MAX_MESSAGE_BYTES,
};
use golato::message::{Message, UserMessage};
use support::*;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

/// What a misbehaving server does once it has read a request; it returns when the client is
/// gone (a write fails) or it is done.
type Behaviour = Arc<
    dyn Fn(TcpStream, Arc<AtomicUsize>) -> futures::future::BoxFuture<'static, ()> + Send + Sync,
>;

/// Serves every connection with `behaviour`; the counter adds up the bytes sent.
async fn serve(behaviour: Behaviour) -> (String, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let sent = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&sent);
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let (counter, behaviour) = (Arc::clone(&counter), Arc::clone(&behaviour));
            tokio::spawn(async move {
                read_request(&mut socket).await;
                behaviour(socket, counter).await;
            });
        }
    });
    (format!("http://{address}/v1"), sent)
}

/// Writes `bytes`, counting them; false once the client is gone.
async fn send(socket: &mut TcpStream, sent: &AtomicUsize, bytes: &[u8]) -> bool {
    if socket.write_all(bytes).await.is_err() {
        return false;
    }
    sent.fetch_add(bytes.len(), Ordering::Relaxed);
    true
}

const STREAM_HEADERS: &[u8] =
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";

/// A server that sends `head`, then `unit` up to `times` times (or until the client leaves).
async fn flood(head: Vec<u8>, unit: Vec<u8>, times: usize) -> (String, Arc<AtomicUsize>) {
    serve(Arc::new(move |mut socket, sent| {
        let (head, unit) = (head.clone(), unit.clone());
        Box::pin(async move {
            if !send(&mut socket, &sent, &head).await {
                return;
            }
            for _ in 0..times {
                if !send(&mut socket, &sent, &unit).await {
                    return;
                }
            }
        })
    }))
    .await
}

/// A server that answers every request with `reply`, whole.
async fn reply(reply: String) -> String {
    flood(reply.into_bytes(), Vec::new(), 0).await.0
}

/// What the client took before it hung up: less than `limit` and the kernel's buffers.
fn assert_taken_at_most(sent: &AtomicUsize, limit: usize) {
    let sent = sent.load(Ordering::Relaxed);
    assert!(sent < limit + 48 * 1024 * 1024, "{sent} bytes sent");
}

/// A client for a server that floods: the idle timeout is far past any pause a loaded machine
/// makes between two writes, so only the limit under test can end the stream.
fn client(url: String) -> OpenAiChat {
    client_idle_after(url, Duration::from_secs(30))
}

/// A client for a server that goes quiet: it gives up after `idle`.
fn client_idle_after(url: String, idle: Duration) -> OpenAiChat {
    OpenAiChat::new(url, None)
        .unwrap()
        .with_idle_timeout(idle)
        .with_retry(RetryPolicy {
            max_retries: 1,
            initial_backoff: Duration::from_millis(1),
            max_backoff: Duration::from_millis(10),
        })
}

fn request() -> Request {
    Request {
        model: Model::new("m"),
        system_prompt: None,
        messages: Arc::new(vec![Message::User(UserMessage::new("hi"))]),
        tools: Vec::new().into(),
        compacted_turns: 0,
    }
}

/// The stream's error (the stream must end with one).
async fn error_of(generator: &dyn Generator) -> generator::Error {
    let mut stream = generator.stream(request());
    let ended = async {
        while let Some(item) = stream.next().await {
            match item {
                Ok(StreamEvent::Delta(_)) => {}
                Ok(StreamEvent::Done(message)) => panic!("a message came: {message:?}"),
                Ok(_) => {}
                Err(error) => return error,
            }
        }
        panic!("the stream ended without an error")
    };
    tokio::time::timeout(HANG_GUARD, ended)
        .await
        .expect("the stream ended")
}

#[tokio::test]
async fn a_provider_that_never_sends_headers_is_given_up_on() {
    let (url, _) = serve(Arc::new(|mut socket, _| {
        Box::pin(async move {
            // Holds the connection open, saying nothing, until the client leaves.
            let mut buffer = [0u8; 1];
            let _ = tokio::io::AsyncReadExt::read(&mut socket, &mut buffer).await;
        })
    }))
    .await;
    let error = error_of(&client_idle_after(url, Duration::from_millis(300))).await;
    assert!(
        matches!(error, generator::Error::NoResponse { .. }),
        "{error:?}"
    );
    assert!(error.to_string().contains("sent no response"), "{error}");
}

#[tokio::test]
async fn keep_alive_comments_alone_do_not_keep_a_stream_alive() {
    let (url, _) = serve(Arc::new(|mut socket, sent| {
        Box::pin(async move {
            if !send(&mut socket, &sent, STREAM_HEADERS).await {
                return;
            }
            let mut ticks = tokio::time::interval(Duration::from_millis(20));
            // Bounded: 3,000 pings is far past any idle timeout here.
            for _ in 0..3_000 {
                ticks.tick().await;
                if !send(&mut socket, &sent, b": ping\n\n").await {
                    return;
                }
            }
        })
    }))
    .await;
    let error = error_of(&client_idle_after(url, Duration::from_millis(300))).await;
    assert!(
        matches!(error, generator::Error::IdleTimeout { .. }),
        "{error:?}"
    );
}

#[tokio::test]
async fn an_error_body_that_never_ends_is_read_only_to_its_limit() {
    let head = b"HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\n";
    // At most 2 GiB; the client must hang up long before.
    let (url, sent) = flood(head.to_vec(), vec![b'e'; 64 * 1024], 32 * 1024).await;
    let error = error_of(&client(url)).await;
    assert!(
        matches!(
            error,
            generator::Error::Provider {
                status: Some(400),
                ..
            }
        ),
        "{error:?}"
    );
    assert!(error.to_string().len() < 4_096, "the message is an excerpt");
    assert_taken_at_most(&sent, 16 * 1024 * 1024);
}

#[tokio::test]
async fn a_line_that_never_ends_fails_at_the_event_limit() {
    let head = [STREAM_HEADERS, b"data: "].concat();
    let (url, sent) = flood(head, vec![b'x'; 64 * 1024], 32 * 1024).await;
    let error = error_of(&client(url)).await;
    assert!(
        matches!(
            error,
            generator::Error::TooLarge {
                what: "a server-sent event",
                ..
            }
        ),
        "{error:?}"
    );
    assert_taken_at_most(&sent, MAX_EVENT_BYTES);
}

#[tokio::test]
async fn data_lines_never_closed_by_a_blank_line_fail_at_the_event_limit() {
    let line = format!("data: {}\n", "y".repeat(1024)).into_bytes();
    let (url, sent) = flood(STREAM_HEADERS.to_vec(), line, 2 * 1024 * 1024).await;
    let error = error_of(&client(url)).await;
    assert!(
        matches!(error, generator::Error::TooLarge { .. }),
        "{error:?}"
    );
    assert_taken_at_most(&sent, MAX_EVENT_BYTES);
}

#[tokio::test]
async fn text_deltas_without_end_fail_at_the_message_limit() {
    let text = "z".repeat(4096);
    let event =
        format!("data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{text}\"}}}}]}}\n\n");
    let (url, sent) = flood(STREAM_HEADERS.to_vec(), event.into_bytes(), 512 * 1024).await;
    let error = error_of(&client(url)).await;
    assert!(
        matches!(
            error,
            generator::Error::TooLarge {
                what: "an assistant message",
                ..
            }
        ),
        "{error:?}"
    );
    assert_taken_at_most(&sent, MAX_MESSAGE_BYTES);
}

#[tokio::test]
async fn absurd_retry_after_values_are_waited_for_within_the_policy() {
    // Issue 21 item 12: 1e300 (or inf) seconds panicked converting to a Duration.
    for header in [
        "retry-after: 1e300",
        "retry-after: inf",
        "retry-after: -5",
        "retry-after: NaN",
        "retry-after-ms: 1e300",
        "retry-after-ms: inf",
    ] {
        let url = reply(format!(
            "HTTP/1.1 429 Too Many Requests\r\n{header}\r\ncontent-length: 9\r\nconnection: close\r\n\r\nslow down"
        ))
        .await;
        let error = error_of(&client(url)).await;
        assert!(
            matches!(
                error,
                generator::Error::Provider {
                    status: Some(429),
                    ..
                }
            ),
            "{header}: {error:?}"
        );
    }
}

#[tokio::test]
async fn a_page_instead_of_an_event_stream_is_named() {
    let body = "<!doctype html><html><body>Welcome to nginx!</body></html>";
    let url = reply(format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    ))
    .await;
    let error = error_of(&client(url)).await;
    let text = error.to_string();
    assert!(
        matches!(error, generator::Error::NotAnEventStream { .. }),
        "{error:?}"
    );
    assert!(
        text.contains("text/html") && text.contains("Welcome to nginx"),
        "{text}"
    );
}
