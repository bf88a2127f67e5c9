//! The built-in tools a coding agent needs: `read`, `bash`, `edit` and `write`.
//!
//! # These tools are not a sandbox unless you ask
//! By default they run with the hosting process's file, process, environment and network
//! permissions; `bash` inherits the process environment, exported credentials included. Give
//! them to trusted work only, or confine them with [`Config::sandbox`] (see
//! [`sandbox`]: read-only or workspace-write, no network), and for anything
//! untrusted add process isolation (a container, a virtual machine or an isolated host).
//!
//! [`new`] returns the selected tools, built-ins first in the order read, bash, edit, write, then
//! the custom tools; the list goes to `agent::Config::tools`. Relative paths resolve against the
//! working directory captured by `new` (the process's current directory when it is empty);
//! absolute and `..` paths stay usable. Within one set returned by `new`, `edit` and `write` on
//! the same file (by canonical path, so symlink aliases share a key) are serialized across
//! concurrent runs in FIFO order; another call to `new` makes a separate set with separate
//! coordination.
//!
//! # How edit and write change a file
//! They replace regular files only (a directory, device, FIFO or socket at the path is refused,
//! as is a symbolic link that leads nowhere; a link to a file changes that file). A file the
//! process may not write is refused as a plain write would refuse it, even in a directory that
//! lets the process create and rename files. The new content goes to a temporary file beside
//! the old one (named `.golato-write-PID-…`; one left by a killed writer is removed by the next
//! write into that directory), which takes the old file's mode, owner and group before any
//! content goes in, and is renamed over it: readers see the old content or the new, and a crash
//! leaves one of them. Two
//! kinds of file are rewritten in place instead, which a concurrent reader or a crash can catch
//! half written: a file with several hard links (so that every link sees the change), and a
//! file whose owner or group the process cannot give to a new file (so that ownership never
//! changes hands).
//!
//! ```
//! use golato::builtin;
//!
//! let workspace = tempfile::tempdir()?;
//! let tools = builtin::new(builtin::Config {
//!     working_directory: workspace.path().into(),
//!     allowed_tool_names: Some(vec!["read".into(), "write".into()]),
//!     ..Default::default()
//! })?;
//! let names: Vec<&str> = tools.iter().map(|tool| tool.name()).collect();
//! assert_eq!(names, ["read", "write"]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod bash;
mod checkpoints;
mod decode_budget;
mod edit;
#[cfg(feature = "fault-injection")]
pub mod fault;
mod images;
mod locks;
mod paths;
mod plan;
mod read;
mod search;
mod text_files;
mod web_fetch;
mod write;

use std::path::PathBuf;
use std::sync::Arc;

use golato_actors::path_lock::PathLock;

pub use bash::{
    captured_changes, Background, BackgroundCommand, Recovered, DEFAULT_MAX_BACKGROUND_COMMANDS,
    KILL_GRACE, RING_BYTES,
};
pub use checkpoints::Checkpoints;
use golato_actors::{Host, HostError};
pub use locks::{SharedLease, SharedLock};
pub use plan::{plan_of, PlanStep, StepStatus, MAX_PLAN_STEPS, MAX_STEP_CHARS};
pub use text_files::TextFiles;
pub use web_fetch::{
    Unlisted, WebFetch, DEFAULT_FETCH_TIMEOUT, DEFAULT_MAX_PAGE_BYTES, MAX_REDIRECTS,
};

use crate::sandbox;
use crate::tool::Tool;

pub(crate) use paths::Workspace;

/// edit's matcher: `original` with `edits` applied, or why not.
#[cfg(feature = "fuzzing")]
pub(crate) fn fuzz_edit(original: &str, edits: &[(&str, &str)]) -> Result<String, String> {
    edit::apply(original, edits).map(|edited| edited.text)
}

/// read's image path: whether `bytes` decode and fit (or say why not), without panicking.
#[cfg(feature = "fuzzing")]
pub(crate) fn fuzz_image(bytes: &[u8]) -> bool {
    matches!(
        images::fit(bytes, "image/png", &|| false),
        images::Fitted::Original { .. } | images::Fitted::Reduced { .. }
    )
}

/// The names of the built-in tools, in the order [`new`] returns them.
pub const TOOL_NAMES: [&str; 4] = ["read", "bash", "edit", "write"];

/// Built-ins [`new`] returns only when `allowed_tool_names` names them, after the four: `grep`
/// (file contents by regular expression), `find` (files by glob), `ls` (a directory), and
/// `update_plan` (the model's plan of steps, shown as it changes; see [`plan_of`]), `web_fetch`
/// (a web page as Markdown, reaching only what [`Config::web_fetch`] allows; see [`WebFetch`]), and
/// `bash_output` and `bash_kill`, which read and end background commands (`bash` with
/// `"background": true`, see [`Background`]). With `read` the first three make an agent that
/// looks without a shell (`["read", "grep", "find", "ls"]`).
pub const OPTIONAL_TOOL_NAMES: [&str; 7] = [
    "grep",
    "find",
    "ls",
    "update_plan",
    "bash_output",
    "bash_kill",
    "web_fetch",
];

/// Which tools [`new`] returns.
#[derive(Debug, Clone, Default)]
pub struct Config {
    /// Directory relative paths resolve against; empty means the process's current directory at
    /// the time of [`new`].
    pub working_directory: PathBuf,
    /// `None` selects every candidate; `Some(vec![])` selects none. Every name listed must be a
    /// built-in or a custom tool; repeats are ignored.
    pub allowed_tool_names: Option<Vec<String>>,
    /// Names removed after the allowlist; exclusions always win. Every name listed must exist.
    pub excluded_tool_names: Vec<String>,
    /// Tools of the application, returned after the built-ins.
    pub custom_tools: Vec<Tool>,
    /// Leaves out the built-ins (custom tools are kept).
    pub disable_builtin_tools: bool,
    /// The actor host of the set's path lock; `None` uses [`Host::global`].
    pub host: Option<Host>,
    /// The environment of `bash`'s commands. `None` (the default) passes on this process's
    /// whole environment, secrets such as API keys included; `Some(variables)` gives the
    /// commands exactly these variables and nothing else (include `PATH`, `HOME`, `LANG` as the
    /// commands need them; `bash` itself is found on this `PATH` when it has one). Either way
    /// golato adds `GOLATO_TOOL_CALL_ID`, `GOLATO_TOOL_ATTEMPT` and, in a journaled run with a
    /// key, `GOLATO_RUN_KEY` (see [`ToolContext::attempt`](crate::tool::ToolContext::attempt)).
    ///
    /// ```
    /// use golato::builtin;
    ///
    /// let path = std::env::var("PATH").unwrap_or_default();
    /// let tools = builtin::new(builtin::Config {
    ///     bash_environment: Some(vec![("PATH".into(), path), ("LANG".into(), "C.UTF-8".into())]),
    ///     ..Default::default()
    /// })?;
    /// # Ok::<(), builtin::Error>(())
    /// ```
    pub bash_environment: Option<Vec<(String, String)>>,
    /// Most bytes `bash` writes to a command's full-output file; past it the file stops and
    /// the result says so (the tail shown is still the command's last output). `None` means
    /// [`DEFAULT_BASH_OUTPUT_FILE_LIMIT`].
    pub bash_output_file_limit: Option<u64>,
    /// A lock shared with other processes that `write` and `edit` also take on a file (after
    /// this process's own), for processes sharing a file system: durable workers use
    /// `golato_restate::SharedPathLock`. `None` (the default): the lock is this process's.
    pub shared_lock: Option<Arc<dyn SharedLock>>,
    /// What the built-ins may touch ([`sandbox`]); [`sandbox::Policy::off`]
    /// (the default) leaves them the process's power. Any other mode is checked by [`new`],
    /// which fails with [`Error::Sandbox`] where the kernel cannot enforce it.
    pub sandbox: sandbox::Policy,
    /// Where `read`, `edit` and `write` take and put text instead of the disk (an editor's
    /// buffers; see [`TextFiles`]); `None` (the default): the disk.
    pub text_files: Option<Arc<dyn TextFiles>>,
    /// Rules whose `read(…)` denials and questions also hold for `grep`, `find` and `ls`: a
    /// file they name is left out of every listing and search (and counted), as the sandbox's
    /// denied paths are, since a search cannot stop to ask. `None` (the default): none. A
    /// [`CallPolicy`](crate::policy::CallPolicy)'s `rules`, so that `read(secret/**)` keeps
    /// `secret/`'s names and contents from the search tools too.
    pub read_rules: Option<Arc<crate::policy::Rules>>,
    /// Where `bash` keeps what its commands change, for checkpoints an application can undo
    /// ([`Checkpoints`]); captured only under [`sandbox::Mode::WorkspaceWrite`], where the
    /// result's details say what changed. `None` (the default): not captured.
    pub bash_checkpoints: Option<Arc<dyn Checkpoints>>,
    /// How the proxy of a sandbox whose network goes by domain
    /// ([`sandbox::Policy::domains`]) resolves names; `None` (the default): the system's
    /// resolver ([`crate::proxy::SystemResolver`]).
    pub network_resolver: Option<Arc<dyn crate::proxy::Resolve>>,
    /// Where that proxy also tells every connection of every call, as it ends (each call's
    /// result lists its own in its details, `network`); `None` (the default): nowhere else.
    pub network_log: Option<crate::proxy::ConnectionLog>,
    /// Where `bash` puts background commands, when `bash_output` or `bash_kill` is named in
    /// `allowed_tool_names`: keep a clone to list and end them. `None` makes one that runs at
    /// most [`DEFAULT_MAX_BACKGROUND_COMMANDS`] at once.
    pub background: Option<Background>,
    /// How `web_fetch` (named in `allowed_tool_names`) reaches pages: the hosts it may reach
    /// and what it does with others ([`WebFetch`]). By default it reaches none but the ones
    /// `domains` lists, whose resolver is [`Config::network_resolver`]'s.
    pub web_fetch: WebFetch,
    /// What [`recover_captured`] applied before this set was built: a journaled run's `bash`
    /// call that was cut off with its process and is not run again ([`Replay::Once`]) names
    /// in its result the changes its command left staged. Empty by default.
    ///
    /// [`Replay::Once`]: crate::tool::Replay::Once
    pub recovered: Vec<Recovered>,
}

/// How much of a command's output `bash` keeps in its full-output file by default: 64 MiB.
pub const DEFAULT_BASH_OUTPUT_FILE_LIMIT: u64 = 64 * 1024 * 1024;

/// Why [`new`] could not build the set.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A name in `allowed_tool_names` or `excluded_tool_names` is neither a built-in nor a
    /// custom tool.
    #[error("builtin::Config names the tool {name:?}, which does not exist; known tools: {known}")]
    UnknownToolName {
        /// The name.
        name: String,
        /// The built-in and custom tool names, comma-separated.
        known: String,
    },
    /// The working directory could not be determined.
    #[error("could not determine the working directory {path:?}: {source}; pass an existing directory in builtin::Config::working_directory")]
    WorkingDirectory {
        /// The directory asked for (empty: the process's current directory).
        path: PathBuf,
        /// What the file system said.
        #[source]
        source: std::io::Error,
    },
    /// The path lock's actor could not start.
    #[error(transparent)]
    Host(#[from] HostError),
    /// The sandbox asked for in `builtin::Config::sandbox` cannot be set up.
    #[error(transparent)]
    Sandbox(#[from] sandbox::Error),
}

/// Applies what sandboxed commands in `working_directory` changed but never saw applied
/// because the process running them died (golato killed mid-command): their staging areas in
/// `checkpoints`' area, once none of their processes is alive. Files are kept through
/// `checkpoints` as for any captured command; what each applied is returned (the caller says
/// so). Call it before a new agent starts in that directory.
pub fn recover_captured(
    checkpoints: &dyn Checkpoints,
    working_directory: &std::path::Path,
) -> Vec<Recovered> {
    bash::recover(checkpoints, working_directory)
}

/// Builds the selected tools: built-ins (read, bash, edit, write) then custom tools.
///
/// # Errors
/// [`Error::UnknownToolName`] for a listed name that does not exist, [`Error::WorkingDirectory`]
/// when the working directory cannot be resolved, [`Error::Host`] when the actor host is down,
/// [`Error::Sandbox`] when the sandbox asked for cannot be enforced.
pub fn new(config: Config) -> Result<Vec<Tool>, Error> {
    let mut workspace =
        Workspace::new(&config.working_directory).map_err(|source| Error::WorkingDirectory {
            path: config.working_directory.clone(),
            source,
        })?;
    let sandbox = sandbox::Prepared::new(&config.sandbox, workspace.cwd())?.map(Arc::new);
    if let Some(sandbox) = &sandbox {
        workspace = workspace.confined(sandbox);
    }
    let guard = match (&sandbox, config.sandbox.guard) {
        (None, true) => Some(Arc::new(sandbox::Guard::new(
            config.sandbox.helper.as_deref(),
        )?)),
        _ => None,
    };
    let proxy = sandbox
        .as_ref()
        .and_then(|sandbox| sandbox.domains())
        .map(|domains| {
            let resolver = config
                .network_resolver
                .clone()
                .unwrap_or_else(|| Arc::new(crate::proxy::SystemResolver));
            let proxy = crate::proxy::Proxy::new(domains.clone(), resolver);
            match &config.network_log {
                Some(log) => proxy.with_log(log.clone()),
                None => proxy,
            }
        });
    let workspace = Arc::new(
        workspace
            .with_text_files(config.text_files.clone())
            .with_read_rules(config.read_rules.clone()),
    );
    let host = match config.host {
        Some(host) => host,
        None => Host::global()?,
    };
    let lock = locks::Locks::new(PathLock::new(&host)?, config.shared_lock.clone());
    let named = |name: &str| {
        config
            .allowed_tool_names
            .as_ref()
            .is_some_and(|names| names.iter().any(|allowed| allowed == name))
    };
    let background = (named("bash_output") || named("bash_kill")).then(|| {
        config
            .background
            .clone()
            .unwrap_or_else(|| Background::new(DEFAULT_MAX_BACKGROUND_COMMANDS))
    });
    // From the first background command on, the set's sandboxed commands share one network
    // namespace, so that a server one started can be reached by the next command (and by
    // nothing outside the session). Made then, not here: a holder process per set that never
    // starts one would cost a process and a descriptor each (600 editor sessions).
    let share_network = background.is_some()
        && sandbox
            .as_ref()
            .is_some_and(|sandbox| sandbox.shares_network());
    let mut builtins = if config.disable_builtin_tools {
        Vec::new()
    } else {
        vec![
            read::tool(Arc::clone(&workspace)),
            bash::tool(
                Arc::clone(&workspace),
                bash::Settings {
                    environment: config.bash_environment.map(Arc::new),
                    output_file_limit: config
                        .bash_output_file_limit
                        .unwrap_or(DEFAULT_BASH_OUTPUT_FILE_LIMIT),
                    sandbox,
                    guard,
                    checkpoints: config.bash_checkpoints.clone(),
                    proxy,
                    background: background.clone(),
                    share_network,
                },
                config.recovered,
            ),
            edit::tool(Arc::clone(&workspace), lock.clone()),
            write::tool(Arc::clone(&workspace), lock),
        ]
    };
    if !config.disable_builtin_tools {
        type Build = fn(Arc<Workspace>) -> Tool;
        let optional: [(&str, Build); 4] = [
            ("grep", search::grep),
            ("find", search::find),
            ("ls", search::ls),
            ("update_plan", plan::tool),
        ];
        for (name, build) in optional {
            if named(name) {
                builtins.push(build(Arc::clone(&workspace)));
            }
        }
        if named("web_fetch") {
            let resolver = config
                .web_fetch
                .resolver
                .clone()
                .or_else(|| config.network_resolver.clone())
                .unwrap_or_else(|| Arc::new(crate::proxy::SystemResolver));
            builtins.push(web_fetch::tool(config.web_fetch.clone(), resolver));
        }
        if let Some(background) = background {
            if named("bash_output") {
                builtins.push(bash::background_output_tool(background.clone()));
            }
            if named("bash_kill") {
                builtins.push(bash::background_kill_tool(background));
            }
        }
    }
    select(
        builtins,
        config.custom_tools,
        config.allowed_tool_names.as_deref(),
        &config.excluded_tool_names,
    )
}

/// Applies the allowlist, then the exclusions, keeping the candidates' order.
fn select(
    builtins: Vec<Tool>,
    custom: Vec<Tool>,
    allowed: Option<&[String]>,
    excluded: &[String],
) -> Result<Vec<Tool>, Error> {
    let known: Vec<String> = TOOL_NAMES
        .iter()
        .chain(&OPTIONAL_TOOL_NAMES)
        .map(|name| (*name).to_owned())
        .chain(custom.iter().map(|tool| tool.name().to_owned()))
        .collect();
    for name in allowed.unwrap_or_default().iter().chain(excluded) {
        if !known.contains(name) {
            return Err(Error::UnknownToolName {
                name: name.clone(),
                known: known.join(", "),
            });
        }
    }
    Ok(builtins
        .into_iter()
        .chain(custom)
        .filter(|tool| allowed.is_none_or(|allowed| allowed.iter().any(|name| name == tool.name())))
        .filter(|tool| !excluded.iter().any(|name| name == tool.name()))
        .collect())
}
