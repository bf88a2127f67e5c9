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

mod linter;
mod report;
mod server;

pub use linter::{LintFormat, LinterSpec};

use std::collections::HashMap;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::future::{BoxFuture, Shared};
use futures::FutureExt as _;
use lsp_types::Diagnostic;
use serde_json::{json, Value};

use crate::hook::{AfterToolCall, BeforeToolCall, Hook, HookContext};
use crate::tool::{BoxError, Tool, ToolResult};
use server::{root_uri, Server};

/// A language server golato may start: how, and for which files.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[non_exhaustive]
pub struct ServerSpec {
    /// Its name (`pyright`): in notes and in configuration (`[lsp.pyright]`).
    pub name: String,
    /// The program and its arguments (`["pyright-langserver", "--stdio"]`).
    pub command: Vec<String>,
    /// The file extensions it serves, without the dot (`py`).
    pub extensions: Vec<String>,
    /// Files or folders whose presence says a folder is a project of its language
    /// (`pyproject.toml`); empty: any folder.
    #[serde(default)]
    pub root_markers: Vec<String>,
}

impl ServerSpec {
    /// A server for files with `extensions`, started as `command`.
    pub fn new(
        name: impl Into<String>,
        command: impl IntoIterator<Item = impl Into<String>>,
        extensions: impl IntoIterator<Item = impl Into<String>>,
    ) -> ServerSpec {
        ServerSpec {
            name: name.into(),
            command: command.into_iter().map(Into::into).collect(),
            extensions: extensions.into_iter().map(Into::into).collect(),
            root_markers: Vec::new(),
        }
    }

    /// The servers golato knows, each used when its program is on `PATH` (the first of a
    /// language's found wins: pyright before pylsp).
    pub fn builtin() -> Vec<ServerSpec> {
        let spec =
            |name: &str, command: &[&str], extensions: &[&str], markers: &[&str]| ServerSpec {
                root_markers: markers.iter().map(|m| (*m).to_owned()).collect(),
                ..ServerSpec::new(name, command.iter().copied(), extensions.iter().copied())
            };
        vec![
            spec(
                "pyright",
                &["pyright-langserver", "--stdio"],
                &["py", "pyi"],
                &[],
            ),
            spec("pylsp", &["pylsp"], &["py", "pyi"], &[]),
            spec(
                "typescript",
                &["typescript-language-server", "--stdio"],
                &["ts", "tsx", "js", "jsx", "mjs", "cjs"],
                &["package.json", "tsconfig.json", "jsconfig.json"],
            ),
            spec(
                "rust-analyzer",
                &["rust-analyzer"],
                &["rs"],
                &["Cargo.toml"],
            ),
            spec("gopls", &["gopls"], &["go"], &["go.mod"]),
            spec(
                "clangd",
                &["clangd"],
                &["c", "h", "cc", "cpp", "cxx", "hpp", "hh"],
                &[],
            ),
        ]
    }

    /// Whether its program can be found (on `PATH`, or as the path given).
    pub fn is_installed(&self) -> bool {
        let Some(program) = self.command.first() else {
            return false;
        };
        if program.contains('/') {
            return Path::new(program).is_file();
        }
        std::env::var_os("PATH").is_some_and(|path| {
            std::env::split_paths(&path).any(|folder| folder.join(program).is_file())
        })
    }
}

/// The language ID the protocol names a file's language by, from its extension.
fn language_id(extension: &str) -> &str {
    match extension {
        "py" | "pyi" => "python",
        "ts" => "typescript",
        "tsx" => "typescriptreact",
        "js" | "mjs" | "cjs" => "javascript",
        "jsx" => "javascriptreact",
        "rs" => "rust",
        "go" => "go",
        "c" | "h" => "c",
        "cc" | "cpp" | "cxx" | "hpp" | "hh" => "cpp",
        other => other,
    }
}

/// How [`Diagnostics`] runs servers.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Config {
    /// The workspace: the folder servers start in, and the one relative paths are in.
    pub root: PathBuf,
    /// The servers it may start, in order of preference; default: [`ServerSpec::builtin`]
    /// (only those installed are started).
    pub servers: Vec<ServerSpec>,
    /// How long a call waits for a file's fresh diagnostics (2 s).
    pub wait: Duration,
    /// How long a server may take to start and answer `initialize` (20 s): the first call of a
    /// language waits this much more at most.
    pub start_within: Duration,
    /// Linters run on a changed file's text besides its server (none by default).
    pub linters: Vec<LinterSpec>,
    /// Confines every server read-only (a [`golato_sandbox::Policy::read_only`] prepared for
    /// the root), with the network that policy allows; `None`: servers run unconfined.
    pub sandbox: Option<Arc<golato_sandbox::Prepared>>,
}

impl Config {
    /// The built-in servers for `root`, unconfined, waiting 2 s.
    pub fn new(root: impl Into<PathBuf>) -> Config {
        Config {
            root: root.into(),
            servers: ServerSpec::builtin(),
            wait: Duration::from_secs(2),
            start_within: Duration::from_secs(20),
            linters: Vec::new(),
            sandbox: None,
        }
    }
}

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

/// What a call's result says its change broke, for a person ("2 new errors in calc.py"):
/// the `diagnostics` summary [`Diagnostics::hook`] put in its details.
///
/// ```
/// use serde_json::json;
/// let details = json!({"diagnostics": {"summary": "1 new error in calc.py"}});
/// assert_eq!(golato::diagnostics::summary(Some(&details)), Some("1 new error in calc.py"));
/// assert_eq!(golato::diagnostics::summary(None), None);
/// ```
pub fn summary(details: Option<&Value>) -> Option<&str> {
    details?.get("diagnostics")?.get("summary")?.as_str()
}

/// The tools whose changes are checked, and the argument naming the file.
fn changed_file(ctx: &HookContext) -> Option<&str> {
    match ctx.call.name.as_str() {
        "edit" | "write" => ctx.arguments["path"].as_str(),
        _ => None,
    }
}

/// The most bytes of a file golato reads to check it.
const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// A file's text, if it is one golato would check: a regular file (never a FIFO or a device,
/// which could block or never end) of at most 4 MiB, UTF-8. Bounded as read too: a file that
/// says it is small (`/proc`'s say 0) cannot make it read more.
fn text_of(file: &Path) -> Option<String> {
    use std::io::Read as _;
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open(file)
        .ok()?;
    let metadata = opened.metadata().ok()?;
    if !metadata.is_file() || metadata.len() > MAX_FILE_BYTES {
        return None;
    }
    let mut bytes = Vec::new();
    opened
        .take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .ok()?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return None;
    }
    String::from_utf8(bytes).ok()
}

impl Hook for Diagnostics {
    fn before_tool_call(
        &self,
        ctx: HookContext,
    ) -> BoxFuture<'static, Result<BeforeToolCall, BoxError>> {
        if let Some(file) = changed_file(&ctx).and_then(|path| self.resolve(path)) {
            if self.serves(&file) {
                // The file as it is now, read before the call runs; checked meanwhile, so the
                // call is not held up: the after-hook waits for it within its own bound.
                let text = text_of(&file).unwrap_or_default();
                let this = self.clone();
                let wait = self.inner.config.wait + self.inner.config.start_within;
                let before = async move {
                    let deadline = tokio::time::Instant::now() + wait;
                    match this.check(&file, &text, deadline).await {
                        Checked::Published(diagnostics, _) => Some(diagnostics),
                        _ => None,
                    }
                }
                .boxed();
                let before = before.shared();
                // Started now, whether or not anyone polls it yet.
                tokio::spawn(before.clone());
                self.inner
                    .before
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert((ctx.run_id, ctx.call.id.clone()), before);
            }
        }
        async { Ok(BeforeToolCall::Run) }.boxed()
    }

    fn after_tool_call(
        &self,
        ctx: HookContext,
        result: ToolResult,
    ) -> BoxFuture<'static, Result<AfterToolCall, BoxError>> {
        let before = self
            .inner
            .before
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&(ctx.run_id, ctx.call.id.clone()));
        if ctx.call.name == "bash" && !result.is_error {
            return self.clone().after_command(result).boxed();
        }
        let Some(path) = changed_file(&ctx).map(str::to_owned) else {
            return async { Ok(AfterToolCall::Keep) }.boxed();
        };
        let this = self.clone();
        async move {
            let Some(before) = before else {
                return Ok(AfterToolCall::Keep);
            };
            if result.is_error {
                return Ok(AfterToolCall::Keep);
            }
            let Some(file) = this.resolve(&path) else {
                return Ok(AfterToolCall::Keep);
            };
            let wait = this.inner.config.wait;
            let started = tokio::time::Instant::now();
            // The first call of a language also waits for its server to start.
            let before = tokio::time::timeout(wait + this.inner.config.start_within, before)
                .await
                .unwrap_or_default();
            let deadline = tokio::time::Instant::now() + wait;
            let Some(text) = text_of(&file) else {
                return Ok(AfterToolCall::Keep);
            };
            let checked = this.check(&file, &text, deadline).await;
            let mut lines = this.take_notes();
            let mut details = None;
            match checked {
                Checked::Unserved => {}
                Checked::NotReady => lines.push(format!(
                    "Diagnostics were not ready within {} ms.",
                    wait.as_millis()
                )),
                Checked::Failed(why) => lines.push(why),
                Checked::Published(after, left_out) => {
                    let new = report::introduced(before.as_deref(), &after);
                    let there = after.len() - new.len();
                    if let Some(report) = report::report(&path, &new, there, left_out) {
                        lines.push(report.text);
                        details = Some(report.details);
                    }
                }
            }
            tracing::debug!(target: "golato::diagnostics", path, waited_ms = started.elapsed().as_millis() as u64, "checked a change");
            if lines.is_empty() {
                return Ok(AfterToolCall::Keep);
            }
            // What is not a report (a server left off, not ready in time) is a person's line
            // too: the summary says it.
            let said: Vec<&str> = lines
                .iter()
                .filter(|line| !line.starts_with("Diagnostics after this change"))
                .map(String::as_str)
                .collect();
            if !said.is_empty() {
                let details = details.get_or_insert_with(|| json!({}));
                let summary = match details["summary"].as_str() {
                    Some(summary) => format!("{summary}; {}", said.join("; ")),
                    None => said.join("; "),
                };
                details["summary"] = summary.into();
            }
            let mut result = result;
            result
                .content
                .push(crate::message::Content::text(lines.join("\n")));
            if let Some(details) = details {
                result.details = Some(match result.details.take() {
                    Some(Value::Object(mut fields)) => {
                        fields.insert("diagnostics".into(), details);
                        Value::Object(fields)
                    }
                    Some(other) => json!({"result": other, "diagnostics": details}),
                    None => json!({ "diagnostics": details }),
                });
            }
            Ok(AfterToolCall::Replace(result))
        }
        .boxed()
    }
}

/// At most this many files a command changed are checked after it.
const MAX_COMMAND_FILES: usize = 5;

impl Diagnostics {
    /// After a `bash` command whose changes were captured: the served files it changed, each
    /// told what the command introduced. The state before is what the server last published
    /// for a file it had open, or nothing for a file the command created; a file it changed
    /// that no server had seen is left out (its old errors are not the command's).
    async fn after_command(self, result: ToolResult) -> Result<AfterToolCall, BoxError> {
        let Some(changes) = crate::builtin::captured_changes(result.details.as_ref()) else {
            return Ok(AfterToolCall::Keep);
        };
        let deadline = tokio::time::Instant::now() + self.inner.config.wait;
        let mut lines = Vec::new();
        let mut summaries = Vec::new();
        let mut files = Vec::new();
        let served = changes.into_iter().filter(|change| {
            change.after != golato_sandbox::capture::FileState::Absent
                && self.inside(&change.path).is_some()
                && self.serves(&change.path)
        });
        for change in served.take(MAX_COMMAND_FILES) {
            let before = match change.before {
                golato_sandbox::capture::FileState::Absent => Some(Vec::new()),
                _ => self.open_publication(&change.path),
            };
            let (Some(before), Some(text)) = (before, text_of(&change.path)) else {
                continue;
            };
            let shown = change
                .path
                .strip_prefix(&self.inner.config.root)
                .unwrap_or(&change.path)
                .display()
                .to_string();
            match self.check(&change.path, &text, deadline).await {
                Checked::Published(after, left_out) => {
                    let new = report::introduced(Some(&before), &after);
                    let there = after.len() - new.len();
                    if let Some(told) = report::report(&shown, &new, there, left_out) {
                        lines.push(told.text);
                        summaries.push(told.summary);
                        files.push(told.details);
                    }
                }
                Checked::NotReady => lines.push(format!(
                    "Diagnostics of {shown} were not ready within {} ms.",
                    self.inner.config.wait.as_millis()
                )),
                Checked::Failed(why) => lines.push(why),
                Checked::Unserved => {}
            }
        }
        lines.extend(self.take_notes());
        if lines.is_empty() {
            return Ok(AfterToolCall::Keep);
        }
        let mut result = result;
        result
            .content
            .push(crate::message::Content::text(lines.join("\n")));
        if !summaries.is_empty() {
            if let Some(Value::Object(fields)) = &mut result.details {
                fields.insert(
                    "diagnostics".into(),
                    json!({"summary": summaries.join("; "), "files": files}),
                );
            }
        }
        Ok(AfterToolCall::Replace(result))
    }

    /// What the running server of `file` last published for it, if it has the file open.
    fn open_publication(&self, file: &Path) -> Option<Vec<Diagnostic>> {
        let spec = self.spec_for(file)?;
        let slots = self
            .inner
            .slots
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let key = Diagnostics::slot_key(spec, &self.root_for(spec, file));
        let Some((Slot::Running(server), _)) = slots.get(&key) else {
            return None;
        };
        server.last_published(&root_uri(file))
    }
}

/// The `diagnostics` tool's arguments.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct Arguments {
    /// The file to check (relative to the workspace); omit for every file checked so far.
    #[serde(default)]
    path: Option<String>,
    /// Also list warnings and information, not only errors.
    #[serde(default)]
    all: bool,
}

impl Diagnostics {
    /// The `diagnostics` tool: what the language servers say of a file, or of every file
    /// served so far; errors only unless asked for all.
    pub fn tool(&self) -> Tool {
        let this = self.clone();
        Tool::typed(
            "diagnostics",
            "Lists the errors the project's language servers report: for one file (path), or for every file checked so far in this session. Set all to also see warnings.",
            move |_: crate::tool::ToolContext, arguments: Arguments| {
                let this = this.clone();
                async move {
                    this.listing(arguments.path.as_deref(), arguments.all)
                        .await
                        .map(ToolResult::text)
                        .map_err(BoxError::from)
                }
            },
        )
    }

    /// What the servers report, as the `diagnostics` tool says it: of `path` (relative to the
    /// root; checked now), or of every file checked so far; errors only unless `all`.
    ///
    /// # Errors
    ///
    /// `path` is not a readable text file, or its server stopped: the reason, in words.
    pub async fn listing(&self, path: Option<&str>, all: bool) -> Result<String, String> {
        let arguments = Arguments {
            path: path.map(str::to_owned),
            all,
        };
        let keep = |d: &Diagnostic| {
            arguments.all
                || matches!(
                    d.severity,
                    None | Some(lsp_types::DiagnosticSeverity::ERROR)
                )
        };
        let mut lines = Vec::new();
        match &arguments.path {
            Some(path) => {
                let Some(file) = self.resolve(path) else {
                    return Err(format!(
                        "{path} is outside the workspace {}; name a file inside it",
                        self.inner.config.root.display()
                    ));
                };
                let Some(text) = text_of(&file) else {
                    return Err(format!("{path} is not a readable text file"));
                };
                let deadline = tokio::time::Instant::now()
                    + self.inner.config.wait
                    + self.inner.config.start_within;
                match self.check(&file, &text, deadline).await {
                    Checked::Unserved => return Ok(format!("No language server serves {path}.")),
                    Checked::NotReady => {
                        return Ok(format!(
                            "Diagnostics for {path} were not ready within {} ms.",
                            self.inner.config.wait.as_millis()
                        ))
                    }
                    Checked::Failed(why) => return Err(why),
                    Checked::Published(diagnostics, _) => lines.extend(
                        diagnostics
                            .iter()
                            .filter(|d| keep(d))
                            .map(|d| report::line(path, d)),
                    ),
                }
            }
            None => {
                let servers: Vec<Arc<Server>> = self
                    .inner
                    .slots
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .values()
                    .filter_map(|(slot, _)| match slot {
                        Slot::Running(server) => Some(Arc::clone(server)),
                        _ => None,
                    })
                    .collect();
                let root = root_uri(&self.inner.config.root);
                for server in servers {
                    for (uri, published) in server.all_published() {
                        let shown = uri
                            .strip_prefix(&root)
                            .map(|rest| rest.trim_start_matches('/').to_owned())
                            .unwrap_or(uri.clone());
                        lines.extend(
                            published
                                .diagnostics
                                .iter()
                                .filter(|d| keep(d))
                                .map(|d| report::line(&shown, d)),
                        );
                    }
                }
            }
        }
        let total = lines.len();
        lines.truncate(report::MAX_LINES * 5);
        let mut text = match total {
            0 => "No errors reported.".to_owned(),
            _ => lines.join("\n"),
        };
        if total > lines.len() {
            text.push_str(&format!("\n({} more not shown)", total - lines.len()));
        }
        Ok(text)
    }
}
