//! `write`: create or overwrite a file, atomically.

use std::io::Write as _;
use std::path::Path;
use std::sync::Arc;

use super::locks::Locks;
use schemars::JsonSchema;
use serde::Deserialize;

use tokio_util::sync::CancellationToken;

use super::paths::{lock_key, open_regular, replaceable, Destination, NotRegular};
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

/// A sandboxed write found a symbolic link where the file was (put there after the path was
/// resolved): following it could lead outside the writable roots.
#[derive(Debug)]
struct BecameLink;

impl std::fmt::Display for BecameLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("it became a symbolic link while it was being written, which the sandbox does not follow")
    }
}

impl std::error::Error for BecameLink {}

/// A sandboxed write found a file with several hard links, which it refuses: another link may
/// be outside every writable root, and a write in place would change it there too.
#[derive(Debug)]
struct HardLinked {
    links: u64,
}

impl std::fmt::Display for HardLinked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "it has {} hard links, and the sandbox does not change a file that may also be linked from outside its writable places; remove the other links, or allow it (sandbox::Policy::with_hard_links, --allow-hard-links)",
            self.links
        )
    }
}

impl std::error::Error for HardLinked {}

/// Whether the call that writes is still wanted: checked last before the file changes, so a
/// call golato has given up on (timed out and abandoned, or cancelled) never lands its write
/// afterwards. The caller holds the path's lease until the write returns.
#[derive(Debug, Clone, Copy)]
pub(super) struct Fence<'a>(pub(super) &'a CancellationToken);

impl Fence<'_> {
    fn check(self) -> std::io::Result<()> {
        if self.0.is_cancelled() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::Interrupted,
                Cancelled,
            ));
        }
        Ok(())
    }
}

/// The write's call was cancelled before the file changed.
#[derive(Debug)]
struct Cancelled;

impl std::fmt::Display for Cancelled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the call was cancelled (or timed out) before the file was replaced")
    }
}

impl std::error::Error for Cancelled {}

/// The largest file rewritten in place: its old content is kept in memory to put back if the
/// rewrite fails midway.
pub(super) const MAX_IN_PLACE_BYTES: u64 = 64 * 1024 * 1024;

/// Replaces `path`'s content with `content`.
///
/// A new file, or an existing one with a single link, is written to a temporary file beside it
/// that takes the old file's mode, owner, group and extended attributes, then renamed over it:
/// a reader sees the old content or the new, never a mix, and a crash leaves one or the other.
/// An existing file is first opened for writing, so one the caller may not write is refused as
/// a plain write would be (a writable directory is not enough). Two cases are written in place
/// instead, truncating and rewriting the file itself, which a reader or a crash can catch half
/// done: a file with several hard links (a rename would leave the other links on the old
/// content), and a file whose owner, group or extended attributes this process cannot give the
/// temporary file (or whose directory does not let it create one), so that none of them
/// changes. An in-place rewrite that fails midway puts the old content back.
///
/// Under a sandbox, `destination` is the file in its directory held open beneath a writable
/// root, and a symbolic link found at the file's place is refused, not followed.
pub(super) fn replace_atomically(
    destination: &Destination,
    content: &[u8],
    fence: Fence<'_>,
) -> std::io::Result<()> {
    use std::os::unix::fs::MetadataExt as _;
    let path = destination.at.as_path();
    let no_follow = destination.no_follow();
    let parent = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    // Read too, to keep the old content for an in-place rewrite; a file this process may
    // write but not read is opened for writing only (and then only replaced by a rename).
    let opened = match open_regular(
        path,
        std::fs::OpenOptions::new().read(true).write(true),
        no_follow,
    ) {
        Err(error) if error.kind() == std::io::ErrorKind::PermissionDenied => {
            open_regular(path, std::fs::OpenOptions::new().write(true), no_follow)
        }
        other => other,
    };
    let existing = match opened {
        Ok(file) => {
            let metadata = file.metadata()?;
            Some((file, metadata))
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => None,
        Err(error)
            if no_follow
                && error.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) =>
        {
            return Err(std::io::Error::other(BecameLink));
        }
        Err(error) => return Err(error),
    };
    #[cfg(feature = "fault-injection")]
    let _paused = super::fault::arrive(&destination.target);
    let Some((file, metadata)) = existing else {
        std::fs::create_dir_all(parent)?;
        return rename_into_place(parent, path, content, None, fence);
    };
    if metadata.nlink() > 1 {
        if !destination.hard_links_allowed {
            return Err(std::io::Error::other(HardLinked {
                links: metadata.nlink(),
            }));
        }
        return rewrite_in_place(file, &metadata, content, fence);
    }
    match rename_into_place(parent, path, content, Some((&file, &metadata)), fence) {
        Err(error) if error.kind() == std::io::ErrorKind::PermissionDenied => {
            tracing::debug!(path = %path.display(), %error, "cannot replace the file keeping its owner; rewriting it in place");
            rewrite_in_place(file, &metadata, content, fence)
        }
        other => other,
    }
}

/// Writes `content` to a temporary file in `parent` and renames it to `path`, giving it the
/// mode, owner, group and extended attributes of the file it replaces (if any).
fn rename_into_place(
    parent: &Path,
    path: &Path,
    content: &[u8],
    replaced: Option<(&std::fs::File, &std::fs::Metadata)>,
    fence: Fence<'_>,
) -> std::io::Result<()> {
    use std::os::unix::fs::MetadataExt as _;
    clear_stale_temporaries(parent);
    // Created with the mode a plain create would use (0o666 less the umask); tempfile's default
    // of 0o600 would make every new file private. The name carries this machine's name and this
    // process's ID, so that a later write can tell a file left by a writer that died from one
    // being written.
    let mut temporary = tempfile::Builder::new()
        .prefix(&temporary_prefix())
        .rand_bytes(TEMPORARY_RANDOM_CHARS)
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666))
        .tempfile_in(parent)
        .map_err(|error| {
            // tempfile names its own random file; the person knows only their path, and what
            // the system said is what they can act on.
            let shown = error.to_string();
            let said = shown.split(" at path \"").next().unwrap_or_default();
            std::io::Error::new(
                error.kind(),
                format!(
                    "its directory does not take the temporary file a write goes through ({said})"
                ),
            )
        })?;
    if let Some((old, replaced)) = replaced {
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
        // ACLs and security labels live there; one that cannot be carried over makes the
        // caller rewrite in place, which keeps them all.
        copy_extended_attributes(old, temporary.as_file())?;
    }
    temporary.write_all(content)?;
    temporary.as_file().sync_data()?;
    fence.check()?;
    temporary.persist(path).map_err(|error| error.error)?;
    Ok(())
}

/// Gives `to` every extended attribute of `from` but file capabilities. An attribute refused
/// (a label this process may not set) comes back as `PermissionDenied`.
fn copy_extended_attributes(from: &std::fs::File, to: &std::fs::File) -> std::io::Result<()> {
    let size = match rustix::fs::flistxattr_query(from) {
        Ok(size) => size,
        // A file system without extended attributes has none to copy.
        Err(rustix::io::Errno::NOTSUP) => return Ok(()),
        Err(error) => return Err(error.into()),
    };
    if size == 0 {
        return Ok(());
    }
    let mut names = vec![0u8; size];
    let size = rustix::fs::flistxattr(from, &mut names[..])?;
    for name in names[..size.min(names.len())]
        .split(|byte| *byte == 0)
        // File capabilities are not carried over: the kernel drops them when a file is
        // written, and new content must not inherit the old program's privileges.
        .filter(|name| !name.is_empty() && *name != b"security.capability")
    {
        let name = std::ffi::CString::new(name).map_err(std::io::Error::other)?;
        let length = rustix::fs::fgetxattr_query(from, name.as_c_str())?;
        let mut value = vec![0u8; length];
        let length = rustix::fs::fgetxattr(from, name.as_c_str(), &mut value[..])?;
        value.truncate(length);
        rustix::fs::fsetxattr(to, name.as_c_str(), &value, rustix::fs::XattrFlags::empty())
            .map_err(|error| match error {
                rustix::io::Errno::PERM | rustix::io::Errno::ACCESS | rustix::io::Errno::NOTSUP => {
                    std::io::Error::from(std::io::ErrorKind::PermissionDenied)
                }
                other => other.into(),
            })?;
    }
    Ok(())
}

/// Truncates `file` and writes `content` into it: every link to it sees the change, and its
/// mode, owner, group and extended attributes stay as they are. The old content is read first;
/// if the rewrite fails midway (a full disk, a file-size limit) it is written back, and if even
/// that fails the error says what the file now holds and where the old content was saved.
fn rewrite_in_place(
    mut file: std::fs::File,
    metadata: &std::fs::Metadata,
    content: &[u8],
    fence: Fence<'_>,
) -> std::io::Result<()> {
    use std::io::{Read as _, Seek as _};
    if metadata.len() > MAX_IN_PLACE_BYTES {
        return Err(std::io::Error::new(
            std::io::ErrorKind::FileTooLarge,
            InPlaceTooLarge,
        ));
    }
    let mut old = Vec::new();
    (&mut file)
        .take(MAX_IN_PLACE_BYTES + 1)
        .read_to_end(&mut old)
        .map_err(|error| {
            std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                InPlaceUnreadable(error),
            )
        })?;
    if old.len() as u64 > MAX_IN_PLACE_BYTES {
        return Err(std::io::Error::new(
            std::io::ErrorKind::FileTooLarge,
            InPlaceTooLarge,
        ));
    }
    fence.check()?;
    let rewrite = |file: &mut std::fs::File, bytes: &[u8]| -> std::io::Result<()> {
        file.rewind()?;
        file.set_len(0)?;
        file.write_all(bytes)?;
        file.sync_data()
    };
    let Err(error) = rewrite(&mut file, content) else {
        return Ok(());
    };
    match rewrite(&mut file, &old) {
        Ok(()) => Err(error),
        Err(restore) => {
            let written = file.metadata().map_or(0, |metadata| metadata.len());
            let saved = save_old_content(&old);
            Err(std::io::Error::new(
                error.kind(),
                Damaged {
                    error,
                    restore,
                    written,
                    saved,
                },
            ))
        }
    }
}

/// The old content of a file whose rewrite and restore both failed, in a file of its own in
/// the temporary directory (where the file's own full disk may not be).
fn save_old_content(old: &[u8]) -> Result<std::path::PathBuf, String> {
    let mut saved = tempfile::Builder::new()
        .prefix("golato-old-content-")
        .tempfile()
        .map_err(|error| error.to_string())?;
    saved.write_all(old).map_err(|error| error.to_string())?;
    saved
        .keep()
        .map(|(_, path)| path)
        .map_err(|error| error.to_string())
}

/// A file with several links over [`MAX_IN_PLACE_BYTES`]: too large to rewrite in place safely.
#[derive(Debug)]
struct InPlaceTooLarge;

impl std::fmt::Display for InPlaceTooLarge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the file must be rewritten in place (it has several hard links, or its owner or attributes cannot be kept otherwise), and at over {} MiB its old content is too large to keep for putting back if the rewrite fails",
            MAX_IN_PLACE_BYTES / (1024 * 1024)
        )
    }
}

impl std::error::Error for InPlaceTooLarge {}

/// A file to rewrite in place whose old content this process cannot read (to put it back if
/// the rewrite failed).
#[derive(Debug)]
struct InPlaceUnreadable(std::io::Error);

impl std::fmt::Display for InPlaceUnreadable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the file must be rewritten in place (it has several hard links, or its owner or attributes cannot be kept otherwise), and its old content cannot be read to put it back if the rewrite fails ({})",
            self.0
        )
    }
}

impl std::error::Error for InPlaceUnreadable {}

/// An in-place rewrite that failed, and whose old content could not be put back either.
#[derive(Debug)]
struct Damaged {
    error: std::io::Error,
    restore: std::io::Error,
    written: u64,
    saved: Result<std::path::PathBuf, String>,
}

impl std::fmt::Display for Damaged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}; putting the old content back failed too ({}), so the file now holds {} bytes, part of the new content; ",
            self.error, self.restore, self.written
        )?;
        match &self.saved {
            Ok(path) => write!(f, "its old content was saved in {}", path.display()),
            Err(error) => write!(
                f,
                "its old content could not be saved elsewhere either ({error})"
            ),
        }
    }
}

impl std::error::Error for Damaged {}
