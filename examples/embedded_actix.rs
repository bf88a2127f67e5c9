//! golato inside an actix application: its actors live on the application's arbiter, and its
//! runs are started by an `AgentService` under the application's own `actix::Supervisor`,
//! which restarts the service if it fails while runs it started go on.
//!
//! ```text
//! cargo run -p golato --example embedded_actix
//! ```

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use actix::{Arbiter, Supervisor};
use golato::agent::{self, Agent};
use golato::embed::{self, AgentService, Restarts, StartRun};
use golato::message::UserMessage;
use golato::HostConfig;

mod support;
use support::{lookup_script, lookup_tool};

#[actix::main]
async fn main() -> anyhow::Result<()> {
    let mut out = Vec::new();
    run(&mut out).await?;
    std::io::stdout().write_all(&out)?;
    Ok(())
}

/// The example proper, writing what it shows to `out` (the tests read it).
pub(crate) async fn run(out: &mut impl Write) -> anyhow::Result<()> {
    // golato's actors on this application's arbiter; tools on a worker pool of golato's.
    let host = embed::host_on_arbiters(vec![Arbiter::current()], HostConfig::default())?;
    let assistant = Agent::new(agent::Config {
        generator: Some(Arc::new(lookup_script())),
        tools: vec![lookup_tool()],
        host: Some(host.clone()),
        ..Default::default()
    })?;
    let service = Supervisor::start(move |_| AgentService::new(assistant));

    // Two runs at once, each started by the supervised service.
    let first = service
        .send(StartRun::new(UserMessage::new(
            "Which plan does C-100 use?",
        )))
        .await?;
    let second = service
        .send(StartRun::new(UserMessage::new("And C-100 again?")))
        .await?;
    let (first, second) = futures::join!(first.finish(), second.finish());
    writeln!(out, "first: {}", first?.final_message.text())?;
    writeln!(out, "second: {}", second?.final_message.text())?;
    writeln!(out, "service restarts: {}", service.send(Restarts).await?)?;

    let report = host.shutdown(Duration::from_secs(5)).await;
    writeln!(out, "host stopped, {} run(s) unfinished", report.unfinished)?;
    Ok(())
}
