//! `write`: create or overwrite a file, atomically.

mod replace;

pub(super) use replace::{replace_atomically, Fence};

use std::path::Path;
use std::sync::Arc;

use replace::{BecameLink, Cancelled, Damaged, HardLinked, InPlaceUnreadable};
use schemars::JsonSchema;
use serde::Deserialize;

use super::locks::Locks;
use super::paths::{lock_key, replaceable, NotRegular};
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

pub(super) fn tool(workspace: Arc<Workspace>, lock: Locks) -> Tool {
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
    workspace: &Arc<Workspace>,
    lock: &Locks,
    ctx: ToolContext,
    args: WriteArgs,
) -> Result<ToolResult, BoxError> {
    let path = workspace.resolve(&args.path);
    let shown = super::paths::shown(&args.path);
    let lease = lock.acquire(lock_key(&path), &ctx, "write").await?;
    let bytes = args.content.len();
    if let Some(text_files) = workspace.text_files.clone() {
        // Checked as a write to disk would be, then handed over (the lease held throughout).
        let checked = {
            let (workspace, path, shown) = (Arc::clone(workspace), path.clone(), shown.clone());
            tokio::task::spawn_blocking(move || -> Result<(), BoxError> {
                let target = replaceable(&path, &shown)?;
                workspace.destination(&target, &shown, true)?;
                Ok(())
            })
        };
        checked
            .await
            .map_err(|error| format!("write of {shown} did not finish: {error}"))??;
        text_files
            .write(&path, args.content)
            .await
            .map_err(|why| format!("Could not write {shown}: {why}"))?;
        drop(lease);
        return Ok(ToolResult::text(format!(
            "Successfully wrote {bytes} bytes to {shown}"
        )));
    }
    let written = {
        let shown = shown.clone();
        let cancel = ctx.cancellation_token().clone();
        let workspace = Arc::clone(workspace);
        // The file-system checks block too, so they go with the write to the blocking pool.
        // So does the lease: if golato gives up on this call (a timeout it ignores), the write
        // runs on there, and no later write of the file may start before it ends.
        tokio::task::spawn_blocking(move || {
            let _lease = lease;
            // Through a symlink, replace the file it points to, not the link.
            let target = replaceable(&path, &shown)?;
            let destination = workspace.destination(&target, &shown, true)?;
            replace_atomically(&destination, args.content.as_bytes(), Fence(&cancel))
                .map_err(|error| write_failed(&shown, &error))
        })
    };
    written
        .await
        .map_err(|error| format!("write of {shown} did not finish: {error}"))??;
    Ok(ToolResult::text(format!(
        "Successfully wrote {bytes} bytes to {shown}"
    )))
}

/// How the temporary files of a write begin: then this machine's name, `-`, the writer's
/// process ID, `-`, [`TEMPORARY_RANDOM_CHARS`] random letters and digits.
const TEMPORARY_PREFIX: &str = ".golato-write-";
const TEMPORARY_RANDOM_CHARS: usize = 8;

/// This machine's name as a temporary file's name carries it: letters, digits, `.` and `_`
/// only (so it cannot hold the `-` that ends it), at most 64 of them.
fn machine_tag() -> &'static str {
    static TAG: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TAG.get_or_init(|| {
        let uname = rustix::system::uname();
        let tag: String = uname
            .nodename()
            .to_string_lossy()
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '.' {
                    c
                } else {
                    '_'
                }
            })
            .take(64)
            .collect();
        if tag.is_empty() {
            "localhost".to_owned()
        } else {
            tag
        }
    })
}

fn temporary_prefix() -> String {
    format!(
        "{TEMPORARY_PREFIX}{}-{}-",
        machine_tag(),
        std::process::id()
    )
}

/// Removes from `dir` the temporary files of writers whose process is gone (killed mid-write:
/// nothing else would ever remove them). Done once per directory per process, so a directory
/// with many files is listed once, not at every write. Only a file that is surely one: named
/// exactly as this machine's writers name them, a regular file owned by this user, whose writer
/// is not running here; a file of another machine sharing the directory, or a look-alike name,
/// is left alone.
fn clear_stale_temporaries(dir: &Path) {
    use std::os::unix::fs::MetadataExt as _;
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
    let ours = format!("{TEMPORARY_PREFIX}{}-", machine_tag());
    let uid = rustix::process::getuid().as_raw();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|name| name.strip_prefix(ours.as_str()))
            .and_then(|rest| rest.split_once('-'))
            .filter(|(_, random)| {
                random.len() == TEMPORARY_RANDOM_CHARS
                    && random.bytes().all(|byte| byte.is_ascii_alphanumeric())
            })
            .and_then(|(pid, _)| pid.parse::<i32>().ok())
        else {
            continue;
        };
        let Ok(metadata) = entry.metadata() else {
            continue;
        };
        if !metadata.is_file() || metadata.uid() != uid {
            continue;
        }
        let gone = match rustix::process::Pid::from_raw(pid) {
            Some(pid) => rustix::process::test_kill_process(pid) == Err(rustix::io::Errno::SRCH),
            None => false,
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
    if let Some(damaged) = error
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<Damaged>())
    {
        return format!("could not write {shown}: {damaged}");
    }
    if error
        .get_ref()
        .is_some_and(|inner| inner.is::<BecameLink>())
    {
        return format!("could not write {shown}: {BecameLink}; nothing was changed");
    }
    if let Some(linked) = error
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<HardLinked>())
    {
        return format!("{shown} cannot be written: {linked}; nothing was changed");
    }
    if let Some(not_regular) = NotRegular::in_error(error) {
        return format!(
            "{shown} is {}, not a regular file; write and edit only replace regular files; nothing was changed",
            not_regular.kind
        );
    }
    if let Some(unreadable) = error
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<InPlaceUnreadable>())
    {
        return format!("could not write {shown}: {unreadable}; nothing was changed");
    }
    match error.kind() {
        std::io::ErrorKind::PermissionDenied => format!(
            "Permission denied: cannot write {shown} (its permissions do not let this process write it); nothing was changed"
        ),
        std::io::ErrorKind::Interrupted if error.get_ref().is_some_and(|inner| inner.is::<Cancelled>()) => {
            format!("{shown} was not written: {error}; nothing was changed")
        }
        _ => format!(
            "{}; nothing was changed",
            super::paths::failure(format_args!("could not write {shown}"), error)
        ),
    }
}
