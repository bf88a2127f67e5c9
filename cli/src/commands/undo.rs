//! `golato undo` and `golato diff`: a session's changes taken back, or shown.

use std::io::Write as _;

use crate::error::CliError;
use crate::store::checkpoints;
use crate::store::session::Saved;

/// `golato undo [ID] [--to N]`.
pub(crate) fn undo_command(
    session: &crate::args::SessionChoice,
    to: Option<usize>,
) -> Result<crate::error::Exit, CliError> {
    let saved = chosen(session)?;
    let done = checkpoints::undo(&saved, to)?;
    let _ = writeln!(std::io::stdout().lock(), "{}: {done}", saved.header.id);
    Ok(crate::error::Exit::Success)
}

/// `golato diff [ID]`.
pub(crate) fn diff_command(
    session: &crate::args::SessionChoice,
) -> Result<crate::error::Exit, CliError> {
    let saved = chosen(session)?;
    let _ = std::io::stdout()
        .lock()
        .write_all(checkpoints::diff(&saved).as_bytes());
    Ok(crate::error::Exit::Success)
}

/// The session named, else the directory's newest.
fn chosen(session: &crate::args::SessionChoice) -> Result<Saved, CliError> {
    let id = session.id.as_deref();
    crate::store::session::find(id, Some(session.cwd.as_path()).filter(|_| id.is_none()))
}
