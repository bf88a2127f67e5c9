//! The hook: what an `edit`, a `write` or a captured `bash` command broke, appended to its result.

use std::os::unix::fs::OpenOptionsExt as _;
use std::path::Path;
use std::sync::PoisonError;

use futures::future::BoxFuture;
use futures::FutureExt as _;
use lsp_types::Diagnostic;
use serde_json::{json, Value};

use super::server::root_uri;
use super::{report, Checked, Diagnostics, Slot};
use crate::hook::{AfterToolCall, BeforeToolCall, Hook, HookContext};
use crate::tool::{BoxError, ToolResult};

/// What a call's result says its change broke, for a person ("2 new errors in calc.py"):
/// the `diagnostics` summary [`Diagnostics::hook`] put in its details.
///
/// ```
/// use serde_json::json;
/// let details = json!({"diagnostics": {"summary": "1 new error in calc.py"}});
/// assert_eq!(golato::diagnostics::summary(Some(&details)), Some("1 new error in calc.py"));
/// assert_eq!(golato::diagnostics::summary(None), None);
/// ```
pub fn summary(details: Option<&Value>) -> Option<&str> {
    details?.get("diagnostics")?.get("summary")?.as_str()
}

/// The tools whose changes are checked, and the argument naming the file.
pub(super) fn changed_file(ctx: &HookContext) -> Option<&str> {
    match ctx.call.name.as_str() {
        "edit" | "write" => ctx.arguments["path"].as_str(),
        _ => None,
    }
}

/// The most bytes of a file golato reads to check it.
pub(super) const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// A file's text, if it is one golato would check: a regular file (never a FIFO or a device,
/// which could block or never end) of at most 4 MiB, UTF-8. Bounded as read too: a file that
/// says it is small (`/proc`'s say 0) cannot make it read more.
pub(super) fn text_of(file: &Path) -> Option<String> {
    use std::io::Read as _;
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open(file)
        .ok()?;
    let metadata = opened.metadata().ok()?;
    if !metadata.is_file() || metadata.len() > MAX_FILE_BYTES {
        return None;
    }
    let mut bytes = Vec::new();
    opened
        .take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .ok()?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return None;
    }
    String::from_utf8(bytes).ok()
}

impl Hook for Diagnostics {
    fn before_tool_call(
        &self,
        ctx: HookContext,
    ) -> BoxFuture<'static, Result<BeforeToolCall, BoxError>> {
        if let Some(file) = changed_file(&ctx).and_then(|path| self.resolve(path)) {
            if self.serves(&file) {
                // The file as it is now, read before the call runs; checked meanwhile, so the
                // call is not held up: the after-hook waits for it within its own bound.
                let text = text_of(&file).unwrap_or_default();
                let this = self.clone();
                let wait = self.inner.config.wait + self.inner.config.start_within;
                let before = async move {
                    let deadline = tokio::time::Instant::now() + wait;
                    match this.check(&file, &text, deadline).await {
                        Checked::Published(diagnostics, _) => Some(diagnostics),
                        _ => None,
                    }
                }
                .boxed();
                let before = before.shared();
                // Started now, whether or not anyone polls it yet.
                tokio::spawn(before.clone());
                self.inner
                    .before
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert((ctx.run_id, ctx.call.id.clone()), before);
            }
        }
        async { Ok(BeforeToolCall::Run) }.boxed()
    }

    fn after_tool_call(
        &self,
        ctx: HookContext,
        result: ToolResult,
    ) -> BoxFuture<'static, Result<AfterToolCall, BoxError>> {
        let before = self
            .inner
            .before
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&(ctx.run_id, ctx.call.id.clone()));
        if ctx.call.name == "bash" && !result.is_error {
            return self.clone().after_command(result).boxed();
        }
        let Some(path) = changed_file(&ctx).map(str::to_owned) else {
            return async { Ok(AfterToolCall::Keep) }.boxed();
        };
        let this = self.clone();
        async move {
            let Some(before) = before else {
                return Ok(AfterToolCall::Keep);
            };
            if result.is_error {
                return Ok(AfterToolCall::Keep);
            }
            let Some(file) = this.resolve(&path) else {
                return Ok(AfterToolCall::Keep);
            };
            let wait = this.inner.config.wait;
            let started = tokio::time::Instant::now();
            // The first call of a language also waits for its server to start.
            let before = tokio::time::timeout(wait + this.inner.config.start_within, before)
                .await
                .unwrap_or_default();
            let deadline = tokio::time::Instant::now() + wait;
            let Some(text) = text_of(&file) else {
                return Ok(AfterToolCall::Keep);
            };
            let checked = this.check(&file, &text, deadline).await;
            let mut lines = this.take_notes();
            let mut details = None;
            match checked {
                Checked::Unserved => {}
                Checked::NotReady => lines.push(format!(
                    "Diagnostics were not ready within {} ms.",
                    wait.as_millis()
                )),
                Checked::Failed(why) => lines.push(why),
                Checked::Published(after, left_out) => {
                    let new = report::introduced(before.as_deref(), &after);
                    let there = after.len() - new.len();
                    if let Some(report) = report::report(&path, &new, there, left_out) {
                        lines.push(report.text);
                        details = Some(report.details);
                    }
                }
            }
            tracing::debug!(target: "golato::diagnostics", path, waited_ms = started.elapsed().as_millis() as u64, "checked a change");
            if lines.is_empty() {
                return Ok(AfterToolCall::Keep);
            }
            // What is not a report (a server left off, not ready in time) is a person's line
            // too: the summary says it.
            let said: Vec<&str> = lines
                .iter()
                .filter(|line| !line.starts_with("Diagnostics after this change"))
                .map(String::as_str)
                .collect();
            if !said.is_empty() {
                let details = details.get_or_insert_with(|| json!({}));
                let summary = match details["summary"].as_str() {
                    Some(summary) => format!("{summary}; {}", said.join("; ")),
                    None => said.join("; "),
                };
                details["summary"] = summary.into();
            }
            let mut result = result;
            result
                .content
                .push(crate::message::Content::text(lines.join("\n")));
            if let Some(details) = details {
                result.details = Some(match result.details.take() {
                    Some(Value::Object(mut fields)) => {
                        fields.insert("diagnostics".into(), details);
                        Value::Object(fields)
                    }
                    Some(other) => json!({"result": other, "diagnostics": details}),
                    None => json!({ "diagnostics": details }),
                });
            }
            Ok(AfterToolCall::Replace(result))
        }
        .boxed()
    }
}

/// At most this many files a command changed are checked after it.
pub(super) const MAX_COMMAND_FILES: usize = 5;

impl Diagnostics {
    /// After a `bash` command whose changes were captured: the served files it changed, each
    /// told what the command introduced. The state before is what the server last published
    /// for a file it had open, or nothing for a file the command created; a file it changed
    /// that no server had seen is left out (its old errors are not the command's).
    async fn after_command(self, result: ToolResult) -> Result<AfterToolCall, BoxError> {
        let Some(changes) = crate::builtin::captured_changes(result.details.as_ref()) else {
            return Ok(AfterToolCall::Keep);
        };
        let deadline = tokio::time::Instant::now() + self.inner.config.wait;
        let mut lines = Vec::new();
        let mut summaries = Vec::new();
        let mut files = Vec::new();
        let served = changes.into_iter().filter(|change| {
            change.after != golato_sandbox::capture::FileState::Absent
                && self.inside(&change.path).is_some()
                && self.serves(&change.path)
        });
        for change in served.take(MAX_COMMAND_FILES) {
            let before = match change.before {
                golato_sandbox::capture::FileState::Absent => Some(Vec::new()),
                _ => self.open_publication(&change.path),
            };
            let (Some(before), Some(text)) = (before, text_of(&change.path)) else {
                continue;
            };
            let shown = change
                .path
                .strip_prefix(&self.inner.config.root)
                .unwrap_or(&change.path)
                .display()
                .to_string();
            match self.check(&change.path, &text, deadline).await {
                Checked::Published(after, left_out) => {
                    let new = report::introduced(Some(&before), &after);
                    let there = after.len() - new.len();
                    if let Some(told) = report::report(&shown, &new, there, left_out) {
                        lines.push(told.text);
                        summaries.push(told.summary);
                        files.push(told.details);
                    }
                }
                Checked::NotReady => lines.push(format!(
                    "Diagnostics of {shown} were not ready within {} ms.",
                    self.inner.config.wait.as_millis()
                )),
                Checked::Failed(why) => lines.push(why),
                Checked::Unserved => {}
            }
        }
        lines.extend(self.take_notes());
        if lines.is_empty() {
            return Ok(AfterToolCall::Keep);
        }
        let mut result = result;
        result
            .content
            .push(crate::message::Content::text(lines.join("\n")));
        if !summaries.is_empty() {
            if let Some(Value::Object(fields)) = &mut result.details {
                fields.insert(
                    "diagnostics".into(),
                    json!({"summary": summaries.join("; "), "files": files}),
                );
            }
        }
        Ok(AfterToolCall::Replace(result))
    }

    /// What the running server of `file` last published for it, if it has the file open.
    fn open_publication(&self, file: &Path) -> Option<Vec<Diagnostic>> {
        let spec = self.spec_for(file)?;
        let slots = self
            .inner
            .slots
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let key = Diagnostics::slot_key(spec, &self.root_for(spec, file));
        let Some((Slot::Running(server), _)) = slots.get(&key) else {
            return None;
        };
        server.last_published(&root_uri(file))
    }
}
