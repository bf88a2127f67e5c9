//! What a sandboxed command changed in the working directory, captured exactly.
//!
//! For a captured call the helper covers the working directory with an overlay in the
//! sandbox's own mount namespace: the command reads the real tree, and every file it writes,
//! creates or deletes lands in a staging area instead (the overlay's upper directory: changed
//! files whole, deletions as whiteouts, replaced directories marked opaque). When the command
//! has ended, [`Stage::apply`] carries those changes into the real tree, keeping each file as
//! it was before and as it became, so a checkpoint can put it back. A [`Stage`] is one call's.
//!
//! Not captured: what lies in [`PASSED_THROUGH`] (bound from the real tree, changed in place:
//! build output is large and git's own files are git's to undo; one the command makes is moved
//! in whole when it ends), and everything outside the working directory.

use std::ffi::OsString;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use serde::{Deserialize, Serialize};

use crate::anchored::Folder;

mod apply;
pub mod path_text;

/// Directories of the working directory that a captured command changes in place: git's
/// repository and the usual build output, bound from the real tree over the overlay.
pub const PASSED_THROUGH: [&str; 4] = [".git", "target", "node_modules", ".venv"];

/// Files larger than this are applied but not kept (a checkpoint says it could not keep them).
pub const MAX_KEPT: u64 = 64 * 1024 * 1024;

pub(crate) const UPPER: &str = "upper";
pub(crate) const WORK: &str = "work";
/// Why the helper left the command uncaptured, when it did.
const SKIPPED: &str = "uncaptured";

/// A file as a checkpoint knows it. Stored by applications (its JSON form is stable), so it
/// is matched exhaustively.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileState {
    /// There was no file.
    Absent,
    /// Its content, by the name the keeper gave it.
    Kept(String),
    /// A symbolic link, and where it led.
    Link(#[serde(with = "path_text")] PathBuf),
    /// Too large or unreadable to keep.
    Unkept,
}

/// One file a command changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Change {
    /// The file, absolute.
    #[serde(with = "path_text")]
    pub path: PathBuf,
    /// What it was before the command.
    pub before: FileState,
    /// What the command left.
    pub after: FileState,
}

impl Change {
    /// The change of `path` from `before` to `after`.
    pub fn new(path: PathBuf, before: FileState, after: FileState) -> Change {
        Change {
            path,
            before,
            after,
        }
    }
}

/// A file both the command and something else changed while the command ran: the other
/// change stays where it is, the command's version is put beside it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Conflict {
    /// The file, as the other change left it.
    #[serde(with = "path_text")]
    pub path: PathBuf,
    /// The command's version, or `None` when the command deleted it.
    #[serde(with = "path_text::optional")]
    pub commands_version: Option<PathBuf>,
}

/// What [`Stage::apply`] did.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Applied {
    /// Every file changed, in path order.
    pub changes: Vec<Change>,
    /// Files left as something else changed them during the command.
    pub conflicts: Vec<Conflict>,
    /// Why the command ran uncaptured (its changes went straight to the real tree).
    pub uncaptured: Option<String>,
    /// What could not be applied, and where it is still to be found (the staging area is
    /// kept, and applied again by the next [`Stage::leftovers`]).
    pub failures: Vec<String>,
    /// Pipes and sockets the command made, which are not copied.
    #[serde(with = "path_text::many")]
    pub left_out: Vec<PathBuf>,
    /// What the command made or changed at a protected path ([`Stage::protect`]): not applied,
    /// dropped (a `.golato/config.toml` it made would run hooks outside the sandbox later).
    #[serde(default, with = "path_text::many")]
    pub refused: Vec<PathBuf>,
}

/// Keeps a file's bytes and names them (a content hash, say): what a checkpoint restores.
pub type Keep<'a> = dyn FnMut(&[u8]) -> std::io::Result<String> + 'a;

/// One call's staging area: the overlay's upper and work directories, in a folder of its own,
/// with what it captures (`owner.json`: the working directory, when it started, the caller's
/// note) and a lock its process holds while it lives. Dropping it keeps the folder, empty and
/// still locked, for this process's next call (up to 16 of them, named `idle-…`), or removes
/// it, unless something in it could not be applied (one from [`Stage::leftovers`]: unless
/// applied). One
/// whose process died before applying it (golato killed while a command ran) is found again
/// by [`Stage::leftovers`].
#[derive(Debug)]
pub struct Stage {
    folder: PathBuf,
    owner: Owner,
    keep_folder: bool,
    /// Locked while this process holds the stage (closed, and so unlocked, when it dies);
    /// taken when the stage is kept for a later call.
    lock: Option<std::fs::File>,
}

/// What a stage captures, written beside it so another process can apply it.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Owner {
    root: PathBuf,
    /// When the command started, in nanoseconds since the Unix epoch.
    started: u128,
    note: serde_json::Value,
    /// Paths where nothing the command made is applied.
    #[serde(default)]
    protected: Vec<PathBuf>,
}

const OWNER: &str = "owner.json";
const LOCK: &str = "lock";
/// The name of a staging area its process keeps for its next call begins with this.
const IDLE: &str = "idle-";
/// Most staging areas one process keeps for its next calls.
const MAX_IDLE: usize = 16;

/// Staging areas this process used and keeps (locked, empty, renamed `idle-…`): a new inode
/// costs about 0.2 ms on ext4 here, and a stage made anew takes five (BENCHMARKS.md).
static IDLE_STAGES: Mutex<Vec<(PathBuf, std::fs::File)>> = Mutex::new(Vec::new());

/// A name no other staging area of any process has.
fn fresh_name() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(
        "{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

impl Stage {
    /// A new staging area inside `area` (created when missing) for a command in `root`, the
    /// working directory the overlay covers. `area` must not lie inside `root` and must be on
    /// a file system with user extended attributes (ext4, xfs, btrfs, tmpfs from Linux 6.6).
    /// `note` is the caller's, kept for [`Stage::leftovers`].
    pub fn new(area: &Path, root: &Path, note: serde_json::Value) -> std::io::Result<Stage> {
        let owner = Owner {
            root: root.to_owned(),
            started: 0,
            note,
            protected: Vec::new(),
        };
        if let Some(stage) = Stage::reused(area, owner.clone()) {
            return Ok(stage);
        }
        std::fs::create_dir_all(area)?;
        loop {
            let folder = area.join(fresh_name());
            match std::fs::create_dir(&folder) {
                Ok(()) => {}
                Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(error) => return Err(error),
            }
            let lock = std::fs::File::create(folder.join(LOCK))?;
            rustix::fs::flock(&lock, rustix::fs::FlockOperation::NonBlockingLockExclusive)?;
            let mut stage = Stage {
                folder,
                owner,
                keep_folder: false,
                lock: Some(lock),
            };
            std::fs::create_dir(stage.folder.join(UPPER))?;
            std::fs::create_dir(stage.folder.join(WORK))?;
            stage.start()?;
            return Ok(stage);
        }
    }

    /// A staging area in `area` this process kept from an earlier call, renamed for this one.
    fn reused(area: &Path, owner: Owner) -> Option<Stage> {
        loop {
            let (idle, lock) = {
                let mut idle = IDLE_STAGES.lock().unwrap_or_else(PoisonError::into_inner);
                let at = idle
                    .iter()
                    .position(|(folder, _)| folder.parent() == Some(area))?;
                idle.swap_remove(at)
            };
            let folder = area.join(fresh_name());
            // One that cannot be taken up again is dropped (removed, or left for recovery).
            if std::fs::rename(&idle, &folder).is_err() {
                continue;
            }
            let mut stage = Stage {
                folder,
                owner: owner.clone(),
                keep_folder: false,
                lock: Some(lock),
            };
            if stage.start().is_ok() {
                return Some(stage);
            }
        }
    }

    /// Notes the command's start now, in memory and in `owner.json` (overwritten in place: a
    /// truncated file would free its block and take a new one).
    fn start(&mut self) -> std::io::Result<()> {
        self.owner.started = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.as_nanos());
        let owner = serde_json::to_vec(&self.owner).map_err(std::io::Error::other)?;
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(self.folder.join(OWNER))?;
        file.write_all(&owner)?;
        file.set_len(owner.len() as u64)
    }

    /// The stages in `area` for commands in `root` whose process died before applying them,
    /// now held by this one. Apply each once its command's processes are gone; one dropped
    /// unapplied stays for the next.
    pub fn leftovers(area: &Path, root: &Path) -> Vec<Stage> {
        let Ok(entries) = std::fs::read_dir(area) else {
            return Vec::new();
        };
        entries
            .filter_map(|entry| {
                let entry = entry.ok()?;
                let folder = entry.path();
                if entry
                    .file_name()
                    .as_encoded_bytes()
                    .starts_with(IDLE.as_bytes())
                {
                    // Kept empty by a process for its next call: removed once it is gone.
                    if abandoned(&folder) {
                        remove(&folder);
                    }
                    return None;
                }
                let owner = match std::fs::read(folder.join(OWNER)) {
                    Ok(owner) => owner,
                    // Its process died before its command started, or an older golato could
                    // not remove it (see `open_work_directory`): nothing of a command is in it.
                    Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                        if abandoned(&folder) {
                            remove(&folder);
                        }
                        return None;
                    }
                    Err(_) => return None,
                };
                let owner: Owner = serde_json::from_slice(&owner).ok()?;
                if owner.root != root {
                    return None;
                }
                // Never created here: a stage being made has its lock before anything else.
                let lock = std::fs::File::options()
                    .write(true)
                    .open(folder.join(LOCK))
                    .ok()?;
                rustix::fs::flock(&lock, rustix::fs::FlockOperation::NonBlockingLockExclusive)
                    .ok()?;
                Some(Stage {
                    folder,
                    owner,
                    keep_folder: true,
                    lock: Some(lock),
                })
            })
            .collect()
    }

    /// The folder, for the helper's `--capture` argument.
    pub fn path(&self) -> &Path {
        &self.folder
    }

    /// The working directory the overlay covers.
    pub fn root(&self) -> &Path {
        &self.owner.root
    }

    /// The note given to [`Stage::new`].
    pub fn note(&self) -> &serde_json::Value {
        &self.owner.note
    }

    /// Keeps what the command makes or changes at `paths` (and beneath them) out of the real
    /// tree: the sandbox's protected paths, which a command sees read-only where they exist but
    /// could otherwise create (`.golato/config.toml` in a folder that had none).
    ///
    /// # Errors
    /// The stage's `owner.json` could not be written.
    pub fn protect(&mut self, paths: &[PathBuf]) -> std::io::Result<()> {
        self.owner.protected = paths.to_vec();
        self.start()
    }

    /// Carries what the command changed into the real tree (its working directory), handing
    /// each file's content before and after to `keep`. Call it once the command and everything
    /// it started have ended.
    pub fn apply(&mut self, keep: &mut Keep<'_>) -> Applied {
        let started = std::time::UNIX_EPOCH
            + std::time::Duration::from_nanos(
                u64::try_from(self.owner.started).unwrap_or(u64::MAX),
            );
        let mut applying = apply::Applying {
            started,
            stage_name: self
                .folder
                .file_name()
                .map(|name| name.to_string_lossy().into_owned())
                .unwrap_or_default(),
            keep,
            applied: Applied::default(),
            protected: &self.owner.protected,
        };
        match std::fs::read_to_string(self.folder.join(SKIPPED)) {
            Ok(reason) => applying.applied.uncaptured = Some(reason),
            Err(_) => {
                let upper = self.folder.join(UPPER);
                match (Folder::open(&upper), Folder::open(&self.owner.root)) {
                    (Ok(upper), Ok(real)) => applying.tree(upper, real),
                    (Err(error), _) | (_, Err(error)) => applying.applied.failures.push(format!(
                        "could not open {} or {}: {error}; the command's changes are in {}",
                        upper.display(),
                        self.owner.root.display(),
                        upper.display()
                    )),
                }
            }
        }
        let mut applied = applying.applied;
        applied.changes.sort_by(|a, b| a.path.cmp(&b.path));
        self.keep_folder = !applied.failures.is_empty();
        applied
    }
}

impl Drop for Stage {
    fn drop(&mut self) {
        if self.keep_folder || self.kept_idle() {
            return;
        }
        remove(&self.folder);
    }
}

/// Whether no process holds the staging folder: its lock is free, or it has no lock and has
/// not changed for a minute (a stage being made has its lock within microseconds).
fn abandoned(folder: &Path) -> bool {
    match std::fs::File::options().write(true).open(folder.join(LOCK)) {
        Ok(lock) => {
            rustix::fs::flock(&lock, rustix::fs::FlockOperation::NonBlockingLockExclusive).is_ok()
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => std::fs::metadata(folder)
            .and_then(|metadata| metadata.modified())
            .is_ok_and(|modified| {
                modified
                    .elapsed()
                    .is_ok_and(|age| age > std::time::Duration::from_secs(60))
            }),
        Err(_) => false,
    }
}

/// The overlay leaves its work directory, and what a `volatile` mount marks in it
/// (`incompat/volatile`), without permissions: given back to their owner, without which a user
/// other than root could not remove them.
fn open_work_directory(folder: &Path) {
    fn open(directory: &Path) {
        let Ok(metadata) = std::fs::symlink_metadata(directory) else {
            return;
        };
        if !metadata.is_dir() {
            return;
        }
        let mut permissions = metadata.permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o700);
        let _ = std::fs::set_permissions(directory, permissions);
        for name in names(directory) {
            open(&directory.join(name));
        }
    }
    open(&folder.join(WORK).join("work"));
}

/// Removes a staging area's folder.
fn remove(folder: &Path) {
    open_work_directory(folder);
    if let Err(error) = std::fs::remove_dir_all(folder) {
        tracing::warn!(folder = %folder.display(), %error, "a staging area was not removed");
    }
}

impl Stage {
    /// Keeps this stage for a later call of this process when it holds nothing (the command's
    /// changes all applied, or none made) and the pool has room: renamed `idle-…`, still
    /// locked, so that no other process takes it for a dead command's.
    fn kept_idle(&mut self) -> bool {
        let idle_stages = || IDLE_STAGES.lock().unwrap_or_else(PoisonError::into_inner);
        let empty = std::fs::read_dir(self.folder.join(UPPER))
            .is_ok_and(|mut entries| entries.next().is_none());
        if !empty || self.folder.join(SKIPPED).exists() || idle_stages().len() >= MAX_IDLE {
            return false;
        }
        let (Some(area), Some(name)) = (self.folder.parent(), self.folder.file_name()) else {
            return false;
        };
        let mut idle_name = OsString::from(IDLE);
        idle_name.push(name);
        let idle_folder = area.join(idle_name);
        // The file system's work is done without the pool's lock, which other calls' stages
        // wait for.
        if std::fs::rename(&self.folder, &idle_folder).is_err() {
            return false;
        }
        self.folder = idle_folder;
        // The overlay's own work directory goes: a `volatile` mount leaves a mark in it that
        // makes the kernel refuse the next mount on these directories.
        open_work_directory(&self.folder);
        let work = self.folder.join(WORK).join("work");
        if std::fs::remove_dir_all(&work).is_err() && work.exists() {
            return false;
        }
        let Some(lock) = self.lock.take() else {
            return false;
        };
        idle_stages().push((self.folder.clone(), lock));
        true
    }
}

/// Leaves why a command runs uncaptured in its staging area (the helper's side).
pub(crate) fn leave_reason(stage: &Path, reason: &str) -> std::io::Result<()> {
    std::fs::File::create(stage.join(SKIPPED))?.write_all(reason.as_bytes())
}

/// The names in `directory` (none when it cannot be read).
fn names(directory: &Path) -> Vec<OsString> {
    std::fs::read_dir(directory)
        .map(|entries| {
            entries
                .filter_map(|entry| Some(entry.ok()?.file_name()))
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn entries(area: &Path) -> Vec<String> {
        let mut names: Vec<String> = names(area)
            .into_iter()
            .map(|name| name.to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn an_empty_stage_is_kept_for_the_next_call_and_a_dead_processs_is_removed() {
        let (area, root) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let first = Stage::new(area.path(), root.path(), serde_json::json!(1)).unwrap();
        let first_path = first.path().to_owned();
        drop(first);
        let kept = entries(area.path());
        assert_eq!(kept.len(), 1, "{kept:?}");
        assert!(kept[0].starts_with(IDLE), "{kept:?}");
        // Taken up again under a new name, with this call's note and start.
        let second = Stage::new(area.path(), root.path(), serde_json::json!(2)).unwrap();
        assert_ne!(second.path(), first_path);
        assert_eq!(entries(area.path()).len(), 1);
        let owner: Owner =
            serde_json::from_slice(&std::fs::read(second.path().join(OWNER)).unwrap()).unwrap();
        assert_eq!(owner.note, serde_json::json!(2));
        assert!(owner.started > 0);
        // Another process finds nothing to apply in it while this one holds it.
        assert!(Stage::leftovers(area.path(), root.path()).is_empty());
        // One holding what a command left is not kept.
        std::fs::write(second.path().join(UPPER).join("made"), "x").unwrap();
        drop(second);
        assert!(entries(area.path()).is_empty());

        // An idle stage whose process is gone (its lock free) is removed by the next look.
        let dead = area.path().join(format!("{IDLE}1-1"));
        std::fs::create_dir_all(dead.join(UPPER)).unwrap();
        std::fs::File::create(dead.join(LOCK)).unwrap();
        assert!(Stage::leftovers(area.path(), root.path()).is_empty());
        assert!(!dead.exists());
    }

    #[test]
    fn a_folder_an_older_golato_could_not_remove_goes_once_nobody_could_be_making_it() {
        let (area, root) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        // What an unprivileged user's stage became: the overlay's mark, without permissions.
        let leaked = area.path().join("77-3");
        let mark = leaked
            .join(WORK)
            .join("work")
            .join("incompat")
            .join("volatile");
        std::fs::create_dir_all(&mark).unwrap();
        std::fs::write(mark.join("dirty"), "").unwrap();
        for directory in [mark.as_path(), mark.parent().unwrap()] {
            std::fs::set_permissions(
                directory,
                std::os::unix::fs::PermissionsExt::from_mode(0o000),
            )
            .unwrap();
        }
        // Just made: it could be a stage being made.
        assert!(Stage::leftovers(area.path(), root.path()).is_empty());
        assert!(leaked.exists());
        let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        std::fs::File::open(&leaked)
            .unwrap()
            .set_modified(hour_ago)
            .unwrap();
        assert!(Stage::leftovers(area.path(), root.path()).is_empty());
        assert!(!leaked.exists());
    }
}
