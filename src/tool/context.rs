//! What a tool function gets besides its arguments.

use std::fmt;
use std::sync::Arc;

use tokio_util::sync::{CancellationToken, WaitForCancellationFuture};

use super::ToolResult;
use crate::agent::{Budget, Event};
use crate::message::{ToolCall, Usage};

/// What a call of an agent's batch reaches through its context: the batch's shared state
/// (the calls, each call's cancellation token, made on first use, and its update gate).
pub(crate) trait CallHost: Send + Sync {
    /// Call number `index` of the batch.
    fn call(&self, index: usize) -> &ToolCall;
    /// The call's token: a child of the batch's, made when first asked for.
    fn token(&self, index: usize) -> &CancellationToken;
    /// A partial result the call published.
    fn publish(&self, index: usize, partial: ToolResult);
    /// Which attempt call `index` is (1 unless a journal retried it).
    fn attempt(&self, index: usize) -> u32;
    /// The run's name in its journal, if it has one.
    fn run_key(&self) -> Option<&str>;
    /// The turn whose message made the batch, in a journaled run.
    fn turn(&self) -> Option<usize>;
    /// An event of a child run call `index` started, for the run's events.
    fn forward(&self, index: usize, event: Event);
    /// What is left of the run's budget.
    fn budget_left(&self) -> Option<Budget>;
    /// Tokens and money a call spent for the run.
    fn spend(&self, index: usize, usage: &Usage, cost: Option<f64>);
    /// The call's entry on the host's actor console.
    fn probe(&self, index: usize) -> golato_actors::console::Probe;
}

/// The context of one tool call: the call itself, its cancellation, and a way to publish
/// partial results while the function runs. Cheap to clone.
#[derive(Clone)]
pub struct ToolContext {
    inner: Inner,
}

/// What a detached context does with a partial result.
type OnUpdate = Arc<dyn Fn(ToolResult) + Send + Sync>;

/// A detached call owns what it needs; a call of an agent's batch shares its batch's state
/// (so a batch of calls costs one shared allocation, and a token only for the calls whose
/// function asks for it).
#[derive(Clone)]
enum Inner {
    Detached {
        call: Arc<ToolCall>,
        cancel: CancellationToken,
        /// Where partial results go, if anywhere.
        updates: Option<OnUpdate>,
    },
    Hosted {
        host: Arc<dyn CallHost>,
        index: usize,
    },
}

impl fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolContext")
            .field("call", self.call())
            .finish_non_exhaustive()
    }
}

impl ToolContext {
    pub(crate) fn hosted(host: Arc<dyn CallHost>, index: usize) -> Self {
        ToolContext {
            inner: Inner::Hosted { host, index },
        }
    }

    /// A context for calling a tool function outside an agent (tests, the `golato tool`
    /// command): partial results are discarded.
    pub fn detached(call: ToolCall, cancel: CancellationToken) -> Self {
        ToolContext {
            inner: Inner::Detached {
                call: Arc::new(call),
                cancel,
                updates: None,
            },
        }
    }

    /// A context for calling a tool function outside an agent whose partial results are
    /// handed to `on_update` as they are published (a front end showing the newest line of a
    /// command the person runs themselves). `on_update` runs on the publishing task: it
    /// should only store or send what it is given.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use golato::message::ToolCall;
    /// use golato::tool::{ToolContext, ToolResult};
    /// use tokio_util::sync::CancellationToken;
    ///
    /// let latest = Arc::new(Mutex::new(None));
    /// let kept = Arc::clone(&latest);
    /// let call = ToolCall::new("mine", "bash", r#"{"command":"ls"}"#);
    /// let context = ToolContext::detached_with_updates(call, CancellationToken::new(), move |partial| {
    ///     *kept.lock().unwrap() = Some(partial.text_content());
    /// });
    /// context.update(ToolResult::text("a.txt"));
    /// assert_eq!(latest.lock().unwrap().as_deref(), Some("a.txt"));
    /// ```
    pub fn detached_with_updates(
        call: ToolCall,
        cancel: CancellationToken,
        on_update: impl Fn(ToolResult) + Send + Sync + 'static,
    ) -> Self {
        ToolContext {
            inner: Inner::Detached {
                call: Arc::new(call),
                cancel,
                updates: Some(Arc::new(on_update)),
            },
        }
    }

    /// The call's entry on the host's actor console ([`Probe::none`] when the console is off
    /// or the call runs outside an agent): a tool may say what it waits on, as `write` and
    /// `edit` do for a path's lease.
    ///
    /// [`Probe::none`]: golato_actors::console::Probe::none
    pub fn probe(&self) -> golato_actors::console::Probe {
        match &self.inner {
            Inner::Detached { .. } => golato_actors::console::Probe::none(),
            Inner::Hosted { host, index } => host.probe(*index),
        }
    }

    /// The call being executed (ID, tool name, raw arguments).
    pub fn call(&self) -> &ToolCall {
        match &self.inner {
            Inner::Detached { call, .. } => call,
            Inner::Hosted { host, index } => host.call(*index),
        }
    }

    /// Which attempt at this call this is: 1, unless the call is a step of a journaled run
    /// (a durable one) whose process died while the call was running, and another process now
    /// runs it again (2 for the first retry). A tool whose side effect must happen once can
    /// use it, with [`run_key`](Self::run_key) and the call's ID, to look for what an earlier
    /// attempt did. The call's result then says which attempt produced it
    /// ([`ToolResultMessage::attempt`](crate::message::ToolResultMessage::attempt)).
    pub fn attempt(&self) -> u32 {
        match &self.inner {
            Inner::Detached { .. } => 1,
            Inner::Hosted { host, index } => host.attempt(*index),
        }
    }

    /// The name of the run in its journal (a durable run's ID), if the run has one: with the
    /// call's ID it names this call across processes and attempts.
    pub fn run_key(&self) -> Option<&str> {
        match &self.inner {
            Inner::Detached { .. } => None,
            Inner::Hosted { host, .. } => host.run_key(),
        }
    }

    /// The turn (from 1) whose assistant message made this call, when the run has a journal
    /// ([`run_key`](Self::run_key)): a call's ID is the model's and may repeat in another turn,
    /// so the run's key, the turn and the call's ID name one call of a run.
    pub fn turn(&self) -> Option<usize> {
        match &self.inner {
            Inner::Detached { .. } => None,
            Inner::Hosted { host, .. } => host.turn(),
        }
    }

    /// The token cancelled when the run is cancelled (or when this call published an invalid
    /// update). The agent waits for the function to return either way, so a function that
    /// ignores it delays the run's end.
    pub fn cancellation_token(&self) -> &CancellationToken {
        match &self.inner {
            Inner::Detached { cancel, .. } => cancel,
            Inner::Hosted { host, index } => host.token(*index),
        }
    }

    /// Whether the call has been cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.cancellation_token().is_cancelled()
    }

    /// Resolves when the call is cancelled.
    ///
    /// # Cancel safety
    /// Cancel safe: dropping the future loses nothing.
    pub fn cancelled(&self) -> WaitForCancellationFuture<'_> {
        self.cancellation_token().cancelled()
    }

    /// Publishes a partial result; observers see it as a `ToolExecutionUpdate` event.
    ///
    /// The partial result is checked like a final one: an invalid one (say, an image part with
    /// an unsupported MIME type) is not forwarded, cancels the function, and becomes the call's
    /// error result. Updates published after the function returned or panicked, or after an
    /// invalid one, are dropped. Publishing never blocks and memory stays bounded however fast
    /// a function publishes: while the run has not taken a call's previous update, newer ones
    /// coalesce into the newest (at most one waits per call), and when the event consumer falls
    /// behind, its buffered updates of one call coalesce the same way. The newest update
    /// published before the function returns is always delivered. Outside an agent, an update
    /// goes to the context's `on_update` ([`detached_with_updates`](Self::detached_with_updates))
    /// as it is, or nowhere.
    pub fn update(&self, partial: ToolResult) {
        match &self.inner {
            Inner::Hosted { host, index } => host.publish(*index, partial),
            Inner::Detached {
                updates: Some(on_update),
                ..
            } => on_update(partial),
            Inner::Detached { updates: None, .. } => {}
        }
    }

    /// Forwards an event of a child run this call started (a subagent): the run's own events
    /// get it as [`Event::Subagent`], with this call's ID at the front of its path, between the
    /// call's start and end. Every event is kept in order but updates, which coalesce as the
    /// run's own do when the consumer falls behind. Dropped once the function returned, and
    /// outside an agent.
    pub fn forward(&self, event: Event) {
        if let Inner::Hosted { host, index } = &self.inner {
            host.forward(*index, event);
        }
    }

    /// What is left of the run's budget now ([`Budget`] with the limits less what the run and
    /// every call of it spent so far, its parents' budgets included for a child run); `None`
    /// when the run has no budget, and outside an agent. A child run this call starts should
    /// get no more.
    pub fn budget_left(&self) -> Option<Budget> {
        match &self.inner {
            Inner::Detached { .. } => None,
            Inner::Hosted { host, .. } => host.budget_left(),
        }
    }

    /// Counts tokens and money this call spent for the run (a child run's): they join the
    /// run's usage and cost and its budget checks. `cost` is `None` when the price is unknown,
    /// which makes the run's cost unknown too.
    pub fn spend(&self, usage: &Usage, cost: Option<f64>) {
        if let Inner::Hosted { host, index } = &self.inner {
            host.spend(*index, usage, cost);
        }
    }
}
