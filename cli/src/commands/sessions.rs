//! `golato sessions`: the saved sessions listed, one repaired, one removed, one's network
//! connections listed.

use std::io::Write as _;
use std::path::Path;

use crate::error::CliError;
use crate::store::session::{self, directory, file, Header, Saved};

/// `golato sessions repair ID`.
pub(crate) fn repair(id: &str) -> Result<crate::error::Exit, CliError> {
    let (id, path) = session::named(id)?;
    let id = id.as_str();
    let bytes = crate::bounded::read(&path, crate::bounded::SESSION_LIMIT).map_err(|why| {
        CliError::usage(format!(
            "the session {id} cannot be repaired: {} ({why})",
            path.display()
        ))
    })?;
    let said = session::file::repair(&path, id, &bytes)?;
    let _ = writeln!(std::io::stdout().lock(), "{said}");
    Ok(crate::error::Exit::Success)
}

/// `golato sessions`: one line each, newest first.
pub(crate) fn list(cwd: Option<&Path>) -> Result<crate::error::Exit, CliError> {
    let (sessions, unreadable) = session::all()?;
    let cwd = cwd.map(|cwd| cwd.canonicalize().unwrap_or_else(|_| cwd.to_owned()));
    let here = |header: Option<&Header>| {
        cwd.as_ref()
            .is_none_or(|cwd| header.is_none_or(|header| header.cwd == *cwd))
    };
    for problem in unreadable
        .iter()
        .filter(|problem| here(problem.header.as_deref()))
    {
        eprintln!("golato: {}", problem.error);
    }
    let total = sessions.len();
    let shown: Vec<Saved> = sessions
        .into_iter()
        .filter(|saved| here(Some(&saved.header)))
        .collect();
    let mut out = std::io::stdout().lock();
    if shown.is_empty() {
        let _ = match &cwd {
            Some(cwd) if total > 0 => writeln!(
                out,
                "no sessions saved in {} ({} elsewhere: golato sessions --all)",
                cwd.display(),
                total
            ),
            Some(cwd) => writeln!(out, "no sessions saved in {}", cwd.display()),
            None => writeln!(out, "no sessions saved in {}", directory()?.display()),
        };
        return Ok(crate::error::Exit::Success);
    }
    let rows: Vec<[String; 5]> = shown
        .iter()
        .map(|saved| {
            let age = saved.modified.elapsed().map_or_else(
                |_| "now".to_owned(),
                |since| crate::view::shown::ago(since.as_secs()),
            );
            [
                saved.header.id.clone(),
                age,
                crate::view::shown::count(saved.turns() as u64, "turn"),
                crate::view::shown::visible(&saved.header.cwd.display().to_string()).into_owned(),
                crate::view::live::clip(saved.first_prompt().lines().next().unwrap_or_default()),
            ]
        })
        .collect();
    let header = ["ID", "LAST ACTIVE", "TURNS", "DIRECTORY", "FIRST PROMPT"].map(str::to_owned);
    let widths: Vec<usize> = (0..4)
        .map(|column| {
            std::iter::once(&header)
                .chain(&rows)
                .map(|row| row[column].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for row in std::iter::once(&header).chain(&rows) {
        let mut line = String::new();
        for (column, width) in widths.iter().enumerate() {
            line.push_str(&format!("{:<width$}  ", row[column]));
        }
        line.push_str(&row[4]);
        let _ = writeln!(out, "{}", line.trim_end());
    }
    Ok(crate::error::Exit::Success)
}

/// `golato sessions rm ID`: the session's file and what repairs set aside beside it; refused
/// while a golato writes it.
pub(crate) fn remove(id: &str) -> Result<crate::error::Exit, CliError> {
    let (id, path) = session::named(id)?;
    let _lock = file::Lock::take(&path, &id)?;
    let failed = |error: std::io::Error| {
        CliError::Failed(format!(
            "could not remove the session {id} ({}): {error}",
            path.display()
        ))
    };
    std::fs::remove_file(&path).map_err(failed)?;
    for aside in ["torn", "jsonl.damaged", "lock"] {
        let _ = std::fs::remove_file(path.with_extension(aside));
    }
    // Its subagents' transcripts and its checkpoints go with it.
    let _ = std::fs::remove_dir_all(crate::store::transcripts::folder(&path));
    let _ = std::fs::remove_dir_all(crate::store::checkpoints::folder(&path));
    let _ = writeln!(std::io::stdout().lock(), "removed the session {id}");
    Ok(crate::error::Exit::Success)
}

/// `golato sessions network ID`: the connections in the details of the session's saved tool
/// results (`network`, as `bash` records them), in the order of the calls.
/// `golato reviews [ID]`: what `--approve auto`'s reviewer decided in the session (the
/// folder's newest without an ID), as the session file keeps it.
pub(crate) fn reviews(
    id: Option<&str>,
    cwd: &std::path::Path,
    json: bool,
) -> Result<crate::error::Exit, CliError> {
    let cwd = crate::settings::resolved::canonical_directory(cwd)?;
    let saved = session::find(id, Some(&cwd))?;
    let text = crate::bounded::read_text(&saved.path, crate::bounded::SESSION_LIMIT)
        .map_err(|error| CliError::Failed(format!("{}: {error}", saved.path.display())))?;
    let reviews: Vec<serde_json::Value> = text
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter_map(|line| line.get("review").cloned())
        .collect();
    let mut out = std::io::stdout().lock();
    if json {
        for review in &reviews {
            let _ = writeln!(out, "{review}");
        }
        return Ok(crate::error::Exit::Success);
    }
    if reviews.is_empty() {
        let _ = writeln!(
            out,
            "no reviews in the session {}: nothing went to --approve auto's reviewer",
            saved.header.id
        );
    }
    for review in reviews {
        match serde_json::from_value::<crate::setup::reviewer::Review>(review) {
            Ok(review) => {
                let _ = writeln!(
                    out,
                    "{}  ({} ms, {} tokens, {})",
                    crate::setup::reviewer::line(&review),
                    review.latency_ms,
                    review.tokens,
                    crate::view::shown::visible(&review.model)
                );
            }
            Err(error) => {
                let _ = writeln!(out, "(a review golato cannot read: {error})");
            }
        }
    }
    Ok(crate::error::Exit::Success)
}

pub(crate) fn network(id: &str, json: bool) -> Result<crate::error::Exit, CliError> {
    let saved = session::find(Some(id), None)?;
    let connections: Vec<&serde_json::Value> = saved
        .transcript
        .iter()
        .filter_map(|message| match message {
            golato::message::Message::ToolResult(result) => result.details.as_ref(),
            _ => None,
        })
        .filter_map(|details| details.get("network")?.as_array())
        .flatten()
        .collect();
    let mut out = std::io::stdout().lock();
    if json {
        for connection in &connections {
            let _ = writeln!(out, "{connection}");
        }
        return Ok(crate::error::Exit::Success);
    }
    if connections.is_empty() {
        let _ = writeln!(
            out,
            "no connections in the session {}: its commands made none through golato's proxy (--allow-domain)",
            saved.header.id
        );
        return Ok(crate::error::Exit::Success);
    }
    for connection in connections {
        let text = |key: &str| connection[key].as_str().unwrap_or_default().to_owned();
        let verdict = match (connection["allowed"].as_bool(), connection.get("reason")) {
            (Some(false), Some(reason)) => {
                format!("blocked ({})", reason.as_str().unwrap_or_default())
            }
            (Some(false), None) => "blocked".to_owned(),
            _ => match connection.get("failed") {
                Some(why) => format!("failed ({})", why.as_str().unwrap_or_default()),
                None => "allowed".to_owned(),
            },
        };
        let _ = writeln!(
            out,
            "{}:{}  {}  {verdict}  sent {} received {}  call {}",
            crate::view::shown::visible(&text("host")),
            connection["port"],
            text("method"),
            crate::view::shown::bytes(connection["sent"].as_u64().unwrap_or(0)),
            crate::view::shown::bytes(connection["received"].as_u64().unwrap_or(0)),
            crate::view::shown::visible(&text("call")),
        );
    }
    Ok(crate::error::Exit::Success)
}
