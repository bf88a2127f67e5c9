//! The sandbox in golato's own process, for `read`, `write` and `edit`.
//!
//! A path is checked where it ends up, with no window between the check and the use: `read`
//! checks the file it opened (by its descriptor), `write` and `edit` open the directory they
//! change beneath a writable root with `openat2` and then work through that handle.

use std::ffi::OsString;
use std::os::fd::{AsRawFd as _, OwnedFd};
use std::path::{Component, Path, PathBuf};

use rustix::fs::{Mode as FileMode, OFlags, ResolveFlags};

use super::prepare::Spec;
use super::Mode;

/// What the file tools may touch.
#[derive(Debug, Clone)]
pub(crate) struct FileRules {
    mode: Mode,
    writable: Vec<PathBuf>,
    denied: Vec<PathBuf>,
}

/// A place a write may change: its directory, held open, and the file's name in it.
#[derive(Debug)]
pub(crate) struct Place {
    directory: OwnedFd,
    name: OsString,
}

impl Place {
    /// The held directory as a path (`/proc/self/fd/N`): everything reached through it stays
    /// in that directory, whatever is renamed or linked on the way meanwhile.
    pub(crate) fn directory(&self) -> PathBuf {
        PathBuf::from(format!("/proc/self/fd/{}", self.directory.as_raw_fd()))
    }

    /// The file in the held directory.
    pub(crate) fn path(&self) -> PathBuf {
        self.directory().join(&self.name)
    }
}

impl FileRules {
    pub(crate) fn new(mode: Mode, spec: &Spec) -> FileRules {
        FileRules {
            mode,
            writable: spec.writable.clone(),
            denied: spec.denied.clone(),
        }
    }

    /// Refuses `file` (opened from what the model called `shown`) if it lies under a denied
    /// path.
    pub(crate) fn check_read(&self, file: &std::fs::File, shown: &str) -> Result<(), String> {
        if self.denied.is_empty() {
            return Ok(());
        }
        let real =
            std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())).map_err(|error| {
                format!(
                    "could not tell where {shown} is, for the sandbox: {error}; is /proc mounted?"
                )
            })?;
        match self.denied.iter().find(|denied| real.starts_with(denied)) {
            Some(denied) => Err(denied_text(shown, denied)),
            None => Ok(()),
        }
    }

    /// The place of `target` (absolute; its last component is the file), opened beneath the
    /// writable root it is in, its missing directories created when `create` says so.
    pub(crate) fn writable_place(
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
        let Some(root) = self
            .writable
            .iter()
            .filter(|root| resolved.starts_with(root))
            .max_by_key(|root| root.as_os_str().len())
        else {
            return Err(format!(
                "{shown} is outside the sandbox's writable places ({}); write inside them, or add a writable root (--writable DIR, sandbox::Policy::writable_roots)",
                self.writable
                    .iter()
                    .map(|root| root.display().to_string())
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
        let mut directory = rustix::fs::open(
            root,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC | OFlags::NOFOLLOW,
            FileMode::empty(),
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
        Ok(Place { directory, name })
    }
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
