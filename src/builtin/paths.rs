//! Paths as the model gives them, resolved against the set's working directory.

use std::io;
use std::path::{Component, Path, PathBuf};

/// The working directory captured by `builtin::new`.
#[derive(Debug)]
pub(crate) struct Workspace {
    cwd: PathBuf,
}

impl Workspace {
    /// Captures `dir` (empty: the process's current directory now), made absolute.
    pub(crate) fn new(dir: &Path) -> io::Result<Workspace> {
        let current = std::env::current_dir()?;
        let cwd = if dir.as_os_str().is_empty() {
            current
        } else {
            current.join(dir)
        };
        if !cwd.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("{} is not a directory", cwd.display()),
            ));
        }
        Ok(Workspace { cwd })
    }

    /// The working directory.
    pub(crate) fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// `path` as an absolute path: relative paths join the working directory; `~` and `~/…`
    /// expand to the home directory; `..` components are kept (they stay usable).
    pub(crate) fn resolve(&self, path: &str) -> PathBuf {
        let expanded = match (path.strip_prefix('~'), std::env::var_os("HOME")) {
            (Some(rest), Some(home)) if rest.is_empty() || rest.starts_with('/') => {
                PathBuf::from(home).join(rest.trim_start_matches('/'))
            }
            _ => PathBuf::from(path),
        };
        self.cwd.join(expanded)
    }
}

/// The key under which writes to `path` are serialized: the canonical path when the file
/// exists (so symlink aliases share it), else the canonical parent joined with the file name,
/// else the path with `.` and `..` folded lexically.
pub(crate) fn lock_key(path: &Path) -> PathBuf {
    if let Ok(canonical) = path.canonicalize() {
        return canonical;
    }
    if let (Some(parent), Some(name)) = (path.parent(), path.file_name()) {
        if let Ok(parent) = parent.canonicalize() {
            return parent.join(name);
        }
    }
    let mut folded = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                folded.pop();
            }
            Component::CurDir => {}
            other => folded.push(other),
        }
    }
    folded
}

/// The file a write or edit of `path` replaces: `path`, or the file its symbolic links lead to
/// (a missing `path` is a new file). Refused, with what it is, when that exists and is not a
/// regular file (a directory, a device, a FIFO, a socket: replacing one would turn it into a
/// plain file), and when a link leads nowhere (dangling, or a loop).
pub(super) fn replaceable(path: &Path, shown: &str) -> Result<PathBuf, String> {
    let own = match std::fs::symlink_metadata(path) {
        Ok(metadata) => metadata,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(path.to_owned()),
        Err(error) if error.kind() == io::ErrorKind::NotADirectory => {
            return Err(match file_in_the_way(path) {
                Some(file) => format!(
                    "{shown} cannot be written: {} is a file, not a directory",
                    file.display()
                ),
                None => format!("could not look at {shown}: {error}"),
            })
        }
        Err(error) => return Err(format!("could not look at {shown}: {error}")),
    };
    let followed = if own.file_type().is_symlink() {
        std::fs::metadata(path).map_err(|error| {
            let to = std::fs::read_link(path)
                .map_or_else(|_| "?".to_owned(), |to| to.display().to_string());
            format!(
                "{shown} is a symbolic link to {to}, which leads to no file ({error}); write to the file itself or replace the link"
            )
        })?
    } else {
        own
    };
    if !followed.is_file() {
        return Err(format!(
            "{shown} is {}, not a regular file; write and edit only replace regular files",
            kind(&followed.file_type())
        ));
    }
    path.canonicalize()
        .map_err(|error| format!("could not resolve {shown}: {error}"))
}

/// The nearest ancestor of `path` that exists and is not a directory.
fn file_in_the_way(path: &Path) -> Option<&Path> {
    path.ancestors()
        .skip(1)
        .find(|ancestor| std::fs::metadata(ancestor).is_ok_and(|metadata| !metadata.is_dir()))
}

/// What a file that is not a regular one is, for error texts.
pub(super) fn kind(file_type: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt as _;
    if file_type.is_dir() {
        "a directory"
    } else if file_type.is_fifo() {
        "a FIFO (named pipe)"
    } else if file_type.is_char_device() {
        "a character device"
    } else if file_type.is_block_device() {
        "a block device"
    } else if file_type.is_socket() {
        "a socket"
    } else {
        "not a file"
    }
}

/// An I/O failure as a tool reports it: the operation (which names its path or process), what
/// the system said, and for a resource limit what to do about it.
pub(super) fn failure(operation: impl std::fmt::Display, error: &io::Error) -> String {
    let errno = os_error_code(error);
    let hint = if errno == Some(rustix::io::Errno::MFILE.raw_os_error())
        || errno == Some(rustix::io::Errno::NFILE.raw_os_error())
    {
        "; raise the open-file limit (ulimit -n) or run fewer calls at once"
    } else if error.kind() == io::ErrorKind::StorageFull {
        "; free some space on that file system"
    } else {
        ""
    };
    format!("{operation}: {error}{hint}")
}

/// The system's error number behind `error`, also when a library wrapped it (tempfile adds the
/// path to its errors, hiding the number).
fn os_error_code(error: &io::Error) -> Option<i32> {
    if let Some(code) = error.raw_os_error() {
        return Some(code);
    }
    let mut next: Option<&(dyn std::error::Error + 'static)> = error
        .get_ref()
        .map(|inner| inner as &(dyn std::error::Error + 'static));
    while let Some(inner) = next {
        if let Some(code) = inner
            .downcast_ref::<io::Error>()
            .and_then(io::Error::raw_os_error)
        {
            return Some(code);
        }
        next = inner.source();
    }
    // tempfile's wrapper skips the error it wraps in its `source()`, but keeps std's text of
    // it: "Too many open files (os error 24) at path …".
    let text = error.to_string();
    let (_, after) = text.split_once("(os error ")?;
    after.split_once(')')?.0.parse().ok()
}
