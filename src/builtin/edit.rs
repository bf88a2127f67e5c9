//! `edit`: unique replacements, all matched against the original file.

mod matching;

pub(super) use matching::{apply, Edited};

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::locks::Locks;
use super::paths::{lock_key, replaceable};
use super::write::{replace_atomically, write_failed, Fence};
use super::Workspace;
use crate::tool::{BoxError, Execution, Tool, ToolContext, ToolResult};

/// Arguments of `edit`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct EditArgs {
    /// Path of the file to edit, relative to the working directory or absolute.
    path: String,
    /// Replacements, each matched against the original file.
    edits: Vec<Replacement>,
}

/// One replacement.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Replacement {
    /// Text to find; it must occur exactly once in the file.
    #[serde(rename = "oldText")]
    old_text: String,
    /// Text to put in its place.
    #[serde(rename = "newText")]
    new_text: String,
}

pub(super) fn tool(workspace: Arc<Workspace>, lock: Locks) -> Tool {
    Tool::typed(
        "edit",
        "Edit a file by replacing exact text. Each edits[i].oldText must occur exactly once in the \
         original file (include surrounding lines to make it unique); all edits are matched \
         against the original, must not overlap, and are applied together or not at all. When \
         the exact text is absent, differences in trailing whitespace, Unicode quotes, dashes and \
         spaces are tolerated.",
        move |ctx: ToolContext, args: EditArgs| {
            let (workspace, lock) = (Arc::clone(&workspace), lock.clone());
            async move {
                let path = workspace.resolve(&args.path);
                let lease = lock.acquire(lock_key(&path), &ctx, "edit").await?;
                if let Some(text_files) = workspace.text_files.clone() {
                    let applied = edit_elsewhere(workspace, text_files, path, args).await?;
                    drop(lease);
                    return tokio::task::spawn_blocking(move || applied.report(DIFF_TIME_LIMIT))
                        .await
                        .map_err(|error| format!("edit's diff did not finish: {error}").into());
                }
                let cancel = ctx.cancellation_token().clone();
                // The lease goes with the edit to the blocking pool: if golato gives up on this
                // call (a timeout it ignores), the edit runs on there, and no later write of the
                // file may start before it ends.
                let applied = tokio::task::spawn_blocking(move || {
                    let _lease = lease;
                    edit_file(&workspace, &path, &args, &cancel)
                })
                .await
                .map_err(|error| format!("edit did not finish: {error}"))??;
                // The file is written: the diff, which can take long, no longer holds the lease.
                tokio::task::spawn_blocking(move || applied.report(DIFF_TIME_LIMIT))
                    .await
                    .map_err(|error| format!("edit's diff did not finish: {error}").into())
            }
        },
    )
    .with_execution(Execution::Sequential)
}

/// The largest file edit reads (its matching needs the whole text, several times over).
const MAX_EDIT_BYTES: u64 = 64 * 1024 * 1024;

/// The file's bytes, read no further than the limit (a file whose size says nothing, as in
/// `/proc`, cannot make it read on).
fn read_bounded(file: std::fs::File) -> std::io::Result<Vec<u8>> {
    use std::io::Read as _;
    if file.metadata()?.len() > MAX_EDIT_BYTES {
        return Err(std::io::ErrorKind::FileTooLarge.into());
    }
    let mut bytes = Vec::new();
    file.take(MAX_EDIT_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_EDIT_BYTES {
        return Err(std::io::ErrorKind::FileTooLarge.into());
    }
    Ok(bytes)
}

/// How long the diff of an edit may search for the shortest one; past it, the diff is still
/// correct but may be longer than needed (a block removed and added where fewer lines changed).
const DIFF_TIME_LIMIT: Duration = Duration::from_secs(1);

/// An edit written to its file, and what its report needs.
#[derive(Debug)]
struct Applied {
    shown: String,
    replaced: usize,
    original: String,
    edited: Edited,
}

impl Applied {
    /// The result the model gets: what changed, with a unified diff searched for at most
    /// `time_limit`.
    fn report(self, time_limit: Duration) -> ToolResult {
        let shown = &self.shown;
        let diff = similar::TextDiff::configure()
            .deadline(Instant::now() + time_limit)
            .diff_lines(&self.original, &self.edited.text)
            .unified_diff()
            .context_radius(3)
            .header(shown, shown)
            .to_string();
        ToolResult::text(format!(
            "Successfully replaced {} block(s) in {shown}.",
            self.replaced
        ))
        .with_details(json!({"diff": diff, "first_changed_line": self.edited.first_changed_line}))
    }
}

/// The file an edit changes, checked as a replacement of it would be (a regular file the
/// sandbox lets it read, in a place it may write), and opened for reading.
fn open_original(
    workspace: &Workspace,
    path: &Path,
    shown: &str,
) -> Result<(super::paths::Destination, std::fs::File), BoxError> {
    let target = replaceable(path, shown)?;
    let destination = workspace.destination(&target, shown, false)?;
    let file = super::paths::open_regular(
        &destination.at,
        std::fs::OpenOptions::new().read(true),
        destination.no_follow(),
    )
    .and_then(|file| {
        workspace
            .check_read(&file, shown)
            .map_err(std::io::Error::other)?;
        Ok(file)
    })
    .map_err(|error| read_error(shown, &error))?;
    Ok((destination, file))
}

/// Why the file to edit could not be read, and what to do.
fn read_error(shown: &str, error: &std::io::Error) -> BoxError {
    match error.kind() {
        _ if super::paths::NotRegular::in_error(error).is_some() => format!(
            "{shown} is not a regular file (it changed while edit looked at it: {error}); write and edit only replace regular files"
        ),
        std::io::ErrorKind::NotFound => format!("File not found: {shown}"),
        std::io::ErrorKind::PermissionDenied => format!("Permission denied: cannot read {shown}"),
        std::io::ErrorKind::FileTooLarge => format!(
            "{shown} is larger than {} MiB, more than edit takes; change it with bash (sed, a script) instead",
            MAX_EDIT_BYTES / (1024 * 1024)
        ),
        _ => super::paths::failure(format_args!("Could not read {shown}"), error),
    }
    .into()
}

/// An edit through the workspace's [`TextFiles`](super::TextFiles): checked on disk as any
/// edit, the text taken from there and put back there.
async fn edit_elsewhere(
    workspace: Arc<Workspace>,
    text_files: Arc<dyn super::TextFiles>,
    path: std::path::PathBuf,
    args: EditArgs,
) -> Result<Applied, BoxError> {
    let shown = super::paths::shown(&args.path);
    {
        let (workspace, path, shown) = (Arc::clone(&workspace), path.clone(), shown.clone());
        tokio::task::spawn_blocking(move || open_original(&workspace, &path, &shown).map(drop))
            .await
            .map_err(|error| format!("edit did not finish: {error}"))??;
    }
    let original = text_files
        .read(&path)
        .await
        .map_err(|why| format!("Could not read {shown}: {why}"))?;
    let (original, edited, replaced) = tokio::task::spawn_blocking(move || {
        let edits: Vec<(&str, &str)> = args
            .edits
            .iter()
            .map(|edit| (edit.old_text.as_str(), edit.new_text.as_str()))
            .collect();
        let edited = apply(&original, &edits);
        let replaced = edits.len();
        (original, edited, replaced)
    })
    .await
    .map_err(|error| format!("edit did not finish: {error}"))?;
    let edited = edited.map_err(|error| format!("{error} No change was made to {shown}."))?;
    text_files
        .write(&path, edited.text.clone())
        .await
        .map_err(|why| format!("Could not write {shown}: {why}"))?;
    Ok(Applied {
        shown,
        replaced,
        original,
        edited,
    })
}

fn edit_file(
    workspace: &Workspace,
    path: &Path,
    args: &EditArgs,
    cancel: &CancellationToken,
) -> Result<Applied, BoxError> {
    let shown = &super::paths::shown(&args.path);
    let (destination, file) = open_original(workspace, path, shown)?;
    let bytes = read_bounded(file).map_err(|error| read_error(shown, &error))?;
    let original = String::from_utf8(bytes)
        .map_err(|_| format!("{shown} is not UTF-8 text; edit only changes text files"))?;
    let edits: Vec<(&str, &str)> = args
        .edits
        .iter()
        .map(|edit| (edit.old_text.as_str(), edit.new_text.as_str()))
        .collect();
    let edited = apply(&original, &edits)
        .map_err(|error| format!("{error} No change was made to {shown}."))?;
    replace_atomically(&destination, edited.text.as_bytes(), Fence(cancel))
        .map_err(|error| write_failed(shown, &error))?;
    Ok(Applied {
        shown: shown.to_owned(),
        replaced: edits.len(),
        original,
        edited,
    })
}

#[cfg(test)]
#[path = "edit_tests.rs"]
mod tests;
