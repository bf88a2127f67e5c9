//! Diagnostics after every edit: the project's language servers, asked what a change broke.
//!
//! [`Diagnostics`] starts a language server (pyright, typescript-language-server,
//! rust-analyzer, gopls, clangd, or one you name: [`ServerSpec`]) the first time a call edits
//! or writes a file it serves, one per server and workspace, and keeps it for the session. Its
//! [`Diagnostics::hook`] reads the file before an `edit` or `write` runs and after it succeeds,
//! gives both to the server, waits a bounded time ([`Config::wait`]) for what it publishes,
//! and appends to the call's result the diagnostics the change introduced (errors first, a few
//! warnings, at most 20 lines): the model fixes what it broke, not the whole project. A clean
//! change adds nothing; a server too slow adds "diagnostics were not ready within N ms". The
//! result's details get a `diagnostics` object (`summary`: "2 new errors in calc.py"). A `bash`
//! call whose changes were captured (`builtin::captured_changes`) gets the same for the served
//! files it changed that a server had open, or that it created.
//! [`Diagnostics::tool`] is the `diagnostics` tool: a file's, or every file's served so far.
//!
//! [`Config::linters`] adds commands without a server ([`LinterSpec`]: ruff, eslint), run on the
//! file's text and read in a format you name; their findings join the server's.
//!
//! Servers are bounded: a message over 16 MiB or not the protocol's stops one, a flood is kept
//! to 500 diagnostics a file, one that does not start or answer in time is left off, one that
//! stops is started again at most twice, and each of these is one line in the next result
//! ([`Diagnostics::notes`] too). Under a [`Config::sandbox`] a server runs confined as `bash`
//! is, read-only: it cannot change the workspace, nor reach the network unless that policy
//! allows it.
//!
//! ```no_run
//! use std::sync::Arc;
//! use golato::diagnostics::{Config, Diagnostics};
//!
//! # fn main() -> Result<(), golato::builtin::Error> {
//! let diagnostics = Diagnostics::new(Config::new("/work/project"));
//! let config = golato::agent::Config {
//!     tools: golato::builtin::new(golato::builtin::Config {
//!         working_directory: "/work/project".into(),
//!         ..Default::default()
//!     })?
//!         .into_iter()
//!         .chain([diagnostics.tool()])
//!         .collect(),
//!     hooks: vec![diagnostics.hook()],
//!     ..Default::default()
//! };
//! # let _ = config;
//! # Ok(())
//! # }
//! ```

mod config;
mod hook;
mod linter;
mod report;
mod server;
mod tool;

pub use config::{Config, ServerSpec};
pub use hook::summary;
pub use linter::{LintFormat, LinterSpec};

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use futures::future::{BoxFuture, Shared};
use futures::FutureExt as _;
use lsp_types::Diagnostic;
use server::{root_uri, Server};

use crate::diagnostics::config::language_id;
use crate::hook::Hook;

/// How many times a server that stopped is started again.
const RESTARTS: u32 = 2;

/// A server's place: starting (shared by every call waiting for it), running, or left off.
enum Slot {
    Starting(Shared<BoxFuture<'static, Result<Arc<Server>, String>>>),
    Running(Arc<Server>),
    Off,
}

/// A call's file as it was before the call, being checked: its diagnostics, if the server
/// gave them.
type Before = Shared<BoxFuture<'static, Option<Vec<Diagnostic>>>>;

struct Inner {
    config: Config,
    slots: Mutex<HashMap<String, (Slot, u32)>>,
    /// Lines for the next result, and for [`Diagnostics::notes`].
    notes: Mutex<Vec<String>>,
    told: Mutex<Vec<String>>,
    /// Each call's file as it was before it ran, checked (by run and call ID).
    before: Mutex<HashMap<(u64, String), Before>>,
}

/// The project's language servers and what they say about the files calls change. Cheap to
/// clone; servers stop when the last clone is dropped.
#[derive(Clone)]
pub struct Diagnostics {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Diagnostics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Diagnostics")
            .field("root", &self.inner.config.root)
            .finish_non_exhaustive()
    }
}

/// What a server said of one file.
#[derive(Debug)]
enum Checked {
    /// No server serves the file's language (or it is not installed, or left off).
    Unserved,
    Published(Vec<Diagnostic>, usize),
    NotReady,
    Failed(String),
}

impl Diagnostics {
    /// Diagnostics for `config.root`; no server starts before a call needs one.
    pub fn new(mut config: Config) -> Diagnostics {
        // Files are checked only inside the root, compared as the file system resolves them.
        if let Ok(canonical) = config.root.canonicalize() {
            config.root = canonical;
        }
        Diagnostics {
            inner: Arc::new(Inner {
                config,
                slots: Mutex::new(HashMap::new()),
                notes: Mutex::new(Vec::new()),
                told: Mutex::new(Vec::new()),
                before: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// The hook that appends what an `edit` or `write` broke to its result.
    pub fn hook(&self) -> Arc<dyn Hook> {
        Arc::new(self.clone())
    }

    /// Every line said so far about servers (started again, left off, and why).
    pub fn notes(&self) -> Vec<String> {
        self.inner
            .told
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn note(&self, line: String) {
        tracing::warn!(target: "golato::diagnostics", "{line}");
        self.inner
            .told
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(line.clone());
        self.inner
            .notes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(line);
    }

    fn take_notes(&self) -> Vec<String> {
        std::mem::take(
            &mut *self
                .inner
                .notes
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        )
    }

    /// The file `path` names (relative to the root), if it lies inside the root once `..`
    /// and links are followed: a call naming a file elsewhere (`../x.py`, an absolute path, a
    /// link planted in the workspace) has it neither read nor shown to a server.
    fn resolve(&self, path: &str) -> Option<PathBuf> {
        self.inside(&self.inner.config.root.join(path))
    }

    /// `file` as the file system resolves it, if that is inside the root. A file not there yet
    /// (a write creates it) is resolved by its folder.
    fn inside(&self, file: &Path) -> Option<PathBuf> {
        let resolved = match file.canonicalize() {
            Ok(resolved) => resolved,
            Err(_) => file.parent()?.canonicalize().ok()?.join(file.file_name()?),
        };
        resolved
            .starts_with(&self.inner.config.root)
            .then_some(resolved)
    }

    /// Whether a server or a linter checks `file`.
    fn serves(&self, file: &Path) -> bool {
        let linted = file
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|extension| {
                self.inner
                    .config
                    .linters
                    .iter()
                    .any(|linter| linter.extensions.iter().any(|e| e == extension))
            });
        linted || self.spec_for(file).is_some()
    }

    /// The server for `file`'s extension that is installed.
    fn spec_for(&self, file: &Path) -> Option<&ServerSpec> {
        let extension = file.extension()?.to_str()?;
        self.inner
            .config
            .servers
            .iter()
            .find(|spec| spec.extensions.iter().any(|e| e == extension) && spec.is_installed())
    }

    /// The running server `spec` names, started if it is not (and not left off).
    /// The folder `spec`'s server for `file` runs in: the nearest folder from the file's up to
    /// the workspace holding one of its root markers, else the workspace.
    fn root_for(&self, spec: &ServerSpec, file: &Path) -> PathBuf {
        let workspace = &self.inner.config.root;
        if !spec.root_markers.is_empty() {
            let mut folder = file.parent();
            while let Some(here) = folder.filter(|here| here.starts_with(workspace)) {
                if spec
                    .root_markers
                    .iter()
                    .any(|marker| here.join(marker).exists())
                {
                    return here.to_path_buf();
                }
                folder = here.parent();
            }
        }
        workspace.clone()
    }

    /// The key of `spec`'s server in `root`: one per server and root.
    fn slot_key(spec: &ServerSpec, root: &Path) -> String {
        format!("{}\u{0}{}", spec.name, root.display())
    }

    async fn server(&self, spec: &ServerSpec, root: &Path) -> Option<Arc<Server>> {
        let key = Diagnostics::slot_key(spec, root);
        let starting = {
            let mut slots = self
                .inner
                .slots
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            let (slot, starts) = slots.entry(key.clone()).or_insert((Slot::Off, 0));
            match slot {
                Slot::Running(server) if server.stopped().is_none() => {
                    return Some(Arc::clone(server))
                }
                Slot::Starting(starting) => starting.clone(),
                Slot::Off if *starts > RESTARTS => return None,
                _ => {
                    let stopped = match slot {
                        Slot::Running(server) => server.stopped(),
                        _ => None,
                    };
                    if let Some(why) = stopped {
                        if *starts > RESTARTS {
                            *slot = Slot::Off;
                            self.note(format!(
                                "language server {} stopped ({why}) and was started again {RESTARTS} times already: left off for this session",
                                spec.name
                            ));
                            return None;
                        }
                        self.note(format!(
                            "language server {} stopped ({why}); starting it again",
                            spec.name
                        ));
                    }
                    *starts += 1;
                    let (spec, root, sandbox, within) = (
                        spec.clone(),
                        root.to_path_buf(),
                        self.inner.config.sandbox.clone(),
                        self.inner.config.start_within,
                    );
                    let starting = async move {
                        Server::start(&spec, &root, sandbox.as_deref(), within)
                            .await
                            .map(Arc::new)
                    }
                    .boxed()
                    .shared();
                    *slot = Slot::Starting(starting.clone());
                    starting
                }
            }
        };
        let started = starting.await;
        let mut slots = self
            .inner
            .slots
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let (slot, starts) = slots.get_mut(&key)?;
        match started {
            Ok(server) => {
                if matches!(slot, Slot::Starting(_)) {
                    *slot = Slot::Running(Arc::clone(&server));
                }
                Some(server)
            }
            Err(why) => {
                let first = matches!(slot, Slot::Starting(_));
                *slot = Slot::Off;
                // A server that cannot start is not tried again: its next start would fail
                // the same way, and cost every call the wait.
                *starts = RESTARTS + 1;
                drop(slots);
                if first {
                    self.note(format!(
                        "language server {} could not start ({why}): left off for this session",
                        spec.name
                    ));
                }
                None
            }
        }
    }

    /// Gives the server `text` as `file`'s content and waits until `deadline` for what it
    /// publishes about it.
    async fn check(&self, file: &Path, text: &str, deadline: tokio::time::Instant) -> Checked {
        let (served, linted) = futures::join!(
            self.check_server(file, text, deadline),
            self.lint(file, text, deadline)
        );
        let said = |checked: &Checked| match checked {
            Checked::NotReady => Some(format!(
                "The language server's diagnostics were not ready within {} ms.",
                self.inner.config.wait.as_millis()
            )),
            Checked::Failed(why) => Some(why.clone()),
            _ => None,
        };
        match (served, linted) {
            (served, None) => served,
            (Checked::Unserved, Some(linted)) => linted,
            (Checked::Published(mut found, left), Some(Checked::Published(more, more_left))) => {
                found.extend(more);
                Checked::Published(found, left + more_left)
            }
            (Checked::Published(found, left), Some(other))
            | (other, Some(Checked::Published(found, left))) => {
                if let Some(line) = said(&other) {
                    self.note(line);
                }
                Checked::Published(found, left)
            }
            (served, Some(_)) => served,
        }
    }

    /// What the linters of `file`'s extension say of `text`; `None` when none checks it.
    async fn lint(
        &self,
        file: &Path,
        text: &str,
        deadline: tokio::time::Instant,
    ) -> Option<Checked> {
        let extension = file.extension()?.to_str()?;
        let linters: Vec<&LinterSpec> = self
            .inner
            .config
            .linters
            .iter()
            .filter(|linter| linter.extensions.iter().any(|e| e == extension))
            .collect();
        if linters.is_empty() {
            return None;
        }
        let root = &self.inner.config.root;
        let shown = file
            .strip_prefix(root)
            .unwrap_or(file)
            .display()
            .to_string();
        // A linter starts no server: it has the call's wait at most, also before a change.
        let within = deadline
            .saturating_duration_since(tokio::time::Instant::now())
            .min(self.inner.config.wait);
        let sandbox = self.inner.config.sandbox.as_deref();
        let runs = linters
            .iter()
            .map(|linter| linter::run(linter, root, &shown, text, sandbox, within));
        let mut found = Vec::new();
        let mut left_out = 0;
        for outcome in futures::future::join_all(runs).await {
            match outcome {
                Ok((more, more_left)) => {
                    found.extend(more);
                    left_out += more_left;
                }
                Err(why) => return Some(Checked::Failed(why)),
            }
        }
        Some(Checked::Published(found, left_out))
    }

    async fn check_server(
        &self,
        file: &Path,
        text: &str,
        deadline: tokio::time::Instant,
    ) -> Checked {
        let Some(spec) = self.spec_for(file) else {
            return Checked::Unserved;
        };
        let root = self.root_for(spec, file);
        let Some(server) = self.server(spec, &root).await else {
            return Checked::Unserved;
        };
        let uri = root_uri(file);
        let language = language_id(file.extension().and_then(|e| e.to_str()).unwrap_or(""));
        let shown = async {
            let (version, seq) = server.show(&uri, language, text).await?;
            server.published(&uri, seq, version, deadline).await
        };
        match shown.await {
            Ok(Some(published)) => Checked::Published(published.diagnostics, published.left_out),
            Ok(None) => Checked::NotReady,
            Err(why) => {
                server.stop();
                Checked::Failed(format!("language server {} stopped: {why}", server.name))
            }
        }
    }
}
