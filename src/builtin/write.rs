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
    let shown = args.path;
    let written = {
        let (path, shown) = (path.clone(), shown.clone());
        // The file-system checks block too, so they go with the write to the blocking pool.
        tokio::task::spawn_blocking(move || {
            // Through a symlink, replace the file it points to, not the link.
            let target = replaceable(&path, &shown)?;
            replace_atomically(&target, args.content.as_bytes())
                .map_err(|error| format!("could not write {}: {error}", path.display()))
        })
    };
    written
        .await
        .map_err(|error| format!("write of {} did not finish: {error}", path.display()))??;
    Ok(ToolResult::text(format!(
        "Successfully wrote {bytes} bytes to {shown}"
    )))
}

/// How the temporary files of a write begin: then the writer's process ID, `-`, a random part.
const TEMPORARY_PREFIX: &str = ".golato-write-";

/// Removes from `dir` the temporary files of writers whose process is gone (killed mid-write:
/// nothing else would ever remove them). Done once per directory per process, so a directory
/// with many files is listed once, not at every write.
fn clear_stale_temporaries(dir: &Path) {
    static CLEARED: std::sync::Mutex<Option<std::collections::HashSet<std::path::PathBuf>>> =
        std::sync::Mutex::new(None);
    {
        let mut cleared = CLEARED
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let cleared = cleared.get_or_insert_with(Default::default);
        // Bounded: past this many directories it starts over (a directory then gets listed
        // again, which is only slower).
        if cleared.len() >= 10_000 {
            cleared.clear();
        }
        if !cleared.insert(dir.to_owned()) {
            return;
        }
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|name| name.strip_prefix(TEMPORARY_PREFIX))
            .and_then(|rest| rest.split_once('-'))
            .and_then(|(pid, _)| pid.parse::<i32>().ok())
        else {
            continue;
        };
        let gone = match rustix::process::Pid::from_raw(pid) {
            Some(pid) => rustix::process::test_kill_process(pid) == Err(rustix::io::Errno::SRCH),
            None => true,
        };
        if gone {
            if let Err(error) = std::fs::remove_file(entry.path()) {
                tracing::debug!(path = %entry.path().display(), %error, "could not remove a stale temporary file");
            }
        }
    }
}

/// Writes `content` to a temporary file beside `path`, keeps the old file's permissions, then
/// renames it over `path`: a reader sees the old content or the new, never a mix.
pub(super) fn replace_atomically(path: &Path, content: &[u8]) -> std::io::Result<()> {
    let parent = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(parent)?;
    clear_stale_temporaries(parent);
    // Created with the mode a plain create would use (0o666 less the umask); tempfile's default
    // of 0o600 would make every new file private. The name carries this process's ID, so that
    // a later write can tell a file left by a writer that died from one being written.
    let prefix = format!("{TEMPORARY_PREFIX}{}-", std::process::id());
    let mut temporary = tempfile::Builder::new()
        .prefix(&prefix)
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
