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
