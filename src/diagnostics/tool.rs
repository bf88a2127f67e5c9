//! The `diagnostics` tool: what the language servers say of a file, or of every file served so far.

use std::sync::{Arc, PoisonError};

use lsp_types::Diagnostic;

use super::hook::text_of;
use super::server::{root_uri, Server};
use super::{report, Checked, Diagnostics, Slot};
use crate::tool::{BoxError, Tool, ToolResult};

/// The `diagnostics` tool's arguments.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Arguments {
    /// The file to check (relative to the workspace); omit for every file checked so far.
    #[serde(default)]
    path: Option<String>,
    /// Also list warnings and information, not only errors.
    #[serde(default)]
    all: bool,
}

impl Diagnostics {
    /// The `diagnostics` tool: what the language servers say of a file, or of every file
    /// served so far; errors only unless asked for all.
    pub fn tool(&self) -> Tool {
        let this = self.clone();
        Tool::typed(
            "diagnostics",
            "Lists the errors the project's language servers report: for one file (path), or for every file checked so far in this session. Set all to also see warnings.",
            move |_: crate::tool::ToolContext, arguments: Arguments| {
                let this = this.clone();
                async move {
                    this.listing(arguments.path.as_deref(), arguments.all)
                        .await
                        .map(ToolResult::text)
                        .map_err(BoxError::from)
                }
            },
        )
    }

    /// What the servers report, as the `diagnostics` tool says it: of `path` (relative to the
    /// root; checked now), or of every file checked so far; errors only unless `all`.
    ///
    /// # Errors
    ///
    /// `path` is not a readable text file, or its server stopped: the reason, in words.
    pub async fn listing(&self, path: Option<&str>, all: bool) -> Result<String, String> {
        let arguments = Arguments {
            path: path.map(str::to_owned),
            all,
        };
        let keep = |d: &Diagnostic| {
            arguments.all
                || matches!(
                    d.severity,
                    None | Some(lsp_types::DiagnosticSeverity::ERROR)
                )
        };
        let mut lines = Vec::new();
        match &arguments.path {
            Some(path) => {
                let Some(file) = self.resolve(path) else {
                    return Err(format!(
                        "{path} is outside the workspace {}; name a file inside it",
                        self.inner.config.root.display()
                    ));
                };
                let Some(text) = text_of(&file) else {
                    return Err(format!("{path} is not a readable text file"));
                };
                let deadline = tokio::time::Instant::now()
                    + self.inner.config.wait
                    + self.inner.config.start_within;
                match self.check(&file, &text, deadline).await {
                    Checked::Unserved => return Ok(format!("No language server serves {path}.")),
                    Checked::NotReady => {
                        return Ok(format!(
                            "Diagnostics for {path} were not ready within {} ms.",
                            self.inner.config.wait.as_millis()
                        ))
                    }
                    Checked::Failed(why) => return Err(why),
                    Checked::Published(diagnostics, _) => lines.extend(
                        diagnostics
                            .iter()
                            .filter(|d| keep(d))
                            .map(|d| report::line(path, d)),
                    ),
                }
            }
            None => {
                let servers: Vec<Arc<Server>> = self
                    .inner
                    .slots
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .values()
                    .filter_map(|(slot, _)| match slot {
                        Slot::Running(server) => Some(Arc::clone(server)),
                        _ => None,
                    })
                    .collect();
                let root = root_uri(&self.inner.config.root);
                for server in servers {
                    for (uri, published) in server.all_published() {
                        let shown = uri
                            .strip_prefix(&root)
                            .map(|rest| rest.trim_start_matches('/').to_owned())
                            .unwrap_or(uri.clone());
                        lines.extend(
                            published
                                .diagnostics
                                .iter()
                                .filter(|d| keep(d))
                                .map(|d| report::line(&shown, d)),
                        );
                    }
                }
            }
        }
        let total = lines.len();
        lines.truncate(report::MAX_LINES * 5);
        let mut text = match total {
            0 => "No errors reported.".to_owned(),
            _ => lines.join("\n"),
        };
        if total > lines.len() {
            text.push_str(&format!("\n({} more not shown)", total - lines.len()));
        }
        Ok(text)
    }
}
