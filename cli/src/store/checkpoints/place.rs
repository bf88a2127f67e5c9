//! A file reached from `/` one component at a time, never through a symbolic link, and what
//! is there now: what both the recorder and undo compare against.

use std::path::{Path, PathBuf};

use super::*;

/// A file's state now, as undo compares it.
pub(super) enum Now {
    Absent,
    Link(PathBuf),
    /// A regular file: its size, its hash (unless over the limit asked for), and its bytes
    /// when asked for and within the limit.
    File {
        size: u64,
        hash: Option<String>,
        bytes: Option<Vec<u8>>,
    },
    /// Something else: what it is.
    Other(&'static str),
}

/// A file's folder, reached from `/` without following any link (a link a model planted in
/// its path is an error, never a way elsewhere), and its name there.
pub(super) struct Place {
    folder: golato::sandbox::anchored::Folder,
    name: std::ffi::OsString,
}

impl Place {
    /// The place of `path`: its folder reached from `/`, made where missing when `make` says.
    pub(super) fn reach(path: &Path, make: bool) -> std::io::Result<Place> {
        let (Some(parent), Some(name), true) =
            (path.parent(), path.file_name(), path.is_absolute())
        else {
            return Err(std::io::Error::other(format!(
                "{} is not an absolute path to a file",
                path.display()
            )));
        };
        let root = golato::sandbox::anchored::Folder::open(Path::new("/"))?;
        let beneath = parent.strip_prefix("/").unwrap_or(parent);
        let folder = match make {
            true => root.open_or_make_beneath(beneath)?,
            false => root.open_beneath(beneath)?,
        };
        Ok(Place {
            folder,
            name: name.to_owned(),
        })
    }

    /// The place of `path`, whose folder exists.
    pub(super) fn of(path: &Path) -> std::io::Result<Place> {
        Place::reach(path, false)
    }

    /// The place of `path`, its missing folders made.
    pub(super) fn made(path: &Path) -> std::io::Result<Place> {
        Place::reach(path, true)
    }

    /// What is there now; a regular file's bytes read when it is at most `read_up_to` bytes.
    pub(super) fn state(&self, read_up_to: u64) -> std::io::Result<Now> {
        use golato::sandbox::anchored::Kind;
        use std::io::Read as _;
        let Some(entry) = self.folder.entry(&self.name)? else {
            return Ok(Now::Absent);
        };
        match entry.kind() {
            Kind::Link => Ok(Now::Link(self.folder.read_link(&self.name)?)),
            Kind::File if entry.len() > MAX_KEPT => Ok(Now::File {
                size: entry.len(),
                hash: None,
                bytes: None,
            }),
            Kind::File => {
                let mut file = self.folder.open_file(&self.name)?;
                let mut hasher = sha2::Sha256::new();
                let mut bytes = Vec::new();
                let mut buffer = vec![0u8; 64 * 1024];
                let mut size = 0u64;
                loop {
                    let count = file.read(&mut buffer)?;
                    if count == 0 {
                        break;
                    }
                    size += count as u64;
                    if size > MAX_KEPT {
                        return Ok(Now::File {
                            size,
                            hash: None,
                            bytes: None,
                        });
                    }
                    hasher.update(&buffer[..count]);
                    if size <= read_up_to {
                        bytes.extend_from_slice(&buffer[..count]);
                    }
                }
                Ok(Now::File {
                    size,
                    hash: Some(hex(&hasher.finalize())),
                    bytes: (size <= read_up_to).then_some(bytes),
                })
            }
            Kind::Folder => Ok(Now::Other("a folder")),
            _ => Ok(Now::Other("a FIFO, socket or device")),
        }
    }

    /// Removes the file or link; whether there was one.
    pub(super) fn remove(&self) -> std::io::Result<bool> {
        match self.folder.remove_file(&self.name) {
            Ok(()) => Ok(true),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(error) => Err(error),
        }
    }

    /// Writes `bytes` whole through a fresh file renamed over it, keeping its mode.
    pub(super) fn write(&self, bytes: &[u8]) -> std::io::Result<()> {
        let mode = match self.folder.entry(&self.name)? {
            Some(entry) if entry.kind() == golato::sandbox::anchored::Kind::File => entry.mode(),
            _ => 0o644,
        };
        self.folder.replace_file(
            &self.name,
            mode,
            &mut golato::sandbox::anchored::write_all(bytes),
        )
    }

    /// Puts the symbolic link back, leading to `target`.
    pub(super) fn link(&self, target: &Path) -> std::io::Result<()> {
        self.folder.replace_with_link(&self.name, target)
    }
}
