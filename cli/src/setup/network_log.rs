//! `--network-log FILE`: every connection sandboxed commands make, allowed or blocked, appended
//! to FILE as one JSON object a line as it ends (the proxy's [`Connection::to_json`], with the
//! time in seconds since the epoch).

use std::io::Write as _;
use std::path::Path;
use std::sync::Mutex;

use golato::proxy::{Connection, ConnectionLog};

use crate::error::CliError;

/// The log appending to `path` (made when missing).
///
/// # Errors
/// A file that cannot be opened for appending, named.
pub(crate) fn open(path: &Path) -> Result<ConnectionLog, CliError> {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|error| {
            CliError::usage(format!(
                "--network-log {}: cannot open it for appending: {error}",
                path.display()
            ))
        })?;
    let file = Mutex::new(file);
    let shown = path.display().to_string();
    Ok(ConnectionLog::new(move |connection: &Connection| {
        let mut line = connection.to_json();
        line["time"] = serde_json::json!(std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|since| since.as_secs_f64())
            .unwrap_or_default());
        // One write of the whole line: appends from several sessions do not interleave.
        let mut text = line.to_string();
        text.push('\n');
        let written = file
            .lock()
            .map_err(|_| std::io::Error::other("the log's lock was poisoned"))
            .and_then(|mut file| file.write_all(text.as_bytes()));
        if let Err(error) = written {
            tracing::warn!(%error, file = %shown, "could not write to the network log");
        }
    }))
}
