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
                .map_err(|error| write_failed(&shown, &error))
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

/// What to tell the model when writing `shown` failed.
pub(super) fn write_failed(shown: &str, error: &std::io::Error) -> String {
    match error.kind() {
        std::io::ErrorKind::PermissionDenied => format!(
            "Permission denied: cannot write {shown} (its permissions do not let this process write it); nothing was changed"
        ),
        _ => format!(
            "{}; nothing was changed",
            super::paths::failure(format_args!("could not write {shown}"), error)
        ),
    }
}

/// Replaces `path`'s content with `content`.
///
/// A new file, or an existing one with a single link, is written to a temporary file beside it
/// that takes the old file's mode, owner and group, then renamed over it: a reader sees the old
/// content or the new, never a mix, and a crash leaves one or the other. An existing file is
/// first opened for writing, so one the caller may not write is refused as a plain write would
/// be (a writable directory is not enough). Two cases are written in place instead, truncating
/// and rewriting the file itself, which a reader or a crash can catch half done: a file with
/// several hard links (a rename would leave the other links on the old content), and a file
/// whose owner or group this process cannot give the temporary file (or whose directory does not
/// let it create one), so that ownership never changes.
pub(super) fn replace_atomically(path: &Path, content: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::MetadataExt as _;
    let parent = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let existing = match std::fs::OpenOptions::new().write(true).open(path) {
        Ok(file) => {
            let metadata = file.metadata()?;
            Some((file, metadata))
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => None,
        Err(error) => return Err(error),
    };
    let Some((file, metadata)) = existing else {
        std::fs::create_dir_all(parent)?;
        return rename_into_place(parent, path, content, None);
    };
    if metadata.nlink() > 1 {
        return rewrite_in_place(file, content);
    }
    match rename_into_place(parent, path, content, Some(&metadata)) {
        Err(error) if error.kind() == std::io::ErrorKind::PermissionDenied => {
            tracing::debug!(path = %path.display(), %error, "cannot replace the file keeping its owner; rewriting it in place");
            rewrite_in_place(file, content)
        }
        other => other,
    }
}

/// Writes `content` to a temporary file in `parent` and renames it to `path`, giving it the
/// mode, owner and group of the file it replaces (if any).
fn rename_into_place(
    parent: &Path,
    path: &Path,
    content: &[u8],
    replaced: Option<&std::fs::Metadata>,
) -> std::io::Result<()> {
    use std::os::unix::fs::MetadataExt as _;
    clear_stale_temporaries(parent);
    // Created with the mode a plain create would use (0o666 less the umask); tempfile's default
    // of 0o600 would make every new file private. The name carries this process's ID, so that
    // a later write can tell a file left by a writer that died from one being written.
    let prefix = format!("{TEMPORARY_PREFIX}{}-", std::process::id());
    let mut temporary = tempfile::Builder::new()
        .prefix(&prefix)
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666))
        .tempfile_in(parent)?;
    if let Some(replaced) = replaced {
        let own = temporary.as_file().metadata()?;
        if (own.uid(), own.gid()) != (replaced.uid(), replaced.gid()) {
            // Refused (EPERM) unless this process may give the file away: the caller then
            // rewrites in place rather than change who owns the file.
            std::os::unix::fs::fchown(
                temporary.as_file(),
                Some(replaced.uid()),
                Some(replaced.gid()),
            )
            .map_err(|error| match error.raw_os_error() {
                Some(code) if code == rustix::io::Errno::PERM.raw_os_error() => {
                    std::io::Error::from(std::io::ErrorKind::PermissionDenied)
                }
                _ => error,
            })?;
        }
        // After the owner: a change of owner clears set-user-ID and set-group-ID bits.
        temporary
            .as_file()
            .set_permissions(replaced.permissions())?;
    }
    temporary.write_all(content)?;
    temporary.as_file().sync_data()?;
    temporary.persist(path).map_err(|error| error.error)?;
    Ok(())
}

/// Truncates `file` and writes `content` into it: every link to it sees the change, and its
/// mode, owner and group stay as they are.
fn rewrite_in_place(mut file: std::fs::File, content: &[u8]) -> std::io::Result<()> {
    file.set_len(0)?;
    file.write_all(content)?;
    file.sync_data()
}
