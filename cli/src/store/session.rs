//! Sessions: every `golato run` saves its transcript as it goes, so `--continue` and
//! `golato resume` can go on from where it stopped (a Ctrl-C, a kill, a crash included).
//!
//! One JSON-lines file per session under the data directory (`GOLATO_DATA_DIR`, else
//! `$XDG_DATA_HOME/golato`, else `~/.local/share/golato`), in `sessions/`: a first line that
//! describes the session, then one line per step as it finishes, each synced to disk before
//! the next: the prompt, each assistant message, each tool result (the steps a journal
//! records). A process killed mid-write leaves at most a torn last line, which reading skips
//! and the next append sets aside (`file.rs`); a line damaged in the middle is an error naming
//! it, with `golato sessions repair ID` as the way out; one process at a time writes a session
//! (a lock beside it).

pub(crate) mod file;
mod saved;

pub(crate) use saved::{all, cut_before, find, prompts, Saved};

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use golato::message::{Message, StopReason};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::CliError;

/// The format of a session file's first line.
const FORMAT: u32 = 1;

/// What a session's first line says.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Header {
    golato_session: u32,
    pub(crate) id: String,
    /// The tools' working directory.
    pub(crate) cwd: PathBuf,
    /// When it started (seconds since the epoch).
    pub(crate) created: u64,
    /// The model API, model and server it was started with (as `--provider`, `--model` and
    /// `--base-url` or the configuration gave them), for `-c` and `resume` to go on with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) provider: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) base_url: Option<String>,
}

/// A session being written.
#[derive(Debug)]
pub(crate) struct Writer {
    path: PathBuf,
    file: Option<std::fs::File>,
    /// A new session's lines until the model first answers: a session that never reached
    /// the model is not saved as one.
    pending: Option<Vec<Value>>,
    /// Why saving stopped, told once.
    failed: Option<String>,
    /// Held while the session is written.
    _lock: Option<file::Lock>,
    /// The session's subagents' transcripts, beside it.
    children: crate::store::transcripts::Transcripts,
}

/// The longest session ID golato takes (its own are 23 characters).
const MAX_ID: usize = 128;

/// Refuses an ID that is not a plain name: it must not lead out of the sessions directory.
fn check_id(id: &str) -> Result<(), CliError> {
    match golato::name::why_not_plain(id, MAX_ID, &[]) {
        None => Ok(()),
        Some(why) => Err(CliError::usage(format!(
            "{} is not a session ID ({why}): an ID is a name of letters, digits, '-', '_' and '.' (at most {MAX_ID}), as `golato sessions` lists them",
            golato::name::shown(id)
        ))),
    }
}

/// The session `id` names, whole or by a unique start: its full ID and its file.
pub(crate) fn named(id: &str) -> Result<(String, PathBuf), CliError> {
    check_id(id)?;
    let dir = directory()?;
    let path = dir.join(format!("{id}.jsonl"));
    if std::fs::symlink_metadata(&path).is_ok() {
        return Ok((id.to_owned(), path));
    }
    let mut matching: Vec<String> = std::fs::read_dir(&dir)
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|entry| {
                    let name = entry.file_name().into_string().ok()?;
                    let stem = name.strip_suffix(".jsonl")?;
                    stem.starts_with(id).then(|| stem.to_owned())
                })
                .collect()
        })
        .unwrap_or_default();
    matching.sort();
    match matching.as_slice() {
        [] => Err(CliError::usage(format!(
            "no session {id}; `golato sessions --all` lists them"
        ))),
        [one] => Ok((one.clone(), dir.join(format!("{one}.jsonl")))),
        many => Err(CliError::usage(format!(
            "{id} starts {} ({}{}); give more of the ID",
            crate::view::shown::count(many.len() as u64, "session"),
            many.iter().take(5).cloned().collect::<Vec<_>>().join(", "),
            if many.len() > 5 { ", …" } else { "" }
        ))),
    }
}

/// Where sessions live.
pub(crate) fn directory() -> Result<PathBuf, CliError> {
    Ok(data_directory()?.join("sessions"))
}

/// Where golato keeps what it remembers (sessions, trusted folders): `GOLATO_DATA_DIR`, else
/// `$XDG_DATA_HOME/golato`, else `~/.local/share/golato`.
pub(crate) fn data_directory() -> Result<PathBuf, CliError> {
    std::env::var_os("GOLATO_DATA_DIR")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("XDG_DATA_HOME")
                .filter(|dir| !dir.is_empty())
                .map(|dir| PathBuf::from(dir).join("golato"))
        })
        .or_else(|| {
            std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".local/share/golato"))
        })
        .ok_or_else(|| {
            CliError::usage(
                "no place to keep golato's data (sessions, trusted folders): set GOLATO_DATA_DIR or HOME, or pass --ephemeral",
            )
        })
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs())
}

/// A new session ID: when it started (sortable), and a part that tells apart two sessions
/// started in the same second.
fn new_id() -> String {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    format!(
        "{}-{:05x}{:04x}",
        since.as_secs(),
        since.subsec_micros(),
        std::process::id() & 0xffff
    )
}

impl Writer {
    /// Starts a new session for a run in `cwd`.
    pub(crate) fn create(cwd: &Path) -> Result<Writer, CliError> {
        let dir = directory()?;
        std::fs::create_dir_all(&dir).map_err(|error| {
            CliError::Failed(format!(
                "could not create the sessions directory {}: {error}; set GOLATO_DATA_DIR, or pass --ephemeral",
                dir.display()
            ))
        })?;
        // Said before the model is asked, not after: a session that cannot be written is
        // only found out when its first line is (an unprivileged user's read-only data folder).
        tempfile::NamedTempFile::new_in(&dir).map_err(|error| {
            CliError::Failed(format!(
                "cannot save the session in {}: {error}; pass --ephemeral to run without saving it, or set GOLATO_DATA_DIR to a folder you can write",
                dir.display()
            ))
        })?;
        let header = Header {
            golato_session: FORMAT,
            id: new_id(),
            cwd: cwd.canonicalize().unwrap_or_else(|_| cwd.to_owned()),
            created: now(),
            provider: None,
            model: None,
            base_url: None,
        };
        let path = dir.join(format!("{}.jsonl", header.id));
        Ok(Writer {
            path,
            file: None,
            pending: Some(vec![serde_json::to_value(&header).unwrap_or(Value::Null)]),
            failed: None,
            _lock: None,
            children: Default::default(),
        })
    }

    /// Whether the session is on disk: a new one is once the model first answered.
    pub(crate) fn on_disk(&self) -> bool {
        self.pending.is_none()
    }

    /// Notes in a new session's first line the model it is started with (`fields`: provider,
    /// model and base URL, as [`Settings::model_origin`](crate::settings::Settings::model_origin)
    /// gives them), so that going on with it later reaches the same model without the flags
    /// given again. A session already on disk keeps what its first line says.
    pub(crate) fn started_with(&mut self, fields: Vec<(&'static str, Option<String>)>) {
        let Some(header) = self.pending.as_mut().and_then(|lines| lines.first_mut()) else {
            return;
        };
        for (field, value) in fields {
            if let (Some(value), Some(header)) = (value, header.as_object_mut()) {
                header.insert(field.to_owned(), Value::String(value));
            }
        }
    }

    /// Puts a new session on disk, with the lines kept until now.
    fn materialize(&mut self, pending: Vec<Value>) {
        let id = self.id();
        // The first lines (header, prompt, first answer) appear together or not at all: written
        // to a file of their own, synced, then linked in under the session's name (which fails
        // rather than replace a file there). A kill in between leaves no half session behind.
        let mut text = String::new();
        for value in &pending {
            text.push_str(&value.to_string());
            text.push('\n');
        }
        let path = self.path.clone();
        let created = file::Lock::take(&path, &id).and_then(|lock| {
            let failed = |error: std::io::Error| {
                CliError::Failed(format!(
                    "could not create the session file {}: {error}",
                    path.display()
                ))
            };
            let staging = path.with_extension("jsonl.new");
            let _ = std::fs::remove_file(&staging);
            let written = std::fs::OpenOptions::new()
                .create_new(true)
                .write(true)
                .open(&staging)
                .and_then(|mut file| {
                    file.write_all(text.as_bytes())?;
                    file.sync_data()
                })
                .and_then(|()| std::fs::hard_link(&staging, &path));
            let _ = std::fs::remove_file(&staging);
            written.map_err(failed)?;
            let file = std::fs::OpenOptions::new()
                .append(true)
                .open(&path)
                .map_err(failed)?;
            Ok((lock, file))
        });
        match created {
            Ok((lock, file)) => {
                self._lock = Some(lock);
                self.file = Some(file);
            }
            Err(error) => {
                let why = format!("golato: the session is not saved: {error}");
                eprintln!("{why}");
                self.failed = Some(why);
            }
        }
    }

    /// Goes on writing `saved`, as it was read: refused while another golato writes it or when
    /// it changed since.
    pub(crate) fn append(saved: &Saved) -> Result<Writer, CliError> {
        let lock = file::Lock::take(&saved.path, &saved.header.id)?;
        let file = file::open_for_append(&saved.path, saved.length, &lock)?;
        Ok(Writer {
            path: saved.path.clone(),
            file: Some(file),
            pending: None,
            failed: None,
            _lock: Some(lock),
            children: Default::default(),
        })
    }

    /// The session's file.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The session's ID (its file's name).
    pub(crate) fn id(&self) -> String {
        self.path
            .file_stem()
            .map(|stem| stem.to_string_lossy().into_owned())
            .unwrap_or_default()
    }

    /// Saves the steps a session keeps: each assistant message, each tool result, each queued
    /// message as it joins. Results
    /// that come while the run is being cancelled are not kept: going on runs those calls
    /// again.
    pub(crate) fn save_event(&mut self, event: &golato::agent::Event, cancelling: bool) {
        use golato::agent::Event;
        self.children.save_event(&self.path, event);
        match event {
            Event::MessageEnd(end) => self.step(&Message::Assistant(end.message.clone())),
            Event::ToolExecutionEnd(end) if !cancelling => {
                self.step(&Message::ToolResult(end.result.clone()));
            }
            // Steering and follow-ups, when (and where) they joined the transcript.
            Event::UserMessage(joined) => self.step(&Message::User(joined.message.clone())),
            // How requests send the transcript from now on: going on starts from it instead
            // of summarizing the whole history again.
            Event::Compaction(compaction) => {
                self.compacted(&golato::agent::compaction::Summary::new(
                    compaction.summary.clone(),
                    compaction.replaced,
                ));
            }
            _ => {}
        }
    }

    /// Keeps a review of `--approve auto`'s reviewer (`golato reviews` lists them; reading the
    /// session back skips them).
    pub(crate) fn reviewed(&mut self, review: &serde_json::Value) {
        self.line(&serde_json::json!({ "review": review }));
    }

    /// Saves how requests send the transcript from now on (a compaction).
    pub(crate) fn compacted(&mut self, summary: &golato::agent::compaction::Summary) {
        self.line(&serde_json::json!({ "compaction": summary }));
    }

    /// Notes that the conversation goes on with the model `id` (`/model`): a session gone on
    /// with later asks it, as the first line's model otherwise.
    pub(crate) fn model_chosen(&mut self, id: &str) {
        self.line(&serde_json::json!({ "model": id }));
    }

    /// Saves one step; a failure stops saving and is told once on stderr (the run goes on).
    pub(crate) fn step(&mut self, message: &Message) {
        let value = serde_json::json!({ "message": message });
        // The model answered (not a failure before its first word): the session exists now.
        let answered = matches!(message, Message::Assistant(answer)
            if !(answer.stop_reason == StopReason::Error && answer.content.is_empty() && answer.tool_calls.is_empty()));
        if let Some(mut pending) = self.pending.take() {
            pending.push(value);
            match answered {
                true => self.materialize(pending),
                false => self.pending = Some(pending),
            }
            return;
        }
        self.line(&value);
    }

    fn line(&mut self, value: &Value) {
        if let Some(pending) = &mut self.pending {
            pending.push(value.clone());
            return;
        }
        let Some(file) = &mut self.file else { return };
        let mut line = value.to_string();
        line.push('\n');
        // Synced per step: a killed process loses at most the step it was writing.
        if let Err(error) = file
            .write_all(line.as_bytes())
            .and_then(|()| file.sync_data())
        {
            let why = format!(
                "golato: the session {} is no longer saved: {error}",
                self.path.display()
            );
            eprintln!("{why}");
            self.failed = Some(why);
            self.file = None;
        }
    }
}

/// What a run starts from, and where it is saved.
pub(crate) struct Opened {
    pub(crate) transcript: Vec<Message>,
    /// How an earlier run compacted the transcript.
    pub(crate) summary: Option<golato::agent::compaction::Summary>,
    pub(crate) saving: Option<Writer>,
}

/// The transcript a run starts from and where it is saved: a new session in `cwd`, or the one
/// `going_on` names (its calls cut off by a stop closed with an error result, and saved so,
/// when `closing` says a new prompt follows); nothing saved with `ephemeral`.
pub(crate) fn open(
    going_on: Option<Saved>,
    cwd: &Path,
    ephemeral: bool,
    closing: bool,
) -> Result<Opened, CliError> {
    match going_on {
        Some(mut saved) => {
            let mut saving = match ephemeral {
                true => None,
                false => Some(Writer::append(&saved)?),
            };
            if closing {
                for closed in saved.close_cut_off_calls() {
                    if let Some(saving) = &mut saving {
                        saving.step(&closed);
                    }
                }
            }
            Ok(Opened {
                transcript: saved.transcript,
                summary: saved.summary,
                saving,
            })
        }
        None => {
            let saving = match ephemeral {
                true => None,
                false => Some(Writer::create(cwd)?),
            };
            Ok(Opened {
                transcript: Vec::new(),
                summary: None,
                saving,
            })
        }
    }
}
