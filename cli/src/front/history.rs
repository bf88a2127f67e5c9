//! The prompts a person typed, kept across sessions in golato's data folder (the last
//! [`HISTORY_KEPT`]) for Up and Ctrl-R.

use std::io::Write as _;

/// Texts sent kept in the history file.
pub(super) const HISTORY_KEPT: usize = 1000;

/// The history file: one JSON string per line, in golato's data directory.
pub(super) fn history_file() -> Option<std::path::PathBuf> {
    crate::store::session::data_directory()
        .ok()
        .map(|dir| dir.join("history.jsonl"))
}

pub(super) fn load_history(path: Option<&std::path::Path>) -> Vec<String> {
    let Some(path) = path else { return Vec::new() };
    let Ok(bytes) = crate::bounded::read(path, crate::bounded::CONFIG_LIMIT * 8) else {
        return Vec::new();
    };
    let texts: Vec<String> = String::from_utf8_lossy(&bytes)
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect();
    let skip = texts.len().saturating_sub(HISTORY_KEPT);
    texts.into_iter().skip(skip).collect()
}

pub(super) fn remember(path: Option<&std::path::Path>, text: &str) {
    let Some(path) = path else { return };
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    if let Ok(mut file) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        let _ = writeln!(file, "{}", serde_json::Value::String(text.to_owned()));
    }
}
