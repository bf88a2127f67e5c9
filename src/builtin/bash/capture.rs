//! A sandboxed command's changes to the working directory, captured in an overlay and applied
//! when it ends (see `sandbox::capture`), for an application's checkpoints.

use std::path::Path;
use std::sync::Arc;

use serde_json::{json, Value};

use super::Settings;
use crate::builtin::Checkpoints;
use crate::message::Content;
use crate::sandbox::capture::{Applied, Stage};
use crate::tool::ToolResult;

/// Whether and how one call is captured.
pub(super) enum Capture {
    /// Nobody asked (no checkpoints), or nothing can change (a read-only sandbox).
    Off,
    /// Asked, but this call runs uncaptured, for this reason.
    Uncaptured(String),
    /// The helper captures into this stage.
    Staged {
        stage: Stage,
        checkpoints: Arc<dyn Checkpoints>,
    },
}

impl Capture {
    /// What `settings` ask of call `call`, whose processes carry `mark`.
    pub(super) fn prepare(settings: &Settings, call: &str, mark: &str) -> Capture {
        let Some(checkpoints) = &settings.checkpoints else {
            return Capture::Off;
        };
        let Some(sandbox) = &settings.sandbox else {
            return Capture::Uncaptured(
                "no sandbox: a command outside one changes the working directory directly".into(),
            );
        };
        if sandbox.mode() != crate::sandbox::Mode::WorkspaceWrite {
            return Capture::Off;
        }
        let Some(area) = checkpoints.staging_area() else {
            return Capture::Uncaptured("the application gave no staging area".into());
        };
        let root = sandbox.working_directory().to_owned();
        let area = crate::sandbox::resolve(&root, &area);
        if area.starts_with(&root) {
            return Capture::Uncaptured(format!(
                "the staging area {} lies inside the working directory",
                area.display()
            ));
        }
        let staged = Stage::new(&area, &root, json!({ "call": call, "mark": mark })).and_then(
            |mut stage| {
                stage.protect(sandbox.protected_paths())?;
                Ok(stage)
            },
        );
        match staged {
            Ok(stage) => Capture::Staged {
                stage,
                checkpoints: Arc::clone(checkpoints),
            },
            Err(error) => Capture::Uncaptured(format!(
                "could not make a staging area in {}: {error}",
                area.display()
            )),
        }
    }

    /// The stage the helper is told of.
    pub(super) fn stage(&self) -> Option<&Stage> {
        match self {
            Capture::Staged { stage, .. } => Some(stage),
            _ => None,
        }
    }

    /// Applies what the command changed (once `gone` says every process of it has ended) and
    /// says so in `result`.
    pub(super) async fn finish(
        self,
        gone: impl FnOnce() + Send + 'static,
        result: &mut ToolResult,
    ) {
        let applied = match self {
            Capture::Off => return,
            Capture::Uncaptured(reason) => {
                let mut applied = Applied::default();
                applied.uncaptured = Some(reason);
                applied
            }
            Capture::Staged {
                mut stage,
                checkpoints,
            } => {
                // A blocking task runs to its end even when the call is abandoned meanwhile:
                // the command's changes are applied either way.
                let applied = tokio::task::spawn_blocking(move || {
                    gone();
                    stage.apply(&mut |bytes| checkpoints.keep(bytes))
                })
                .await;
                match applied {
                    Ok(applied) => applied,
                    Err(error) => {
                        let mut applied = Applied::default();
                        applied
                            .failures
                            .push(format!("applying the command's changes failed: {error}"));
                        applied
                    }
                }
            }
        };
        annotate(result, &applied);
    }
}

/// The capture's part of a result: details for the application, a note for the model where
/// something needs its attention.
fn annotate(result: &mut ToolResult, applied: &Applied) {
    let mut notes = Vec::new();
    for conflict in &applied.conflicts {
        notes.push(match &conflict.commands_version {
            Some(version) => format!(
                "{} was also changed by something else while the command ran: that change stays, and the command's version is at {}",
                conflict.path.display(),
                version.display()
            ),
            None => format!(
                "the command deleted {}, which something else changed while it ran: it was kept",
                conflict.path.display()
            ),
        });
    }
    if !applied.left_out.is_empty() {
        notes.push(format!(
            "pipes and sockets are not copied out of the command's view of the working directory: {}",
            applied
                .left_out
                .iter()
                .map(|path| path.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if !applied.refused.is_empty() {
        notes.push(format!(
            "not applied: what the command made at protected paths (golato's and other agents' control files, git's hooks and configuration, shell startup files), which only you may change: {}",
            applied
                .refused
                .iter()
                .map(|path| path.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    notes.extend(applied.failures.iter().cloned());
    if !notes.is_empty() {
        result
            .content
            .push(Content::text(format!("\n\n[{}]", notes.join("; "))));
    }
    let capture = match &applied.uncaptured {
        Some(reason) => json!({ "uncaptured": reason }),
        None => json!("captured"),
    };
    let extra = [
        ("capture", capture),
        ("changes", compact::changes(&applied.changes)),
        (
            "conflicts",
            serde_json::to_value(&applied.conflicts).unwrap_or_default(),
        ),
    ];
    match &mut result.details {
        Some(Value::Object(details)) => {
            for (key, value) in extra {
                details.insert(key.to_owned(), value);
            }
        }
        _ => {
            result.details = Some(Value::Object(
                extra
                    .into_iter()
                    .map(|(key, value)| (key.to_owned(), value))
                    .collect(),
            ))
        }
    }
}

/// The files a `bash` call's command changed, from its result's `details`, when the command was
/// captured (see [`Config::bash_checkpoints`](crate::builtin::Config::bash_checkpoints));
/// `None` when it ran uncaptured, or the details are not a captured call's.
///
/// ```
/// use serde_json::json;
/// let details = json!({"capture": "captured", "changes": [
///     ["/w/a.txt", "absent", "kept:3f1c"],
///     // As an older golato wrote them.
///     {"path": "/w/b.txt", "before": "absent", "after": {"kept": "3f1d"}}
/// ]});
/// let changes = golato::builtin::captured_changes(Some(&details)).unwrap();
/// assert_eq!(changes[0].path, std::path::Path::new("/w/a.txt"));
/// assert_eq!(changes[1].after, golato::sandbox::capture::FileState::Kept("3f1d".into()));
/// assert!(golato::builtin::captured_changes(Some(&json!({"capture": {"uncaptured": "no sandbox"}}))).is_none());
/// ```
pub fn captured_changes(details: Option<&Value>) -> Option<Vec<crate::sandbox::capture::Change>> {
    let details = details?;
    if details.get("capture")?.as_str()? != "captured" {
        return None;
    }
    details
        .get("changes")?
        .as_array()?
        .iter()
        .map(compact::change)
        .collect()
}

/// A change in a result's details as a small array, `[path, before, after]`, each state a
/// string (`"absent"`, `"unkept"`, `"kept:NAME"`, `"link:TARGET"`): a captured command may
/// change 100,000 files, and the details are held in the result, its event, the transcript and
/// the session (as objects they cost about 8 KiB a change in all). A path or a link that is
/// not UTF-8 is written as `{"bytes": [...]}`; an older golato's objects (`{"path", "before",
/// "after"}`) are read too.
mod compact {
    use serde_json::Value;

    use crate::sandbox::capture::{path_text, Change, FileState};

    fn path(path: &std::path::Path) -> Value {
        path_text::serialize(path, serde_json::value::Serializer).unwrap_or_default()
    }

    fn state(state: &FileState) -> Value {
        match state {
            FileState::Absent => Value::from("absent"),
            FileState::Unkept => Value::from("unkept"),
            FileState::Kept(name) => Value::from(format!("kept:{name}")),
            FileState::Link(target) => match target.to_str() {
                Some(target) => Value::from(format!("link:{target}")),
                None => serde_json::json!({ "link": path(target) }),
            },
        }
    }

    pub(super) fn changes(changes: &[Change]) -> Value {
        Value::Array(
            changes
                .iter()
                .map(|change| {
                    Value::Array(vec![
                        path(&change.path),
                        state(&change.before),
                        state(&change.after),
                    ])
                })
                .collect(),
        )
    }

    fn state_of(value: &Value) -> Option<FileState> {
        let Some(text) = value.as_str() else {
            return serde_json::from_value(value.clone()).ok();
        };
        Some(match text {
            "absent" => FileState::Absent,
            "unkept" => FileState::Unkept,
            _ => match text.split_once(':')? {
                ("kept", name) => FileState::Kept(name.to_owned()),
                ("link", target) => FileState::Link(target.into()),
                _ => return None,
            },
        })
    }

    pub(super) fn change(value: &Value) -> Option<Change> {
        let Some([file, before, after]) = value.as_array().map(Vec::as_slice) else {
            // An older golato's object.
            return serde_json::from_value(value.clone()).ok();
        };
        Some(Change::new(
            path_text::deserialize(file).ok()?,
            state_of(before)?,
            state_of(after)?,
        ))
    }
}

/// What the result of an interrupted call that is not run again says of the changes its
/// command left staged, applied when golato started again (`recovered`).
pub(super) fn interrupted_report(recovered: &Recovered) -> ToolResult {
    let applied = &recovered.applied;
    let mut paths: Vec<String> = applied
        .changes
        .iter()
        .map(|change| change.path.display().to_string())
        .collect();
    paths.extend(applied.conflicts.iter().map(|conflict| {
        format!(
            "{} (changed by something else too)",
            conflict.path.display()
        )
    }));
    let mut text = match paths.is_empty() {
        true => "Its command changed no file in the working directory before it was cut off (its capture kept nothing).".to_owned(),
        false => format!(
            "What its command changed before it was cut off (its capture kept it) was applied when golato started again: {}.",
            paths.join(", ")
        ),
    };
    if !applied.failures.is_empty() {
        text.push_str(&format!(" Not applied: {}.", applied.failures.join("; ")));
    }
    ToolResult::text(text).with_details(json!({
        "recovered": {
            "changes": compact::changes(&applied.changes),
            "conflicts": serde_json::to_value(&applied.conflicts).unwrap_or_default(),
            "failures": applied.failures,
        }
    }))
}

/// A command's changes that a golato which died while it ran never applied.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Recovered {
    /// The call that ran the command.
    pub call: String,
    /// What applying them now did.
    pub applied: Applied,
}

/// Applies the staging areas in `checkpoints`' area that a golato which died mid-command left
/// for `root` (once none of their processes is alive), keeping files through `checkpoints`.
pub(crate) fn recover(checkpoints: &dyn Checkpoints, root: &Path) -> Vec<Recovered> {
    let Some(area) = checkpoints.staging_area() else {
        return Vec::new();
    };
    let root = root.canonicalize().unwrap_or_else(|_| root.to_owned());
    Stage::leftovers(&crate::sandbox::resolve(&root, &area), &root)
        .into_iter()
        .map(|mut stage| {
            let note = stage.note().clone();
            if let Some(mark) = note.get("mark").and_then(Value::as_str) {
                super::processes::wait_gone(mark);
            }
            Recovered {
                call: note
                    .get("call")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                applied: stage.apply(&mut |bytes| checkpoints.keep(bytes)),
            }
        })
        .collect()
}
