//! Replacing a file's content without losing it: a temporary file renamed over the old one (its
//! mode and extended attributes kept), or for a file that must keep its inode (hard links) the
//! content rewritten in place with the old saved first; a link that appears meanwhile, a
//! cancellation or a failure halfway each stop it with the file whole.

use std::io::Write as _;
use std::path::Path;

use tokio_util::sync::CancellationToken;

use super::super::paths::{open_regular, Destination};
use super::{clear_stale_temporaries, temporary_prefix, TEMPORARY_RANDOM_CHARS};

/// A sandboxed write found a symbolic link where the file was (put there after the path was
/// resolved): following it could lead outside the writable roots.
#[derive(Debug)]
pub(super) struct BecameLink;

impl std::fmt::Display for BecameLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("it became a symbolic link while it was being written, which the sandbox does not follow")
    }
}

impl std::error::Error for BecameLink {}

/// A sandboxed write found a file with several hard links, which it refuses: another link may
/// be outside every writable root, and a write in place would change it there too.
#[derive(Debug)]
pub(super) struct HardLinked {
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
pub(in crate::builtin) struct Fence<'a>(pub(in crate::builtin) &'a CancellationToken);

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
pub(super) struct Cancelled;

impl std::fmt::Display for Cancelled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the call was cancelled (or timed out) before the file was replaced")
    }
}

impl std::error::Error for Cancelled {}

/// The largest file rewritten in place: its old content is kept in memory to put back if the
/// rewrite fails midway.
pub(in crate::builtin) const MAX_IN_PLACE_BYTES: u64 = 64 * 1024 * 1024;

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
pub(in crate::builtin) fn replace_atomically(
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
    let _paused = super::super::fault::arrive(&destination.target);
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
pub(super) fn rename_into_place(
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
pub(super) fn copy_extended_attributes(
    from: &std::fs::File,
    to: &std::fs::File,
) -> std::io::Result<()> {
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
pub(super) fn rewrite_in_place(
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
pub(super) fn save_old_content(old: &[u8]) -> Result<std::path::PathBuf, String> {
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
pub(super) struct InPlaceTooLarge;

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
pub(super) struct InPlaceUnreadable(std::io::Error);

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
pub(super) struct Damaged {
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
