//! golato inside an actix application: its actors on your arbiters, and its runs owned by an
//! actor you can put under your own `actix::Supervisor`.
//!
//! A plain tokio application needs none of this: give the host your runtime with
//! [`HostConfig::runtime`](crate::HostConfig::runtime) and use [`Agent`] directly.
//!
//! - [`host_on_arbiters`]: a [`Host`](crate::Host) whose actors live on your arbiters.
//! - [`AgentService`]: an actor that owns an [`Agent`] and starts its runs on request
//!   ([`StartRun`]). It is [`actix::Supervised`]: started with `actix::Supervisor::start`, it
//!   is restarted when it stops, and runs it started go on meanwhile (each run is an actor of
//!   its own). A run whose actor crashes ends with [`Error::Crashed`](crate::agent::Error)
//!   carrying its transcript; every other run is unaffected.
//!
//! ```
//! use actix::{Actor, Supervisor};
//! use golato::agent::{self, Agent};
//! use golato::embed::{self, AgentService, StartRun};
//! use golato::generator::Scripted;
//! use golato::message::{AssistantMessage, UserMessage};
//! use golato::HostConfig;
//! use std::sync::Arc;
//!
//! #[actix::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let host = embed::host_on_arbiters(vec![actix::Arbiter::current()], HostConfig::default())?;
//!     let agent = Agent::new(agent::Config {
//!         generator: Some(Arc::new(Scripted::new([AssistantMessage::with_text("Hello!")]))),
//!         host: Some(host.clone()),
//!         ..Default::default()
//!     })?;
//!     let service = Supervisor::start(move |_| AgentService::new(agent));
//!     let run = service.send(StartRun::new(UserMessage::new("Hi"))).await?;
//!     assert_eq!(run.finish().await?.final_message.text(), "Hello!");
//!     host.shutdown(std::time::Duration::from_secs(5)).await;
//!     Ok(())
//! }
//! ```

use actix::{Actor, Context, Handler, Message, MessageResult, Supervised};

pub use golato_actors::embed::{
    host_on_arbiters, shutdown_token, start, track, ArbiterHandle, WorkGuard,
};

use crate::agent::{Agent, Input, Run};

/// An actor that owns an [`Agent`] and starts its runs: the piece of golato an actix
/// application supervises. See the [module](self) documentation.
#[derive(Debug)]
pub struct AgentService {
    agent: Agent,
    restarts: usize,
}

impl AgentService {
    /// A service starting runs of `agent`.
    pub fn new(agent: Agent) -> AgentService {
        AgentService { agent, restarts: 0 }
    }
}

impl Actor for AgentService {
    type Context = Context<Self>;
}

impl Supervised for AgentService {
    fn restarting(&mut self, _ctx: &mut Context<Self>) {
        self.restarts += 1;
        tracing::warn!(
            restarts = self.restarts,
            "golato's agent service stopped and is restarting"
        );
    }
}

/// Starts a run of the service's agent; the reply is its [`Run`] handle, whose events and
/// outcome the sender reads as with [`Agent::start`]. The run goes on whether or not the
/// service is restarted meanwhile.
#[derive(Debug, Message)]
#[rtype(result = "Run")]
pub struct StartRun {
    input: Input,
}

impl StartRun {
    /// A run of `input` (a prompt, several, or a transcript to resume).
    pub fn new(input: impl Into<Input>) -> StartRun {
        StartRun {
            input: input.into(),
        }
    }
}

impl Handler<StartRun> for AgentService {
    type Result = MessageResult<StartRun>;

    fn handle(&mut self, request: StartRun, _ctx: &mut Context<Self>) -> Self::Result {
        MessageResult(self.agent.start(request.input))
    }
}

/// How many times the service was restarted by its supervisor.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "usize")]
pub struct Restarts;

impl Handler<Restarts> for AgentService {
    type Result = usize;

    fn handle(&mut self, _: Restarts, _ctx: &mut Context<Self>) -> usize {
        self.restarts
    }
}

/// Test-only fault hook (the `fault-injection` feature): the service fails as an actix actor
/// fails, by stopping, so that its supervisor restarts it.
#[cfg(feature = "fault-injection")]
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "()")]
pub struct InjectCrash;

#[cfg(feature = "fault-injection")]
impl Handler<InjectCrash> for AgentService {
    type Result = ();

    fn handle(&mut self, _: InjectCrash, ctx: &mut Context<Self>) {
        use actix::ActorContext;
        tracing::warn!("a crash injected into golato's agent service");
        ctx.stop();
    }
}
