//! Taking a session's changes back (`golato undo`, `/undo`) and showing them (`golato diff`,
//! `/diff`): each file is reached from `/` without following a link, compared by kind, size
//! and streamed hash with what the session left, and put back through an `O_EXCL` temporary.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use super::*;
use crate::error::CliError;
use crate::store::session::Saved;

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
    if prompts.is_empty() {
        return Err(CliError::usage(format!(
            "nothing to undo: the session {} has no prompt (yet, or any more)",
            saved.header.id
        )));
    }
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
        // Behind a link the session put where a folder was (`rm -rf d && ln -s … d`): the
        // file is gone as far as the session left it, and the link is checked on its own.
        let behind_a_link = files.iter().any(|(other, (_, after))| {
            matches!(after, State::Link(_)) && path.starts_with(other) && path != other
        });
        let checked = match behind_a_link {
            true => match after {
                State::Absent => Ok(()),
                _ => Err("changed since: it is behind a symbolic link the session made".to_owned()),
            },
            false => unchanged_since(path, after),
        };
        if let Err(why) = checked {
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
    let note = serde_json::to_value(Note {
        to_prompt: prompt,
        restored: &done.restored,
        removed: &done.removed,
        uncaptured_bash_commands: commands,
    })
    .map_err(|error| CliError::Failed(format!("could not note what undo did: {error}")))?;
    crate::store::session::cut_before(saved, prompt, note)?;
    store
        .keep(&kept)
        .map_err(|error| CliError::Failed(format!("could not update the checkpoints: {error}")))?;
    Ok(done)
}

/// What the session file keeps of an undo (for people, not the model): paths as
/// `path_text` writes them, so a name that is not UTF-8 is kept whole.
#[derive(serde::Serialize)]
struct Note<'a> {
    to_prompt: usize,
    #[serde(with = "golato::sandbox::capture::path_text::many")]
    restored: &'a [PathBuf],
    #[serde(with = "golato::sandbox::capture::path_text::many")]
    removed: &'a [PathBuf],
    uncaptured_bash_commands: usize,
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
