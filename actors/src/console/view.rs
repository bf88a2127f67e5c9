//! What the console shows: plain data, the same in process ([`Console::snapshot`](super::Console::snapshot))
//! and on the wire (one JSON object per line, see [`Update`]).

use serde::{Deserialize, Serialize};

use super::probe::{Activity, Identity, Kind};

/// The version of the wire format, in [`Update::Hello`]; bumped when a field changes meaning.
pub const WIRE_VERSION: u32 = 1;

/// One line of the console's stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Update {
    /// First line: what the stream is.
    Hello {
        /// [`WIRE_VERSION`].
        version: u32,
        /// At most this many updates a second follow.
        rate: u32,
        /// The lints' thresholds, in milliseconds.
        thresholds: Thresholds,
    },
    /// Everything: the first update, and again whenever the connection fell behind.
    Snapshot(Snapshot),
    /// What changed since the previous update of this connection.
    Delta(Delta),
}

/// The lints' thresholds as the wire tells them (milliseconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Thresholds {
    /// A handler (or a call's function) running longer than this.
    pub handler_ms: u64,
    /// A mailbox with messages and none handled for this long.
    pub mailbox_ms: u64,
    /// A path lease held this long while others wait.
    pub lease_ms: u64,
    /// A run with no event for this long.
    pub silent_run_ms: u64,
}

/// Every live actor, the path locks, the lints and the recently ended.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Snapshot {
    /// Milliseconds since the console started.
    pub at_ms: u64,
    /// Live actors, by ID.
    pub actors: Vec<ActorView>,
    /// Paths held or waited for.
    pub locks: Vec<LockView>,
    /// What looks wrong now.
    pub lints: Vec<Lint>,
    /// Actors that ended lately, most recent last (a short, bounded history).
    pub ended: Vec<ActorView>,
    /// Updates this connection missed because it read too slowly (0 in process).
    pub dropped: u64,
}

/// What changed since a connection's previous update.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Delta {
    /// Milliseconds since the console started.
    pub at_ms: u64,
    /// Actors new or changed since the previous update.
    pub changed: Vec<ActorView>,
    /// Actors that ended since (their last state is in `history`).
    pub ended: Vec<u64>,
    /// Their last state, for the viewer's history.
    pub history: Vec<ActorView>,
    /// The path locks now (whole: it is small).
    pub locks: Vec<LockView>,
    /// The lints now (whole).
    pub lints: Vec<Lint>,
    /// Live actors now.
    pub live: usize,
    /// Updates this connection missed so far because it read too slowly.
    pub dropped: u64,
}

/// One actor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ActorView {
    /// The console's ID of the actor (never reused while the host lives).
    pub id: u64,
    /// What kind of actor.
    pub kind: Kind,
    /// Its type, without module paths.
    pub name: String,
    /// Who it is.
    #[serde(flatten)]
    pub identity: Identity,
    /// What it does now.
    pub activity: Activity,
    /// For how long it has done so (ms).
    pub for_ms: u64,
    /// Messages waiting in its mailbox.
    pub mailbox_depth: usize,
    /// Messages handled.
    pub handled: u64,
    /// Time spent handling messages, by bucket.
    pub busy: Histogram,
    /// Time messages waited in its mailbox, by bucket.
    pub mailbox_wait: Histogram,
    /// Since it started (ms); for an ended actor, how long it lived.
    pub age_ms: u64,
    /// Since its last event (runs; ms), if it told one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since_event_ms: Option<u64>,
    /// Path leases it holds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub holds: Vec<Held>,
    /// How long ago it ended (ms), for the history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_ms_ago: Option<u64>,
}

impl ActorView {
    /// A short line naming the actor: `run 7`, `call 7/toolu_1 (bash)`, `path_lock`.
    pub fn label(&self) -> String {
        let id = &self.identity;
        match (self.kind, id.run, &id.call) {
            (Kind::Call, Some(run), Some(call)) => match &id.tool {
                Some(tool) => format!("call {run}/{call} ({tool})"),
                None => format!("call {run}/{call}"),
            },
            (Kind::Batch, Some(run), _) => match id.batch {
                Some(batch) => format!("batch {run}/{batch}"),
                None => format!("batch of run {run}"),
            },
            (Kind::Run, Some(run), _) => format!("run {run}"),
            _ => format!("{} #{}", self.name, self.id),
        }
    }
}

/// A path lease an actor holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Held {
    /// The path.
    pub path: String,
    /// Since when (ms).
    pub for_ms: u64,
}

/// A histogram: counts in the buckets 10 µs, 100 µs, 1 ms, 10 ms, 100 ms, 1 s, longer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Histogram {
    /// Counts per bucket (not cumulative).
    pub counts: Vec<u64>,
    /// The sum of every duration (µs).
    pub total_us: u64,
}

impl From<&super::entry::Histogram> for Histogram {
    fn from(live: &super::entry::Histogram) -> Histogram {
        Histogram {
            counts: live
                .buckets
                .iter()
                .map(|count| count.load(std::sync::atomic::Ordering::Relaxed))
                .collect(),
            total_us: live.total_us.load(std::sync::atomic::Ordering::Relaxed),
        }
    }
}

/// One path, its holder and its queue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct LockView {
    /// The path.
    pub path: String,
    /// Who holds it, if anyone.
    pub holder: Option<LockParty>,
    /// Who waits for it, longest waiting first (the lock's own order).
    pub waiting: Vec<LockParty>,
}

/// An actor holding or waiting for a path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct LockParty {
    /// The actor's ID.
    pub actor: u64,
    /// Its run.
    pub run: Option<u64>,
    /// Its call.
    pub call: Option<String>,
    /// How long it has held or waited (ms).
    pub for_ms: u64,
}

/// Something that looks wrong, naming the actor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Lint {
    /// Which check.
    pub lint: LintKind,
    /// The actor it is about.
    pub actor: u64,
    /// Its run.
    pub run: Option<u64>,
    /// Its call.
    pub call: Option<String>,
    /// For how long (ms).
    pub for_ms: u64,
    /// What it is, in words.
    pub message: String,
}

/// The checks the console makes on every sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum LintKind {
    /// A handler, or a call's function, running past the threshold.
    HandlerRunning,
    /// A mailbox with messages and none handled past the threshold.
    MailboxStalled,
    /// A path lease held past the threshold while others wait.
    LeaseHeld,
    /// A run that told no event past the threshold.
    SilentRun,
    /// A call still alive whose run has ended.
    OrphanCall,
}

impl LintKind {
    /// The lint's name.
    pub fn as_str(self) -> &'static str {
        match self {
            LintKind::HandlerRunning => "handler_running",
            LintKind::MailboxStalled => "mailbox_stalled",
            LintKind::LeaseHeld => "lease_held",
            LintKind::SilentRun => "silent_run",
            LintKind::OrphanCall => "orphan_call",
        }
    }
}
