//! A journal in a file: one JSON line per recorded step, appended and synced before the run
//! goes on, so a process killed at any moment loses no recorded step.

use std::collections::HashMap;
use std::io::{BufRead as _, Write as _};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use futures::future::BoxFuture;
use futures::FutureExt;
use serde_json::Value;

use super::Error;
use crate::journal::{Journal, StepError, StepKey, StepWork};

/// A [`Journal`] kept in a file of JSON lines (`{"step": "turn-1", "record": …}`), appended and
/// synced to disk before each step's value is handed to the run: a run whose process was
/// killed, started again on the same file, asks for no turn and runs no call the file records.
/// A call's start is a line too (`{"started": "turn-1/call-b"}`, synced before it runs): a call
/// that was running when the process died is its next attempt, and runs again only when its
/// tool's [`Replay`](crate::tool::Replay) class (or a rule) says it may.
///
/// The file is read whole when opened; a last line cut short by a crash mid-write is ignored
/// (the step it would have recorded runs again), and any other line that is not a record is an
/// error naming its line. One file is one run: start it again with the same input.
///
/// ```
/// use std::sync::Arc;
/// use golato::agent::{self, Agent};
/// use golato::journal::FileJournal;
/// use golato::generator::Scripted;
/// use golato::message::{AssistantMessage, UserMessage};
///
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("run.jsonl");
/// let agent = Agent::new(agent::Config {
///     generator: Some(Arc::new(Scripted::new([AssistantMessage::with_text("done")]))),
///     ..Default::default()
/// })?;
/// let journal = Arc::new(FileJournal::open(&path)?);
/// agent.start_journaled(UserMessage::new("go"), journal).wait()?;
/// // Another process could pick the run up from the file.
/// assert_eq!(FileJournal::open(&path)?.keys(), ["input", "turn-1", "turn-1/inbox-end"]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct FileJournal {
    path: PathBuf,
    inner: Arc<Mutex<Inner>>,
}

#[derive(Debug)]
struct Inner {
    file: std::fs::File,
    steps: HashMap<String, Value>,
    order: Vec<String>,
    /// How many times each call was started without its result being recorded: the next
    /// start is attempt one more (a `once` tool's call is then not run again).
    starts: HashMap<String, u32>,
}

impl Inner {
    /// Appends `line` and syncs it to disk.
    fn append(&mut self, line: &str) -> std::io::Result<()> {
        self.file
            .write_all(line.as_bytes())
            .and_then(|()| self.file.sync_data())
    }
}

/// Why a journal file could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// The file could not be opened, read or created.
    #[error("could not open the journal {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What the file system said.
        #[source]
        source: std::io::Error,
    },
    /// A line is not a step golato recorded.
    #[error("the journal {path} is not golato's: line {line} {reason}; give a journal file a run of golato wrote, or a new path")]
    Malformed {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong with it.
        reason: String,
    },
}

impl FileJournal {
    /// Opens the journal at `path`, creating it if it does not exist.
    ///
    /// # Errors
    /// [`FileError::Io`] when the file cannot be opened or read,
    /// [`FileError::Malformed`] naming a line that is not a record.
    pub fn open(path: impl AsRef<Path>) -> Result<FileJournal, FileError> {
        let path = path.as_ref().to_owned();
        let io = |source| FileError::Io {
            path: path.clone(),
            source,
        };
        let file = std::fs::OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(&path)
            .map_err(io)?;
        // A device (`/dev/zero`, `/dev/full`) would be read without end, a FIFO would hold the
        // run: a journal is a regular file.
        if !file.metadata().map_err(io)?.is_file() {
            return Err(io(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "it is not a regular file (a device, a FIFO or a directory); give a path to a file",
            )));
        }
        let mut steps = HashMap::new();
        let mut order = Vec::new();
        let mut starts = HashMap::new();
        let mut reader = std::io::BufReader::new(&file);
        let mut line = String::new();
        let mut number = 0;
        loop {
            line.clear();
            let read = reader.read_line(&mut line).map_err(io)?;
            if read == 0 {
                break;
            }
            number += 1;
            if !line.ends_with('\n') {
                // Cut short by a crash mid-write: that step was never recorded.
                tracing::warn!(path = %path.display(), line = number, "ignoring a journal line cut short");
                break;
            }
            let malformed = |reason: String| FileError::Malformed {
                path: path.clone(),
                line: number,
                reason,
            };
            let mut entry: serde_json::Map<String, Value> = serde_json::from_str(&line)
                .map_err(|error| malformed(format!("is not a JSON object ({error})")))?;
            if let Some(Value::String(step)) = entry.remove("started") {
                *starts.entry(step).or_default() += 1;
                continue;
            }
            let (Some(Value::String(step)), Some(record)) =
                (entry.remove("step"), entry.remove("record"))
            else {
                return Err(malformed(
                    "has no \"step\" and \"record\", nor \"started\"".to_owned(),
                ));
            };
            if steps.insert(step.clone(), record).is_none() {
                order.push(step);
            }
        }
        Ok(FileJournal {
            path,
            inner: Arc::new(Mutex::new(Inner {
                file,
                steps,
                order,
                starts,
            })),
        })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The recorded steps' keys, in the order they were recorded.
    pub fn keys(&self) -> Vec<String> {
        self.inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .order
            .clone()
    }
}

impl Journal for FileJournal {
    fn step(&self, key: StepKey, work: StepWork) -> BoxFuture<'static, Result<Value, StepError>> {
        let name = key.to_string();
        let recorded = self
            .inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .steps
            .get(&name)
            .cloned();
        if let Some(value) = recorded {
            return futures::future::ready(Ok(value)).boxed();
        }
        let inner = Arc::clone(&self.inner);
        let path = self.path.clone();
        let failed = |name: &str, path: &Path, error: std::io::Error| {
            Error {
            step: name.to_owned(),
            reason: format!(
                "could not write {}: {error}; the run stopped there, and started again on this journal once it can be written it goes on from there",
                path.display()
            ),
        }
        };
        let is_call = matches!(key, StepKey::Call { .. } | StepKey::Hook { .. });
        async move {
            // A call's start is on disk before it runs: started again after a crash, it is
            // its next attempt (and a `once` tool's call is not run again).
            let attempt = match is_call {
                false => 1,
                true => {
                    let (inner, name, path) = (Arc::clone(&inner), name.clone(), path.clone());
                    let started = tokio::task::spawn_blocking(move || {
                        let mut inner = inner.lock().unwrap_or_else(PoisonError::into_inner);
                        let line = serde_json::json!({ "started": name }).to_string() + "\n";
                        inner
                            .append(&line)
                            .map_err(|error| failed(&name, &path, error))?;
                        let starts = inner.starts.entry(name).or_default();
                        *starts += 1;
                        Ok(*starts)
                    })
                    .await;
                    match started {
                        Ok(Ok(attempt)) => attempt,
                        Ok(Err(error)) => return Err(StepError::Journal(error)),
                        Err(error) => {
                            return Err(StepError::Journal(Error {
                                step: "?".to_owned(),
                                reason: format!("the write did not finish: {error}"),
                            }))
                        }
                    }
                }
            };
            let value = work.run_attempt(attempt).await?;
            let line = serde_json::json!({"step": name, "record": value}).to_string() + "\n";
            // Appended and synced on the blocking pool: the run goes on only once the record
            // is on disk.
            let written = tokio::task::spawn_blocking(move || {
                let mut inner = inner.lock().unwrap_or_else(PoisonError::into_inner);
                if let Some(kept) = inner.steps.get(&name) {
                    return Ok(kept.clone());
                }
                inner
                    .append(&line)
                    .map_err(|error| failed(&name, &path, error))?;
                inner.steps.insert(name.clone(), value.clone());
                inner.order.push(name);
                Ok(value)
            })
            .await;
            match written {
                Ok(result) => result.map_err(StepError::Journal),
                Err(error) => Err(StepError::Journal(Error {
                    step: "?".to_owned(),
                    reason: format!("the write did not finish: {error}"),
                })),
            }
        }
        .boxed()
    }
}
