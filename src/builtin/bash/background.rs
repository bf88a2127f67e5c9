//! Background commands: `bash` with `background: true` starts one and returns at once,
//! `bash_output` reads what it printed since the last read, `bash_kill` ends it.
//!
//! A background command is started exactly as a foreground one ([`super::start`]: the same
//! sandbox, network, capture, mark and guard) and then driven by a task of its own, which keeps
//! its output (a ring of the last [`RING_BYTES`] in memory, everything in a log file) and
//! settles its end (the proxy's connections told, captured changes applied) once it ends. The
//! commands of a tool set live in one [`Background`]; when its last handle drops (the tool set
//! and whoever asked for a handle), every command still running is killed.

mod driver;
mod tools;

pub(super) use driver::start;
pub(in crate::builtin) use tools::{kill_tool, output_tool};

use std::collections::{BTreeMap, VecDeque};
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::super::paths::failure;
use super::processes;
use crate::message::Content;
use crate::tool::ToolResult;

/// Why a durable run refuses `background: true`.
pub(super) const DURABLE_REFUSAL: &str = "background commands are not available in a durable run: a process cannot outlive the worker that started it, and a retry on another worker could not reach it. Run the command in the foreground (with a timeout), or start and use a server in the same command.";

/// How many background commands of one tool set may run at once by default.
pub const DEFAULT_MAX_BACKGROUND_COMMANDS: usize = 8;
/// Output of a background command kept in memory: its last 256 KiB. What came before is in the
/// command's log file.
pub const RING_BYTES: usize = 256 * 1024;
/// Most bytes of output one read returns (its tail; the rest is in the log file): 50 KiB.
const MAX_READ_BYTES: usize = 50 * 1024;
/// How long `bash` waits for a new background command's first output.
const FIRST_OUTPUT_WAIT: Duration = Duration::from_secs(1);
/// Once some output came, how long more is gathered for the first result.
const FIRST_OUTPUT_SETTLE: Duration = Duration::from_millis(200);
/// Between SIGTERM and SIGKILL when a background command is ended.
pub const KILL_GRACE: Duration = Duration::from_secs(3);
/// The longest a `bash_output` call waits.
const MAX_WAIT_SECONDS: f64 = 600.0;
/// How long `bash_output` waits for a pattern when no wait is given.
const DEFAULT_PATTERN_WAIT_SECONDS: f64 = 30.0;
/// How often a waiting `bash_output` looks for its pattern again while output keeps coming.
const RESCAN_INTERVAL: Duration = Duration::from_millis(20);
/// Ended commands remembered (for a late read), beyond which the oldest are forgotten.
const ENDED_KEPT: usize = 64;

/// The background commands of one tool set: what [`builtin::new`](crate::builtin::new) gives
/// `bash`, `bash_output` and `bash_kill`, and what an application keeps to list and end them
/// (a front end's process list). Clones share the commands; when the last clone drops, every
/// command still running is killed (SIGKILL, its whole process tree).
///
/// ```
/// use golato::builtin::{self, Background};
///
/// let background = Background::new(4);
/// let workspace = tempfile::tempdir()?;
/// let tools = builtin::new(builtin::Config {
///     working_directory: workspace.path().into(),
///     allowed_tool_names: Some(vec!["bash".into(), "bash_output".into(), "bash_kill".into()]),
///     background: Some(background.clone()),
///     ..Default::default()
/// })?;
/// assert_eq!(tools.len(), 3);
/// assert!(background.list().is_empty());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Background {
    registry: Arc<Registry>,
}

impl std::fmt::Debug for Background {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Background")
            .field("max_running", &self.registry.max_running)
            .field("running", &self.running())
            .finish()
    }
}

/// One background command as [`Background::list`] shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct BackgroundCommand {
    /// Its ID in `bash_output` and `bash_kill`.
    pub id: u64,
    /// The command line.
    pub command: String,
    /// How long it has run (until it ended, for one that did).
    pub runtime: Duration,
    /// How it ended ("exited with code 0", "killed by signal 9", ...), or `None` while it runs.
    pub ended: Option<String>,
    /// The last line it printed (at most 200 characters), empty before any.
    pub last_line: String,
    /// Its whole output's file, when one could be made.
    pub log: Option<PathBuf>,
}

impl Background {
    /// A set that runs at most `max_running` commands at once (0 refuses every start).
    pub fn new(max_running: usize) -> Background {
        Background {
            registry: Arc::new(Registry {
                max_running,
                next_id: std::sync::atomic::AtomicU64::new(1),
                inner: Mutex::new(Inner::default()),
                network: tokio::sync::OnceCell::new(),
            }),
        }
    }

    /// The network namespace the sandboxed commands of every tool set given this `Background`
    /// share, once a background command made it (a server it started is reached by the next
    /// command, and by a person's `!command` in the front end); made with `prepared`'s helper
    /// when `make` and not yet there.
    pub(super) async fn shared_network(
        &self,
        prepared: &Arc<crate::sandbox::Prepared>,
        make: bool,
    ) -> Result<Option<&crate::sandbox::SharedNetwork>, String> {
        if !make {
            return Ok(self.registry.network.get());
        }
        let prepared = Arc::clone(prepared);
        self.registry
            .network
            .get_or_try_init(|| async move {
                tokio::task::spawn_blocking(move || crate::sandbox::SharedNetwork::start(&prepared))
                    .await
                    .map_err(|error| error.to_string())?
                    .map_err(|error| error.to_string())
            })
            .await
            .map(Some)
            .map_err(|error| {
                format!("could not make the session's network for background commands: {error}")
            })
    }

    /// Every command started and not yet forgotten, by ID.
    pub fn list(&self) -> Vec<BackgroundCommand> {
        self.registry
            .entries()
            .into_iter()
            .map(|entry| entry.listed())
            .collect()
    }

    /// How many commands run now.
    pub fn running(&self) -> usize {
        self.registry
            .entries()
            .iter()
            .filter(|entry| entry.is_running())
            .count()
    }

    /// A future of how command `id` ended ("exited with code 0", ...), once it has; `None`
    /// for an ID this set does not have. It holds the command, not the set: the set's last
    /// handle dropping still kills the command (and so settles the future).
    pub fn ended(
        &self,
        id: u64,
    ) -> impl std::future::Future<Output = Option<String>> + Send + 'static {
        let entry = self.registry.entry(id);
        async move {
            let entry = entry?;
            let mut watch = entry.changed.subscribe();
            loop {
                if let Some(ended) = &entry.lock().ended {
                    return Some(ended.how.clone());
                }
                if watch.changed().await.is_err() {
                    return None;
                }
            }
        }
    }

    /// Asks command `id` to end (SIGTERM to its whole tree, SIGKILL after [`KILL_GRACE`]);
    /// returns whether it was running. Its end is reported to the model at its next read.
    pub fn kill(&self, id: u64) -> bool {
        match self.registry.entry(id) {
            Some(entry) if entry.is_running() => {
                entry.stop.cancel();
                true
            }
            _ => false,
        }
    }
}

struct Registry {
    max_running: usize,
    next_id: std::sync::atomic::AtomicU64,
    inner: Mutex<Inner>,
    /// The sandboxed commands' shared network namespace, made at the first background start
    /// (see [`Background::shared_network`]).
    network: tokio::sync::OnceCell<crate::sandbox::SharedNetwork>,
}

#[derive(Default)]
struct Inner {
    entries: BTreeMap<u64, Arc<Entry>>,
    /// Starts admitted but not yet entered: counted against the cap, so a parallel batch of
    /// starts cannot pass it.
    starting: usize,
}

impl Registry {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn entries(&self) -> Vec<Arc<Entry>> {
        self.lock().entries.values().cloned().collect()
    }

    fn entry(&self, id: u64) -> Option<Arc<Entry>> {
        self.lock().entries.get(&id).cloned()
    }

    /// A place for one more command, or the refusal the model reads.
    fn admit(self: &Arc<Self>) -> Result<Admission, String> {
        let mut inner = self.lock();
        let running: Vec<u64> = inner
            .entries
            .values()
            .filter(|entry| entry.is_running())
            .map(|entry| entry.id)
            .collect();
        if running.len() + inner.starting >= self.max_running {
            let listed: Vec<String> = running.iter().map(u64::to_string).collect();
            return Err(format!(
                "not started: at most {} background commands run at once in this session, and {} do (IDs: {}). End one with bash_kill, or wait for one with bash_output and its wait, then start this one again.",
                self.max_running,
                running.len() + inner.starting,
                if listed.is_empty() { "starting".to_owned() } else { listed.join(", ") }
            ));
        }
        inner.starting += 1;
        let id = self
            .next_id
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(Admission {
            registry: Arc::clone(self),
            id,
        })
    }

    fn enter(&self, entry: Arc<Entry>) {
        let mut inner = self.lock();
        inner.entries.insert(entry.id, entry);
        let ended: Vec<u64> = inner
            .entries
            .values()
            .filter(|entry| !entry.is_running())
            .map(|entry| entry.id)
            .collect();
        for id in ended.iter().take(ended.len().saturating_sub(ENDED_KEPT)) {
            inner.entries.remove(id);
        }
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let entries: Vec<Arc<Entry>> = self.lock().entries.values().cloned().collect();
        for entry in entries.iter().filter(|entry| entry.is_running()) {
            // The session is over: no grace. Killed here, not by the driving task, which may
            // never run again (the runtime shutting down with the application). By the mark
            // only, never by process group: a command whose task is gone was reaped, and its
            // group's number may belong to someone else by now.
            // Killed before the driving task is told to stop: told first, its SIGTERM could
            // end the command, and the guard with it, before the guard ended what it adopted
            // (a daemon that cleared its environment would then outlive golato).
            processes::kill_marked(&entry.mark);
            entry.stop.cancel();
        }
    }
}

/// A start counted against the cap until its command is entered (or it failed).
struct Admission {
    registry: Arc<Registry>,
    id: u64,
}

impl Admission {
    fn enter(self, entry: Arc<Entry>) {
        self.registry.enter(entry);
    }
}

impl Drop for Admission {
    fn drop(&mut self) {
        let mut inner = self.registry.lock();
        inner.starting = inner.starting.saturating_sub(1);
    }
}

/// One background command.
struct Entry {
    id: u64,
    command: String,
    started: Instant,
    mark: String,
    state: Mutex<State>,
    /// Bumped on new output and at the end: readers waiting for either watch it.
    changed: tokio::sync::watch::Sender<u64>,
    /// Cancelled to end the command (bash_kill, the set dropped).
    stop: CancellationToken,
}

struct State {
    /// The last [`RING_BYTES`] of output; `ring_start` is the offset of its first byte.
    ring: VecDeque<u8>,
    ring_start: u64,
    total: u64,
    /// Where the model's last read ended.
    read_to: u64,
    log: Log,
    ended: Option<Ended>,
    /// When it ended, for its runtime.
    ended_at: Option<Instant>,
}

/// How a background command ended, and what its end settled.
struct Ended {
    /// "exited with code 0", "killed by signal 15", ...
    how: String,
    exit_code: Option<i32>,
    /// The capture's and the network's notes for the model.
    notes: String,
    /// Their details (captured changes, connections).
    details: Value,
    /// Whether a result reported the end already (the details go to one result only: undo
    /// must not see the same changes twice).
    reported: bool,
}

/// The whole output's file, up to its limit.
struct Log {
    file: Option<(std::fs::File, PathBuf)>,
    written: u64,
    limit: u64,
    error: Option<String>,
}

impl Log {
    fn create(limit: u64) -> Log {
        let made = tempfile::Builder::new()
            .prefix("golato-bash-background-")
            .suffix(".log")
            .tempfile()
            .and_then(|file| file.keep().map_err(|error| error.error));
        match made {
            Ok(file) => Log {
                file: Some(file),
                written: 0,
                limit,
                error: None,
            },
            Err(error) => Log {
                file: None,
                written: 0,
                limit,
                error: Some(failure(
                    format_args!(
                        "could not create a log file in {}",
                        std::env::temp_dir().display()
                    ),
                    &error,
                )),
            },
        }
    }

    fn path(&self) -> Option<&PathBuf> {
        self.file.as_ref().map(|(_, path)| path)
    }

    fn write(&mut self, bytes: &[u8]) {
        let Some((file, path)) = &mut self.file else {
            return;
        };
        let room = usize::try_from(self.limit.saturating_sub(self.written)).unwrap_or(usize::MAX);
        let part = &bytes[..bytes.len().min(room)];
        if part.is_empty() {
            return;
        }
        match file.write_all(part) {
            Ok(()) => self.written += part.len() as u64,
            Err(error) => {
                self.error = Some(failure(
                    format_args!("could not write {}", path.display()),
                    &error,
                ));
                self.file = None;
            }
        }
    }
}

impl Entry {
    fn is_running(&self) -> bool {
        self.lock().ended.is_none()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn push(&self, bytes: &[u8]) {
        let mut state = self.lock();
        state.total += bytes.len() as u64;
        state.ring.extend(bytes);
        let excess = state.ring.len().saturating_sub(RING_BYTES);
        state.ring.drain(..excess);
        state.ring_start += excess as u64;
        state.log.write(bytes);
        drop(state);
        self.changed.send_modify(|version| *version += 1);
    }

    fn end(&self, ended: Ended) {
        let mut state = self.lock();
        state.ended = Some(ended);
        state.ended_at = Some(Instant::now());
        drop(state);
        self.changed.send_modify(|version| *version += 1);
    }

    fn runtime(&self, state: &State) -> Duration {
        state.ended_at.unwrap_or_else(Instant::now) - self.started
    }

    fn listed(&self) -> BackgroundCommand {
        let state = self.lock();
        let (front, back) = state.ring.as_slices();
        let mut tail: Vec<u8> = Vec::new();
        // The last line: at most the last 4 KiB looked at.
        for part in [front, back] {
            tail.extend_from_slice(part);
            let excess = tail.len().saturating_sub(4096);
            tail.drain(..excess);
        }
        let text = String::from_utf8_lossy(&tail);
        let last_line: String = text
            .trim_end()
            .rsplit('\n')
            .next()
            .unwrap_or_default()
            .chars()
            .take(200)
            .collect();
        BackgroundCommand {
            id: self.id,
            command: self.command.clone(),
            runtime: self.runtime(&state),
            ended: state.ended.as_ref().map(|ended| ended.how.clone()),
            last_line,
            log: state.log.path().cloned(),
        }
    }

    /// The output from `from` (the last read's end by default) to now, for a result: its text
    /// (at most [`MAX_READ_BYTES`], the tail) and the notes on what it leaves out. Marks it read.
    fn read(&self, from: Option<u64>) -> Read {
        let mut state = self.lock();
        let from = from.unwrap_or(state.read_to).min(state.total);
        let mut notes = Vec::new();
        let kept_from = from.max(state.ring_start);
        if kept_from > from {
            notes.push(format!(
                "output bytes {from}-{kept_from} are no longer kept in memory (the last {} KiB are)",
                RING_BYTES / 1024,
            ));
        }
        let shown_from = kept_from.max(state.total.saturating_sub(MAX_READ_BYTES as u64));
        if shown_from > kept_from {
            notes.push(format!(
                "bytes {kept_from}-{shown_from} of this read are not shown (a read shows its last {} KiB)",
                MAX_READ_BYTES / 1024,
            ));
        }
        let skip = (shown_from - state.ring_start) as usize;
        let bytes: Vec<u8> = state.ring.iter().skip(skip).copied().collect();
        let until = state.total;
        state.read_to = until;
        Read {
            text: String::from_utf8_lossy(&bytes).into_owned(),
            from,
            until,
            notes,
        }
    }
}

/// Where the whole output is, for the end of a result (which names it once, also for the
/// bytes a read left out).
fn log_note(log: &Log) -> Option<String> {
    match (log.path(), &log.error) {
        (_, Some(error)) => Some(format!("no full log: {error}")),
        (Some(path), None) if log.written >= log.limit => Some(format!(
            "the full log {} stopped at its limit of {} bytes",
            path.display(),
            log.limit
        )),
        (Some(path), None) => Some(format!("full log: {}", path.display())),
        (None, None) => None,
    }
}

/// What one read took.
struct Read {
    text: String,
    from: u64,
    until: u64,
    notes: Vec<String>,
}

/// A result of what `entry` printed since the last read (or `from`), and where it stands.
fn report(entry: &Entry, from: Option<u64>, waited: Option<String>) -> ToolResult {
    let read = entry.read(from);
    let mut state = entry.lock();
    let runtime = entry.runtime(&state).as_secs_f64();
    let log = state.log.path().cloned();
    let mut text = if read.text.is_empty() {
        String::from("(no new output)")
    } else {
        read.text.trim_end_matches('\n').to_owned()
    };
    let mut notes = read.notes;
    if let Some(waited) = waited {
        notes.push(waited);
    }
    let status = match &state.ended {
        None => format!(
            "{} is still running ({runtime:.1} s); output bytes {}-{}; read more with bash_output {{\"id\": {}}}, end it with bash_kill",
            entry.id, read.from, read.until, entry.id
        ),
        Some(ended) => format!(
            "{} {} after {runtime:.1} s; output bytes {}-{}",
            entry.id, ended.how, read.from, read.until
        ),
    };
    notes.push(status);
    notes.extend(log_note(&state.log));
    text.push_str(&format!("\n\n[{}]", notes.join("; ")));
    let mut details = json!({
        "background": {
            "id": entry.id,
            "command": entry.command,
            "running": state.ended.is_none(),
            "from": read.from,
            "until": read.until,
            "log": log,
        }
    });
    let mut content = vec![Content::text(text)];
    if let Some(ended) = state.ended.as_mut() {
        if let Some(background) = details.get_mut("background").and_then(Value::as_object_mut) {
            background.insert("exit_code".into(), json!(ended.exit_code));
            background.insert("ended".into(), json!(ended.how));
        }
        if !ended.reported {
            ended.reported = true;
            if !ended.notes.is_empty() {
                content.push(Content::text(ended.notes.clone()));
            }
            if let (Some(into), Some(from)) = (details.as_object_mut(), ended.details.as_object()) {
                for (key, value) in from {
                    into.insert(key.clone(), value.clone());
                }
            }
        }
    }
    ToolResult {
        content,
        details: Some(details),
        ..ToolResult::default()
    }
}
