//! `edit`: unique replacements, all matched against the original file.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use golato_actors::path_lock::PathLock;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::paths::{lock_key, replaceable};
use super::write::{replace_atomically, write_failed};
use super::Workspace;
use crate::tool::{BoxError, Execution, Tool, ToolContext, ToolResult};

/// Arguments of `edit`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct EditArgs {
    /// Path of the file to edit, relative to the working directory or absolute.
    path: String,
    /// Replacements, each matched against the original file.
    edits: Vec<Replacement>,
}

/// One replacement.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Replacement {
    /// Text to find; it must occur exactly once in the file.
    #[serde(rename = "oldText")]
    old_text: String,
    /// Text to put in its place.
    #[serde(rename = "newText")]
    new_text: String,
}

pub(super) fn tool(workspace: Arc<Workspace>, lock: PathLock) -> Tool {
    Tool::typed(
        "edit",
        "Edit a file by replacing exact text. Each edits[i].oldText must occur exactly once in the \
         original file (include surrounding lines to make it unique); all edits are matched \
         against the original, must not overlap, and are applied together or not at all. When \
         the exact text is absent, differences in trailing whitespace, Unicode quotes, dashes and \
         spaces are tolerated.",
        move |ctx: ToolContext, args: EditArgs| {
            let (workspace, lock) = (Arc::clone(&workspace), lock.clone());
            async move {
                let path = workspace.resolve(&args.path);
                let applied = {
                    let _lease = tokio::select! {
                        lease = lock.acquire(lock_key(&path)) => lease?,
                        () = ctx.cancelled() => return Err("edit was cancelled before it started".into()),
                    };
                    tokio::task::spawn_blocking(move || edit_file(&path, &args))
                        .await
                        .map_err(|error| format!("edit did not finish: {error}"))??
                };
                // The file is written: the diff, which can take long, no longer holds the lease.
                tokio::task::spawn_blocking(move || applied.report(DIFF_TIME_LIMIT))
                    .await
                    .map_err(|error| format!("edit's diff did not finish: {error}").into())
            }
        },
    )
    .with_execution(Execution::Sequential)
}

/// The largest file edit reads (its matching needs the whole text, several times over).
const MAX_EDIT_BYTES: u64 = 64 * 1024 * 1024;

/// The file's bytes, read no further than the limit (a file whose size says nothing, as in
/// `/proc`, cannot make it read on).
fn read_bounded(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read as _;
    let file = std::fs::File::open(path)?;
    if file.metadata()?.len() > MAX_EDIT_BYTES {
        return Err(std::io::ErrorKind::FileTooLarge.into());
    }
    let mut bytes = Vec::new();
    file.take(MAX_EDIT_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_EDIT_BYTES {
        return Err(std::io::ErrorKind::FileTooLarge.into());
    }
    Ok(bytes)
}

/// How long the diff of an edit may search for the shortest one; past it, the diff is still
/// correct but may be longer than needed (a block removed and added where fewer lines changed).
const DIFF_TIME_LIMIT: Duration = Duration::from_secs(1);

/// An edit written to its file, and what its report needs.
#[derive(Debug)]
struct Applied {
    shown: String,
    replaced: usize,
    original: String,
    edited: Edited,
}

impl Applied {
    /// The result the model gets: what changed, with a unified diff searched for at most
    /// `time_limit`.
    fn report(self, time_limit: Duration) -> ToolResult {
        let shown = &self.shown;
        let diff = similar::TextDiff::configure()
            .deadline(Instant::now() + time_limit)
            .diff_lines(&self.original, &self.edited.text)
            .unified_diff()
            .context_radius(3)
            .header(shown, shown)
            .to_string();
        ToolResult::text(format!(
            "Successfully replaced {} block(s) in {shown}.",
            self.replaced
        ))
        .with_details(json!({"diff": diff, "first_changed_line": self.edited.first_changed_line}))
    }
}

fn edit_file(path: &Path, args: &EditArgs) -> Result<Applied, BoxError> {
    let shown = &args.path;
    let target = replaceable(path, shown)?;
    let bytes = read_bounded(&target).map_err(|error| match error.kind() {
        std::io::ErrorKind::NotFound => format!("File not found: {shown}"),
        std::io::ErrorKind::PermissionDenied => format!("Permission denied: cannot read {shown}"),
        std::io::ErrorKind::FileTooLarge => format!(
            "{shown} is larger than {} MiB, more than edit takes; change it with bash (sed, a script) instead",
            MAX_EDIT_BYTES / (1024 * 1024)
        ),
        _ => super::paths::failure(format_args!("Could not read {shown}"), &error),
    })?;
    let original = String::from_utf8(bytes)
        .map_err(|_| format!("{shown} is not UTF-8 text; edit only changes text files"))?;
    let edits: Vec<(&str, &str)> = args
        .edits
        .iter()
        .map(|edit| (edit.old_text.as_str(), edit.new_text.as_str()))
        .collect();
    let edited = apply(&original, &edits)
        .map_err(|error| format!("{error} No change was made to {shown}."))?;
    replace_atomically(&target, edited.text.as_bytes())
        .map_err(|error| write_failed(shown, &error))?;
    Ok(Applied {
        shown: shown.clone(),
        replaced: edits.len(),
        original,
        edited,
    })
}

/// A file's new text and the first line (1-based) that changed.
#[derive(Debug, PartialEq)]
pub(super) struct Edited {
    pub(super) text: String,
    pub(super) first_changed_line: usize,
}

const BOM: char = '\u{feff}';

/// Applies every `(old, new)` replacement to `original`, each matched against `original`.
///
/// # Errors
/// A message naming the failing `edits[i]` and why.
pub(super) fn apply(original: &str, edits: &[(&str, &str)]) -> Result<Edited, String> {
    if edits.is_empty() {
        return Err("edits is empty; give at least one {oldText, newText}.".to_owned());
    }
    let (bom, content) = match original.strip_prefix(BOM) {
        Some(rest) => (true, rest),
        None => (false, original),
    };
    let crlf = content
        .find('\n')
        .is_some_and(|at| content[..at].ends_with('\r'));
    let convert = |text: &str| {
        let lf = text.replace("\r\n", "\n");
        if crlf {
            lf.replace('\n', "\r\n")
        } else {
            lf
        }
    };
    let mut normalized: Option<Normalized> = None;
    let mut regions: Vec<(usize, usize, usize, String)> = Vec::with_capacity(edits.len());
    for (index, (old, new)) in edits.iter().enumerate() {
        let (old, new) = (convert(old), convert(new));
        if old.is_empty() {
            return Err(format!(
                "edits[{index}].oldText is empty; give the exact text to replace."
            ));
        }
        if old == new {
            return Err(format!(
                "edits[{index}] changes nothing: newText equals oldText."
            ));
        }
        if let Some(first) = edits[..index]
            .iter()
            .position(|(earlier, _)| convert(earlier) == old)
        {
            return Err(format!(
                "edits[{index}] duplicates edits[{first}]: both replace the same oldText."
            ));
        }
        let (start, end) = locate(content, &old, &mut normalized).map_err(|problem| match problem {
            Locate::Missing => format!(
                "edits[{index}].oldText was not found in the file (nor with whitespace, quotes and dashes normalized); copy it exactly from the file."
            ),
            Locate::Repeated(count) => format!(
                "edits[{index}].oldText occurs {count} times in the file; include more surrounding lines so it matches exactly once."
            ),
        })?;
        regions.push((start, end, index, new));
    }
    regions.sort_by_key(|(start, ..)| *start);
    for pair in regions.windows(2) {
        if let [(_, end, earlier, _), (start, _, later, _)] = pair {
            if start < end {
                let (first, second) = ((*earlier).min(*later), (*earlier).max(*later));
                return Err(format!(
                    "edits[{second}] overlaps edits[{first}]; merge them into one edit."
                ));
            }
        }
    }
    let mut text = String::with_capacity(original.len());
    if bom {
        text.push(BOM);
    }
    let mut copied = 0;
    for (start, end, _, new) in &regions {
        text.push_str(&content[copied..*start]);
        text.push_str(new);
        copied = *end;
    }
    text.push_str(&content[copied..]);
    let first_start = regions.first().map_or(0, |(start, ..)| *start);
    let first_changed_line = content[..first_start].matches('\n').count() + 1;
    Ok(Edited {
        text,
        first_changed_line,
    })
}

enum Locate {
    Missing,
    Repeated(usize),
}

/// The byte range of `old` in `content`: an exact unique match, else a unique match with
/// whitespace, quotes and dashes normalized (mapped back to the original bytes).
fn locate(
    content: &str,
    old: &str,
    normalized: &mut Option<Normalized>,
) -> Result<(usize, usize), Locate> {
    let mut exact = content.match_indices(old);
    match (exact.next(), exact.next()) {
        (Some((start, _)), None) => return Ok((start, start + old.len())),
        (Some(_), Some(_)) => return Err(Locate::Repeated(2 + exact.count())),
        (None, _) => {}
    }
    let normalized = normalized.get_or_insert_with(|| Normalized::new(content, true));
    let needle = Normalized::new(old, false);
    if needle.text.is_empty() {
        return Err(Locate::Missing);
    }
    // Whitespace ending `old` was dropped as trailing: that holds only where the match ends a
    // line (mid-line, "foo " is not "foo").
    let ends_a_line = |end: usize| {
        !needle.held_at_end
            || matches!(
                normalized.text.as_bytes().get(end),
                None | Some(b'\n' | b'\r')
            )
    };
    let mut found = normalized
        .text
        .match_indices(needle.text.as_str())
        .filter(|(start, _)| ends_a_line(start + needle.text.len()));
    match (found.next(), found.next()) {
        (Some((start, _)), None) => {
            let end = start + needle.text.len();
            match (
                normalized.source_start(start),
                normalized.source_start(end - 1),
            ) {
                (Some(from), Some(last)) => {
                    // The match ends where the character its last byte came from ends.
                    let to = last + content[last..].chars().next().map_or(0, char::len_utf8);
                    Ok((from, to))
                }
                _ => Err(Locate::Missing),
            }
        }
        (Some(_), Some(_)) => Err(Locate::Repeated(2 + found.count())),
        (None, _) => Err(Locate::Missing),
    }
}

/// Text with the fuzzy differences folded away, and (for a file's text) for each of its bytes
/// where the character it came from starts in the source.
///
/// Its memory is bounded by the source's size: the folded text (at most as long as the
/// source) and one 4-byte offset per byte, so about 6× the source with the source itself
/// (edit reads at most [`MAX_EDIT_BYTES`]).
struct Normalized {
    text: String,
    /// Empty when not asked for, and for a source too long for 32-bit offsets (no fuzzy match
    /// is then mapped back).
    starts: Vec<u32>,
    /// Whether the source ended in spaces or tabs (left out of `text`, as trailing).
    held_at_end: bool,
}

fn fold(c: char) -> char {
    match c {
        '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' | '\u{2032}' | '\u{2035}' => '\'',
        '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' | '\u{2033}' | '\u{2036}' => '"',
        '\u{2010}'..='\u{2015}' | '\u{2212}' | '\u{FE58}' | '\u{FE63}' | '\u{FF0D}' => '-',
        '\u{00A0}'
        | '\u{1680}'
        | '\u{2000}'..='\u{200A}'
        | '\u{202F}'
        | '\u{205F}'
        | '\u{3000}' => ' ',
        other => other,
    }
}

fn is_blank(c: char) -> bool {
    c == ' ' || c == '\t'
}

impl Normalized {
    fn new(source: &str, map_back: bool) -> Normalized {
        let map_back = map_back && u32::try_from(source.len()).is_ok();
        let mut normalized = Normalized {
            text: String::with_capacity(source.len()),
            starts: Vec::with_capacity(if map_back { source.len() } else { 0 }),
            held_at_end: false,
        };
        // Spaces and tabs are held back (as where their run starts) until something other
        // than a line end follows them, so trailing whitespace never reaches the text.
        let mut held: Option<usize> = None;
        for (at, c) in source.char_indices() {
            let folded = fold(c);
            if is_blank(folded) {
                held.get_or_insert(at);
                continue;
            }
            if let Some(from) = held.take() {
                if folded != '\n' && folded != '\r' {
                    for (offset, blank) in source[from..at].char_indices() {
                        normalized.push(fold(blank), from + offset, map_back);
                    }
                }
            }
            normalized.push(folded, at, map_back);
        }
        normalized.held_at_end = held.is_some();
        normalized
    }

    fn push(&mut self, c: char, from: usize, map_back: bool) {
        self.text.push(c);
        if map_back {
            // Fits: `new` maps back only sources shorter than 4 GiB.
            let from = u32::try_from(from).unwrap_or(u32::MAX);
            self.starts.extend(std::iter::repeat_n(from, c.len_utf8()));
        }
    }

    /// Where the source character behind byte `at` of the text starts.
    fn source_start(&self, at: usize) -> Option<usize> {
        self.starts.get(at).map(|&from| from as usize)
    }
}

#[cfg(test)]
#[path = "edit_tests.rs"]
mod tests;
