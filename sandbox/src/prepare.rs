//! A [`Policy`] made concrete for one tool set: paths resolved, the helper and the kernel
//! checked once by a probe.

use std::collections::HashMap;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use serde::{Deserialize, Serialize};

use super::{Error, Mode, Policy, HELPER_ARG};

/// Where POSIX shared memory lives.
pub(crate) const SHM: &str = "/dev/shm";

/// What the helper is told: everything resolved, absolute and canonical.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub(crate) struct Spec {
    /// Directories left writable (none in read-only mode).
    pub(crate) writable: Vec<PathBuf>,
    /// Paths hidden behind an empty mount, those that exist when a command starts (so one
    /// made later is hidden from the next command on).
    pub(crate) denied: Vec<PathBuf>,
    /// golato's and other agents' control files inside the writable roots, read-only to
    /// commands where they exist when a command starts.
    #[serde(default)]
    pub(crate) protected: Vec<PathBuf>,
    /// Whether the network (and Unix-domain sockets) stay reachable.
    pub(crate) network: bool,
    /// Whether `/dev/shm` is replaced by a writable one of the sandbox's own (workspace-write:
    /// POSIX shared memory and semaphores, as Python's multiprocessing uses, keep working
    /// without reaching the host's).
    #[serde(default)]
    pub(crate) private_shm: bool,
    /// A `TMPDIR` outside every writable root, replaced by an empty private one.
    #[serde(default)]
    pub(crate) private_tmp: Option<PathBuf>,
    /// The `TMPDIR` the command gets instead of golato's own, when that one lies above the
    /// working directory (`/tmp`).
    #[serde(default)]
    pub(crate) command_tmpdir: Option<PathBuf>,
    /// The network by domain: the port of golato's proxy on the loopback of the command's
    /// own network namespace, which the helper brings up and listens on.
    #[serde(default)]
    pub(crate) proxy_port: Option<u16>,
    /// Variables named like secrets that the command still gets.
    #[serde(default)]
    pub(crate) pass_env: Vec<String>,
    /// Where the command runs.
    pub(crate) cwd: PathBuf,
}

/// A policy resolved against a working directory and probed: what the built-ins hold.
#[derive(Debug)]
pub struct Prepared {
    pub(crate) mode: Mode,
    pub(crate) helper: PathBuf,
    /// The helper's instructions, as JSON.
    spec_json: String,
    pub(crate) spec: Spec,
    /// Each writable root, held open since the policy was resolved: the file tools walk down
    /// from these, never from a path that could be swapped meanwhile.
    pub(crate) roots: Vec<(PathBuf, Arc<std::os::fd::OwnedFd>)>,
    /// Whether a write may change a file with several hard links.
    pub(crate) allow_hard_links: bool,
    /// The network by domain, when commands reach it through golato's proxy.
    pub(crate) domains: Option<crate::network::NetworkPolicy>,
}

impl Prepared {
    /// `None` for [`Mode::Off`]; else the policy resolved against `cwd` and probed.
    pub fn new(policy: &Policy, cwd: &Path) -> Result<Option<Prepared>, Error> {
        if policy.mode == Mode::Off {
            return Ok(None);
        }
        if !cfg!(target_os = "linux") {
            return Err(Error::Unsupported {
                mode: policy.mode,
                missing: format!(
                    "a Linux kernel (Landlock, user namespaces); this is {}",
                    std::env::consts::OS
                ),
            });
        }
        let cwd = canonical(cwd, cwd, "working directory")?;
        let mut writable = Vec::new();
        let mut private_tmp = None;
        let mut command_tmpdir = None;
        let mut explicit = Vec::new();
        // Where control files are protected: the working directory and the roots the policy
        // names, not the temporary directories (nobody's configuration lives there).
        let mut guarded = Vec::new();
        if policy.mode == Mode::WorkspaceWrite {
            writable.push(cwd.clone());
            for root in &policy.writable_roots {
                let root = canonical(&super::resolve(&cwd, root), root, "writable root")?;
                if !root.is_dir() {
                    return Err(Error::Path {
                        role: "writable root",
                        path: root,
                        reason: "it is not a directory".into(),
                    });
                }
                explicit.push(root);
            }
            writable.extend(explicit.iter().cloned());
            guarded.clone_from(&writable);
            if let Ok(tmp) = Path::new("/tmp").canonicalize() {
                writable.push(tmp);
            }
            // A TMPDIR elsewhere (a directory in the home, say) would make that place
            // writable; commands get an empty one of their own there instead.
            if let Ok(tmpdir) = std::env::temp_dir().canonicalize() {
                if writable.iter().any(|root| tmpdir.starts_with(root)) {
                    writable.push(tmpdir);
                } else if writable.iter().any(|root| root.starts_with(&tmpdir)) {
                    // Above the working directory or a root: an empty one mounted there would
                    // hide them, and a writable one would open everything beside them.
                    // Commands get /tmp as their TMPDIR instead.
                    command_tmpdir = Some(PathBuf::from("/tmp"));
                } else if tmpdir.is_dir() {
                    private_tmp = Some(tmpdir);
                }
            }
        }
        writable.sort();
        writable.dedup();
        let mut denied: Vec<PathBuf> = policy
            .denied_paths
            .iter()
            .map(|path| super::resolve(&cwd, path))
            .collect();
        denied.sort();
        denied.dedup();
        let protected = protected_paths(&guarded, &explicit);
        let roots = writable
            .iter()
            .map(|root| {
                held_root(root)
                    .map(|fd| (root.clone(), fd))
                    .map_err(|error| Error::Path {
                        role: "writable root",
                        path: root.clone(),
                        reason: match error {
                            rustix::io::Errno::MFILE | rustix::io::Errno::NFILE => format!(
                                "{error}: too many open files (raise the limit with ulimit -n, or run fewer sessions at once)"
                            ),
                            error => error.to_string(),
                        },
                    })
            })
            .collect::<Result<Vec<_>, Error>>()?;
        let spec = Spec {
            writable,
            denied,
            protected,
            network: policy.allow_network,
            proxy_port: proxy_port(policy),
            private_shm: policy.mode == Mode::WorkspaceWrite && Path::new(SHM).is_dir(),
            private_tmp,
            command_tmpdir,
            pass_env: policy.pass_env.clone(),
            cwd,
        };
        let helper = match &policy.helper {
            Some(helper) => helper.clone(),
            None => std::env::current_exe().map_err(|error| Error::Helper {
                program: "(this program)".into(),
                reason: format!("could not find this program's executable: {error}"),
            })?,
        };
        let spec_json = serde_json::to_string(&spec).map_err(|error| Error::Path {
            role: "paths",
            path: spec.cwd.clone(),
            reason: error.to_string(),
        })?;
        let enforced = probe(&helper, &spec_json, policy.mode)?;
        tracing::info!(mode = %policy.mode, %enforced, "sandbox ready");
        Ok(Some(Prepared {
            mode: policy.mode,
            helper,
            spec_json,
            spec,
            roots,
            allow_hard_links: policy.allow_hard_links,
            domains: policy.domains.clone().filter(|_| !policy.allow_network),
        }))
    }

    /// The program that confines a command: run it with [`Prepared::helper_args`], then the
    /// command and its arguments.
    pub fn helper(&self) -> &Path {
        &self.helper
    }

    /// The mode this policy enforces.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The network by domain ([`Policy::domains`](crate::Policy::domains)): the caller serves
    /// the proxy, and runs commands with [`Prepared::proxied_args`].
    pub fn domains(&self) -> Option<&crate::network::NetworkPolicy> {
        self.domains.as_ref()
    }

    /// The helper's arguments before the command's own, for a policy with
    /// [`Prepared::domains`]: as [`Prepared::capturing_args`] (or [`Prepared::helper_args`]
    /// without `stage`), and the helper sends the listening socket of the command's proxy
    /// address ([`PROXY_ADDRESS`](crate::PROXY_ADDRESS) in its namespace) over a connection
    /// to the Unix socket `proxy`, as `SCM_RIGHTS`, before the command starts. The caller
    /// accepts that connection and serves the proxy on the socket it receives.
    #[cfg(target_os = "linux")]
    pub fn proxied_args<'a>(
        &'a self,
        stage: Option<&'a crate::capture::Stage>,
        proxy: &'a Path,
    ) -> Vec<&'a std::ffi::OsStr> {
        let mut args: Vec<&std::ffi::OsStr> = vec![HELPER_ARG.as_ref(), self.spec_json.as_ref()];
        if let Some(stage) = stage {
            args.extend([crate::prepare::CAPTURE.as_ref(), stage.path().as_os_str()]);
        }
        args.extend([
            crate::prepare::PROXY.as_ref(),
            proxy.as_os_str(),
            "--".as_ref(),
        ]);
        args
    }

    /// The helper's arguments before the command's own, for a command that joins the
    /// session's `network` namespace (see [`crate::SharedNetwork`]), with what it changes
    /// captured in `stage` when given. A policy with [`Prepared::domains`] or the host's
    /// network has no namespace to share: use the other arguments.
    #[cfg(target_os = "linux")]
    pub fn joining_args<'a>(
        &'a self,
        stage: Option<&'a crate::capture::Stage>,
        network: &'a crate::SharedNetwork,
    ) -> Vec<&'a std::ffi::OsStr> {
        let mut args: Vec<&std::ffi::OsStr> = vec![HELPER_ARG.as_ref(), self.spec_json.as_ref()];
        if let Some(stage) = stage {
            args.extend([crate::prepare::CAPTURE.as_ref(), stage.path().as_os_str()]);
        }
        args.extend([
            crate::prepare::JOIN_NETWORK.as_ref(),
            network.join_arg().as_os_str(),
            "--".as_ref(),
        ]);
        args
    }

    /// Whether commands could share one network namespace: they have one of their own (not
    /// the host's) and it holds no proxy (a proxy's port is per command).
    pub fn shares_network(&self) -> bool {
        !self.spec.network && self.domains.is_none()
    }

    pub(crate) fn spec_json(&self) -> &str {
        &self.spec_json
    }

    /// The helper's arguments before the command's own: [`HELPER_ARG`], the spec, `--`.
    pub fn helper_args(&self) -> [&str; 3] {
        [HELPER_ARG, &self.spec_json, "--"]
    }

    /// As [`Prepared::helper_args`], with what the command changes in the working directory
    /// captured in `stage` (see [`crate::capture`]); apply it once the helper has exited.
    /// Only [`Mode::WorkspaceWrite`] lets a command change anything there.
    #[cfg(target_os = "linux")]
    pub fn capturing_args<'a>(
        &'a self,
        stage: &'a crate::capture::Stage,
    ) -> [&'a std::ffi::OsStr; 5] {
        [
            HELPER_ARG.as_ref(),
            self.spec_json.as_ref(),
            crate::prepare::CAPTURE.as_ref(),
            stage.path().as_os_str(),
            "--".as_ref(),
        ]
    }

    /// The working directory the policy was resolved against (canonical).
    pub fn working_directory(&self) -> &Path {
        &self.spec.cwd
    }

    /// The protected paths beneath the writable roots ([`PROTECTED_NAMES`](crate::PROTECTED_NAMES)
    /// in each), whether they exist or not: a command sees the ones that exist read-only, and
    /// a captured command's changes are not applied at any of them.
    pub fn protected_paths(&self) -> &[PathBuf] {
        &self.spec.protected
    }
}

/// The control files of golato and of other agents, and the shell's and git's startup files,
/// beneath each writable root: what a command must not rewrite to act later, outside the
/// sandbox (a planted MCP server, `sandbox = "off"`, a git hook, a line in `.bashrc`). A
/// writable root the policy names explicitly at or inside one of them leaves that one
/// writable.
fn protected_paths(writable: &[PathBuf], explicit: &[PathBuf]) -> Vec<PathBuf> {
    let mut protected: Vec<PathBuf> = writable
        .iter()
        .flat_map(|root| {
            super::PROTECTED_NAMES
                .iter()
                .map(move |name| root.join(name))
        })
        .filter(|path| !explicit.iter().any(|root| root.starts_with(path)))
        .collect();
    protected.sort();
    protected.dedup();
    protected
}

/// The proxy's port inside the command's namespace, when its network goes by domain.
fn proxy_port(policy: &Policy) -> Option<u16> {
    let port = crate::PROXY_ADDRESS
        .rsplit_once(':')
        .and_then(|(_, port)| port.parse().ok());
    port.filter(|_| policy.domains.is_some() && !policy.allow_network)
}

fn canonical(path: &Path, shown: &Path, role: &'static str) -> Result<PathBuf, Error> {
    path.canonicalize().map_err(|error| Error::Path {
        role,
        path: shown.to_owned(),
        reason: error.to_string(),
    })
}

/// The held descriptor of the writable root `root`, shared by every policy of the process that
/// names the same folder (while it is that folder: same device and inode): each session of
/// `golato acp` held two of its own (its folder and `/tmp`), and 500 sessions ran out of a
/// limit of 1,024 descriptors.
fn held_root(root: &Path) -> Result<Arc<std::os::fd::OwnedFd>, rustix::io::Errno> {
    static HELD: Mutex<Vec<(PathBuf, std::sync::Weak<std::os::fd::OwnedFd>)>> =
        Mutex::new(Vec::new());
    let now = rustix::fs::stat(root)?;
    let mut held = HELD.lock().unwrap_or_else(PoisonError::into_inner);
    held.retain(|(_, fd)| fd.strong_count() > 0);
    let same = held.iter().find_map(|(path, fd)| {
        let fd = fd.upgrade().filter(|_| path == root)?;
        let stat = rustix::fs::fstat(&*fd).ok()?;
        ((stat.st_dev, stat.st_ino) == (now.st_dev, now.st_ino)).then_some(fd)
    });
    if let Some(fd) = same {
        return Ok(fd);
    }
    let fd = Arc::new(rustix::fs::open(
        root,
        rustix::fs::OFlags::PATH | rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )?);
    held.push((root.to_owned(), Arc::downgrade(&fd)));
    Ok(fd)
}

type ProbeResult = Result<Arc<str>, String>;

/// Runs the helper once in probe mode (it confines itself as for a command, then reports what
/// it enforced), cached per helper and spec: the kernel does not change under a process.
fn probe(helper: &Path, spec_json: &str, mode: Mode) -> Result<Arc<str>, Error> {
    static PROBES: Mutex<Option<HashMap<(PathBuf, String), ProbeResult>>> = Mutex::new(None);
    let key = (helper.to_owned(), spec_json.to_owned());
    if let Some(found) = PROBES
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .as_ref()
        .and_then(|probes| probes.get(&key).cloned())
    {
        return answer(found, mode);
    }
    // What the kernel said is cached; a helper that did not answer is not (it may be fixed
    // while the process runs).
    let found = match run_probe(helper, spec_json) {
        Ok(enforced) => Ok(enforced),
        Err(Outcome::Unsupported(missing)) => Err(missing),
        Err(Outcome::NotAHelper(reason)) => {
            return Err(Error::Helper {
                program: helper.to_owned(),
                reason,
            })
        }
    };
    PROBES
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get_or_insert_with(HashMap::new)
        .insert(key, found.clone());
    answer(found, mode)
}

fn answer(found: ProbeResult, mode: Mode) -> Result<Arc<str>, Error> {
    found.map_err(|missing| Error::Unsupported { mode, missing })
}

enum Outcome {
    Unsupported(String),
    NotAHelper(String),
}

/// What the helper's status pipe says: `ok REPORT` (probe), `unsupported REASON`, `error
/// REASON`; nothing at all when it went on to run a command.
pub(crate) const STATUS_OK: &str = "ok ";
pub(crate) const STATUS_UNSUPPORTED: &str = "unsupported ";
pub(crate) const STATUS_ERROR: &str = "error ";

fn run_probe(helper: &Path, spec_json: &str) -> Result<Arc<str>, Outcome> {
    let (mut reader, writer) = std::io::pipe()
        .map_err(|error| Outcome::NotAHelper(format!("could not create a pipe: {error}")))?;
    let mut command = std::process::Command::new(helper);
    command
        .args([HELPER_ARG, spec_json, "--probe"])
        .stdin(writer)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    let child = command.spawn().map_err(|error| {
        Outcome::NotAHelper(format!("could not start it: {error}{}", limit_hint(&error)))
    })?;
    // The write end now lives only in the child: end of file comes when it exits.
    drop(command);
    let mut status = String::new();
    let read = reader.read_to_string(&mut status);
    let output = child
        .wait_with_output()
        .map_err(|error| Outcome::NotAHelper(format!("could not wait for it: {error}")))?;
    if let Err(error) = read {
        return Err(Outcome::NotAHelper(format!(
            "its answer was unreadable: {error}"
        )));
    }
    if let Some(report) = status.strip_prefix(STATUS_OK) {
        return Ok(report.trim().into());
    }
    if let Some(missing) = status.strip_prefix(STATUS_UNSUPPORTED) {
        return Err(Outcome::Unsupported(missing.trim().to_owned()));
    }
    if let Some(error) = status.strip_prefix(STATUS_ERROR) {
        return Err(Outcome::Unsupported(error.trim().to_owned()));
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    let stderr = stderr.trim();
    Err(Outcome::NotAHelper(format!(
        "it exited with {} and no answer{}",
        output.status,
        if stderr.is_empty() {
            String::new()
        } else {
            format!("; it said: {}", excerpt(stderr))
        }
    )))
}

/// What to do when starting a process failed for want of file descriptors.
pub(crate) fn limit_hint(error: &std::io::Error) -> &'static str {
    match error.raw_os_error() {
        Some(code)
            if code == rustix::io::Errno::MFILE.raw_os_error()
                || code == rustix::io::Errno::NFILE.raw_os_error() =>
        {
            "; raise the open-file limit (ulimit -n) or run fewer calls at once"
        }
        _ => "",
    }
}

/// At most this much of what a failed helper said goes into an error.
const EXCERPT_CHARS: usize = 2_000;

fn excerpt(text: &str) -> String {
    match text.char_indices().nth(EXCERPT_CHARS) {
        Some((cut, _)) => format!("{}… ({} bytes in all)", &text[..cut], text.len()),
        None => text.to_owned(),
    }
}

/// Before `--`: the next argument is a staging area to capture the command's changes in.
pub(crate) const CAPTURE: &str = "--capture";

/// Before `--`: the next argument is the Unix socket to send the proxy's listener to.
pub(crate) const PROXY: &str = "--proxy";

/// Instead of a command: hold a network namespace for a session's commands to join (see
/// [`crate::SharedNetwork`]) until standard input closes.
pub(crate) const HOLD_NETWORK: &str = "--hold-network";

/// Before `--`: join the network namespace a holder keeps, `PID:USER_NS_INODE:NET_NS_INODE`.
pub(crate) const JOIN_NETWORK: &str = "--join-network";
