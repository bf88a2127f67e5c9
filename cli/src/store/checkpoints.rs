//! Checkpoints: what a session's `edit` and `write` calls changed, kept beside the session
//! (`ID.checkpoints/`: the file contents by their SHA-256, only files that changed, and a log
//! of each call's before and after), so that `golato undo` and `/undo` can put the files back
//! and `golato diff` can show what changed. Removed with the session.
//!
//! A hook records them: before an edit or a write runs (after every other hook said yes) it
//! keeps the file as it is; after it succeeded, the file as it became. A sandboxed `bash`
//! command's changes are captured by the tool itself (an overlay, applied when it ends: see
//! `golato::sandbox::capture`), which hands the files to the same store
//! ([`golato::builtin::Checkpoints`]) and lists them in its result, where the hook files them.
//! Commands outside a sandbox are not captured: undo says how many ran in what it took back.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use futures::future::BoxFuture;
use futures::FutureExt as _;
use golato::hook::{AfterToolCall, BeforeToolCall, Hook, HookContext};
use golato::policy::HookSession;
use golato::tool::{BoxError, ToolResult};
use serde::{Deserialize, Serialize};
use sha2::Digest as _;

use crate::store::session::Saved;
use crate::CliError;

/// Files larger than this are not kept (an undo of them says so): the same bound as capture's.
const MAX_KEPT: u64 = golato::sandbox::capture::MAX_KEPT;

/// The folder of a session's checkpoints.
pub(crate) fn folder(session: &Path) -> PathBuf {
    session.with_extension("checkpoints")
}

/// A file as a checkpoint knows it: absent, kept by its SHA-256 (hex) in the store, a
/// symbolic link, or too large or unreadable to keep.
use golato::sandbox::capture::FileState as State;

/// One call's change of one file.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Record {
    call: String,
    tool: String,
    #[serde(with = "golato::sandbox::capture::path_text")]
    path: PathBuf,
    before: State,
    after: State,
}

/// A session's checkpoint folder.
struct Store {
    folder: PathBuf,
}

impl Store {
    fn of(session: &Path) -> Store {
        Store {
            folder: folder(session),
        }
    }

    /// The file at `path` now, its content kept in the store.
    fn capture(&self, path: &Path) -> State {
        match Place::of(path).and_then(|place| place.state(MAX_KEPT)) {
            Ok(Now::Absent) => State::Absent,
            // Its folder does not exist (yet).
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => State::Absent,
            Ok(Now::Link(target)) => State::Link(target),
            Ok(Now::File {
                bytes: Some(bytes), ..
            }) => self.put(&bytes).map_or(State::Unkept, State::Kept),
            _ => State::Unkept,
        }
    }

    fn put(&self, bytes: &[u8]) -> std::io::Result<String> {
        let hash = hex(&sha2::Sha256::digest(bytes));
        let objects = self.folder.join("objects");
        let path = objects.join(&hash);
        if !path.exists() {
            std::fs::create_dir_all(&objects)?;
            let aside = objects.join(format!("{hash}.new-{}", std::process::id()));
            std::fs::write(&aside, bytes)?;
            std::fs::rename(&aside, &path)?;
        }
        Ok(hash)
    }

    fn get(&self, hash: &str) -> std::io::Result<Vec<u8>> {
        std::fs::read(self.folder.join("objects").join(hash))
    }

    fn log(&self) -> PathBuf {
        self.folder.join("log.jsonl")
    }

    fn append(&self, record: &Record) -> std::io::Result<()> {
        self.append_all(std::slice::from_ref(record))
    }

    /// Appends `records` in one write, synced once.
    fn append_all(&self, records: &[Record]) -> std::io::Result<()> {
        std::fs::create_dir_all(&self.folder)?;
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log())?;
        let mut lines = String::new();
        for record in records {
            lines.push_str(&serde_json::to_string(record).map_err(std::io::Error::other)?);
            lines.push('\n');
        }
        file.write_all(lines.as_bytes())?;
        file.sync_data()
    }

    /// Every record, and how many lines did not parse (a torn last write, a damaged line).
    fn records(&self) -> (Vec<Record>, usize) {
        let text = std::fs::read_to_string(self.log()).unwrap_or_default();
        let mut damaged = 0;
        let records = text
            .lines()
            .filter_map(|line| {
                let record = serde_json::from_str(line).ok();
                damaged += usize::from(record.is_none());
                record
            })
            .collect();
        (records, damaged)
    }

    /// Keeps only `records` in the log.
    fn keep(&self, records: &[Record]) -> std::io::Result<()> {
        if records.is_empty() && !self.log().exists() {
            return Ok(());
        }
        std::fs::create_dir_all(&self.folder)?;
        let mut text = String::new();
        for record in records {
            text.push_str(&serde_json::to_string(record).map_err(std::io::Error::other)?);
            text.push('\n');
        }
        let aside = self.folder.join("log.jsonl.new");
        std::fs::write(&aside, text)?;
        std::fs::rename(&aside, self.log())
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// Files as they were before each running call, by run and call.
type Before = Arc<Mutex<HashMap<(u64, String), (PathBuf, State)>>>;

/// The hook that records checkpoints for the session `session` names (nothing when it names
/// none: `--ephemeral`, durable workers), and the store bash's captured commands keep files in.
#[derive(Debug)]
pub(crate) struct Recorder {
    cwd: PathBuf,
    session: tokio::sync::watch::Receiver<HookSession>,
    before: Before,
}

impl Recorder {
    pub(crate) fn new(
        cwd: &Path,
        session: tokio::sync::watch::Receiver<HookSession>,
    ) -> Arc<Recorder> {
        Arc::new(Recorder {
            cwd: cwd.to_owned(),
            session,
            before: Before::default(),
        })
    }

    /// The session's store, when there is a session.
    fn store(&self) -> Option<Store> {
        let session = self.session.borrow().transcript_path.clone();
        (!session.as_os_str().is_empty()).then(|| Store::of(&session))
    }

    /// The store, and the file the call changes, when it is one to record.
    fn target(&self, ctx: &HookContext) -> Option<(Store, PathBuf)> {
        if !matches!(ctx.call.name.as_str(), "edit" | "write") {
            return None;
        }
        let session = self.session.borrow().transcript_path.clone();
        if session.as_os_str().is_empty() {
            return None;
        }
        let path = ctx.arguments.get("path")?.as_str()?;
        Some((
            Store::of(&session),
            canonical(&golato::sandbox::resolve(&self.cwd, Path::new(path))),
        ))
    }
}

/// Where captured commands stage their changes: one folder for every session, so that a
/// golato started after one that died mid-command finds what that command left.
fn staging_area() -> Option<PathBuf> {
    crate::store::session::data_directory()
        .ok()
        .map(|data| data.join("staging"))
}

impl golato::builtin::Checkpoints for Recorder {
    fn staging_area(&self) -> Option<PathBuf> {
        self.store()?;
        staging_area()
    }

    fn keep(&self, bytes: &[u8]) -> std::io::Result<String> {
        self.store()
            .ok_or_else(|| std::io::Error::other("the session is not saved"))?
            .put(bytes)
    }
}

/// The staging area, to find what commands cut off by a dead golato left: nothing is kept of
/// them (their calls are not in the session that would undo them).
#[derive(Debug)]
struct Leftovers;

impl golato::builtin::Checkpoints for Leftovers {
    fn staging_area(&self) -> Option<PathBuf> {
        staging_area()
    }

    fn keep(&self, _: &[u8]) -> std::io::Result<String> {
        Err(std::io::Error::other("not kept"))
    }
}

/// Applies what commands in `cwd` changed but a golato that died while they ran never applied,
/// and says so on standard error.
pub(crate) fn recover(cwd: &Path) {
    for recovered in golato::builtin::recover_captured(&Leftovers, cwd) {
        let applied = &recovered.applied;
        let mut files: Vec<String> = applied
            .changes
            .iter()
            .map(|change| {
                crate::view::shown::visible(&change.path.display().to_string()).into_owned()
            })
            .collect();
        files.extend(applied.conflicts.iter().filter_map(|conflict| {
            let version = conflict.commands_version.as_ref()?;
            Some(format!(
                "{} (changed since: the command's version is {})",
                crate::view::shown::visible(&conflict.path.display().to_string()),
                crate::view::shown::visible(&version.display().to_string())
            ))
        }));
        let mut line = format!(
            "golato: a command cut off when golato ended (call {}) left changes, applied now: {}",
            crate::view::shown::visible(&recovered.call),
            if files.is_empty() {
                "none".to_owned()
            } else {
                files.join(", ")
            }
        );
        if !applied.failures.is_empty() {
            line.push_str(&format!("; not applied: {}", applied.failures.join("; ")));
        }
        line.push_str(" (undo cannot take these back)");
        eprintln!("{line}");
    }
}

/// The changes a captured bash call's result lists.
fn captured_changes(result: &ToolResult) -> Vec<golato::sandbox::capture::Change> {
    golato::builtin::captured_changes(result.details.as_ref()).unwrap_or_default()
}

fn lock(before: &Before) -> std::sync::MutexGuard<'_, HashMap<(u64, String), (PathBuf, State)>> {
    before.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Hook for Recorder {
    fn before_tool_call(
        &self,
        ctx: HookContext,
    ) -> BoxFuture<'static, Result<BeforeToolCall, BoxError>> {
        let target = self.target(&ctx);
        let before = Arc::clone(&self.before);
        async move {
            if let Some((store, path)) = target {
                // Off the runtime's threads: a file of up to 64 MiB is read and kept.
                let state = tokio::task::spawn_blocking({
                    let path = path.clone();
                    move || store.capture(&path)
                })
                .await
                .unwrap_or(State::Unkept);
                lock(&before).insert((ctx.run_id, ctx.call.id.clone()), (path, state));
            }
            Ok(BeforeToolCall::Run)
        }
        .boxed()
    }

    fn after_tool_call(
        &self,
        ctx: HookContext,
        result: ToolResult,
    ) -> BoxFuture<'static, Result<AfterToolCall, BoxError>> {
        if ctx.call.name == "bash" {
            let changes = captured_changes(&result);
            let store = self.store().filter(|_| !changes.is_empty());
            return async move {
                if let Some(store) = store {
                    let call = ctx.path.first().unwrap_or(&ctx.call.id).clone();
                    let records: Vec<Record> = changes
                        .into_iter()
                        .map(|change| Record {
                            call: call.clone(),
                            tool: "bash".into(),
                            path: change.path,
                            before: change.before,
                            after: change.after,
                        })
                        .collect();
                    let recorded =
                        tokio::task::spawn_blocking(move || store.append_all(&records)).await;
                    if let Ok(Err(error)) = recorded {
                        tracing::warn!(%error, "a command's checkpoint was not saved");
                    }
                }
                Ok(AfterToolCall::Keep)
            }
            .boxed();
        }
        let before = lock(&self.before).remove(&(ctx.run_id, ctx.call.id.clone()));
        let target = self.target(&ctx);
        async move {
            if let (Some((path, before)), Some((store, _)), false) =
                (before, target, result.is_error)
            {
                let recorded = tokio::task::spawn_blocking(move || {
                    let after = store.capture(&path);
                    if after == before {
                        return Ok(());
                    }
                    store.append(&Record {
                        // A subagent's change is its task call's, which the session holds.
                        call: ctx.path.first().unwrap_or(&ctx.call.id).clone(),
                        tool: ctx.call.name.clone(),
                        path,
                        before,
                        after,
                    })
                })
                .await;
                if let Ok(Err(error)) = recorded {
                    tracing::warn!(%error, "a checkpoint was not saved");
                }
            }
            Ok(AfterToolCall::Keep)
        }
        .boxed()
    }
}

/// What an undo did.
pub(crate) struct Undone {
    /// The prompt the session now ends before.
    pub(crate) prompt: usize,
    pub(crate) restored: Vec<PathBuf>,
    pub(crate) removed: Vec<PathBuf>,
    /// Commands that ran in what was taken back, whose changes stay.
    pub(crate) commands: usize,
    /// Files left as they are, and why (too large to have been kept).
    pub(crate) left: Vec<(PathBuf, String)>,
    /// Lines of the checkpoint log that could not be read: what they recorded is not undone.
    pub(crate) damaged: usize,
}

impl std::fmt::Display for Undone {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the session is back to before prompt {}", self.prompt)?;
        let names = |paths: &[PathBuf]| {
            paths
                .iter()
                .map(|path| crate::view::shown::visible(&path.display().to_string()).into_owned())
                .collect::<Vec<_>>()
                .join(", ")
        };
        if !self.restored.is_empty() {
            write!(f, "; restored {}", names(&self.restored))?;
        }
        if !self.removed.is_empty() {
            write!(f, "; removed {}", names(&self.removed))?;
        }
        if self.restored.is_empty() && self.removed.is_empty() {
            write!(f, "; no file had changed")?;
        }
        for (path, why) in &self.left {
            write!(
                f,
                "; left {} as it is ({why})",
                crate::view::shown::visible(&path.display().to_string())
            )?;
        }
        if self.damaged > 0 {
            write!(
                f,
                "; {} of the checkpoint log could not be read, and what {} recorded was not undone",
                crate::view::shown::count(self.damaged as u64, "damaged line"),
                if self.damaged == 1 { "it" } else { "they" }
            )?;
        }
        if self.commands > 0 {
            write!(
                f,
                "; {} ran outside the sandbox in what was undone, and what they changed stays (only sandboxed commands are captured)",
                crate::view::shown::count(self.commands as u64, "bash command")
            )?;
        }
        Ok(())
    }
}

/// Takes back what the session did from its prompt `to` (1-based; the last one when `None`)
/// on: its edits and writes are undone and the session is cut back to before that prompt. A
/// file changed since by anything else stops it before anything changes.
pub(crate) fn undo(saved: &Saved, to: Option<usize>) -> Result<Undone, CliError> {
    let prompts = crate::store::session::prompts(saved);
    let prompt = to.unwrap_or(prompts.len());
    if prompt == 0 || prompt > prompts.len() {
        return Err(CliError::usage(format!(
            "the session {} has {}; --to takes 1 to {}",
            saved.header.id,
            crate::view::shown::count(prompts.len() as u64, "prompt"),
            prompts.len()
        )));
    }
    let calls: Vec<&golato::message::ToolCall> = prompts[prompt - 1..]
        .iter()
        .flat_map(|(_, calls)| calls)
        .collect();
    let undone_calls: HashSet<&str> = calls.iter().map(|call| call.id.as_str()).collect();
    let commands = uncaptured_commands(saved, &undone_calls);
    let store = Store::of(&saved.path);
    let (records, damaged) = store.records();
    let (undone, kept): (Vec<Record>, Vec<Record>) = records
        .into_iter()
        .partition(|record| undone_calls.contains(record.call.as_str()));
    // Per file: what it was before the first undone change, what the last one left.
    let mut files: BTreeMap<PathBuf, (State, State)> = BTreeMap::new();
    for record in &undone {
        files
            .entry(record.path.clone())
            .and_modify(|(_, after)| *after = record.after.clone())
            .or_insert((record.before.clone(), record.after.clone()));
    }
    let mut problems = Vec::new();
    let mut left = Vec::new();
    // Everything to put back is read first, and every file checked: a missing or damaged copy,
    // or a file changed since, stops the undo before a single file changes.
    let mut contents: HashMap<PathBuf, Vec<u8>> = HashMap::new();
    for (path, (before, after)) in &files {
        if let Some(why) = too_large(before, after) {
            left.push((path.clone(), why.to_owned()));
            continue;
        }
        if let State::Kept(hash) = before {
            match store.get(hash) {
                Ok(bytes) if hex(&sha2::Sha256::digest(&bytes)) == *hash => {
                    contents.insert(path.clone(), bytes);
                }
                _ => problems.push(format!(
                    "{} (its kept copy {hash} is missing or damaged in {})",
                    path.display(),
                    store.folder.display()
                )),
            }
        }
        if let Err(why) = unchanged_since(path, after) {
            problems.push(format!("{} ({why})", path.display()));
        }
    }
    if !problems.is_empty() {
        return Err(CliError::Failed(format!(
            "nothing was undone: {}; put a changed file back as the session left it, or undo by hand with `golato diff`",
            problems.join(", "),
        )));
    }
    let mut done = Undone {
        prompt,
        restored: Vec::new(),
        removed: Vec::new(),
        commands,
        left,
        damaged,
    };
    let skipped: HashSet<PathBuf> = done.left.iter().map(|(path, _)| path.clone()).collect();
    for (path, (before, _)) in files.iter().filter(|(path, _)| !skipped.contains(*path)) {
        let failed = |error: std::io::Error| {
            CliError::Failed(format!("could not restore {}: {error}", path.display()))
        };
        match before {
            State::Absent => {
                let removed = match Place::of(path) {
                    Ok(place) => place.remove().map_err(failed)?,
                    // Its folder is gone: so is the file.
                    Err(error) if error.kind() == std::io::ErrorKind::NotFound => false,
                    Err(error) => return Err(failed(error)),
                };
                if removed {
                    done.removed.push(path.clone());
                }
            }
            State::Kept(_) => {
                let bytes = contents.remove(path).unwrap_or_default();
                Place::made(path)
                    .and_then(|place| place.write(&bytes))
                    .map_err(failed)?;
                done.restored.push(path.clone());
            }
            State::Link(target) => {
                Place::made(path)
                    .and_then(|place| place.link(target))
                    .map_err(failed)?;
                done.restored.push(path.clone());
            }
            State::Unkept => {}
        }
    }
    let note = serde_json::json!({
        "to_prompt": prompt,
        "restored": done.restored,
        "removed": done.removed,
        "uncaptured_bash_commands": commands,
    });
    crate::store::session::cut_before(saved, prompt, note)?;
    store
        .keep(&kept)
        .map_err(|error| CliError::Failed(format!("could not update the checkpoints: {error}")))?;
    Ok(done)
}

/// The bash calls among `calls` whose changes were not captured (none of a sandboxed
/// command's were: its result says "captured").
fn uncaptured_commands(saved: &Saved, calls: &HashSet<&str>) -> usize {
    saved
        .transcript
        .iter()
        .filter(|message| match message {
            golato::message::Message::ToolResult(result) => {
                result.tool_name == "bash"
                    && calls.contains(result.tool_call_id.as_str())
                    && golato::builtin::captured_changes(result.details.as_ref()).is_none()
            }
            _ => false,
        })
        .count()
}

/// Why a file is left as it is rather than undone: a state too large to have been kept.
fn too_large(before: &State, after: &State) -> Option<&'static str> {
    match (before, after) {
        (State::Unkept, _) => Some("it was too large or unreadable to keep before the session changed it"),
        (_, State::Unkept) => Some("what the session left was too large or unreadable to keep, so golato cannot tell whether it changed since"),
        _ => None,
    }
}

/// Whether the file at `path` is still what the session left (`after`): compared by kind, size
/// and streamed hash, never following a link and never blocking on a FIFO.
fn unchanged_since(path: &Path, after: &State) -> Result<(), String> {
    let now = match Place::of(path).and_then(|place| place.state(0)) {
        Ok(now) => now,
        // Its folder is gone: so is the file.
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Now::Absent,
        Err(error) => return Err(error.to_string()),
    };
    let changed = |what: &str| Err(format!("changed since: {what}"));
    match (after, now) {
        (State::Absent, Now::Absent) => Ok(()),
        (State::Link(target), Now::Link(now)) if *target == now => Ok(()),
        (
            State::Kept(hash),
            Now::File {
                hash: Some(now), ..
            },
        ) if *hash == now => Ok(()),
        (State::Kept(_), Now::File { size, .. }) if size > MAX_KEPT => {
            changed(&format!("now {size} bytes, larger than anything kept"))
        }
        (_, Now::Absent) => changed("deleted"),
        (_, Now::Other(kind)) => changed(&format!(
            "now {kind}; golato undoes regular files and symbolic links only"
        )),
        (_, Now::Link(_)) => changed("now a symbolic link"),
        (_, Now::File { .. }) => changed("its content"),
    }
}

/// A file's state now, as undo compares it.
enum Now {
    Absent,
    Link(PathBuf),
    /// A regular file: its size, its hash (unless over the limit asked for), and its bytes
    /// when asked for and within the limit.
    File {
        size: u64,
        hash: Option<String>,
        bytes: Option<Vec<u8>>,
    },
    /// Something else: what it is.
    Other(&'static str),
}

/// A file's folder, reached from `/` without following any link (a link a model planted in
/// its path is an error, never a way elsewhere), and its name there.
struct Place {
    folder: golato::sandbox::anchored::Folder,
    name: std::ffi::OsString,
}

impl Place {
    /// The place of `path`: its folder reached from `/`, made where missing when `make` says.
    fn reach(path: &Path, make: bool) -> std::io::Result<Place> {
        let (Some(parent), Some(name), true) =
            (path.parent(), path.file_name(), path.is_absolute())
        else {
            return Err(std::io::Error::other(format!(
                "{} is not an absolute path to a file",
                path.display()
            )));
        };
        let root = golato::sandbox::anchored::Folder::open(Path::new("/"))?;
        let beneath = parent.strip_prefix("/").unwrap_or(parent);
        let folder = match make {
            true => root.open_or_make_beneath(beneath)?,
            false => root.open_beneath(beneath)?,
        };
        Ok(Place {
            folder,
            name: name.to_owned(),
        })
    }

    /// The place of `path`, whose folder exists.
    fn of(path: &Path) -> std::io::Result<Place> {
        Place::reach(path, false)
    }

    /// The place of `path`, its missing folders made.
    fn made(path: &Path) -> std::io::Result<Place> {
        Place::reach(path, true)
    }

    /// What is there now; a regular file's bytes read when it is at most `read_up_to` bytes.
    fn state(&self, read_up_to: u64) -> std::io::Result<Now> {
        use golato::sandbox::anchored::Kind;
        use std::io::Read as _;
        let Some(entry) = self.folder.entry(&self.name)? else {
            return Ok(Now::Absent);
        };
        match entry.kind() {
            Kind::Link => Ok(Now::Link(self.folder.read_link(&self.name)?)),
            Kind::File if entry.len() > MAX_KEPT => Ok(Now::File {
                size: entry.len(),
                hash: None,
                bytes: None,
            }),
            Kind::File => {
                let mut file = self.folder.open_file(&self.name)?;
                let mut hasher = sha2::Sha256::new();
                let mut bytes = Vec::new();
                let mut buffer = vec![0u8; 64 * 1024];
                let mut size = 0u64;
                loop {
                    let count = file.read(&mut buffer)?;
                    if count == 0 {
                        break;
                    }
                    size += count as u64;
                    if size > MAX_KEPT {
                        return Ok(Now::File {
                            size,
                            hash: None,
                            bytes: None,
                        });
                    }
                    hasher.update(&buffer[..count]);
                    if size <= read_up_to {
                        bytes.extend_from_slice(&buffer[..count]);
                    }
                }
                Ok(Now::File {
                    size,
                    hash: Some(hex(&hasher.finalize())),
                    bytes: (size <= read_up_to).then_some(bytes),
                })
            }
            Kind::Folder => Ok(Now::Other("a folder")),
            _ => Ok(Now::Other("a FIFO, socket or device")),
        }
    }

    /// Removes the file or link; whether there was one.
    fn remove(&self) -> std::io::Result<bool> {
        match self.folder.remove_file(&self.name) {
            Ok(()) => Ok(true),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(error) => Err(error),
        }
    }

    /// Writes `bytes` whole through a fresh file renamed over it, keeping its mode.
    fn write(&self, bytes: &[u8]) -> std::io::Result<()> {
        let mode = match self.folder.entry(&self.name)? {
            Some(entry) if entry.kind() == golato::sandbox::anchored::Kind::File => entry.mode(),
            _ => 0o644,
        };
        self.folder.replace_file(
            &self.name,
            mode,
            &mut golato::sandbox::anchored::write_all(bytes),
        )
    }

    /// Puts the symbolic link back, leading to `target`.
    fn link(&self, target: &Path) -> std::io::Result<()> {
        self.folder.replace_with_link(&self.name, target)
    }
}

/// `path` with the links in its existing folders resolved, so that what is recorded is where
/// the write went (undo follows no link later).
fn canonical(path: &Path) -> PathBuf {
    let mut rest = Vec::new();
    let mut ancestor = path;
    loop {
        match (ancestor.parent(), ancestor.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_owned());
                if let Ok(real) = parent.canonicalize() {
                    return rest.iter().rev().fold(real, |path, name| path.join(name));
                }
                ancestor = parent;
            }
            _ => return path.to_owned(),
        }
    }
}

/// `golato diff`: what each prompt's edits and writes changed, as unified diffs.
pub(crate) fn diff(saved: &Saved) -> String {
    let store = Store::of(&saved.path);
    let (records, _) = store.records();
    let cwd = saved
        .header
        .cwd
        .canonicalize()
        .unwrap_or_else(|_| saved.header.cwd.clone());
    let mut out = String::new();
    for (number, (prompt, calls)) in crate::store::session::prompts(saved).iter().enumerate() {
        let ids: HashSet<&str> = calls.iter().map(|call| call.id.as_str()).collect();
        let mut files: BTreeMap<&Path, (&State, &State)> = BTreeMap::new();
        for record in records
            .iter()
            .filter(|record| ids.contains(record.call.as_str()))
        {
            files
                .entry(&record.path)
                .and_modify(|(_, after)| *after = &record.after)
                .or_insert((&record.before, &record.after));
        }
        if files.is_empty() {
            continue;
        }
        let said = prompt.text();
        out.push_str(&format!(
            "prompt {}: {}\n",
            number + 1,
            crate::view::shown::visible(said.lines().next().unwrap_or_default())
        ));
        for (path, (before, after)) in files {
            let text = |state: &State| match state {
                State::Kept(hash) => store
                    .get(hash)
                    .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
                    .unwrap_or_default(),
                State::Link(target) => format!("(a symbolic link to {})\n", target.display()),
                State::Absent | State::Unkept => String::new(),
            };
            // Relative to the session's folder, so that `git apply` takes it.
            let shown = path
                .strip_prefix(&cwd)
                .or_else(|_| path.strip_prefix(&saved.header.cwd))
                .unwrap_or(path)
                .display()
                .to_string();
            let diff = crate::view::preview::unified(
                &text(before),
                &text(after),
                &format!("a/{}", shown.trim_start_matches('/')),
                &format!("b/{}", shown.trim_start_matches('/')),
            );
            out.push_str(&crate::view::shown::visible(&diff));
        }
    }
    if out.is_empty() {
        out.push_str("no edit or write of this session changed a file\n");
    }
    out
}
