//! golato's operating-system sandbox: what the built-in tools `bash`, `read`, `write` and `edit`
//! may touch. golato re-exports this crate as `golato::sandbox`; most programs use it from
//! there.
//!
//! Off by default: the built-ins run with the host process's power unless golato's
//! `builtin::Config::sandbox` asks for a [`Policy`]. Under
//! [`Mode::ReadOnly`] or [`Mode::WorkspaceWrite`]:
//!
//! - `bash` runs its command in a helper process that confines itself before it starts bash, so
//!   golato's own process is never confined and everything the command starts inherits the
//!   confinement: a user namespace with a private mount namespace where every mount is
//!   read-only but the writable roots (which also stops `chmod`, `touch` and other metadata
//!   changes), Landlock rules (writes only beneath the writable roots, by any route: `..`,
//!   symbolic links, `/proc/PID/root`; hard links and renames out of them; signals only to
//!   processes inside), an empty mount over each denied path, and, unless the network is
//!   allowed, a network namespace of its own (no TCP or UDP anywhere, IPv4 or IPv6) and a
//!   seccomp filter refusing Unix-domain sockets (a local daemon such as Docker's would be a
//!   way out) and io_uring. The helper program is this one (it must call
//!   [`run_helper_if_asked`] first in `main`) or the one named by [`Policy::with_helper`].
//! - `read`, `write` and `edit` check in golato's process: `read` refuses a file whose opened
//!   descriptor lies under a denied path; `write` and `edit` open the file's directory beneath a
//!   writable root with `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)` and work through that
//!   handle, refusing a symbolic link in the final place, so a link swapped in during the call
//!   cannot redirect the write.
//!
//! - Under [`Mode::WorkspaceWrite`], a caller may have a command's changes to the working
//!   directory captured ([`capture`]): the command writes into an overlay, applied to the real
//!   tree when it ends, each file kept as it was (golato's checkpoints, so undo covers `bash`).
//!
//! The kernel must have what the policy needs (Landlock, user namespaces): where it does not,
//! golato's `builtin::new` (through [`Prepared::new`]) fails with [`Error::Unsupported`] naming
//! what is missing. A sandbox is never silently left out.
//!
//! The public surface is small: the [`Policy`] a caller chooses, the [`Prepared`] policy the
//! built-ins hold (the helper's command line for `bash`, [`FileRules`] for the file tools), the
//! [`Error`]s, and [`run_helper_if_asked`], the helper's entry point.
//!
//! ```no_run
//! use golato_sandbox::{run_helper_if_asked, Policy, Prepared};
//!
//! fn main() -> Result<(), golato_sandbox::Error> {
//!     // First thing in main: this program is also the sandbox's helper.
//!     run_helper_if_asked();
//!     let policy = Policy::workspace_write().with_denied_path("~/.ssh");
//!     // What golato's `builtin::new` does with `builtin::Config::sandbox`.
//!     let prepared = Prepared::new(&policy, std::path::Path::new("."))?;
//!     # let _ = prepared;
//!     Ok(())
//! }
//! ```

#[cfg(target_os = "linux")]
pub mod anchored;
#[cfg(target_os = "linux")]
pub mod capture;
#[cfg(target_os = "linux")]
mod files;
mod guard;
#[cfg(target_os = "linux")]
mod helper;
pub mod network;
mod prepare;
#[cfg(target_os = "linux")]
mod shared_network;

use std::path::{Component, Path, PathBuf};

#[cfg(target_os = "linux")]
pub use files::{FileRules, Place};
pub use guard::Guard;
pub use prepare::Prepared;
#[cfg(target_os = "linux")]
pub use shared_network::SharedNetwork;

/// The first argument that makes a program act as the sandbox's helper.
pub const HELPER_ARG: &str = "__golato-sandbox";

/// Where a command whose network goes by domain ([`Policy::domains`]) finds golato's proxy:
/// this address inside its own network namespace, where nothing else leads out. The
/// command's `HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY` (and their lowercase forms),
/// `npm_config_proxy`, `npm_config_https_proxy`, `CARGO_HTTP_PROXY` and `PIP_PROXY` name it.
pub const PROXY_ADDRESS: &str = "127.0.0.1:3128";

/// The first argument that makes a program act as the process [`Guard`].
pub const GUARD_ARG: &str = "__golato-guard";

/// How much of the system the built-in tools may change.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Mode {
    /// No sandbox: the tools have the host process's power (the default).
    #[default]
    Off,
    /// Everything readable (but the denied paths), nothing writable but devices such as
    /// `/dev/null`; no network unless allowed.
    ReadOnly,
    /// As [`Mode::ReadOnly`], and writable: the working directory, `/tmp`, `TMPDIR` and the
    /// policy's extra writable roots.
    WorkspaceWrite,
}

impl Mode {
    /// The mode's name on the command line: `off`, `read-only`, `workspace-write`.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Off => "off",
            Mode::ReadOnly => "read-only",
            Mode::WorkspaceWrite => "workspace-write",
        }
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is not a [`Mode`].
#[derive(Debug, Clone, thiserror::Error)]
#[error("unknown sandbox mode {0:?}; choose read-only, workspace-write or off")]
pub struct UnknownMode(pub String);

impl std::str::FromStr for Mode {
    type Err = UnknownMode;

    fn from_str(name: &str) -> Result<Mode, UnknownMode> {
        match name {
            "off" => Ok(Mode::Off),
            "read-only" => Ok(Mode::ReadOnly),
            "workspace-write" => Ok(Mode::WorkspaceWrite),
            other => Err(UnknownMode(other.to_owned())),
        }
    }
}

/// What the built-in tools may touch: a [`Mode`] and its options.
///
/// Paths may start with `~/` (the home directory); relative ones resolve against the tool set's
/// working directory.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Policy {
    /// How much may change.
    pub mode: Mode,
    /// Directories writable besides the working directory, `/tmp` and `TMPDIR`
    /// ([`Mode::WorkspaceWrite`] only). Each must exist.
    pub writable_roots: Vec<PathBuf>,
    /// Paths nobody may read (or write), even inside a writable root: `bash` sees an empty
    /// directory or file there, `read` refuses them. One that does not exist yet is denied by
    /// name: hidden from the first command that starts after it appears.
    pub denied_paths: Vec<PathBuf>,
    /// Lets commands use the network (and Unix-domain sockets, so local daemons too).
    pub allow_network: bool,
    /// The network by domain: commands keep their network namespace with no route out, and
    /// reach the hosts this policy allows through golato's proxy only, on
    /// [`PROXY_ADDRESS`] inside their namespace (the proxy variables are set for them).
    /// Ignored when [`Policy::allow_network`] is set. Needs a caller that serves the proxy:
    /// golato's `bash` does (`golato::proxy`).
    pub domains: Option<network::NetworkPolicy>,
    /// Variables a command still gets although named like a secret (see [`looks_secret`]):
    /// under a sandbox, `bash` starts without `OPENAI_API_KEY`, `GITHUB_TOKEN` and the like
    /// unless they are named here.
    pub pass_env: Vec<String>,
    /// Lets `write` and `edit` change a file with several hard links. Off: such a file is
    /// refused, since a link placed in the workspace may lead to a file outside every writable
    /// root, which a write in place would change.
    pub allow_hard_links: bool,
    /// The program that confines `bash`'s commands: one whose `main` calls
    /// [`run_helper_if_asked`] first, such as the `golato` binary. `None`: this program.
    pub helper: Option<PathBuf>,
    /// [`Mode::Off`] only: start `bash`'s commands through the helper acting as a [`Guard`],
    /// so that none of their processes outlives this one (a killed worker's commands would
    /// otherwise run on beside their retries). Needs the helper as the sandbox does. The other
    /// modes always have this.
    pub guard: bool,
}

impl Policy {
    /// No sandbox.
    pub fn off() -> Policy {
        Policy::default()
    }

    /// [`Mode::ReadOnly`], without network.
    pub fn read_only() -> Policy {
        Policy {
            mode: Mode::ReadOnly,
            ..Policy::default()
        }
    }

    /// [`Mode::WorkspaceWrite`], without network.
    pub fn workspace_write() -> Policy {
        Policy {
            mode: Mode::WorkspaceWrite,
            ..Policy::default()
        }
    }

    /// Adds a writable root.
    pub fn with_writable_root(mut self, root: impl Into<PathBuf>) -> Policy {
        self.writable_roots.push(root.into());
        self
    }

    /// Adds a path denied even for reading.
    pub fn with_denied_path(mut self, path: impl Into<PathBuf>) -> Policy {
        self.denied_paths.push(path.into());
        self
    }

    /// Allows the network (or not).
    pub fn with_network(mut self, allow: bool) -> Policy {
        self.allow_network = allow;
        self
    }

    /// Lets commands reach the hosts `domains` allows, through golato's proxy only (see
    /// [`Policy::domains`]).
    pub fn with_domains(mut self, domains: network::NetworkPolicy) -> Policy {
        self.domains = Some(domains);
        self
    }

    /// Passes a variable named like a secret on to commands.
    pub fn with_passed_env(mut self, name: impl Into<String>) -> Policy {
        self.pass_env.push(name.into());
        self
    }

    /// Lets writes change files with several hard links (or not).
    pub fn with_hard_links(mut self, allow: bool) -> Policy {
        self.allow_hard_links = allow;
        self
    }

    /// Guards unsandboxed commands (or not): see [`Policy::guard`].
    pub fn with_guard(mut self, guard: bool) -> Policy {
        self.guard = guard;
        self
    }

    /// Names the helper program.
    pub fn with_helper(mut self, program: impl Into<PathBuf>) -> Policy {
        self.helper = Some(program.into());
        self
    }
}

/// Paths with credentials in most home directories, which the command line denies by default.
pub const CREDENTIAL_PATHS: [&str; 8] = [
    "~/.ssh",
    "~/.aws",
    "~/.gnupg",
    "~/.azure",
    "~/.config/gcloud",
    "~/.kube",
    "~/.docker",
    "~/.netrc",
];

/// Paths beneath each writable root that stay read-only under a sandbox unless a writable
/// root the policy names is at or inside one: golato's configuration, other agents' control
/// files and instructions, git's hooks and configuration, and the shell's and git's startup
/// files (for a home directory made writable). A command rewriting one of them could act
/// later, outside the sandbox.
pub const PROTECTED_NAMES: [&str; 18] = [
    ".golato",
    ".git/hooks",
    ".git/config",
    ".agents",
    ".claude",
    ".codex",
    "AGENTS.md",
    "CLAUDE.md",
    ".config/golato",
    ".config/git",
    ".gitconfig",
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zshenv",
];

/// Whether a variable's name looks like a secret's: it contains `KEY`, `TOKEN`, `SECRET`,
/// `PASSWORD`, `PASSWD`, `CREDENTIAL` or `PRIVATE` (any case). golato's own
/// `GOLATO_RUN_KEY` does not count.
///
/// ```
/// use golato_sandbox::looks_secret;
/// assert!(looks_secret("OPENAI_API_KEY"));
/// assert!(looks_secret("github_token"));
/// assert!(!looks_secret("PATH"));
/// ```
pub fn looks_secret(name: &str) -> bool {
    const MARKS: [&str; 7] = [
        "KEY",
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "CREDENTIAL",
        "PRIVATE",
    ];
    let upper = name.to_ascii_uppercase();
    upper != "GOLATO_RUN_KEY" && MARKS.iter().any(|mark| upper.contains(mark))
}

/// Why a sandbox could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The kernel or the platform lacks what the policy needs.
    #[error("the {mode} sandbox cannot be enforced here: {missing}. Provide that, or choose the sandbox mode off (--sandbox off, sandbox::Mode::Off) to run the tools unconfined")]
    Unsupported {
        /// The mode asked for.
        mode: Mode,
        /// What is missing, and where it is turned on.
        missing: String,
    },
    /// The helper program did not act as one.
    #[error("the sandbox helper {program:?} did not answer as one ({reason}); call golato::sandbox::run_helper_if_asked() first in that program's main, or set sandbox::Policy::with_helper to the golato binary")]
    Helper {
        /// The program.
        program: PathBuf,
        /// What happened instead.
        reason: String,
    },
    /// A path of the policy is unusable.
    #[error("the sandbox's {role} {path:?} is unusable: {reason}")]
    Path {
        /// Which kind of path ("writable root", …).
        role: &'static str,
        /// The path as given.
        path: PathBuf,
        /// Why.
        reason: String,
    },
}

/// `path` as the sandbox judges it: `~/` expanded to the home directory, made absolute against
/// `cwd`, the longest part of it that exists resolved as the kernel would (symbolic links
/// first, then `..`: `link/../x` is beside where `link` leads, not beside `link`), and the rest,
/// not yet there, appended with its `.` and `..` folded.
///
/// ```
/// let cwd = std::env::temp_dir().canonicalize()?;
/// let resolved = golato_sandbox::resolve(&cwd, "a/../b/./new.txt".as_ref());
/// assert_eq!(resolved, cwd.join("b/new.txt"));
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn resolve(cwd: &Path, path: &Path) -> PathBuf {
    let expanded = match (path.strip_prefix("~"), std::env::var_os("HOME")) {
        (Ok(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => path.to_owned(),
    };
    let joined = cwd.join(expanded);
    joined
        .ancestors()
        .find_map(|existing| {
            let canonical = existing.canonicalize().ok()?;
            let rest = joined.strip_prefix(existing).ok()?;
            // Folding pushes component by component: an empty rest adds no trailing
            // separator, which would make a file's path unusable ("/home/u/.netrc/").
            Some(fold(&canonical.join(rest)))
        })
        .unwrap_or_else(|| fold(&joined))
}

/// `path` with `.` and `..` folded lexically (a `..` at the root stays there).
pub fn fold(path: &Path) -> PathBuf {
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

/// Acts as the sandbox's helper when this process was started as one, and otherwise returns at
/// once. Call it first in `main` of a program that sandboxes `bash` without naming another
/// helper in [`Policy::with_helper`]: the helper is then this program, started again with
/// [`HELPER_ARG`] as its first argument. When it is one, this function never returns: the
/// process confines itself and becomes the command (or exits with the reason it could not).
/// Started with [`GUARD_ARG`], it acts as a [`Guard`] and never returns either.
pub fn run_helper_if_asked() {
    let mut args = std::env::args_os();
    let first = args.nth(1);
    #[cfg(target_os = "linux")]
    if first.as_deref() == Some(std::ffi::OsStr::new(GUARD_ARG)) {
        guard::process::main(args);
    }
    if first.as_deref() != Some(std::ffi::OsStr::new(HELPER_ARG)) {
        return;
    }
    #[cfg(target_os = "linux")]
    helper::main(args);
    #[cfg(not(target_os = "linux"))]
    {
        tracing::error!("the sandbox helper runs on Linux only");
        std::process::exit(125);
    }
}
