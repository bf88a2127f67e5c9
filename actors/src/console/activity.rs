//! What an actor is and does, as the console tells it: its [`Kind`], its [`Identity`], its
//! [`Activity`].

use std::borrow::Cow;
use std::fmt;

/// What kind of actor an entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Kind {
    /// A run's actor (a subagent's run included: its identity names its parent).
    Run,
    /// A batch supervisor.
    Batch,
    /// One tool call: its tool actor, or the task that concludes it once the actor has nothing
    /// left to control.
    Call,
    /// The path-lock actor.
    PathLock,
    /// Any other actor with a counted mailbox.
    Other,
}

impl Kind {
    /// The kind's name, as the wire and the viewer show it.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Run => "run",
            Kind::Batch => "batch",
            Kind::Call => "call",
            Kind::PathLock => "path_lock",
            Kind::Other => "other",
        }
    }
}

/// Who an actor is: the run, call and tool it belongs to. Set by the actor's owner, once or
/// rarely ([`Probe::identify`](super::Probe::identify)).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct Identity {
    /// The run's ID.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<u64>,
    /// The run this run is a subagent of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_run: Option<u64>,
    /// The batch (the run's turn) a batch supervisor or call belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch: Option<u64>,
    /// The tool call's ID.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<String>,
    /// The tool's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
}

/// What an actor is doing now.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Activity {
    /// Nothing: waiting for a message.
    Idle,
    /// Handling a message of this type, on its actor thread.
    Handling {
        /// The message type.
        message: Cow<'static, str>,
    },
    /// Running work of its own off the actor threads (a tool call's function, a hook).
    Running {
        /// What runs.
        what: Cow<'static, str>,
    },
    /// Waiting for something outside itself.
    Waiting {
        /// What it waits on.
        on: WaitingOn,
    },
}

/// What an actor waits on.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "for", rename_all = "snake_case")]
#[non_exhaustive]
pub enum WaitingOn {
    /// The model's next message.
    Model,
    /// The calls of its batch.
    Calls,
    /// The lease on a path, held by another call.
    PathLease {
        /// The path.
        path: String,
    },
    /// A person's answer (an approval).
    Person,
    /// A subagent's run.
    Child,
    /// Something else, named.
    Other {
        /// What.
        what: String,
    },
}

impl fmt::Display for Activity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Activity::Idle => f.write_str("idle"),
            Activity::Handling { message } => write!(f, "handling {message}"),
            Activity::Running { what } => write!(f, "running {what}"),
            Activity::Waiting { on } => write!(f, "waiting on {on}"),
        }
    }
}

impl fmt::Display for WaitingOn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WaitingOn::Model => f.write_str("the model"),
            WaitingOn::Calls => f.write_str("its calls"),
            WaitingOn::PathLease { path } => write!(f, "the lease on {path}"),
            WaitingOn::Person => f.write_str("a person"),
            WaitingOn::Child => f.write_str("a subagent"),
            WaitingOn::Other { what } => f.write_str(what),
        }
    }
}
