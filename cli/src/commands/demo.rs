//! `golato demo`: the main job on a fresh machine, with no key and no network. The bundled
//! project (`cli/demo/project/`, a shell library with a bug and a failing check) is copied
//! into a fresh directory, and the recorded session (`cli/demo/session.jsonl`, written by
//! `golato run --record`) is replayed there with the live view: the agent reads the files, runs
//! the check, edits the bug, writes a note and runs the check again, green.
//!
//! The files are compiled into the binary, so the demo works wherever the binary is.

use std::io::IsTerminal as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use futures::StreamExt as _;
use golato::agent::{self, Agent};
use golato::builtin;
use golato::generator::{Delta, EventStream, Generator, Request, Scripted, StreamEvent};

use crate::args::DemoArgs;
use crate::commands::run::{drive, OneRun};
use crate::error::{CliError, Exit};
use crate::store::record::{Recorder, Recording};

/// The prompt the session was recorded with.
pub(crate) const PROMPT: &str =
    "`bash check.sh` fails in this project. Find out why, fix it, and leave a note of the fix in NOTES.md.";

/// The project, file by file (path, contents).
const PROJECT: [(&str, &str); 3] = [
    ("README.md", include_str!("../../demo/project/README.md")),
    ("stats.sh", include_str!("../../demo/project/stats.sh")),
    ("check.sh", include_str!("../../demo/project/check.sh")),
];

/// The recorded session.
const SESSION: &str = include_str!("../../demo/session.jsonl");

pub(crate) async fn command(args: DemoArgs) -> Result<Exit, CliError> {
    let workspace = match args.dir {
        Some(dir) => prepare(&dir)?,
        None => fresh_directory()?,
    };
    for (name, contents) in PROJECT {
        let path = workspace.join(name);
        std::fs::write(&path, contents).map_err(|error| {
            CliError::Failed(format!(
                "could not copy the demo project to {}: {error}",
                path.display()
            ))
        })?;
    }
    let script = Scripted::from_json(SESSION).map_err(|error| {
        CliError::Failed(format!("the bundled demo session is broken: {error}"))
    })?;
    let recording = Recording::parse(SESSION, Path::new("cli/demo/session.jsonl"))?;
    let tools = builtin::new(builtin::Config {
        working_directory: workspace.clone(),
        ..Default::default()
    })
    .map_err(|error| CliError::Failed(error.to_string()))?;
    // On a terminal the session plays at a pace a person can follow; piped, --json or --fast,
    // at full speed.
    let paced = !args.fast && !args.view.json && std::io::stdout().is_terminal();
    let (generator, hooks): (std::sync::Arc<dyn Generator>, _) = if paced {
        let linger = golato::hook::before(|_| async {
            tokio::time::sleep(TOOL_LINGER).await;
            Ok(golato::hook::BeforeToolCall::Run)
        });
        (std::sync::Arc::new(Paced(script)), vec![linger])
    } else {
        (std::sync::Arc::new(script), Vec::new())
    };
    let agent = Agent::new(agent::Config {
        generator: Some(generator),
        tools,
        hooks,
        ..Default::default()
    })
    .map_err(|error| CliError::Failed(error.to_string()))?;
    let recorder = match &args.record {
        Some(path) => Some(Recorder::create(path, Some(PROMPT.to_owned()))?),
        None => None,
    };
    drive(OneRun {
        policy: golato::policy::CallPolicy::new(),
        hook_session: golato::policy::HookSession::default(),
        agent,
        input: golato::agent::Input::from(golato::message::UserMessage::new(PROMPT)),
        saving: None,
        story: crate::view::live::Target::Stdout,
        last_message: None,
        view: args.view,
        recorder,
        recording: Some(recording),
        workspace: Some(workspace),
        journal: None,
        header: None,
        questions: None,
        strict_replay: None,
        reviews: None,
        price: None,
    })
    .await
}

/// How long each piece of text waits: a fast reader's pace (about 60 characters a second).
const PIECE_DELAY: Duration = Duration::from_millis(50);
/// Characters per piece of streamed text.
const PIECE_CHARS: usize = 3;
/// How long each tool call's spinner shows before the call runs.
const TOOL_LINGER: Duration = Duration::from_millis(600);

/// The recorded session at a human pace: its text in small pieces at a reading rate.
struct Paced(Scripted);

impl Generator for Paced {
    fn stream(&self, request: Request) -> EventStream {
        self.0
            .stream(request)
            .flat_map(|event| match event {
                Ok(StreamEvent::Delta(Delta::Text(text))) => {
                    let chars: Vec<char> = text.chars().collect();
                    let pieces: Vec<String> = chars
                        .chunks(PIECE_CHARS)
                        .map(|piece| piece.iter().collect())
                        .collect();
                    futures::stream::iter(pieces)
                        .then(|piece| async move {
                            tokio::time::sleep(PIECE_DELAY).await;
                            Ok(StreamEvent::Delta(Delta::Text(piece)))
                        })
                        .boxed()
                }
                other => futures::stream::once(async move { other }).boxed(),
            })
            .boxed()
    }
}

/// A new directory under the system's temporary directory, kept after the demo so the result
/// can be looked at.
fn fresh_directory() -> Result<PathBuf, CliError> {
    tempfile::Builder::new()
        .prefix("golato-demo-")
        .tempdir()
        .map(tempfile::TempDir::keep)
        .map_err(|error| {
            CliError::Failed(format!(
                "could not make a temporary directory for the demo: {error}; pass --dir DIR"
            ))
        })
}

/// `--dir`: created if missing; it must be empty, so the demo never overwrites anyone's files.
fn prepare(dir: &Path) -> Result<PathBuf, CliError> {
    std::fs::create_dir_all(dir).map_err(|error| {
        CliError::usage(format!("cannot create --dir {}: {error}", dir.display()))
    })?;
    let mut entries = std::fs::read_dir(dir).map_err(|error| {
        CliError::usage(format!("cannot read --dir {}: {error}", dir.display()))
    })?;
    if entries.next().is_some() {
        return Err(CliError::usage(format!(
            "--dir {} is not empty; give a new or empty directory (the demo writes its project there)",
            dir.display()
        )));
    }
    dir.canonicalize().map_err(|error| {
        CliError::usage(format!("cannot resolve --dir {}: {error}", dir.display()))
    })
}
