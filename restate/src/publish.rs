//! A worker's side of a durable run's events: each event the run produces gets the key that
//! tells it from a copy (see [`crate::events`]) and is sent, in batches, to the run's
//! `GolatoEvents` object through Restate's ingress.
//!
//! Sending happens while the run goes on and never holds it up: the run's own event buffer
//! merges pending updates while a batch is on its way, as it does for any slow reader.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::Value;

use golato::agent::Event;

use crate::events::{Key, Sent, EVENTS_OBJECT};

/// A batch holds at most this many events...
const BATCH: usize = 256;
/// ...and what came within this time of its first (see BENCHMARKS.md, "Live events of durable
/// runs": sent at once, the batches of a run of 8 calls took twice the server's CPU).
const LINGER: Duration = Duration::from_millis(100);
/// A live event larger than this is not sent (the settled event that ends its call or message
/// carries everything it said).
const LIVE_EVENT_BYTES: usize = 64 << 10;
/// How long a batch is offered to an ingress that does not take it before it is given up.
const OFFER_FOR: Duration = Duration::from_secs(10);

/// Names the attempts of this process apart from every other attempt of the run.
fn new_attempt() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos());
    format!(
        "{:x}-{:x}-{}",
        std::process::id(),
        nanos,
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Gives each event of one attempt of a run its key.
#[derive(Debug)]
pub(crate) struct Keyer {
    attempt: String,
    live: u64,
    /// The run's own settled events.
    own: Settling,
    /// Each subagent's, by the subagent's path: a call that attaches to its durable child again
    /// (its next attempt) forwards the child's events from the first, and those it had
    /// forwarded before are copies.
    children: HashMap<Vec<String>, Settling>,
}

/// What keys one run's settled events: its current turn and the occurrences seen.
#[derive(Debug, Default)]
struct Settling {
    turn: usize,
    /// Occurrences of each settled kind, per turn and call index.
    seen: HashMap<(usize, &'static str, usize), u32>,
}

impl Settling {
    /// The settled key of `event` (`turn`, `kind/index/occurrence`), or `None` for a live one.
    fn settle(&mut self, event: &Event) -> Option<(usize, String)> {
        let (kind, turn, index) = match event {
            Event::RunStart(_) => ("run_start", 0, 0),
            Event::RunEnd(_) => ("run_end", 0, 0),
            Event::TurnStart(start) => {
                self.turn = start.turn;
                ("turn_start", start.turn, 0)
            }
            Event::MessageStart(start) => ("message_start", start.turn, 0),
            Event::MessageEnd(end) => ("message_end", end.turn, 0),
            Event::TurnEnd(end) => ("turn_end", end.turn, 0),
            Event::Compaction(compaction) => ("compaction", compaction.turn, 0),
            Event::UserMessage(message) => ("user_message", message.turn, 0),
            Event::ToolExecutionStart(start) => ("tool_start", self.turn, start.index),
            Event::ToolHook(hook) => ("tool_hook", self.turn, hook.index),
            Event::ToolExecutionEnd(end) => ("tool_end", self.turn, end.index),
            _ => return None,
        };
        let occurrence = self.seen.entry((turn, kind, index)).or_default();
        let name = format!("{kind}/{index}/{occurrence}");
        *occurrence += 1;
        Some((turn, name))
    }
}

impl Keyer {
    pub(crate) fn new() -> Keyer {
        Keyer {
            attempt: new_attempt(),
            live: 0,
            own: Settling::default(),
            children: HashMap::new(),
        }
    }

    /// `event` with its key, or `None` for a live event too large to send.
    pub(crate) fn key(&mut self, event: &Event) -> Option<Sent> {
        let value = serde_json::to_value(event).ok()?;
        let settled = match event {
            // A subagent's settled event is settled in the turn of the parent that forwards
            // it, named by the subagent's path and its own turn and name.
            Event::Subagent(nested) => self
                .children
                .entry(nested.path.clone())
                .or_default()
                .settle(&nested.event)
                .map(|(turn, name)| {
                    let path = serde_json::to_string(&nested.path).unwrap_or_default();
                    (self.own.turn, format!("subagent/{path}/{turn}/{name}"))
                }),
            event => self.own.settle(event),
        };
        match settled {
            Some((turn, name)) => Some(Sent {
                key: Key::Settled { turn, name },
                event: value,
            }),
            None => {
                let streams = match event {
                    Event::MessageUpdate(update) => Some(update.turn),
                    _ => None,
                };
                self.live(value, streams)
            }
        }
    }

    fn live(&mut self, event: Value, streams: Option<usize>) -> Option<Sent> {
        if serde_json::to_vec(&event).map_or(0, |json| json.len()) > LIVE_EVENT_BYTES {
            return None;
        }
        let n = self.live;
        self.live += 1;
        Some(Sent {
            key: Key::Live {
                attempt: self.attempt.clone(),
                n,
                streams,
            },
            event,
        })
    }
}

/// Sends one run's events to its `GolatoEvents` object.
#[derive(Debug)]
pub(crate) struct Publisher {
    http: reqwest::Client,
    url: reqwest::Url,
    keyer: Keyer,
    /// Sending failed for good (the object is not served): nothing more is tried.
    off: bool,
    /// Events given up, for the worker's log.
    pub(crate) lost: usize,
    /// Batches and events sent, for the worker's log.
    pub(crate) batches: usize,
    pub(crate) sent: usize,
    /// What the run spent, as its end event said.
    pub(crate) spent: Option<(golato::message::Usage, Option<f64>)>,
}

impl Publisher {
    pub(crate) fn new(http: reqwest::Client, ingress: &reqwest::Url, run_id: &str) -> Publisher {
        Publisher {
            http,
            url: crate::url::with_segments(ingress, &[EVENTS_OBJECT, run_id, "append"]),
            keyer: Keyer::new(),
            off: false,
            lost: 0,
            batches: 0,
            sent: 0,
            spent: None,
        }
    }

    /// Reads `run`'s events until it ends, sending them as they come, and gives its outcome.
    pub(crate) async fn forward(
        &mut self,
        run: golato::agent::Run,
    ) -> Result<golato::agent::RunResult, golato::agent::Error> {
        let mut ended = false;
        while !ended {
            let Some(first) = run.next_event().await else {
                break;
            };
            self.note(&first);
            let mut batch: Vec<Sent> = self.keyer.key(&first).into_iter().collect();
            // What else comes within LINGER goes in the same batch: each batch is one
            // invocation of the events object.
            let deadline = tokio::time::Instant::now() + LINGER;
            while batch.len() < BATCH {
                tokio::select! {
                    event = run.next_event() => match event {
                        Some(event) => {
                            self.note(&event);
                            batch.extend(self.keyer.key(&event));
                        }
                        None => {
                            ended = true;
                            break;
                        }
                    },
                    () = tokio::time::sleep_until(deadline) => break,
                }
            }
            self.send(batch).await;
        }
        run.finish().await
    }

    fn note(&mut self, event: &Event) {
        if let Event::RunEnd(end) = event {
            self.spent = Some((end.usage, end.cost));
        }
    }

    /// Offers `batch` to the ingress until it is taken or [`OFFER_FOR`] passed.
    async fn send(&mut self, batch: Vec<Sent>) {
        if batch.is_empty() {
            return;
        }
        if self.off {
            self.lost += batch.len();
            return;
        }
        let started = tokio::time::Instant::now();
        let mut pause = Duration::from_millis(20);
        loop {
            let answer = self.http.post(self.url.clone()).json(&batch).send().await;
            let why = match answer {
                Ok(response) if response.status().is_success() => {
                    self.batches += 1;
                    self.sent += batch.len();
                    return;
                }
                Ok(response) if !matches!(response.status().as_u16(), 404 | 429 | 500..) => {
                    // Refused for good: the deployment does not serve the events object.
                    tracing::warn!(url = %self.url, status = %response.status(), "the run's events are not published: the server refused them");
                    self.off = true;
                    self.lost += batch.len();
                    return;
                }
                Ok(response) => format!("HTTP {}", response.status()),
                Err(error) => crate::causes(&error),
            };
            if started.elapsed() >= OFFER_FOR {
                tracing::warn!(url = %self.url, events = batch.len(), reason = why, "some of the run's events were not published: the ingress did not take them for {OFFER_FOR:?}");
                self.lost += batch.len();
                return;
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_millis(500));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use golato::agent::Event;

    fn event(json: serde_json::Value) -> Event {
        serde_json::from_value(json).unwrap()
    }

    fn names(keyer: &mut Keyer, events: &[Event]) -> Vec<Key> {
        events
            .iter()
            .filter_map(|event| keyer.key(event))
            .map(|sent| sent.key)
            .collect()
    }

    #[test]
    fn a_subagents_events_forwarded_again_are_copies_and_its_updates_live() {
        let call = serde_json::json!({"id": "c1", "name": "bash", "arguments": "{}"});
        let nested = |inner: serde_json::Value| {
            event(serde_json::json!({"type": "subagent", "path": ["t1"], "event": inner}))
        };
        let events = [
            event(serde_json::json!({"type": "turn_start", "turn": 1})),
            nested(serde_json::json!({"type": "turn_start", "turn": 1})),
            nested(serde_json::json!({"type": "tool_start", "index": 0, "call": call})),
            nested(
                serde_json::json!({"type": "tool_update", "index": 0, "call": call,
                "partial_result": {"content": [], "details": null, "is_error": false, "terminate": false}}),
            ),
            nested(serde_json::json!({"type": "turn_start", "turn": 2})),
            nested(serde_json::json!({"type": "tool_start", "index": 0, "call": call})),
        ];
        let (mut first, mut second) = (Keyer::new(), Keyer::new());
        let (a, b) = (names(&mut first, &events), names(&mut second, &events));
        assert_eq!(a.len(), events.len(), "none left out");
        // Settled in the parent's turn, told apart by the child's turn.
        assert_eq!(
            a[2],
            Key::Settled {
                turn: 1,
                name: "subagent/[\"t1\"]/1/tool_start/0/0".into()
            }
        );
        assert_ne!(a[2], a[5]);
        assert_eq!((&a[..3], &a[4..]), (&b[..3], &b[4..]));
        assert!(matches!(a[3], Key::Live { .. }));
        assert_ne!(a[3], b[3]);
    }

    #[test]
    fn two_attempts_give_a_replayed_step_the_same_key_and_live_events_their_own() {
        let call = serde_json::json!({"id": "c1", "name": "bash", "arguments": "{}"});
        let events = [
            event(serde_json::json!({"type": "turn_start", "turn": 2})),
            event(serde_json::json!({"type": "tool_start", "index": 0, "call": call})),
            event(
                serde_json::json!({"type": "tool_update", "index": 0, "call": call,
                "partial_result": {"content": [], "details": null, "is_error": false, "terminate": false}}),
            ),
        ];
        let (mut first, mut second) = (Keyer::new(), Keyer::new());
        let (a, b) = (names(&mut first, &events), names(&mut second, &events));
        assert_eq!(a[..2], b[..2]);
        assert_eq!(
            a[1],
            Key::Settled {
                turn: 2,
                name: "tool_start/0/0".into()
            }
        );
        assert_ne!(a[2], b[2]);
        // A second start of the same kind in one attempt is another event.
        let again = names(&mut first, &events[1..2]);
        assert_eq!(
            again[0],
            Key::Settled {
                turn: 2,
                name: "tool_start/0/1".into()
            }
        );
    }
}
