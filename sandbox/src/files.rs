//! The sandbox in golato's own process, for `read`, `write` and `edit`.
//!
//! A path is checked where it ends up, with no window between the check and the use: `read`
//! checks the file it opened (by its descriptor), `write` and `edit` open the directory they
//! change beneath a writable root with `openat2` and then work through that handle.

use std::ffi::OsString;
use std::os::fd::{AsRawFd as _, OwnedFd};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use rustix::fs::{Mode as FileMode, OFlags, ResolveFlags};

use super::prepare::Prepared;
use super::Mode;

/// What the file tools may touch.
#[derive(Debug, Clone)]
pub struct FileRules {
    mode: Mode,
    /// Each writable root, and its directory held open since the policy was resolved.
    writable: Vec<(PathBuf, Arc<OwnedFd>)>,
    denied: Vec<PathBuf>,
    protected: Vec<PathBuf>,
    allow_hard_links: bool,
}

/// A place a write may change: its directory, held open, and the file's name in it.
#[derive(Debug)]
pub struct Place {
    directory: OwnedFd,
    name: OsString,
}

impl Place {
    /// The held directory as a path (`/proc/self/fd/N`): everything reached through it stays
    /// in that directory, whatever is renamed or linked on the way meanwhile.
    pub fn directory(&self) -> PathBuf {
        PathBuf::from(format!("/proc/self/fd/{}", self.directory.as_raw_fd()))
    }

    /// The file in the held directory.
    pub fn path(&self) -> PathBuf {
        self.directory().join(&self.name)
    }
}

impl FileRules {
    /// The file tools' rules under `prepared`.
    pub fn new(prepared: &Prepared) -> FileRules {
        FileRules {
            mode: prepared.mode,
            writable: prepared.roots.clone(),
            denied: prepared.spec.denied.clone(),
            protected: prepared.spec.protected.clone(),
            allow_hard_links: prepared.allow_hard_links,
        }
    }

    /// Whether a write may change a file with several hard links.
    pub fn allows_hard_links(&self) -> bool {
        self.allow_hard_links
    }

    /// Opens `path` for reading as the sandbox allows: no magic link on the way (a
    /// `/proc/PID/fd/N` leads to whatever another process holds, deleted files too).
    pub fn open_for_reading(&self, path: &Path) -> std::io::Result<std::fs::File> {
        let fd = rustix::fs::openat2(
            rustix::fs::CWD,
            path,
            OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NONBLOCK | OFlags::NOCTTY,
            FileMode::empty(),
            ResolveFlags::NO_MAGICLINKS,
        )?;
        Ok(std::fs::File::from(fd))
    }

    /// Refuses `file` (opened from what the model called `shown`) if it lies under a denied
    /// path, or in another process's part of `/proc` (or golato's own: its environment holds
    /// the provider's key), which `bash` in its own PID namespace cannot see either.
    pub fn check_read(&self, file: &std::fs::File, shown: &str) -> Result<(), String> {
        let real =
            std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())).map_err(|error| {
                format!(
                    "could not tell where {shown} is, for the sandbox: {error}; is /proc mounted?"
                )
            })?;
        if is_process_file(&real) {
            return Err(format!(
                "{shown} is a process's file in /proc ({}), which the sandbox keeps out of reach; read your own command's output through bash instead",
                real.display()
            ));
        }
        match self.denied.iter().find(|denied| real.starts_with(denied)) {
            Some(denied) => Err(denied_text(shown, denied)),
            None => Ok(()),
        }
    }

    /// Whether `path` (as found walking a folder, links not followed) lies in a denied path or
    /// is a process's file: what the search tools leave out of listings too, as the sandbox
    /// hides it from commands.
    pub fn denies(&self, path: &Path) -> bool {
        is_process_file(path) || self.denied.iter().any(|denied| path.starts_with(denied))
    }

    /// The place of `target` (absolute; its last component is the file), opened beneath the
    /// writable root it is in, its missing directories created when `create` says so.
    pub fn writable_place(
        &self,
        target: &Path,
        shown: &str,
        create: bool,
    ) -> Result<Place, String> {
        if self.mode == Mode::ReadOnly {
            return Err(format!(
                "{shown} cannot be changed: the sandbox is read-only (sandbox mode read-only); ask for workspace-write to change files"
            ));
        }
        let (resolved, name) =
            resolve_lexically(target).ok_or_else(|| format!("{shown} names no file to write"))?;
        if let Some(denied) = self
            .denied
            .iter()
            .find(|denied| resolved.join(&name).starts_with(denied))
        {
            return Err(denied_text(shown, denied));
        }
        if let Some(protected) = self.protected_at(&resolved.join(&name)) {
            return Err(protected_text(shown, protected));
        }
        let Some((root, held)) = self
            .writable
            .iter()
            .filter(|(root, _)| resolved.starts_with(root))
            .max_by_key(|(root, _)| root.as_os_str().len())
        else {
            return Err(format!(
                "{shown} is outside the sandbox's writable places ({}); write inside them, or add a writable root (--writable DIR, sandbox::Policy::writable_roots)",
                self.writable
                    .iter()
                    .map(|(root, _)| root.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        };
        let outside = |error: rustix::io::Errno| {
            match error {
            rustix::io::Errno::XDEV | rustix::io::Errno::LOOP => format!(
                "{shown} leads outside the sandbox's writable root {} (through a symbolic link or ..); write to a path inside it",
                root.display()
            ),
            other => format!("could not open the directory of {shown}: {other}"),
        }
        };
        // From the root's own directory, held since the policy was resolved: a parent of the
        // root swapped for a link meanwhile changes nothing.
        let mut directory = rustix::fs::openat2(
            held.as_ref(),
            ".",
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            FileMode::empty(),
            ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS,
        )
        .map_err(outside)?;
        let relative = resolved.strip_prefix(root).unwrap_or(Path::new(""));
        for component in relative.components() {
            let Component::Normal(part) = component else {
                continue;
            };
            let beneath = |at: &OwnedFd| {
                rustix::fs::openat2(
                    at,
                    part,
                    OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
                    FileMode::empty(),
                    ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS,
                )
            };
            directory = match beneath(&directory) {
                Ok(next) => next,
                Err(rustix::io::Errno::NOENT) if create => {
                    match rustix::fs::mkdirat(&directory, part, FileMode::from_bits_truncate(0o777))
                    {
                        Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                        Err(error) => {
                            return Err(format!(
                                "could not create the directory {} for {shown}: {error}",
                                Path::new(part).display()
                            ))
                        }
                    }
                    beneath(&directory).map_err(outside)?
                }
                Err(error) => return Err(outside(error)),
            };
        }
        // Where the walk really ended (a link inside the root may lead elsewhere in it): the
        // denials and protections hold there too.
        let real = std::fs::read_link(format!("/proc/self/fd/{}", directory.as_raw_fd()))
            .map_err(|error| format!("could not tell where {shown} is, for the sandbox: {error}"))?
            .join(&name);
        if let Some(denied) = self.denied.iter().find(|denied| real.starts_with(denied)) {
            return Err(denied_text(shown, denied));
        }
        if let Some(protected) = self.protected_at(&real) {
            return Err(protected_text(shown, protected));
        }
        Ok(Place { directory, name })
    }

    fn protected_at(&self, path: &Path) -> Option<&Path> {
        self.protected
            .iter()
            .find(|protected| path.starts_with(protected))
            .map(PathBuf::as_path)
    }
}

/// Whether `real` (a path the kernel reported) is in a process's directory of `/proc`.
fn is_process_file(real: &Path) -> bool {
    let mut components = real.components();
    components.next() == Some(Component::RootDir)
        && components.next() == Some(Component::Normal("proc".as_ref()))
        && components.next().is_some_and(|part| {
            let part = part.as_os_str().to_string_lossy();
            part == "self"
                || part == "thread-self"
                || (!part.is_empty() && part.bytes().all(|byte| byte.is_ascii_digit()))
        })
}

fn protected_text(shown: &str, protected: &Path) -> String {
    format!(
        "{shown} is under {}, which the sandbox keeps read-only (a control or startup file a command could use to act later, outside the sandbox); change it yourself, or give that path as a writable root (--writable, sandbox::Policy::writable_roots)",
        protected.display()
    )
}

/// `path` split into its resolved directory and its file name (only to choose the writable
/// root: the opening beneath it is what decides).
fn resolve_lexically(path: &Path) -> Option<(PathBuf, OsString)> {
    let folded = super::fold(path);
    let name = folded.file_name()?.to_owned();
    Some((super::resolve(Path::new("/"), folded.parent()?), name))
}

fn denied_text(shown: &str, denied: &Path) -> String {
    format!(
        "{shown} is under {}, which the sandbox denies (a denied path); work elsewhere, or leave it out of the denied paths",
        denied.display()
    )
}
