//! Folder trust: whether a project's own files may change what golato's safety rests on.
//!
//! A repository can bring a `.golato/config.toml`; cloning one must not hand it the sandbox,
//! the approvals, the network, commands to start or hooks to run. What it may set in a folder
//! nobody trusted is decided in `config::untrusted`; this module remembers which folders the
//! person trusted, in `trust.json` of golato's data directory, by canonical path and by the
//! folder's identity (device, inode and birth time): a folder moved elsewhere, a link put in
//! its place, or a new folder made at its path is not the folder that was trusted. The birth
//! time is what tells a re-created folder (`rm -rf proj && git clone … proj`) from the old one
//! when the file system hands it the freed inode number again, as ext4 does.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::CliError;

/// Why a project's files are limited in a folder the person said not to trust.
pub(crate) const SAID_NO: &str = "you said not to trust this folder";

/// The version of `trust.json`.
const FORMAT: u32 = 1;

/// How much of `trust.json` is read at most.
const STORE_LIMIT: u64 = 4 * 1024 * 1024;

#[derive(Debug, Default, Serialize, Deserialize)]
struct Store {
    golato_trust: u32,
    folders: Vec<Decision>,
}

/// What the person decided about one folder.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Decision {
    path: PathBuf,
    device: u64,
    inode: u64,
    /// When the folder was made (`statx`'s birth time, seconds and nanoseconds), where the
    /// file system keeps it; a decision of an older golato has none and no longer counts.
    #[serde(default)]
    born: Option<(i64, u32)>,
    trusted: bool,
    /// When, in seconds since the epoch.
    decided: u64,
}

/// A folder as trust knows it: where it is, and which folder it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Folder {
    /// The canonical path (links followed).
    pub(crate) path: PathBuf,
    device: u64,
    inode: u64,
    born: Option<(i64, u32)>,
}

/// When the folder at `path` was made, where the file system says (ext4, xfs, btrfs, tmpfs do).
fn birth(path: &Path) -> Option<(i64, u32)> {
    let statx = rustix::fs::statx(
        rustix::fs::CWD,
        path,
        rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
        rustix::fs::StatxFlags::BTIME,
    )
    .ok()?;
    (statx.stx_mask & rustix::fs::StatxFlags::BTIME.bits() != 0)
        .then_some((statx.stx_btime.tv_sec, statx.stx_btime.tv_nsec))
}

/// Where a folder stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Standing {
    /// The person trusted this very folder.
    Trusted,
    /// The person said no (or `golato untrust`).
    Distrusted,
    /// Never decided.
    Unknown,
    /// A folder at this path was trusted, but this is another one (replaced since).
    Replaced,
}

impl Folder {
    /// The folder at `dir`.
    pub(crate) fn at(dir: &Path) -> Result<Folder, CliError> {
        use std::os::unix::fs::MetadataExt as _;
        let path = dir.canonicalize().map_err(|error| {
            CliError::usage(format!(
                "{}: {error}; give an existing folder",
                dir.display()
            ))
        })?;
        let metadata = std::fs::metadata(&path)
            .map_err(|error| CliError::usage(format!("{}: {error}", path.display())))?;
        if !metadata.is_dir() {
            return Err(CliError::usage(format!(
                "{} is not a folder; give the project's folder",
                path.display()
            )));
        }
        Ok(Folder {
            born: birth(&path),
            path,
            device: metadata.dev(),
            inode: metadata.ino(),
        })
    }

    /// Where this folder stands.
    pub(crate) fn standing(&self) -> Result<Standing, CliError> {
        let store = read(&store_path()?)?;
        Ok(
            match store.folders.iter().find(|known| known.path == self.path) {
                None => Standing::Unknown,
                // A decision of an older golato, without a birth time, is asked again.
                Some(known)
                    if (known.device, known.inode, known.born)
                        != (self.device, self.inode, self.born) =>
                {
                    Standing::Replaced
                }
                Some(known) if known.trusted => Standing::Trusted,
                Some(_) => Standing::Distrusted,
            },
        )
    }

    /// Remembers that the person trusts this folder, or does not.
    pub(crate) fn remember(&self, trusted: bool) -> Result<(), CliError> {
        let path = store_path()?;
        let dir = path.parent().unwrap_or(Path::new("."));
        let failed = |error: std::io::Error| {
            CliError::Failed(format!(
                "could not remember the trusted folders in {}: {error}; set GOLATO_DATA_DIR to a writable directory",
                path.display()
            ))
        };
        std::fs::create_dir_all(dir).map_err(failed)?;
        // One process at a time reads, changes and writes the file, so no decision is lost.
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(dir.join("trust.lock"))
            .map_err(failed)?;
        rustix::fs::flock(&lock, rustix::fs::FlockOperation::LockExclusive)
            .map_err(|error| failed(error.into()))?;
        let mut store = read(&path)?;
        store.golato_trust = FORMAT;
        store.folders.retain(|known| known.path != self.path);
        store.folders.push(Decision {
            path: self.path.clone(),
            device: self.device,
            inode: self.inode,
            born: self.born,
            trusted,
            decided: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |since| since.as_secs()),
        });
        let text = serde_json::to_vec_pretty(&store).map_err(|error| failed(error.into()))?;
        let mut file = tempfile::NamedTempFile::new_in(dir).map_err(failed)?;
        file.write_all(&text).map_err(failed)?;
        file.as_file().sync_data().map_err(failed)?;
        file.persist(&path).map_err(|error| failed(error.error))?;
        Ok(())
    }
}

/// `trust.json` in golato's data directory.
fn store_path() -> Result<PathBuf, CliError> {
    Ok(crate::store::session::data_directory()?.join("trust.json"))
}

fn read(path: &Path) -> Result<Store, CliError> {
    let bytes = match crate::bounded::read(path, STORE_LIMIT) {
        Ok(bytes) => bytes,
        Err(crate::bounded::Unreadable::Missing) => return Ok(Store::default()),
        Err(error) => {
            return Err(CliError::usage(format!(
                "cannot read the trusted folders {}: {error}",
                path.display()
            )))
        }
    };
    let store: Store = serde_json::from_slice(&bytes).map_err(|error| {
        CliError::usage(format!(
            "the trusted folders {} are not valid ({error}); remove the file (no folder is then trusted) or fix it",
            path.display()
        ))
    })?;
    if store.golato_trust != FORMAT {
        return Err(CliError::usage(format!(
            "the trusted folders {} are of format {}, this golato reads {FORMAT}; remove the file (no folder is then trusted)",
            path.display(),
            store.golato_trust
        )));
    }
    Ok(store)
}

/// `golato trust [DIR]` and `golato untrust [DIR]`.
pub(crate) fn command(dir: &Path, trusted: bool) -> Result<crate::error::Exit, CliError> {
    let folder = Folder::at(dir)?;
    folder.remember(trusted)?;
    let shown = crate::view::shown::visible(&folder.path.display().to_string()).into_owned();
    eprintln!(
        "golato: {}",
        if trusted {
            format!("trusted {shown}: its .golato/config.toml (sandbox, approvals, network, MCP servers, rules and hooks) takes effect there")
        } else {
            format!("{shown} is not trusted: its .golato/config.toml may not loosen safety, start commands or run hooks")
        }
    );
    Ok(crate::error::Exit::Success)
}

/// Whether the person said not to trust the folder at `cwd` (and no `--trust` overrides it).
pub(crate) fn said_no(cwd: &Path, given: bool) -> bool {
    !given
        && Folder::at(cwd)
            .and_then(|folder| folder.standing())
            .is_ok_and(|standing| standing == Standing::Distrusted)
}

/// The one line a start in a folder the person said not to trust says (instead of a line per
/// file left unread or limited); `None` in any other folder, or one with nothing to limit.
pub(crate) fn said_no_line(cwd: &Path, given: bool) -> Option<String> {
    if !said_no(cwd, given) {
        return None;
    }
    let folder = Folder::at(cwd).ok()?;
    let mut files: Vec<String> = [
        ".golato/config.toml",
        ".claude/settings.json",
        ".claude/settings.local.json",
    ]
    .iter()
    .filter(|name| folder.path.join(name).is_file())
    .map(|name| (*name).to_owned())
    .collect();
    files.extend(
        super::project_files::instruction_files(&folder.path)
            .iter()
            .chain(&super::project_files::skill_folders(&folder.path))
            .map(|path| {
                path.strip_prefix(&folder.path)
                    .unwrap_or(path)
                    .display()
                    .to_string()
            }),
    );
    if files.is_empty() {
        return None;
    }
    let shown = crate::view::shown::visible(&folder.path.display().to_string()).into_owned();
    Some(format!(
        "{shown} is not trusted (you said no): {} limited or unread; `golato trust {shown}` trusts it",
        crate::view::shown::visible(&files.join(", "))
    ))
}

/// Whether the project in `cwd` takes full effect (its instructions read, its file's safety
/// settings applied): `--trust`, or a folder trusted
/// before.
pub(crate) fn trusted(cwd: &Path, given: bool) -> bool {
    given
        || Folder::at(cwd)
            .and_then(|folder| folder.standing())
            .is_ok_and(|standing| standing == Standing::Trusted)
}
