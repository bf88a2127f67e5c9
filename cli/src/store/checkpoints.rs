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

use std::collections::HashMap;
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

mod place;
mod undo;

use place::{Now, Place};

pub(crate) use undo::{diff, undo, Undone};

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
/// says so on standard error, and gives what it applied (a journaled run's cut-off call names
/// its own in its result).
pub(crate) fn recover(cwd: &Path) -> Vec<golato::builtin::Recovered> {
    let all = golato::builtin::recover_captured(&Leftovers, cwd);
    for recovered in &all {
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
    all
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
