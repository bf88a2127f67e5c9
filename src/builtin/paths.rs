//! Paths as the model gives them, resolved against the set's working directory.

use std::io;
use std::path::{Path, PathBuf};

/// The working directory captured by `builtin::new`, and the sandbox's rules for the file
/// tools.
#[derive(Debug)]
pub(crate) struct Workspace {
    cwd: PathBuf,
    #[cfg(target_os = "linux")]
    files: Option<crate::sandbox::FileRules>,
    /// Where text is read and written instead of the disk, if anywhere.
    pub(crate) text_files: Option<std::sync::Arc<dyn super::TextFiles>>,
    /// Rules whose `read` denials the search tools apply ([`super::Config::read_rules`]).
    read_rules: Option<std::sync::Arc<crate::policy::Rules>>,
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
        Ok(Workspace {
            cwd,
            #[cfg(target_os = "linux")]
            files: None,
            text_files: None,
            read_rules: None,
        })
    }

    /// The workspace whose search tools also leave out what `rules` keep from `read`.
    pub(crate) fn with_read_rules(
        self,
        read_rules: Option<std::sync::Arc<crate::policy::Rules>>,
    ) -> Workspace {
        Workspace { read_rules, ..self }
    }

    /// The workspace reading and writing text through `text_files` (the disk with `None`).
    pub(crate) fn with_text_files(
        self,
        text_files: Option<std::sync::Arc<dyn super::TextFiles>>,
    ) -> Workspace {
        Workspace { text_files, ..self }
    }

    /// The workspace under `sandbox`'s rules.
    #[cfg_attr(not(target_os = "linux"), allow(unused_variables))]
    pub(crate) fn confined(self, sandbox: &crate::sandbox::Prepared) -> Workspace {
        Workspace {
            #[cfg(target_os = "linux")]
            files: Some(crate::sandbox::FileRules::new(sandbox)),
            ..self
        }
    }

    /// Whether the sandbox denies `path`, or a rule keeps it from `read` (a listing leaves it
    /// out).
    pub(crate) fn denies(&self, path: &Path) -> bool {
        #[cfg(target_os = "linux")]
        if self.files.as_ref().is_some_and(|files| files.denies(path)) {
            return true;
        }
        self.read_rules.as_ref().is_some_and(|rules| {
            rules
                .decide_path("read", path, &self.cwd)
                .is_some_and(|verdict| verdict.decision > crate::policy::Decision::Allow)
        })
    }

    /// Refuses what the sandbox denies reading: `file`, opened from `shown`.
    #[cfg_attr(not(target_os = "linux"), allow(unused_variables))]
    pub(crate) fn check_read(&self, file: &std::fs::File, shown: &str) -> Result<(), String> {
        #[cfg(target_os = "linux")]
        if let Some(files) = &self.files {
            return files.check_read(file, shown);
        }
        Ok(())
    }

    /// Opens `path` to read it as a regular file; under a sandbox, refusing a way through a
    /// magic link such as `/proc/PID/fd/N` (an error of kind `InvalidInput` saying so).
    pub(crate) fn open_to_read(&self, path: &Path) -> io::Result<std::fs::File> {
        #[cfg(target_os = "linux")]
        if let Some(files) = &self.files {
            let file = files.open_for_reading(path).map_err(|error| {
                if error.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error())
                    && std::fs::symlink_metadata(path).is_ok()
                {
                    io::Error::new(
                        io::ErrorKind::InvalidInput,
                        "it leads through a /proc magic link (a process's open file) or a link loop, which the sandbox does not follow",
                    )
                } else {
                    error
                }
            })?;
            return regular(file);
        }
        open_regular(path, std::fs::OpenOptions::new().read(true), false)
    }

    /// Where a write or edit of `target` goes: `target` itself without a sandbox, else the
    /// file in its directory held open beneath a writable root (see [`crate::sandbox`]).
    #[cfg_attr(not(target_os = "linux"), allow(unused_variables))]
    pub(crate) fn destination(
        &self,
        target: &Path,
        shown: &str,
        create: bool,
    ) -> Result<Destination, String> {
        #[cfg(target_os = "linux")]
        if let Some(files) = &self.files {
            let place = files.writable_place(target, shown, create)?;
            return Ok(Destination {
                at: place.path(),
                target: target.to_owned(),
                hard_links_allowed: files.allows_hard_links(),
                held: Some(place),
            });
        }
        Ok(Destination {
            at: target.to_owned(),
            target: target.to_owned(),
            hard_links_allowed: true,
            #[cfg(target_os = "linux")]
            held: None,
        })
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

/// Where a write or edit changes a file.
#[derive(Debug)]
pub(crate) struct Destination {
    /// The path to work on: the target, or the target through its held directory.
    pub(crate) at: PathBuf,
    /// The file as the tool resolved it (for the test hooks).
    #[cfg_attr(not(feature = "fault-injection"), allow(dead_code))]
    pub(crate) target: PathBuf,
    /// Whether a file with several hard links may be changed (in place).
    pub(crate) hard_links_allowed: bool,
    /// The sandbox's handle on the directory, kept open while `at` is used.
    #[cfg(target_os = "linux")]
    held: Option<crate::sandbox::Place>,
}

impl Destination {
    /// Whether a symbolic link at the final place must be refused rather than followed (under
    /// a sandbox: it could lead anywhere).
    pub(crate) fn no_follow(&self) -> bool {
        #[cfg(target_os = "linux")]
        return self.held.is_some();
        #[cfg(not(target_os = "linux"))]
        false
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
    crate::sandbox::fold(path)
}

/// `path` as error texts show it: whole up to 2,000 characters, else cut there with its length
/// (a 10 MB path would otherwise be echoed into every result about it).
pub(super) fn shown(path: &str) -> String {
    crate::agent::validation::excerpt(path)
}

/// Why [`open_regular`] refused what it opened.
#[derive(Debug)]
pub(super) struct NotRegular {
    /// What it is instead ("a FIFO (named pipe)", …).
    pub(super) kind: &'static str,
}

impl std::fmt::Display for NotRegular {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "it is {}, not a regular file", self.kind)
    }
}

impl std::error::Error for NotRegular {}

impl NotRegular {
    /// The refusal inside `error`, if that is what it is.
    pub(super) fn in_error(error: &io::Error) -> Option<&NotRegular> {
        error.get_ref()?.downcast_ref::<NotRegular>()
    }
}

/// Opens `path` with `options` and checks that what was opened is a regular file.
///
/// A check of the path before opening is not enough: a symbolic link can be turned to a FIFO or
/// a device between the check and the open. So the open itself never blocks (`O_NONBLOCK`:
/// opening a FIFO with no writer would wait for one, for ever) and never takes a terminal as
/// controlling one (`O_NOCTTY`), and the opened file's own type decides. `O_NONBLOCK` stays on:
/// it changes nothing for a regular file, and a kernel file that waits for data (`/proc/kmsg`)
/// then says `WouldBlock` instead of blocking a thread that no cancellation reaches.
///
/// With `no_follow`, a symbolic link at the path is refused (`ELOOP`) instead of followed.
pub(super) fn open_regular(
    path: &Path,
    options: &mut std::fs::OpenOptions,
    no_follow: bool,
) -> io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut flags = rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOCTTY;
    if no_follow {
        flags |= rustix::fs::OFlags::NOFOLLOW;
    }
    regular(options.custom_flags(flags.bits() as i32).open(path)?)
}

/// `file` if it is a regular file; else an error of kind `InvalidInput` saying what it is.
fn regular(file: std::fs::File) -> io::Result<std::fs::File> {
    let file_type = file.metadata()?.file_type();
    if !file_type.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            NotRegular {
                kind: kind(&file_type),
            },
        ));
    }
    Ok(file)
}

/// The file a write or edit of `path` replaces: `path`, or the file its symbolic links lead to
/// (a missing `path` is a new file). Refused, with what it is, when that exists and is not a
/// regular file (a directory, a device, a FIFO, a socket: replacing one would turn it into a
/// plain file), and when a link leads nowhere (dangling, or a loop).
pub(super) fn replaceable(path: &Path, shown: &str) -> Result<PathBuf, String> {
    let own = match std::fs::symlink_metadata(path) {
        Ok(metadata) => metadata,
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            // A new file, unless a directory on the way is a link that leads nowhere (creating
            // the directories would then fail with a bare "File exists").
            if let Some(link) = dangling_ancestor(path) {
                let to =
                    std::fs::read_link(link).map_or_else(|_| "?".to_owned(), |to| shown_path(&to));
                return Err(format!(
                    "{shown} cannot be written: the directory {} on its way is a symbolic link to {to}, which leads nowhere; create that directory or fix the link",
                    shown_path(link),
                ));
            }
            return Ok(path.to_owned());
        }
        Err(error) if error.kind() == io::ErrorKind::NotADirectory => {
            return Err(match file_in_the_way(path) {
                Some(file) => format!(
                    "{shown} cannot be written: {} is a file, not a directory",
                    shown_path(file)
                ),
                None => format!("could not look at {shown}: {error}"),
            })
        }
        Err(error) => return Err(format!("could not look at {shown}: {error}")),
    };
    let followed = if own.file_type().is_symlink() {
        std::fs::metadata(path).map_err(|error| {
            let to = std::fs::read_link(path)
                .map_or_else(|_| "?".to_owned(), |to| shown_path(&to));
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

/// The nearest ancestor of `path` that is a symbolic link leading nowhere (dangling or a loop).
fn dangling_ancestor(path: &Path) -> Option<&Path> {
    path.ancestors().skip(1).find(|ancestor| {
        std::fs::symlink_metadata(ancestor).is_ok_and(|own| own.file_type().is_symlink())
            && std::fs::metadata(ancestor).is_err()
    })
}

/// A path of the file system as error texts show it (see [`shown`]).
pub(super) fn shown_path(path: &Path) -> String {
    shown(&path.display().to_string())
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
