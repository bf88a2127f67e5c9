//! A durable run's events, kept where any client can read them: the `GolatoEvents` virtual
//! object (keyed by run ID) holds the events its run's workers published (see
//! [`crate::publish`]), numbered in the order they were taken, in pages of its state.
//!
//! Events are not journal entries: they are sent by the worker straight to Restate's ingress,
//! outside the run's invocation, so that watching costs the run no recorded step and a replay
//! does not have to reproduce them. A replay sends again the events of the steps it replays;
//! each event carries a key that tells such a copy from a new event:
//!
//! - a settled event (turn start and end, a message's end, a call's start, hook and end, a
//!   delivered user message, a compaction, the run's start and end, and the same of a
//!   subagent's run, forwarded) is what a recorded step says: its key names its turn, kind,
//!   call and occurrence (a subagent's: its path, and its own turn, kind, call and occurrence),
//!   the same in every attempt, and a key the object has seen is dropped;
//! - a live event (a message's or call's update, a subagent's too) exists only in the attempt
//!   that produced it: its key is the attempt's and its number there, dropped only when that
//!   attempt sends it twice (a retried request). When a later attempt streams the answer of a
//!   turn an earlier one had streamed part of, a `message_start` of that turn comes first, so
//!   that a watcher starts the answer over.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use restate_sdk::prelude::*;
use serde_json::Value;

use golato::agent::Event;

/// The name of the events object, as registered.
pub const EVENTS_OBJECT: &str = "GolatoEvents";

/// At most this many of a run's events are kept (the oldest pages go first)...
pub const KEPT_EVENTS: u64 = 20_000;
/// ...and at most this many bytes of them (JSON).
pub const KEPT_BYTES: u64 = 32 << 20;

/// A page is full at this many events or bytes.
const PAGE_EVENTS: u64 = 128;
const PAGE_BYTES: u64 = 512 << 10;
/// One read answers at most this many events or bytes (at least one event).
const READ_EVENTS: usize = 1_000;
const READ_BYTES: usize = 4 << 20;

const META: &str = "meta";

/// How an event is told from a copy of it (see the module's docs).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum Key {
    /// What a recorded step says: the same key in every attempt.
    Settled {
        /// The turn it belongs to (0: the run's own).
        turn: usize,
        /// Its kind, call and occurrence within the turn.
        name: String,
    },
    /// Produced by live work: the `n`th event attempt `attempt` published.
    Live {
        attempt: String,
        n: u64,
        /// The turn whose answer it continues, for a message update.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        streams: Option<usize>,
    },
}

/// An event as a worker sends it.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct Sent {
    pub(crate) key: Key,
    pub(crate) event: Value,
}

/// The log's bookkeeping: one state entry beside the pages.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct Meta {
    /// The number the next event gets.
    next: u64,
    /// The pages kept, oldest first.
    pages: VecDeque<PageInfo>,
    /// The run's end was published.
    ended: bool,
    /// Per attempt, the number its next live event has.
    live_next: BTreeMap<String, u64>,
    /// The turn whose answer was streamed last, and by which attempt.
    streaming: Option<(usize, String)>,
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct PageInfo {
    first: u64,
    count: u64,
    bytes: u64,
}

fn page_key(first: u64) -> String {
    format!("page-{first}")
}

fn seen_key(turn: usize) -> String {
    format!("seen-{turn}")
}

/// The events of `batch` that are not copies of events taken before, in order, with the
/// bookkeeping that tells copies updated: `seen` holds the settled keys of each turn of the
/// batch.
fn accept(
    meta: &mut Meta,
    seen: &mut BTreeMap<usize, BTreeSet<String>>,
    batch: Vec<Sent>,
) -> Vec<Value> {
    let mut fresh = Vec::with_capacity(batch.len());
    for Sent { key, event } in batch {
        match key {
            Key::Settled { turn, name } => {
                if !seen.entry(turn).or_default().insert(name) {
                    continue;
                }
                meta.ended |= event.get("type").and_then(Value::as_str) == Some("run_end");
            }
            Key::Live {
                attempt,
                n,
                streams,
            } => {
                let next = meta.live_next.entry(attempt.clone()).or_default();
                // A number from anyone who reaches the ingress: the last one has no next.
                if n < *next || n == u64::MAX {
                    continue;
                }
                *next = n + 1;
                if let Some(turn) = streams {
                    let restarted = matches!(&meta.streaming, Some((streamed, by)) if *streamed == turn && *by != attempt);
                    if restarted {
                        fresh.push(serde_json::json!({"type": "message_start", "turn": turn}));
                    }
                    meta.streaming = Some((turn, attempt));
                }
            }
        }
        fresh.push(event);
    }
    fresh
}

/// Pages written by [`place`], and pages dropped to stay within the bounds.
#[derive(Debug, Default)]
struct Placed {
    written: Vec<(u64, Vec<Value>)>,
    dropped: Vec<u64>,
}

/// Numbers `fresh` and puts it in pages: the last page while it has room (`open` is its
/// events), new ones after; then drops the oldest pages beyond [`KEPT_EVENTS`] or
/// [`KEPT_BYTES`] (never the last).
fn place(meta: &mut Meta, open: Option<Vec<Value>>, fresh: Vec<Value>) -> Placed {
    let mut placed = Placed::default();
    let mut page = open.unwrap_or_default();
    for event in fresh {
        let bytes = serde_json::to_vec(&event).map_or(0, |json| json.len() as u64);
        let full = meta
            .pages
            .back()
            .is_none_or(|last| last.count >= PAGE_EVENTS || last.bytes >= PAGE_BYTES);
        if full {
            if let Some(last) = meta.pages.back() {
                if !page.is_empty() {
                    placed.written.push((last.first, std::mem::take(&mut page)));
                }
            }
            meta.pages.push_back(PageInfo {
                first: meta.next,
                count: 0,
                bytes: 0,
            });
            page.clear();
        }
        if let Some(last) = meta.pages.back_mut() {
            last.count += 1;
            last.bytes += bytes;
        }
        page.push(event);
        meta.next += 1;
    }
    if let Some(last) = meta.pages.back() {
        if !page.is_empty() {
            placed.written.push((last.first, page));
        }
    }
    loop {
        let events: u64 = meta.pages.iter().map(|page| page.count).sum();
        let bytes: u64 = meta.pages.iter().map(|page| page.bytes).sum();
        if meta.pages.len() <= 1 || (events <= KEPT_EVENTS && bytes <= KEPT_BYTES) {
            break;
        }
        if let Some(oldest) = meta.pages.pop_front() {
            placed.written.retain(|(first, _)| *first != oldest.first);
            placed.dropped.push(oldest.first);
        }
    }
    placed
}

/// One event and its number, as the object answers it.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct Numbered {
    pub(crate) seq: u64,
    pub(crate) event: Value,
}

/// What `read` answers (see [`EventPage`]).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct Answer {
    pub(crate) events: Vec<Numbered>,
    pub(crate) next: u64,
    pub(crate) first_kept: u64,
    pub(crate) ended: bool,
}

/// An event of a durable run and its number in the run's stream (0 for the first; numbers
/// have no gaps, and a number always names the same event).
#[derive(Debug, Clone, PartialEq)]
pub struct RunEvent {
    /// Its number.
    pub seq: u64,
    /// The event, as the run produced it.
    pub event: Event,
}

/// Some of a durable run's events, from [`Client::events`](crate::Client::events).
#[derive(Debug, Clone, PartialEq)]
pub struct EventPage {
    /// The events from the number asked for (or from `first_kept`, when older ones were
    /// dropped), in order.
    pub events: Vec<RunEvent>,
    /// The number to ask from next.
    pub next: u64,
    /// The oldest event still kept: a run keeps its last [`KEPT_EVENTS`] events, at most
    /// [`KEPT_BYTES`] of them.
    pub first_kept: u64,
    /// The run's end (`run_end`) is among the events read: nothing more will come.
    pub ended: bool,
}

pub(crate) struct EventsObject;

#[restate_sdk::object(name = "GolatoEvents", client_visibility = "pub(crate)", lazy_state)]
impl EventsObject {
    /// Takes a batch of a run's events, dropping copies of events taken before.
    #[handler]
    async fn append(&self, ctx: ObjectContext<'_>, batch: Json<Vec<Sent>>) -> HandlerResult<()> {
        let Json(batch) = batch;
        let mut meta = ctx
            .get::<Json<Meta>>(META)
            .await?
            .map(|Json(meta)| meta)
            .unwrap_or_default();
        let mut seen = BTreeMap::new();
        for sent in &batch {
            if let Key::Settled { turn, .. } = sent.key {
                if let std::collections::btree_map::Entry::Vacant(slot) = seen.entry(turn) {
                    let keys = ctx
                        .get::<Json<BTreeSet<String>>>(&seen_key(turn))
                        .await?
                        .map(|Json(keys)| keys)
                        .unwrap_or_default();
                    slot.insert(keys);
                }
            }
        }
        let before: BTreeMap<usize, usize> = seen
            .iter()
            .map(|(turn, keys)| (*turn, keys.len()))
            .collect();
        let fresh = accept(&mut meta, &mut seen, batch);
        if !fresh.is_empty() {
            let open = match meta.pages.back() {
                Some(last) if last.count < PAGE_EVENTS && last.bytes < PAGE_BYTES => ctx
                    .get::<Json<Vec<Value>>>(&page_key(last.first))
                    .await?
                    .map(|Json(events)| events),
                _ => None,
            };
            let placed = place(&mut meta, open, fresh);
            for (first, events) in placed.written {
                ctx.set(&page_key(first), Json(events));
            }
            for first in placed.dropped {
                ctx.clear(&page_key(first));
            }
        }
        for (turn, keys) in seen {
            if before.get(&turn) != Some(&keys.len()) {
                ctx.set(&seen_key(turn), Json(keys));
            }
        }
        ctx.set(META, Json(meta));
        Ok(())
    }

    /// The events from number `from` on (a bounded page of them).
    #[handler]
    async fn read(
        &self,
        ctx: SharedObjectContext<'_>,
        from: Json<u64>,
    ) -> HandlerResult<Json<Answer>> {
        let Json(from) = from;
        let meta = ctx
            .get::<Json<Meta>>(META)
            .await?
            .map(|Json(meta)| meta)
            .unwrap_or_default();
        let first_kept = meta.pages.front().map_or(meta.next, |page| page.first);
        let start = from.max(first_kept);
        let mut events = Vec::new();
        let mut bytes = 0;
        'pages: for page in meta
            .pages
            .iter()
            .filter(|page| page.first + page.count > start)
        {
            let Some(Json(values)) = ctx.get::<Json<Vec<Value>>>(&page_key(page.first)).await?
            else {
                continue;
            };
            for (seq, event) in (page.first..).zip(values) {
                if seq < start {
                    continue;
                }
                let size = serde_json::to_vec(&event).map_or(0, |json| json.len());
                if events.len() >= READ_EVENTS || (!events.is_empty() && bytes + size > READ_BYTES)
                {
                    break 'pages;
                }
                bytes += size;
                events.push(Numbered { seq, event });
            }
        }
        let next = events
            .last()
            .map_or(start.min(meta.next), |last| last.seq + 1);
        Ok(Json(Answer {
            events,
            next,
            first_kept,
            ended: meta.ended && next >= meta.next,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn settled(turn: usize, name: &str, kind: &str) -> Sent {
        Sent {
            key: Key::Settled {
                turn,
                name: name.into(),
            },
            event: json!({"type": kind, "turn": turn}),
        }
    }

    fn live(attempt: &str, n: u64, streams: Option<usize>) -> Sent {
        Sent {
            key: Key::Live {
                attempt: attempt.into(),
                n,
                streams,
            },
            event: json!({"type": "message_update", "n": n, "by": attempt}),
        }
    }

    fn kinds(events: &[Value]) -> Vec<String> {
        events
            .iter()
            .map(|event| event["type"].as_str().unwrap_or_default().to_owned())
            .collect()
    }

    #[test]
    fn a_replay_sends_nothing_twice_and_a_restarted_answer_starts_over() {
        let (mut meta, mut seen) = (Meta::default(), BTreeMap::new());
        let first = accept(
            &mut meta,
            &mut seen,
            vec![
                settled(1, "turn_start", "turn_start"),
                live("a", 0, Some(1)),
                live("a", 1, Some(1)),
            ],
        );
        assert_eq!(
            kinds(&first),
            ["turn_start", "message_update", "message_update"]
        );
        // The same request again (a retry): nothing.
        let again = accept(&mut meta, &mut seen, vec![live("a", 1, Some(1))]);
        assert!(again.is_empty());
        // Attempt b replays turn 1's start, then streams its answer anew.
        let replayed = accept(
            &mut meta,
            &mut seen,
            vec![
                settled(1, "turn_start", "turn_start"),
                live("b", 0, Some(1)),
                settled(1, "message_end", "message_end"),
                settled(0, "run_end", "run_end"),
            ],
        );
        assert_eq!(
            kinds(&replayed),
            ["message_start", "message_update", "message_end", "run_end"]
        );
        assert!(meta.ended);
    }

    #[test]
    fn hostile_keys_neither_panic_nor_hide_other_events() {
        let (mut meta, mut seen) = (Meta::default(), BTreeMap::new());
        let taken = accept(
            &mut meta,
            &mut seen,
            vec![
                live("x", u64::MAX, Some(usize::MAX)),
                live("x", u64::MAX, None),
                settled(usize::MAX, "", "not_an_event"),
                live("a", 0, Some(1)),
            ],
        );
        // The number with no next is dropped; another attempt's events are untouched.
        assert_eq!(kinds(&taken), ["not_an_event", "message_update"]);
        assert_eq!(meta.live_next["a"], 1);
    }

    #[test]
    fn pages_fill_in_order_and_the_oldest_go_past_the_bound() {
        let mut meta = Meta::default();
        let events = |count: u64| (0..count).map(|n| json!({"type": "x", "n": n})).collect();
        let placed = place(&mut meta, None, events(PAGE_EVENTS + 5));
        assert_eq!(meta.next, PAGE_EVENTS + 5);
        let firsts: Vec<u64> = placed.written.iter().map(|(first, _)| *first).collect();
        assert_eq!(firsts, [0, PAGE_EVENTS]);
        assert_eq!(placed.written[1].1.len(), 5);
        // Into the open page, then past the bound: the oldest pages are dropped.
        let open = placed.written[1].1.clone();
        let placed = place(&mut meta, Some(open), events(KEPT_EVENTS));
        assert_eq!(meta.next, PAGE_EVENTS + 5 + KEPT_EVENTS);
        let kept: u64 = meta.pages.iter().map(|page| page.count).sum();
        assert!(kept <= KEPT_EVENTS, "{kept}");
        assert_eq!(placed.dropped.first(), Some(&0));
        assert!(placed
            .written
            .iter()
            .all(|(first, _)| !placed.dropped.contains(first)));
        let first = meta
            .pages
            .front()
            .map(|page| page.first)
            .unwrap_or_default();
        assert_eq!(first % PAGE_EVENTS, 0);
        assert_eq!(first + kept, meta.next);
    }
}
