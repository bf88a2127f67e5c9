//! `write`: create or overwrite a file, atomically.

use std::io::Write as _;
use std::path::Path;
use std::sync::Arc;

use golato_actors::path_lock::PathLock;
use schemars::JsonSchema;
use serde::Deserialize;

use super::paths::{lock_key, replaceable};
use super::Workspace;
use crate::tool::{BoxError, Execution, Tool, ToolContext, ToolResult};

/// Arguments of `write`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct WriteArgs {
    /// Path of the file to write, relative to the working directory or absolute.
    path: String,
    /// The complete new content of the file, written verbatim.
    content: String,
}

pub(super) fn tool(workspace: Arc<Workspace>, lock: PathLock) -> Tool {
    Tool::typed(
        "write",
        "Write content to a file. Creates the file if it does not exist, overwrites it if it does, \
         and creates missing parent directories. Use it for new files or complete rewrites; use \
         edit for changes to part of a file.",
        move |ctx: ToolContext, args: WriteArgs| {
            let (workspace, lock) = (Arc::clone(&workspace), lock.clone());
            async move { write(&workspace, &lock, ctx, args).await }
        },
    )
    .with_execution(Execution::Sequential)
}

async fn write(
    workspace: &Workspace,
    lock: &PathLock,
    ctx: ToolContext,
    args: WriteArgs,
) -> Result<ToolResult, BoxError> {
    let path = workspace.resolve(&args.path);
    let _lease = tokio::select! {
        lease = lock.acquire(lock_key(&path)) => lease?,
        () = ctx.cancelled() => return Err("write was cancelled before it started".into()),
    };
    let bytes = args.content.len();
    // Through a symlink, replace the file it points to, not the link.
    let target = replaceable(&path, &args.path)?;
    tokio::task::spawn_blocking(move || replace_atomically(&target, args.content.as_bytes()))
        .await
        .map_err(|error| format!("write of {} did not finish: {error}", path.display()))?
        .map_err(|error| format!("could not write {}: {error}", path.display()))?;
    Ok(ToolResult::text(format!(
        "Successfully wrote {bytes} bytes to {}",
        args.path
    )))
}

/// Writes `content` to a temporary file beside `path`, keeps the old file's permissions, then
/// renames it over `path`: a reader sees the old content or the new, never a mix.
pub(super) fn replace_atomically(path: &Path, content: &[u8]) -> std::io::Result<()> {
    let parent = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(parent)?;
    // Created with the mode a plain create would use (0o666 less the umask); tempfile's default
    // of 0o600 would make every new file private.
    let mut temporary = tempfile::Builder::new()
        .prefix(".golato-write-")
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666))
        .tempfile_in(parent)?;
    temporary.write_all(content)?;
    temporary.as_file().sync_data()?;
    if let Ok(existing) = std::fs::metadata(path) {
        temporary
            .as_file()
            .set_permissions(existing.permissions())?;
    }
    temporary.persist(path).map_err(|error| error.error)?;
    Ok(())
}
