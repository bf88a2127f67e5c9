//! A hook that guards `bash`: commands matching a deny pattern are blocked outright, and every
//! other command is shown on the terminal and runs only if you answer `y`.
//!
//! ```text
//! cargo run -p golato --example approval
//! ```
//!
//! The model is a recorded script (offline), asking for three commands one after another; the
//! hook's decisions and the calls' results are printed as they happen. A blocked call never
//! runs: the model gets an error result with the reason instead, and the run goes on.

use std::io::{BufRead, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};

use golato::agent::{self, Agent, Event, Input};
use golato::builtin;
use golato::generator::Scripted;
use golato::hook::{self, BeforeToolCall, Hook, HookAction};
use golato::message::{AssistantMessage, ToolCall, UserMessage};

/// Commands containing any of these are never run.
const DENIED: [&str; 3] = ["rm -rf", "sudo ", "curl "];

/// The guard: deny by pattern, else ask on `terminal` (one question at a time).
fn approval_hook<R, W>(terminal: Arc<Mutex<(R, W)>>) -> Arc<dyn Hook>
where
    R: BufRead + Send + 'static,
    W: Write + Send + 'static,
{
    hook::before(move |ctx| {
        let terminal = Arc::clone(&terminal);
        async move {
            if ctx.call.name != "bash" {
                return Ok(BeforeToolCall::Run);
            }
            let command = ctx.arguments["command"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            if let Some(pattern) = DENIED.iter().find(|pattern| command.contains(**pattern)) {
                return Ok(BeforeToolCall::Block(format!(
                    "Commands containing {pattern:?} are not allowed here; find another way."
                )));
            }
            // Reading the terminal blocks: do it off the runtime's worker threads.
            let answer = tokio::task::spawn_blocking(move || -> std::io::Result<String> {
                let mut terminal = terminal.lock().unwrap_or_else(|e| e.into_inner());
                let (input, output) = &mut *terminal;
                write!(output, "Allow bash `{command}`? [y/N] ")?;
                output.flush()?;
                let mut answer = String::new();
                input.read_line(&mut answer)?;
                writeln!(output)?;
                Ok(answer)
            })
            .await??;
            if answer.trim().eq_ignore_ascii_case("y") {
                Ok(BeforeToolCall::Run)
            } else {
                Ok(BeforeToolCall::Block(
                    "The user did not approve this command.".to_owned(),
                ))
            }
        }
    })
}

/// Runs the scripted session in `workspace`, asking on `terminal`.
pub(crate) async fn run<R, W>(workspace: &Path, terminal: Arc<Mutex<(R, W)>>) -> anyhow::Result<()>
where
    R: BufRead + Send + 'static,
    W: Write + Send + 'static,
{
    let bash = |id: &str, command: &str| {
        let arguments = serde_json::json!({ "command": command }).to_string();
        AssistantMessage::with_tool_calls([ToolCall::new(id, "bash", arguments)])
    };
    let script = Scripted::new([
        bash("1", "echo hello from the workspace"),
        bash("2", "rm -rf build"),
        bash("3", "echo a second command"),
        AssistantMessage::with_text("Done: one command ran, two were refused."),
    ]);
    let assistant = Agent::new(agent::Config {
        generator: Some(Arc::new(script)),
        tools: builtin::new(builtin::Config {
            working_directory: workspace.to_owned(),
            allowed_tool_names: Some(vec!["bash".into()]),
            ..Default::default()
        })?,
        hooks: vec![approval_hook(Arc::clone(&terminal))],
        ..Default::default()
    })?;
    let run = assistant.start(Input::from(UserMessage::new("Run a few commands.")));
    let say = |line: String| -> std::io::Result<()> {
        let mut terminal = terminal.lock().unwrap_or_else(|e| e.into_inner());
        writeln!(terminal.1, "{line}")
    };
    while let Some(event) = run.next_event().await {
        match event {
            Event::ToolHook(hook) => match hook.action {
                HookAction::Blocked { reason } => say(format!("[blocked] {reason}"))?,
                other => say(format!("[hook] {other:?}"))?,
            },
            Event::ToolExecutionEnd(end) => say(format!(
                "[end] {} error={} result={:?}",
                end.call.name,
                end.result.is_error,
                end.result.text()
            ))?,
            _ => {}
        }
    }
    let result = run.finish().await?;
    say(result.final_message.text())?;
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let workspace = std::env::current_dir()?;
    let terminal = Arc::new(Mutex::new((
        std::io::BufReader::new(std::io::stdin()),
        std::io::stdout(),
    )));
    run(&workspace, terminal).await
}
