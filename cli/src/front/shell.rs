//! `!command`: a command of the person's own, run by the session's `bash` tool (in the
//! session's sandbox, with its environment kept from secrets; never asked about, the person
//! typed it) while no run works. It is shown as a call is, Esc stops it, and what it printed
//! goes to the model with the next prompt (as Claude Code and pi do).

use std::time::Instant;

use golato::message::ToolCall;
use golato::tool::{ToolContext, ToolResult};
use tokio_util::sync::CancellationToken;

use crate::settings::Settings;

/// A command running.
pub(crate) struct Shell {
    pub(crate) call: ToolCall,
    pub(crate) started: Instant,
    /// The newest line of output it printed so far, for the line above the input.
    latest: std::sync::Arc<std::sync::Mutex<Option<String>>>,
    cancel: CancellationToken,
    task: tokio::task::JoinHandle<ToolResult>,
}

impl Shell {
    /// Starts `command` with the session's `bash`, or says why it cannot. With the session's
    /// `background` commands it joins their network: the person reaches the server the model
    /// started.
    pub(crate) fn start(
        command: &str,
        settings: &Settings,
        background: Option<&golato::builtin::Background>,
    ) -> Result<Shell, String> {
        let tools = crate::setup::tools::builtin_tools(
            settings,
            Vec::new(),
            None,
            None,
            background,
            Vec::new(),
        )
        .map_err(|error| error.to_string())?;
        let bash = tools
            .into_iter()
            .find(|tool| tool.name() == "bash")
            .ok_or("bash is not among this session's tools (--tools, --exclude)")?;
        let arguments = serde_json::json!({ "command": command });
        let call = ToolCall::new("shell", "bash", arguments.to_string());
        let cancel = CancellationToken::new();
        let latest = std::sync::Arc::new(std::sync::Mutex::new(None));
        let kept = std::sync::Arc::clone(&latest);
        let context =
            ToolContext::detached_with_updates(call.clone(), cancel.clone(), move |partial| {
                let text = partial.text_content();
                if let Some(line) = text.lines().rev().find(|line| !line.trim().is_empty()) {
                    let line = crate::view::shown::visible(line.trim_end()).into_owned();
                    *kept
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(line);
                }
            });
        let task = tokio::spawn(async move {
            bash.invoke(context, arguments)
                .await
                .unwrap_or_else(|error| ToolResult::error(error.to_string()))
        });
        Ok(Shell {
            call,
            started: Instant::now(),
            latest,
            cancel,
            task,
        })
    }

    /// The newest line of output it printed so far.
    pub(crate) fn latest(&self) -> Option<String> {
        self.latest
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Stops the command (its whole process group, as for any bash call).
    pub(crate) fn stop(&self) {
        self.cancel.cancel();
    }

    /// What the command in `shell` returned, once it has; never, when none runs.
    pub(crate) async fn finished(shell: &mut Option<Shell>) -> ToolResult {
        let Some(running) = shell else {
            return std::future::pending().await;
        };
        match (&mut running.task).await {
            Ok(result) => result,
            Err(error) => ToolResult::error(format!("the command's task ended: {error}")),
        }
    }
}

/// What the model is told of a command the person ran, with their next prompt.
pub(crate) fn for_the_model(command: &str, result: &ToolResult) -> String {
    let outcome = if result.is_error { " (it failed)" } else { "" };
    format!(
        "I ran this command myself{outcome}:\n$ {command}\n{}",
        result.text_content()
    )
}
