//! A response streamed as the generator's events: sent (and sent again after a retry's wait), its
//! server-sent events decoded by the provider's [`WireDecoder`](super::WireDecoder), the answer
//! bounded in bytes and in silence.

use std::collections::VecDeque;
use std::time::Duration;

use futures::StreamExt;

use super::super::sse::SseDecoder;
use super::super::{Delta, Error, StreamEvent};
use super::{Sent, Transport, WireDecoder};
use crate::generator::{causes, MAX_EVENT_BYTES, MAX_MESSAGE_BYTES};

/// A request to send (again, after a retry's wait).
pub(super) struct Posting {
    pub(super) transport: Transport,
    pub(super) url: String,
    pub(super) headers: Vec<(&'static str, String)>,
    pub(super) body: Vec<u8>,
}

pub(super) enum State<D> {
    /// Sending, after this many retries.
    Start(Posting, u32),
    /// Waiting before retry number `.1`.
    Waiting(Posting, u32, Duration),
    Streaming(Box<Streaming<D>>),
    /// The body ended: the last items, then nothing.
    Tail(VecDeque<StreamEvent>),
    Done,
}

/// A response being streamed.
pub(super) struct Streaming<D> {
    pub(super) body: futures::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    pub(super) idle_timeout: Duration,
    /// When the stream counts as broken unless part of the answer arrives before.
    pub(super) deadline: tokio::time::Instant,
    pub(super) sse: SseDecoder,
    pub(super) decoder: D,
    pub(super) pending: VecDeque<Delta>,
    /// Bytes of the answer so far (text, reasoning, arguments), against [`MAX_MESSAGE_BYTES`].
    pub(super) message_bytes: usize,
}

impl<D: WireDecoder> Streaming<D> {
    /// Decodes `events` into pending deltas; any delta counts as progress.
    fn absorb(&mut self, events: Vec<super::super::sse::SseEvent>) -> Result<(), Error> {
        for event in events {
            let deltas = self.decoder.decode(&event.data)?;
            for delta in &deltas {
                self.message_bytes += delta_bytes(delta);
            }
            if self.message_bytes > MAX_MESSAGE_BYTES {
                return Err(Error::TooLarge {
                    what: "an assistant message",
                    limit: MAX_MESSAGE_BYTES,
                });
            }
            if !deltas.is_empty() || self.decoder.is_complete() {
                self.deadline = tokio::time::Instant::now() + self.idle_timeout;
            }
            self.pending.extend(deltas);
        }
        Ok(())
    }
}

/// What a delta adds to the message.
pub(super) fn delta_bytes(delta: &Delta) -> usize {
    match delta {
        Delta::Text(text) | Delta::Reasoning(text) => text.len(),
        Delta::ToolCall {
            id,
            name,
            arguments,
            ..
        } => {
            arguments.len()
                + id.as_ref().map_or(0, String::len)
                + name.as_ref().map_or(0, String::len)
        }
    }
}

pub(super) async fn step<D: WireDecoder>(
    mut state: State<D>,
) -> Option<(Result<StreamEvent, Error>, State<D>)> {
    loop {
        state = match state {
            State::Done => return None,
            State::Tail(mut items) => {
                let item = items.pop_front()?;
                return Some((Ok(item), State::Tail(items)));
            }
            State::Waiting(posting, attempt, wait) => {
                tokio::time::sleep(wait).await;
                State::Start(posting, attempt)
            }
            State::Start(posting, attempt) => match posting
                .transport
                .send(&posting.url, &posting.headers, &posting.body, attempt)
                .await
            {
                Ok(Sent::Retry(retrying)) => {
                    let wait = Duration::from_millis(retrying.wait_ms);
                    let waiting = State::Waiting(posting, retrying.attempt, wait);
                    return Some((Ok(StreamEvent::Retrying(retrying)), waiting));
                }
                Ok(Sent::Response(response)) => State::Streaming(Box::new(Streaming {
                    body: response.bytes_stream().boxed(),
                    idle_timeout: posting.transport.idle_timeout,
                    deadline: tokio::time::Instant::now() + posting.transport.idle_timeout,
                    sse: SseDecoder::with_limit(MAX_EVENT_BYTES),
                    decoder: D::default(),
                    pending: VecDeque::new(),
                    message_bytes: 0,
                })),
                Err(error) => return Some((Err(error), State::Done)),
            },
            State::Streaming(mut streaming) => {
                if let Some(delta) = streaming.pending.pop_front() {
                    return Some((Ok(StreamEvent::Delta(delta)), State::Streaming(streaming)));
                }
                let events = match tokio::time::timeout_at(
                    streaming.deadline,
                    streaming.body.next(),
                )
                .await
                {
                    Err(_) => {
                        return Some((
                            Err(Error::IdleTimeout {
                                seconds: streaming.idle_timeout.as_secs_f64(),
                            }),
                            State::Done,
                        ))
                    }
                    Ok(Some(Err(error))) => {
                        return Some((
                            Err(Error::Http {
                                reason: format!("the response stream broke: {}", causes(&error)),
                                source: Some(Box::new(error)),
                            }),
                            State::Done,
                        ))
                    }
                    Ok(Some(Ok(bytes))) => streaming.sse.feed(&bytes),
                    Ok(None) => {
                        let last = streaming.sse.finish().into_iter().collect();
                        if let Err(error) = streaming.absorb(last) {
                            return Some((Err(error), State::Done));
                        }
                        if !streaming.decoder.is_complete() {
                            return Some((Err(Error::IncompleteStream), State::Done));
                        }
                        let Streaming {
                            decoder, pending, ..
                        } = *streaming;
                        let mut tail: VecDeque<StreamEvent> =
                            pending.into_iter().map(StreamEvent::Delta).collect();
                        tail.push_back(StreamEvent::Done(decoder.finish()));
                        state = State::Tail(tail);
                        continue;
                    }
                };
                if let Err(error) = streaming.absorb(events) {
                    return Some((Err(error), State::Done));
                }
                if streaming.sse.overflowed() {
                    return Some((
                        Err(Error::TooLarge {
                            what: "a server-sent event",
                            limit: MAX_EVENT_BYTES,
                        }),
                        State::Done,
                    ));
                }
                State::Streaming(streaming)
            }
        };
    }
}
