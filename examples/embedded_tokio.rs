//! golato inside a tokio application: the host runs tool functions on the application's own
//! runtime (no second worker pool), the run's events are read as a `Stream`, and the host is
//! shut down with a deadline before the application exits.
//!
//! ```text
//! cargo run -p golato --example embedded_tokio
//! ```

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use golato::agent::{self, Agent, Event};
use golato::message::UserMessage;
use golato::{Host, HostConfig};

mod support;
use support::{lookup_script, lookup_tool};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut out = Vec::new();
    run(&mut out).await?;
    std::io::stdout().write_all(&out)?;
    Ok(())
}

/// The example proper, writing what it shows to `out` (the tests read it).
pub(crate) async fn run(out: &mut impl Write) -> anyhow::Result<()> {
    // Lend the host this application's runtime: golato adds only its actor threads.
    let host = Host::new(HostConfig {
        runtime: Some(tokio::runtime::Handle::current()),
        ..HostConfig::default()
    })?;
    let assistant = Agent::new(agent::Config {
        generator: Some(Arc::new(lookup_script())),
        tools: vec![lookup_tool()],
        host: Some(host.clone()),
        ..Default::default()
    })?;

    let mut run = assistant.start(UserMessage::new("Which plan does C-100 use?"));
    while let Some(event) = run.next().await {
        if let Event::ToolExecutionEnd(end) = &event {
            writeln!(out, "[end] {} {}", end.call.name, end.result.text())?;
        }
    }
    writeln!(out, "{}", run.finish().await?.final_message.text())?;

    // Before the application exits: cancel what still runs, give it up to five seconds.
    let report = host.shutdown(Duration::from_secs(5)).await;
    writeln!(out, "host stopped, {} run(s) unfinished", report.unfinished)?;
    Ok(())
}
