//! Providers that misbehave on purpose (issue 21, items 4, 6, 12 and 17): a run against any of
//! them ends, with a clear error, within bounded memory, and never panics. Each server is a raw
//! socket on loopback that counts what it sent: a bound is proven by how little the client took
//! before it hung up, not by a clock.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

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
type Behaviour = fn(TcpStream, Arc<AtomicUsize>) -> futures::future::BoxFuture<'static, ()>;

/// Serves every connection with `behaviour`; the counter adds up the bytes sent.
async fn serve(behaviour: Behaviour) -> (String, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let sent = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&sent);
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let counter = Arc::clone(&counter);
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

fn client(url: String) -> OpenAiChat {
    OpenAiChat::new(url, None)
        .unwrap()
        .with_idle_timeout(Duration::from_millis(300))
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
    let (url, _) = serve(|mut socket, _| {
        Box::pin(async move {
            // Holds the connection open, saying nothing, until the client leaves.
            let mut buffer = [0u8; 1];
            let _ = tokio::io::AsyncReadExt::read(&mut socket, &mut buffer).await;
        })
    })
    .await;
    let error = error_of(&client(url)).await;
    assert!(
        matches!(error, generator::Error::NoResponse { .. }),
        "{error:?}"
    );
    assert!(error.to_string().contains("sent no response"), "{error}");
}

#[tokio::test]
async fn keep_alive_comments_alone_do_not_keep_a_stream_alive() {
    let (url, _) = serve(|mut socket, sent| {
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
    })
    .await;
    let error = error_of(&client(url)).await;
    assert!(
        matches!(error, generator::Error::IdleTimeout { .. }),
        "{error:?}"
    );
}

#[tokio::test]
async fn an_error_body_that_never_ends_is_read_only_to_its_limit() {
    let (url, sent) = serve(|mut socket, sent| {
        Box::pin(async move {
            let head = b"HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\n";
            if !send(&mut socket, &sent, head).await {
                return;
            }
            let chunk = vec![b'e'; 64 * 1024];
            // Bounded at 2 GiB; the client must hang up long before.
            for _ in 0..32 * 1024 {
                if !send(&mut socket, &sent, &chunk).await {
                    return;
                }
            }
        })
    })
    .await;
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
    // What the client read, plus what the kernel's buffers took.
    assert!(
        sent.load(Ordering::Relaxed) < 64 * 1024 * 1024,
        "{} bytes sent",
        sent.load(Ordering::Relaxed)
    );
}

#[tokio::test]
async fn a_line_that_never_ends_fails_at_the_event_limit() {
    let (url, sent) = serve(|mut socket, sent| {
        Box::pin(async move {
            if !send(&mut socket, &sent, STREAM_HEADERS).await
                || !send(&mut socket, &sent, b"data: ").await
            {
                return;
            }
            let chunk = vec![b'x'; 64 * 1024];
            for _ in 0..32 * 1024 {
                if !send(&mut socket, &sent, &chunk).await {
                    return;
                }
            }
        })
    })
    .await;
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
    let sent = sent.load(Ordering::Relaxed);
    assert!(
        sent < MAX_EVENT_BYTES + 48 * 1024 * 1024,
        "{sent} bytes sent"
    );
}

#[tokio::test]
async fn data_lines_never_closed_by_a_blank_line_fail_at_the_event_limit() {
    let (url, sent) = serve(|mut socket, sent| {
        Box::pin(async move {
            if !send(&mut socket, &sent, STREAM_HEADERS).await {
                return;
            }
            let line = format!("data: {}\n", "y".repeat(1024));
            for _ in 0..2 * 1024 * 1024 {
                if !send(&mut socket, &sent, line.as_bytes()).await {
                    return;
                }
            }
        })
    })
    .await;
    let error = error_of(&client(url)).await;
    assert!(
        matches!(error, generator::Error::TooLarge { .. }),
        "{error:?}"
    );
    let sent = sent.load(Ordering::Relaxed);
    assert!(
        sent < MAX_EVENT_BYTES + 48 * 1024 * 1024,
        "{sent} bytes sent"
    );
}

#[tokio::test]
async fn text_deltas_without_end_fail_at_the_message_limit() {
    let (url, sent) = serve(|mut socket, sent| {
        Box::pin(async move {
            if !send(&mut socket, &sent, STREAM_HEADERS).await {
                return;
            }
            let text = "z".repeat(4096);
            let event = format!(
                "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{text}\"}}}}]}}\n\n"
            );
            for _ in 0..512 * 1024 {
                if !send(&mut socket, &sent, event.as_bytes()).await {
                    return;
                }
            }
        })
    })
    .await;
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
    let sent = sent.load(Ordering::Relaxed);
    assert!(
        sent < MAX_MESSAGE_BYTES + 48 * 1024 * 1024,
        "{sent} bytes sent"
    );
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
        static HEADER: std::sync::Mutex<String> = std::sync::Mutex::new(String::new());
        *HEADER.lock().unwrap() = header.to_owned();
        let (url, _) = serve(|mut socket, sent| {
            Box::pin(async move {
                let header = HEADER.lock().unwrap().clone();
                let reply = format!(
                    "HTTP/1.1 429 Too Many Requests\r\n{header}\r\ncontent-length: 9\r\nconnection: close\r\n\r\nslow down"
                );
                send(&mut socket, &sent, reply.as_bytes()).await;
            })
        })
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
    let (url, _) = serve(|mut socket, sent| {
        Box::pin(async move {
            let body = "<!doctype html><html><body>Welcome to nginx!</body></html>";
            let reply = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            send(&mut socket, &sent, reply.as_bytes()).await;
        })
    })
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
