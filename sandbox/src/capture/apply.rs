//! Carrying a stage's upper layer into the real tree.
//!
//! Everything in the real tree is reached from the working directory's descriptor, one folder
//! at a time, without following a link (see [`crate::anchored`]): a link a model planted in the
//! tree (or a name planted where a temporary file goes) cannot send a write or a deletion
//! outside it. The walk keeps no recursion and at most a few descriptors, whatever the depth: it
//! goes down by name and up by `..`, checked to be the folder it came from.

use std::collections::HashSet;
use std::ffi::{OsStr, OsString};
use std::io::Read as _;

use super::{Applied, Change, Conflict, FileState, Keep, MAX_KEPT, PASSED_THROUGH};
use crate::anchored::{self, Entry, Folder, Kind};

pub(super) struct Applying<'a, 'b> {
    pub(super) started: std::time::SystemTime,
    /// The stage's folder name, which names a conflicting file's version.
    pub(super) stage_name: String,
    pub(super) keep: &'a mut Keep<'b>,
    pub(super) applied: Applied,
    /// Where nothing is applied (`Stage::protect`).
    pub(super) protected: &'a [std::path::PathBuf],
}

/// One folder of the walk: the names left to apply, how to get back up, and the permission
/// bits it takes once its entries are in (a folder made `chmod 000` still gets them).
struct Level {
    pending: Vec<OsString>,
    back: Option<Back>,
}

struct Back {
    name: OsString,
    upper_parent: (u64, u64),
    real_parent: (u64, u64),
    mode: u32,
}

/// How the overlay marks a directory that replaced the real one: nothing beneath the real one
/// shows through.
fn is_opaque(folder: &Folder) -> bool {
    let mut value = [0u8; 4];
    matches!(
        rustix::fs::fgetxattr(folder, "user.overlay.opaque", &mut value),
        Ok(1) if value[0] == b'y'
    )
}

/// The names to apply, in order (popped from the end).
fn pending(folder: &Folder) -> std::io::Result<Vec<OsString>> {
    let mut names = folder.names()?;
    names.reverse();
    Ok(names)
}

impl Applying<'_, '_> {
    fn fail(&mut self, what: String) {
        tracing::warn!(%what, "a captured change was not applied");
        self.applied.failures.push(what);
    }

    /// Whether something other than the command changed `entry` since it started. A file
    /// changed just before the command started is not taken for one changed during it; the
    /// price is a window as wide as the file system's timestamp granularity (a few
    /// milliseconds, where it stamps with the kernel's coarse clock) at the very start of the
    /// command, in which another change can pass for an earlier one.
    fn changed_meanwhile(&self, entry: &Entry) -> bool {
        entry.changed() > self.started
    }

    /// Applies the upper layer `upper` to the working directory `real`.
    pub(super) fn tree(&mut self, mut upper: Folder, mut real: Folder) {
        let first = match pending(&upper) {
            Ok(names) => names,
            Err(error) => {
                return self.fail(format!(
                    "could not list {}: {error}; the command's changes are there",
                    upper.path().display()
                ))
            }
        };
        let mut levels = vec![Level {
            pending: first,
            back: None,
        }];
        while let Some(level) = levels.last_mut() {
            let Some(name) = level.pending.pop() else {
                let Some(back) = levels.pop().and_then(|level| level.back) else {
                    break;
                };
                match (
                    upper.parent(back.upper_parent),
                    real.parent(back.real_parent),
                ) {
                    (Ok(upper_parent), Ok(real_parent)) => {
                        if let Ok(done) = real_parent.child(&back.name) {
                            let _ = done.set_mode(back.mode);
                        }
                        // Emptied: the stage holds only what is left to apply.
                        let _ = upper_parent.remove_folder(&back.name);
                        (upper, real) = (upper_parent, real_parent);
                    }
                    (Err(error), _) | (_, Err(error)) => {
                        return self.fail(format!(
                            "stopped applying the command's changes: {error}; what is left of them is in {}",
                            upper.path().display()
                        ));
                    }
                }
                continue;
            };
            let at_top = levels.len() == 1;
            let Some(mode) = self.entry(&upper, &real, &name, at_top) else {
                continue;
            };
            // Into a folder: its real one is made to match, then its entries are applied.
            let entered = upper
                .stat()
                .and_then(|upper_stat| Ok((upper_stat, real.stat()?)))
                .and_then(|stats| Ok((stats, upper.child(&name)?, real.child(&name)?)))
                .and_then(|(stats, upper_child, real_child)| {
                    Ok((stats, pending(&upper_child)?, upper_child, real_child))
                });
            match entered {
                Ok(((upper_stat, real_stat), names, upper_child, real_child)) => {
                    levels.push(Level {
                        pending: names,
                        back: Some(Back {
                            name,
                            upper_parent: upper_stat.identity(),
                            real_parent: real_stat.identity(),
                            mode,
                        }),
                    });
                    (upper, real) = (upper_child, real_child);
                }
                Err(error) => self.fail(format!(
                    "could not apply the folder {}: {error}; the command's files for it are in {}",
                    real.path().join(&name).display(),
                    upper.path().join(&name).display()
                )),
            }
        }
    }

    /// Applies the entry `name` of the upper folder `upper` to `real`. A folder to go into is
    /// made to match and its permission bits returned; everything else is done here.
    fn entry(&mut self, upper: &Folder, real: &Folder, name: &OsStr, at_top: bool) -> Option<u32> {
        let entry = match upper.entry(name) {
            Ok(Some(entry)) => entry,
            Ok(None) => return None,
            Err(error) => {
                self.fail(format!("could not look at {error}"));
                return None;
            }
        };
        let path = real.path().join(name);
        if self
            .protected
            .iter()
            .any(|protected| path.starts_with(protected))
        {
            // Dropped from the stage, so that no later look applies it either.
            let dropped = upper.path().join(name);
            let _ = match entry.kind() {
                Kind::Folder => std::fs::remove_dir_all(&dropped),
                _ => std::fs::remove_file(&dropped),
            };
            self.applied.refused.push(path);
            return None;
        }
        if entry.is_whiteout() {
            self.remove(real, name);
            let _ = upper.remove_file(name);
            return None;
        }
        match entry.kind() {
            Kind::Folder
                if at_top
                    && PASSED_THROUGH.iter().any(|passed| name == *passed)
                    && matches!(real.entry(name), Ok(None))
                    && real.rename_from(upper, name, name).is_ok() =>
            {
                // A build folder the command made (`npm install` in a fresh checkout): moved
                // in whole, neither kept nor listed, as it would have been had it existed.
                None
            }
            Kind::Folder => self.enter(upper, real, name, &entry),
            Kind::File | Kind::Link => {
                self.file(upper, real, name);
                None
            }
            Kind::Other => {
                self.applied.left_out.push(real.path().join(name));
                let _ = upper.remove_file(name);
                None
            }
        }
    }

    /// Makes the real folder `name` match the upper one (replacing what is not a folder,
    /// removing what an opaque one hides); its permission bits when it can be gone into.
    fn enter(&mut self, upper: &Folder, real: &Folder, name: &OsStr, entry: &Entry) -> Option<u32> {
        // A folder the command made unreadable (`chmod 000`) is opened to be applied; the real
        // one gets its bits when its entries are in.
        if entry.mode() & 0o700 != 0o700 {
            let _ = rustix::fs::chmodat(
                upper,
                name,
                rustix::fs::Mode::from_raw_mode(entry.mode() | 0o700),
                rustix::fs::AtFlags::empty(),
            );
        }
        match real.entry(name) {
            Ok(Some(existing)) if existing.kind() == Kind::Folder => {
                let opaque = upper.child(name).map(|folder| is_opaque(&folder));
                if opaque.unwrap_or(false) {
                    // Replaced whole: what the real one holds that the new one does not was
                    // deleted.
                    let kept: HashSet<OsString> = upper
                        .child(name)
                        .and_then(|folder| folder.names())
                        .unwrap_or_default()
                        .into_iter()
                        .collect();
                    match real.child(name) {
                        Ok(folder) => {
                            for gone in folder.names().unwrap_or_default() {
                                if !kept.contains(&gone) {
                                    self.remove(&folder, &gone);
                                }
                            }
                        }
                        Err(error) => {
                            self.fail(format!("could not open {error}"));
                            return None;
                        }
                    }
                }
            }
            Ok(Some(_)) => {
                self.remove(real, name);
                if let Err(error) = real.make_folder(name, 0o700) {
                    self.fail(format!("could not create {error}"));
                    return None;
                }
            }
            Ok(None) => {
                if let Err(error) = real.make_folder(name, 0o700) {
                    self.fail(format!(
                        "could not create {error}; the command's files for it are in {}",
                        upper.path().join(name).display()
                    ));
                    return None;
                }
            }
            Err(error) => {
                self.fail(format!("could not look at {error}"));
                return None;
            }
        }
        Some(entry.mode() & 0o1777)
    }

    /// What `name` in `folder` (whose `lstat` is `entry`, `None` when it does not exist) is
    /// now, its content kept.
    fn state(&mut self, folder: &Folder, name: &OsStr, entry: Option<&Entry>) -> FileState {
        let Some(entry) = entry else {
            return FileState::Absent;
        };
        match entry.kind() {
            Kind::Link => folder
                .read_link(name)
                .map_or(FileState::Unkept, FileState::Link),
            Kind::File if entry.len() <= MAX_KEPT => {
                match folder
                    .read_file(name, MAX_KEPT)
                    .and_then(|bytes| (self.keep)(&bytes))
                {
                    Ok(kept) => FileState::Kept(kept),
                    Err(error) => {
                        tracing::warn!(%error, "a file's copy was not kept");
                        FileState::Unkept
                    }
                }
            }
            _ => FileState::Unkept,
        }
    }

    /// A file or link of the upper layer, moved over the real one.
    fn file(&mut self, upper: &Folder, real: &Folder, name: &OsStr) {
        let path = real.path().join(name);
        let existing = match real.entry(name) {
            Ok(existing) => existing,
            Err(error) => return self.fail(format!("could not look at {error}")),
        };
        if let Some(existing) = &existing {
            if existing.kind() == Kind::Folder {
                self.remove(real, name);
            } else if self.changed_meanwhile(existing) {
                let beside = self.beside(name);
                return match move_over(upper, name, real, &beside) {
                    Ok(()) => self.applied.conflicts.push(Conflict {
                        path,
                        commands_version: Some(real.path().join(beside)),
                    }),
                    Err(error) => self.fail(format!(
                        "{} changed while the command ran, and the command's version could not be put beside it ({error}); it is in {}",
                        path.display(),
                        upper.path().join(name).display()
                    )),
                };
            }
        }
        let existing = existing.filter(|existing| existing.kind() != Kind::Folder);
        let made = match upper.entry(name) {
            Ok(made) => made,
            Err(error) => return self.fail(format!("could not look at {error}")),
        };
        // Copied up without a new content (`touch`, `chmod`): applied, but no change to keep.
        let unchanged = match (&existing, &made) {
            (Some(existing), Some(made))
                if existing.kind() == Kind::File && made.kind() == Kind::File =>
            {
                existing.len() == made.len() && same_bytes(real, upper, name)
            }
            _ => false,
        };
        let (before, after) = match unchanged {
            true => (FileState::Absent, FileState::Absent),
            false => (
                self.state(real, name, existing.as_ref()),
                self.state(upper, name, made.as_ref()),
            ),
        };
        if let Err(error) = anchored::clear_set_id(upper, name) {
            tracing::warn!(%error, "set-user-ID bits not cleared");
        }
        if let Err(error) = move_over(upper, name, real, name) {
            return self.fail(format!(
                "could not apply the command's {} ({error}); its version is in {}",
                path.display(),
                upper.path().join(name).display()
            ));
        }
        if !unchanged {
            self.applied.changes.push(Change {
                path,
                before,
                after,
            });
        }
    }

    /// Where the command's version of a conflicting file goes: beside it, named for the stage.
    fn beside(&self, name: &OsStr) -> OsString {
        let mut beside = name.to_owned();
        beside.push(format!(".golato-bash-{}", self.stage_name));
        beside
    }

    /// Deletes `name` from the real folder `folder` (a whole folder, file by file), keeping
    /// each file. Walks down by name and up by `..` like [`Applying::tree`].
    fn remove(&mut self, folder: &Folder, name: &OsStr) {
        let entry = match folder.entry(name) {
            Ok(Some(entry)) => entry,
            Ok(None) => return,
            Err(error) => return self.fail(format!("could not look at {error}")),
        };
        if entry.kind() != Kind::Folder {
            return self.remove_one(folder, name, &entry);
        }
        let opened = folder.stat().and_then(|top| {
            let current = folder.child(name)?;
            Ok((top, pending(&current)?, current))
        });
        let (top, first, mut current) = match opened {
            Ok(opened) => opened,
            Err(error) => {
                return self.fail(format!(
                    "the command deleted the folder {}, which could not be opened: {error}",
                    folder.path().join(name).display()
                ))
            }
        };
        // Each level: the names left, its own name and its parent's identity.
        let mut levels = vec![(first, name.to_owned(), top.identity())];
        while let Some((names, _, _)) = levels.last_mut() {
            if let Some(child) = names.pop() {
                match current.entry(&child) {
                    Ok(Some(entry)) if entry.kind() == Kind::Folder => {
                        let deeper = current.stat().and_then(|here| {
                            let next = current.child(&child)?;
                            Ok((here, pending(&next)?, next))
                        });
                        match deeper {
                            Ok((here, names, next)) => {
                                levels.push((names, child, here.identity()));
                                current = next;
                            }
                            Err(error) => self.fail(format!(
                                "the command deleted the folder {}, which could not be opened: {error}",
                                current.path().join(&child).display()
                            )),
                        }
                    }
                    Ok(Some(entry)) => self.remove_one(&current, &child, &entry),
                    Ok(None) => {}
                    Err(error) => self.fail(format!("could not look at {error}")),
                }
                continue;
            }
            let Some((_, own, parent)) = levels.pop() else {
                break;
            };
            let parent = match current.parent(parent) {
                Ok(parent) => parent,
                Err(error) => {
                    return self.fail(format!(
                        "stopped deleting what the command deleted: {error}"
                    ))
                }
            };
            match parent.remove_folder(&own) {
                // What stays in it was changed by something else meanwhile (a conflict, said
                // so) or made since: the folder stays with it.
                Ok(()) => {}
                Err(error) if error.kind() == std::io::ErrorKind::DirectoryNotEmpty => {}
                Err(error) => self.fail(format!(
                    "the command deleted the folder, which could not be removed: {error}"
                )),
            }
            current = parent;
        }
    }

    /// Deletes the file or link `name` of `folder`, kept, unless something else changed it
    /// while the command ran.
    fn remove_one(&mut self, folder: &Folder, name: &OsStr, entry: &Entry) {
        let path = folder.path().join(name);
        if self.changed_meanwhile(entry) {
            self.applied.conflicts.push(Conflict {
                path,
                commands_version: None,
            });
            return;
        }
        let before = self.state(folder, name, Some(entry));
        match folder.remove_file(name) {
            Ok(()) => self.applied.changes.push(Change {
                path,
                before,
                after: FileState::Absent,
            }),
            Err(error) => self.fail(format!(
                "the command deleted a file, which could not be removed: {error}"
            )),
        }
    }
}

/// Whether `name` holds the same bytes in both folders (read in pieces: either may be large).
fn same_bytes(real: &Folder, upper: &Folder, name: &OsStr) -> bool {
    let (Ok(mut a), Ok(mut b)) = (real.open_file(name), upper.open_file(name)) else {
        return false;
    };
    let (mut left, mut right) = (vec![0u8; 64 * 1024], vec![0u8; 64 * 1024]);
    loop {
        let Ok(count) = a.read(&mut left) else {
            return false;
        };
        if count == 0 {
            return b.read(&mut right).is_ok_and(|more| more == 0);
        }
        if b.read_exact(&mut right[..count]).is_err() || left[..count] != right[..count] {
            return false;
        }
    }
}

/// Moves `from`'s `name` to `to`'s `to_name` (over what is there, never through it), copying
/// across file systems through a fresh file.
fn move_over(from: &Folder, name: &OsStr, to: &Folder, to_name: &OsStr) -> std::io::Result<()> {
    match to.rename_from(from, name, to_name) {
        Err(error) if error.raw_os_error() == Some(rustix::io::Errno::XDEV.raw_os_error()) => {}
        other => return other,
    }
    to.copy_in(from, name, to_name)?;
    let _ = from.remove_file(name);
    Ok(())
}
