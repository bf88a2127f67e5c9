//! Folders held open and changed only through their descriptors, never through a link.
//!
//! What golato changes on a model's behalf after the model has had its hands on the tree
//! (capture applying a command's changes, undo putting files back) must not be redirected by a
//! symbolic link planted on the way, nor by a name planted where golato writes a temporary
//! file. So each folder is opened from its parent's descriptor with `O_NOFOLLOW`, a file is
//! written to a fresh name made with `O_CREAT | O_EXCL` (which never follows a link either)
//! and renamed over its place with `renameat`, and a file read is checked to be a regular file
//! on its descriptor, opened without blocking (a FIFO never hangs the reader).

use std::ffi::{OsStr, OsString};
use std::io::{Read as _, Write as _};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, ResolveFlags, Stat};

/// A folder held open, and the path it was reached by (for messages: the folder stays the same
/// whatever is renamed meanwhile).
#[derive(Debug)]
pub struct Folder {
    fd: OwnedFd,
    path: PathBuf,
}

/// What a file is, as `lstat` says (a link is a link, never what it leads to).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Kind {
    /// A regular file.
    File,
    /// A folder.
    Folder,
    /// A symbolic link.
    Link,
    /// Anything else: a FIFO, a socket, a device.
    Other,
}

/// One entry of a [`Folder`], as `lstat` saw it.
#[derive(Debug, Clone, Copy)]
pub struct Entry {
    stat: Stat,
}

impl Entry {
    /// What it is.
    pub fn kind(&self) -> Kind {
        match FileType::from_raw_mode(self.stat.st_mode) {
            FileType::RegularFile => Kind::File,
            FileType::Directory => Kind::Folder,
            FileType::Symlink => Kind::Link,
            _ => Kind::Other,
        }
    }

    /// Its size in bytes.
    pub fn len(&self) -> u64 {
        u64::try_from(self.stat.st_size).unwrap_or(0)
    }

    /// Whether it is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Its permission bits (with set-user-ID, set-group-ID and sticky).
    pub fn mode(&self) -> u32 {
        self.stat.st_mode & 0o7777
    }

    /// When its inode last changed (content, name or metadata).
    pub fn changed(&self) -> std::time::SystemTime {
        std::time::UNIX_EPOCH
            + std::time::Duration::new(
                u64::try_from(self.stat.st_ctime).unwrap_or(0),
                u32::try_from(self.stat.st_ctime_nsec).unwrap_or(0),
            )
    }

    /// When its content last changed.
    pub fn modified(&self) -> std::time::SystemTime {
        std::time::UNIX_EPOCH
            + std::time::Duration::new(
                u64::try_from(self.stat.st_mtime).unwrap_or(0),
                u32::try_from(self.stat.st_mtime_nsec).unwrap_or(0),
            )
    }

    /// Whether it is how an overlay marks a deleted file: a character device 0:0.
    pub fn is_whiteout(&self) -> bool {
        FileType::from_raw_mode(self.stat.st_mode) == FileType::CharacterDevice
            && self.stat.st_rdev == 0
    }

    /// The device and inode that name it while it exists.
    pub fn identity(&self) -> (u64, u64) {
        (self.stat.st_dev, self.stat.st_ino)
    }
}

/// The flags every folder is opened with: only a folder, never through a final link.
fn folder_flags() -> OFlags {
    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC
}

impl Folder {
    /// Opens the folder at `path`, following links on the way: for a folder golato was told
    /// of (the working directory, its own data directory), not one a model could have made.
    pub fn open(path: &Path) -> std::io::Result<Folder> {
        let fd = rustix::fs::open(path, folder_flags() & !OFlags::NOFOLLOW, Mode::empty())?;
        Ok(Folder {
            fd,
            path: path.to_owned(),
        })
    }

    /// Opens `relative` beneath this folder without following any link on the way and without
    /// leaving it (`openat2` with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`). A link anywhere
    /// in it is an error (`ELOOP`).
    pub fn open_beneath(&self, relative: &Path) -> std::io::Result<Folder> {
        if relative.as_os_str().is_empty() {
            return self.try_clone();
        }
        let fd = rustix::fs::openat2(
            &self.fd,
            relative,
            folder_flags(),
            Mode::empty(),
            ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS,
        )
        .map_err(|error| self.error_at(relative, error))?;
        Ok(Folder {
            fd,
            path: self.path.join(relative),
        })
    }

    /// Like [`Folder::open_beneath`], making the folders that are missing (each made with
    /// `mkdirat` and opened without following a link, so a link planted meanwhile fails).
    pub fn open_or_make_beneath(&self, relative: &Path) -> std::io::Result<Folder> {
        let mut folder = self.try_clone()?;
        for component in relative.components() {
            let Component::Normal(name) = component else {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    format!(
                        "{} is not a plain relative path",
                        self.path.join(relative).display()
                    ),
                ));
            };
            folder = match folder.child(name) {
                Ok(child) => child,
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                    folder.make_folder(name, 0o755)?;
                    folder.child(name)?
                }
                Err(error) => return Err(error),
            };
        }
        Ok(folder)
    }

    /// Another descriptor of the same folder.
    pub fn try_clone(&self) -> std::io::Result<Folder> {
        Ok(Folder {
            fd: self.fd.try_clone()?,
            path: self.path.clone(),
        })
    }

    /// The path it was reached by.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn error_at(&self, name: impl AsRef<Path>, error: rustix::io::Errno) -> std::io::Error {
        let path = self.path.join(&name);
        let error = std::io::Error::from(error);
        let is_link = || {
            rustix::fs::statat(&self.fd, name.as_ref(), AtFlags::SYMLINK_NOFOLLOW)
                .is_ok_and(|stat| FileType::from_raw_mode(stat.st_mode) == FileType::Symlink)
        };
        let text = match error.raw_os_error() {
            Some(code)
                if code == rustix::io::Errno::LOOP.raw_os_error()
                    || (code == rustix::io::Errno::NOTDIR.raw_os_error() && is_link()) =>
            {
                format!(
                    "{}: a symbolic link is on the way (golato does not follow links here)",
                    path.display()
                )
            }
            _ => format!("{}: {error}", path.display()),
        };
        std::io::Error::new(error.kind(), text)
    }

    /// The folder `name` in this one, opened without following a link.
    pub fn child(&self, name: &OsStr) -> std::io::Result<Folder> {
        let fd = rustix::fs::openat(&self.fd, name, folder_flags(), Mode::empty())
            .map_err(|error| self.error_at(name, error))?;
        Ok(Folder {
            fd,
            path: self.path.join(name),
        })
    }

    /// This folder's parent, checked to be the folder whose identity is `expected` (a folder
    /// moved meanwhile has another parent: an error, never a walk somewhere else).
    pub fn parent(&self, expected: (u64, u64)) -> std::io::Result<Folder> {
        let fd = rustix::fs::openat(&self.fd, "..", folder_flags(), Mode::empty())?;
        let stat = rustix::fs::fstat(&fd)?;
        if (stat.st_dev, stat.st_ino) != expected {
            return Err(std::io::Error::other(format!(
                "{} was moved while golato worked in it",
                self.path.display()
            )));
        }
        let path = self.path.parent().unwrap_or(&self.path).to_owned();
        Ok(Folder { fd, path })
    }

    /// The folder itself, as `fstat` says.
    pub fn stat(&self) -> std::io::Result<Entry> {
        Ok(Entry {
            stat: rustix::fs::fstat(&self.fd)?,
        })
    }

    /// What `name` is, without following a link; `None` when there is nothing by that name.
    pub fn entry(&self, name: &OsStr) -> std::io::Result<Option<Entry>> {
        match rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => Ok(Some(Entry { stat })),
            Err(rustix::io::Errno::NOENT) => Ok(None),
            Err(error) => Err(self.error_at(name, error)),
        }
    }

    /// The names in this folder (without `.` and `..`), sorted.
    pub fn names(&self) -> std::io::Result<Vec<OsString>> {
        let mut names = Vec::new();
        for entry in rustix::fs::Dir::read_from(&self.fd)? {
            let entry = entry?;
            let name = entry.file_name().to_bytes();
            if name != b"." && name != b".." {
                names.push(OsStr::from_bytes(name).to_owned());
            }
        }
        names.sort();
        Ok(names)
    }

    /// Opens the regular file `name` for reading, without following a link and without
    /// blocking on a FIFO; anything but a regular file is an error naming what it is.
    pub fn open_file(&self, name: &OsStr) -> std::io::Result<std::fs::File> {
        let fd = rustix::fs::openat(
            &self.fd,
            name,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|error| self.error_at(name, error))?;
        let stat = rustix::fs::fstat(&fd)?;
        if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
            return Err(std::io::Error::other(format!(
                "{} is not a regular file",
                self.path.join(name).display()
            )));
        }
        // Reads of a regular file never block; the flag only kept `open` from waiting.
        rustix::fs::fcntl_setfl(&fd, OFlags::empty())?;
        Ok(std::fs::File::from(fd))
    }

    /// Reads the regular file `name` whole, refusing one larger than `limit` bytes.
    pub fn read_file(&self, name: &OsStr, limit: u64) -> std::io::Result<Vec<u8>> {
        let file = self.open_file(name)?;
        let length = file.metadata()?.len();
        if length > limit {
            return Err(std::io::Error::other(format!(
                "{} is larger than {limit} bytes",
                self.path.join(name).display()
            )));
        }
        let mut bytes = Vec::with_capacity(usize::try_from(length).unwrap_or(0));
        file.take(limit + 1).read_to_end(&mut bytes)?;
        if bytes.len() as u64 > limit {
            return Err(std::io::Error::other(format!(
                "{} grew past {limit} bytes while it was read",
                self.path.join(name).display()
            )));
        }
        Ok(bytes)
    }

    /// Where the link `name` leads.
    pub fn read_link(&self, name: &OsStr) -> std::io::Result<PathBuf> {
        let target = rustix::fs::readlinkat(&self.fd, name, Vec::new())
            .map_err(|error| self.error_at(name, error))?;
        Ok(PathBuf::from(OsStr::from_bytes(target.to_bytes())))
    }

    /// Makes the folder `name` (an error when something is there).
    pub fn make_folder(&self, name: &OsStr, mode: u32) -> std::io::Result<()> {
        rustix::fs::mkdirat(&self.fd, name, Mode::from_raw_mode(mode))
            .map_err(|error| self.error_at(name, error))
    }

    /// Sets this folder's permission bits.
    pub fn set_mode(&self, mode: u32) -> std::io::Result<()> {
        rustix::fs::fchmod(&self.fd, Mode::from_raw_mode(mode & 0o7777))?;
        Ok(())
    }

    /// Removes the file or link `name` (never what a link leads to).
    pub fn remove_file(&self, name: &OsStr) -> std::io::Result<()> {
        rustix::fs::unlinkat(&self.fd, name, AtFlags::empty())
            .map_err(|error| self.error_at(name, error))
    }

    /// Removes the empty folder `name`.
    pub fn remove_folder(&self, name: &OsStr) -> std::io::Result<()> {
        rustix::fs::unlinkat(&self.fd, name, AtFlags::REMOVEDIR)
            .map_err(|error| self.error_at(name, error))
    }

    /// Moves `from`'s entry `from_name` to `name` here (over a file or link there, never
    /// through it). Fails with `EXDEV` across file systems: see [`Folder::copy_in`].
    pub fn rename_from(
        &self,
        from: &Folder,
        from_name: &OsStr,
        name: &OsStr,
    ) -> std::io::Result<()> {
        rustix::fs::renameat(&from.fd, from_name, &self.fd, name).map_err(std::io::Error::from)
    }

    /// Writes a new file by `fill`, with permission bits `mode`, and renames it over `name`:
    /// the file is made under a fresh name with `O_CREAT | O_EXCL`, so nothing planted (a link,
    /// a FIFO) can take the write, and it is removed again on every error.
    pub fn replace_file(
        &self,
        name: &OsStr,
        mode: u32,
        fill: &mut dyn FnMut(&mut std::fs::File) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        let (temporary, fd) = self.fresh(|temporary| {
            rustix::fs::openat(
                &self.fd,
                temporary,
                OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::from_raw_mode(0o600),
            )
        })?;
        let mut file = std::fs::File::from(fd);
        let written = fill(&mut file)
            .and_then(|()| file.flush())
            .and_then(|()| {
                Ok(rustix::fs::fchmod(
                    &file,
                    Mode::from_raw_mode(mode & 0o7777),
                )?)
            })
            .and_then(|()| self.rename_from(self, &temporary, name));
        if let Err(error) = written {
            let _ = rustix::fs::unlinkat(&self.fd, &temporary, AtFlags::empty());
            return Err(std::io::Error::new(
                error.kind(),
                format!("{}: {error}", self.path.join(name).display()),
            ));
        }
        Ok(())
    }

    /// Makes a link to `target` and renames it over `name`.
    pub fn replace_with_link(&self, name: &OsStr, target: &Path) -> std::io::Result<()> {
        let (temporary, ()) =
            self.fresh(|temporary| rustix::fs::symlinkat(target, &self.fd, temporary))?;
        self.rename_from(self, &temporary, name).map_err(|error| {
            let _ = rustix::fs::unlinkat(&self.fd, &temporary, AtFlags::empty());
            std::io::Error::new(
                error.kind(),
                format!("{}: {error}", self.path.join(name).display()),
            )
        })
    }

    /// Copies the regular file `from_name` of `from` to `name` here (through a fresh file,
    /// renamed over it), with its permission bits and modification time: a move across file
    /// systems.
    pub fn copy_in(&self, from: &Folder, from_name: &OsStr, name: &OsStr) -> std::io::Result<()> {
        match from.entry(from_name)? {
            Some(entry) if entry.kind() == Kind::Link => {
                self.replace_with_link(name, &from.read_link(from_name)?)
            }
            Some(entry) if entry.kind() == Kind::File => {
                let mut source = from.open_file(from_name)?;
                let modified = entry.modified();
                self.replace_file(name, entry.mode(), &mut |file| {
                    std::io::copy(&mut source, file)?;
                    file.set_modified(modified)
                })
            }
            _ => Err(std::io::Error::other(format!(
                "{} is neither a file nor a link",
                from.path.join(from_name).display()
            ))),
        }
    }

    /// Makes something under a fresh name by `make`, retrying while the name is taken.
    fn fresh<T>(
        &self,
        mut make: impl FnMut(&OsStr) -> rustix::io::Result<T>,
    ) -> std::io::Result<(OsString, T)> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.subsec_nanos());
        for _ in 0..64 {
            let temporary = OsString::from(format!(
                ".golato-{}-{nanos:x}-{}",
                std::process::id(),
                NEXT.fetch_add(1, Ordering::Relaxed)
            ));
            match make(&temporary) {
                Ok(made) => return Ok((temporary, made)),
                Err(rustix::io::Errno::EXIST) => continue,
                Err(error) => return Err(self.error_at(&temporary, error)),
            }
        }
        Err(std::io::Error::other(format!(
            "could not find a free temporary name in {}",
            self.path.display()
        )))
    }
}

impl AsFd for Folder {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// Removes the set-user-ID and set-group-ID bits of the regular file `name` in `folder` (what a
/// copy without `cp -p` does): a sandboxed command must not leave a program that runs with
/// someone's identity.
pub fn clear_set_id(folder: &Folder, name: &OsStr) -> std::io::Result<()> {
    let Some(entry) = folder.entry(name)? else {
        return Ok(());
    };
    if entry.kind() == Kind::File && entry.mode() & 0o6000 != 0 {
        let file = folder.open_file(name)?;
        rustix::fs::fchmod(&file, Mode::from_raw_mode(entry.mode() & !0o6000))?;
    }
    Ok(())
}

/// Splits an absolute `path` into the deepest folder of `anchors` that holds it and the rest,
/// for [`Folder::open_beneath`]; `/` when none does.
pub fn split_under<'a>(path: &'a Path, anchors: &'a [&'a Path]) -> (&'a Path, &'a Path) {
    anchors
        .iter()
        .filter_map(|anchor| Some((*anchor, path.strip_prefix(anchor).ok()?)))
        .max_by_key(|(anchor, _)| anchor.as_os_str().len())
        .unwrap_or((Path::new("/"), path.strip_prefix("/").unwrap_or(path)))
}

/// Writes `bytes` whole to `file`: for [`Folder::replace_file`].
pub fn write_all(bytes: &[u8]) -> impl FnMut(&mut std::fs::File) -> std::io::Result<()> + '_ {
    move |file| file.write_all(bytes)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn a_link_on_the_way_is_never_followed() {
        let (inside, outside) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        std::os::unix::fs::symlink(outside.path(), inside.path().join("d")).unwrap();
        let root = Folder::open(inside.path()).unwrap();
        let error = root.child(OsStr::new("d")).unwrap_err();
        assert!(error.to_string().contains("symbolic link"), "{error}");
        let error = root.open_beneath(Path::new("d")).unwrap_err();
        assert!(error.to_string().contains("symbolic link"), "{error}");
        assert!(root.open_or_make_beneath(Path::new("d/e")).is_err());
        // A file replaced where a link stands replaces the link, never its target.
        std::os::unix::fs::symlink(outside.path().join("x"), inside.path().join("f")).unwrap();
        root.replace_file(OsStr::new("f"), 0o644, &mut write_all(b"new"))
            .unwrap();
        assert_eq!(std::fs::read(inside.path().join("f")).unwrap(), b"new");
        assert!(!outside.path().join("x").exists());
        // A FIFO is refused without blocking.
        rustix::fs::mknodat(&root, "fifo", FileType::Fifo, Mode::from_raw_mode(0o600), 0).unwrap();
        let error = root.read_file(OsStr::new("fifo"), 10).unwrap_err();
        assert!(error.to_string().contains("not a regular file"), "{error}");
        assert_eq!(
            root.names().unwrap(),
            vec![OsString::from("d"), "f".into(), "fifo".into()]
        );
    }

    #[test]
    fn a_planted_temporary_name_takes_no_write() {
        let (inside, outside) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let root = Folder::open(inside.path()).unwrap();
        // Whatever names are planted, a write lands only in its own place.
        for number in 0..64 {
            let _ = std::os::unix::fs::symlink(
                outside.path().join(format!("t{number}")),
                inside
                    .path()
                    .join(format!(".golato-{}-0-{number}", std::process::id())),
            );
        }
        root.replace_file(OsStr::new("a"), 0o644, &mut write_all(b"x"))
            .unwrap();
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_moved_folder_is_not_walked_out_of() {
        let (one, two) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        std::fs::create_dir(one.path().join("d")).unwrap();
        let root = Folder::open(one.path()).unwrap();
        let identity = root.stat().unwrap().identity();
        let child = root.child(OsStr::new("d")).unwrap();
        std::fs::rename(one.path().join("d"), two.path().join("d")).unwrap();
        assert!(child.parent(identity).is_err());
    }
}
