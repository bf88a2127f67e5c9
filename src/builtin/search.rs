//! `grep`, `find` and `ls`: looking through the workspace without a shell, on ripgrep's
//! crates. The walk respects `.gitignore` (and `.ignore`, and leaves hidden files out, as
//! ripgrep does), never follows a link out of it, skips what the sandbox denies reading, and
//! stops when the call is cancelled; results are bounded (matches or entries, and bytes), with
//! a note saying how to narrow the search when cut.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::Workspace;
use crate::tool::{BoxError, Tool, ToolContext, ToolResult};

/// Most bytes of output one call returns (as `read`: 50 KiB).
const MAX_OUTPUT: usize = 50 * 1024;
/// Most characters of one matching line shown.
const MAX_LINE_CHARS: usize = 500;
/// Default and greatest number of matches `grep` returns.
const GREP_LIMIT: usize = 100;
/// Default and greatest number of paths `find` returns.
const FIND_LIMIT: usize = 1_000;
/// Default and greatest number of entries `ls` returns.
const LS_LIMIT: usize = 500;

/// Output that stops at [`MAX_OUTPUT`] bytes, remembering that it did.
#[derive(Default)]
struct Bounded {
    text: String,
    full: bool,
}

impl Bounded {
    /// Adds `line`; false once the output is full.
    fn line(&mut self, line: &str) -> bool {
        if self.text.len() + line.len() + 1 > MAX_OUTPUT {
            self.full = true;
            return false;
        }
        self.text.push_str(line);
        self.text.push('\n');
        true
    }
}

/// The directory or file a search starts from, resolved in the workspace.
fn start(workspace: &Workspace, path: Option<&str>) -> Result<(PathBuf, String), BoxError> {
    let path = path.unwrap_or(".");
    let shown = super::paths::shown(path);
    let full = workspace.resolve(path);
    if std::fs::symlink_metadata(&full).is_err() {
        return Err(format!("Path not found: {shown}").into());
    }
    Ok((full, shown))
}

/// Whether the sandbox or a read rule denies `path`, found under `root`: judged as asked and
/// as it really is (`root` with its links and `..` resolved; the walk follows no link below
/// it), so `ls ../.ssh` or a link to `~/.ssh` is judged as `~/.ssh` is.
fn denied_under(workspace: &Workspace, root: &Path, real_root: &Path, path: &Path) -> bool {
    if workspace.denies(path) {
        return true;
    }
    match path.strip_prefix(root) {
        Ok(rest) if rest.as_os_str().is_empty() => workspace.denies(real_root),
        Ok(rest) => workspace.denies(&real_root.join(rest)),
        Err(_) => false,
    }
}

/// `root` as it really is: its links and `..` resolved.
fn real(root: &Path) -> PathBuf {
    crate::sandbox::resolve(Path::new("/"), root)
}

/// The largest ignore file (`.gitignore`, `.ignore`) a walk reads: the ignore crate compiles
/// every pattern before it yields anything, and a 1.9 MB `.gitignore` of 100,000 patterns took
/// 19 s and 1.7 GB, deaf to cancellation.
const MAX_IGNORE_FILE: u64 = 64 * 1024;

const IGNORE_FILES: [&str; 2] = [".gitignore", ".ignore"];

/// An ignore file in `folder` larger than [`MAX_IGNORE_FILE`], if any.
fn oversized_ignore_file(folder: &Path) -> Option<PathBuf> {
    IGNORE_FILES
        .iter()
        .map(|name| folder.join(name))
        .find(|file| std::fs::metadata(file).is_ok_and(|metadata| metadata.len() > MAX_IGNORE_FILE))
}

/// A walk under `root` (.gitignore respected, hidden files left out, links not followed),
/// and what it leaves out for an ignore file too large to read: a folder holding one is not
/// entered (its path is noted in `skipped`); one at or above `root` turns ignore files off for
/// the whole walk (said in the returned note).
struct Walk {
    walk: ignore::Walk,
    skipped: Arc<std::sync::Mutex<Vec<PathBuf>>>,
    note: Option<String>,
}

fn walk(root: &Path) -> Walk {
    let mut builder = ignore::WalkBuilder::new(root);
    builder.require_git(false).follow_links(false);
    let above = root
        .ancestors()
        .filter(|folder| folder.is_dir())
        .find_map(oversized_ignore_file);
    let note = above.map(|file| {
        builder.git_ignore(false).ignore(false).parents(false);
        format!(
            "\n[{} is larger than {} KiB: no ignore file was used, so ignored files are searched too.]",
            file.display(),
            MAX_IGNORE_FILE / 1024
        )
    });
    let skipped: Arc<std::sync::Mutex<Vec<PathBuf>>> = Arc::default();
    let noted = Arc::clone(&skipped);
    builder.filter_entry(move |entry| {
        let oversized = entry.file_type().is_some_and(|kind| kind.is_dir())
            && entry.depth() > 0
            && oversized_ignore_file(entry.path()).is_some();
        if oversized {
            noted
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(entry.path().to_owned());
        }
        !oversized
    });
    Walk {
        walk: builder.build(),
        skipped,
        note,
    }
}

impl Walk {
    /// What the walk left out, for the end of a result.
    fn notes(&self, workspace: &Workspace) -> String {
        let mut notes = self.note.clone().unwrap_or_default();
        let skipped = self
            .skipped
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if !skipped.is_empty() {
            let shown: Vec<String> = skipped
                .iter()
                .take(5)
                .map(|folder| relative(workspace, folder))
                .collect();
            let _ = write!(
                notes,
                "\n[{} folder(s) left out, their .gitignore or .ignore being larger than {} KiB: {}{}; search one with path to look inside.]",
                skipped.len(),
                MAX_IGNORE_FILE / 1024,
                shown.join(", "),
                if skipped.len() > 5 { ", …" } else { "" }
            );
        }
        notes
    }
}

/// Which paths a glob keeps: without a `/` it is matched against the file's name (so "*.rs"
/// holds in every folder), with one against the path from the search's start.
struct Filter {
    set: globset::GlobMatcher,
    by_name: bool,
}

impl Filter {
    fn new(glob: &str) -> Result<Filter, BoxError> {
        let set = globset::GlobBuilder::new(glob)
            .literal_separator(true)
            .build()
            .map_err(|error| format!("glob {glob:?} is not a valid glob: {error}"))?
            .compile_matcher();
        Ok(Filter {
            set,
            by_name: !glob.contains('/'),
        })
    }

    fn keeps(&self, root: &Path, path: &Path) -> bool {
        match self.by_name {
            true => path.file_name().is_some_and(|name| self.set.is_match(name)),
            false => self.set.is_match(path.strip_prefix(root).unwrap_or(path)),
        }
    }
}

/// `path` relative to the working directory when inside it, else as it is.
fn relative(workspace: &Workspace, path: &Path) -> String {
    let shown = path.strip_prefix(workspace.cwd()).unwrap_or(path);
    match shown.as_os_str().is_empty() {
        true => ".".to_owned(),
        false => shown.display().to_string(),
    }
}

/// A file read that stops once the call is cancelled: a search of one huge file ends within a
/// buffer of the cancellation, not at the file's end.
struct Cancellable<'a> {
    file: std::fs::File,
    cancel: &'a CancellationToken,
}

impl std::io::Read for Cancellable<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.cancel.is_cancelled() {
            return Err(std::io::Error::other("the call was cancelled"));
        }
        self.file.read(buf)
    }
}

/// Why a search cannot start in `shown`: the sandbox or a read rule denies it.
fn denied_start(shown: &str) -> String {
    format!("{shown} is denied by the sandbox (a credential folder or a --deny-read path) or a read rule: nothing in it can be listed or searched")
}

/// What a listing says of the entries the sandbox or a read rule denies: how many were left
/// out.
fn denied_note(denied: usize) -> String {
    match denied {
        0 => String::new(),
        n => format!(
            "\n[{n} entr{} left out: denied by the sandbox or a read rule.]",
            if n == 1 { "y" } else { "ies" }
        ),
    }
}

/// A file opened to read as the sandbox allows (`None`: denied, or not a regular file).
fn open(workspace: &Workspace, path: &Path) -> Option<std::fs::File> {
    let file = workspace.open_to_read(path).ok()?;
    workspace
        .check_read(&file, &path.display().to_string())
        .ok()?;
    Some(file)
}

/// A tool function that runs `run` on the blocking pool (walking and reading block).
fn blocking<A: Send + 'static>(
    name: &'static str,
    workspace: Arc<Workspace>,
    run: fn(&Workspace, &A, &CancellationToken) -> Result<ToolResult, BoxError>,
) -> impl Fn(ToolContext, A) -> futures::future::BoxFuture<'static, Result<ToolResult, BoxError>>
       + Send
       + Sync
       + 'static {
    move |ctx: ToolContext, args: A| {
        let workspace = Arc::clone(&workspace);
        let cancel = ctx.cancellation_token().clone();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || run(&workspace, &args, &cancel))
                .await
                .map_err(|error| format!("{name} did not finish: {error}"))?
        })
    }
}

/// Arguments of `grep`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct GrepArgs {
    /// Regular expression to look for (Rust regex syntax); with literal, the text itself.
    pattern: String,
    /// Directory or file to search, relative to the working directory or absolute (default: the
    /// working directory).
    path: Option<String>,
    /// Only files whose path matches this glob, e.g. "*.rs" or "src/**/*.ts".
    glob: Option<String>,
    /// Match regardless of case.
    #[serde(default)]
    ignore_case: bool,
    /// Take pattern as plain text, not a regular expression.
    #[serde(default)]
    literal: bool,
    /// Most matches to return (at most 100).
    #[schemars(range(min = 1))]
    limit: Option<u64>,
}

pub(super) fn grep(workspace: Arc<Workspace>) -> Tool {
    Tool::typed(
        "grep",
        "Search file contents for a regular expression (ripgrep's engine). Respects .gitignore, \
         skips hidden and binary files. Returns path:line: text for each match, at most 100 \
         matches or 50KB; narrow with path, glob or a more specific pattern when cut.",
        blocking("grep", workspace, run_grep),
    )
    .with_replay(crate::tool::Replay::Safe)
}

fn run_grep(
    workspace: &Workspace,
    args: &GrepArgs,
    cancel: &CancellationToken,
) -> Result<ToolResult, BoxError> {
    use grep_searcher::{BinaryDetection, SearcherBuilder};
    let (root, shown) = start(workspace, args.path.as_deref())?;
    let limit = args
        .limit
        .map_or(GREP_LIMIT, |limit| {
            usize::try_from(limit).unwrap_or(GREP_LIMIT)
        })
        .clamp(1, GREP_LIMIT);
    let matcher = grep_regex::RegexMatcherBuilder::new()
        .case_insensitive(args.ignore_case)
        .fixed_strings(args.literal)
        .build(&args.pattern)
        .map_err(|error| format!("pattern {:?} is not a valid regular expression: {error}; pass literal: true to search for the text itself", args.pattern))?;
    let mut searcher = SearcherBuilder::new()
        .binary_detection(BinaryDetection::quit(0))
        .line_number(true)
        .build();
    let mut out = Bounded::default();
    let mut matches = 0usize;
    let mut more = false;
    let mut denied = 0usize;
    let mut not_utf8 = 0usize;
    let filter = args.glob.as_deref().map(Filter::new).transpose()?;
    let real_root = real(&root);
    let mut walker = walk(&root);
    for entry in walker.walk.by_ref() {
        if cancel.is_cancelled() {
            return Err("grep was cancelled".into());
        }
        let Ok(entry) = entry else { continue };
        if !entry.file_type().is_some_and(|kind| kind.is_file())
            || filter
                .as_ref()
                .is_some_and(|filter| !filter.keeps(&root, entry.path()))
        {
            continue;
        }
        if denied_under(workspace, &root, &real_root, entry.path()) {
            denied += 1;
            continue;
        }
        let Some(file) = open(workspace, entry.path()) else {
            denied += 1;
            continue;
        };
        let name = relative(workspace, entry.path());
        let sink = grep_searcher::sinks::Bytes(|line_number, line| {
            if cancel.is_cancelled() {
                return Ok(false);
            }
            if matches == limit {
                more = true;
                return Ok(false);
            }
            // A line that is not UTF-8 is shown with U+FFFD for the bytes that are not, and
            // counted: dropped, it made "No matches" where there were some.
            let line = match std::str::from_utf8(line) {
                Ok(line) => std::borrow::Cow::Borrowed(line),
                Err(_) => {
                    not_utf8 += 1;
                    String::from_utf8_lossy(line)
                }
            };
            let line = line.trim_end_matches(['\n', '\r']);
            let mut text: String = line.chars().take(MAX_LINE_CHARS).collect();
            if text.len() < line.len() {
                text.push('…');
            }
            matches += 1;
            Ok(out.line(&format!("{name}:{line_number}: {text}")))
        });
        let _ = searcher.search_reader(&matcher, Cancellable { file, cancel }, sink);
        if more || out.full {
            break;
        }
    }
    if cancel.is_cancelled() {
        return Err("grep was cancelled".into());
    }
    if matches == 0 {
        out.text = format!("No matches for {:?} in {shown}.\n", args.pattern);
    } else if more || out.full {
        let _ = write!(
            out.text,
            "\n[Stopped at {matches} matches{}; narrow the search with path, glob or a more specific pattern.]",
            if out.full { " (50KB of output)" } else { "" }
        );
    }
    if not_utf8 > 0 {
        let _ = write!(
            out.text,
            "\n[{not_utf8} matching line(s) are not UTF-8: shown with U+FFFD where their bytes are not text.]"
        );
    }
    if denied > 0 {
        let _ = write!(
            out.text,
            "\n[{denied} file(s) could not be read (the sandbox or a read rule denies them, or they are not regular files) and were skipped.]"
        );
    }
    out.text.push_str(&walker.notes(workspace));
    Ok(ToolResult::text(out.text.trim_end().to_owned()))
}

/// Arguments of `find`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct FindArgs {
    /// Glob the paths must match, relative to path: "*.rs" matches in every folder,
    /// "src/**/*.ts" only under src.
    pattern: String,
    /// Directory to search, relative to the working directory or absolute (default: the
    /// working directory).
    path: Option<String>,
    /// Most paths to return (at most 1000).
    #[schemars(range(min = 1))]
    limit: Option<u64>,
}

pub(super) fn find(workspace: Arc<Workspace>) -> Tool {
    Tool::typed(
        "find",
        "Find files by glob (e.g. \"*.rs\", \"src/**/*.test.ts\"). Respects .gitignore and \
         skips hidden files. Returns paths relative to the working directory, at most 1000.",
        blocking("find", workspace, run_find),
    )
    .with_replay(crate::tool::Replay::Safe)
}

fn run_find(
    workspace: &Workspace,
    args: &FindArgs,
    cancel: &CancellationToken,
) -> Result<ToolResult, BoxError> {
    let (root, shown) = start(workspace, args.path.as_deref())?;
    let limit = args
        .limit
        .map_or(FIND_LIMIT, |limit| {
            usize::try_from(limit).unwrap_or(FIND_LIMIT)
        })
        .clamp(1, FIND_LIMIT);
    let mut out = Bounded::default();
    let mut found = 0usize;
    let mut more = false;
    let filter = Filter::new(&args.pattern)?;
    let real_root = real(&root);
    if denied_under(workspace, &root, &real_root, &root) {
        return Err(denied_start(&shown).into());
    }
    let mut denied = 0usize;
    let mut walker = walk(&root);
    for entry in walker.walk.by_ref() {
        if cancel.is_cancelled() {
            return Err("find was cancelled".into());
        }
        let Ok(entry) = entry else { continue };
        if denied_under(workspace, &root, &real_root, entry.path()) {
            // Counted once, at the top of what is denied.
            if !entry
                .path()
                .parent()
                .is_some_and(|parent| denied_under(workspace, &root, &real_root, parent))
            {
                denied += 1;
            }
            continue;
        }
        if !entry.file_type().is_some_and(|kind| kind.is_file())
            || !filter.keeps(&root, entry.path())
        {
            continue;
        }
        if found == limit {
            more = true;
            break;
        }
        found += 1;
        if !out.line(&relative(workspace, entry.path())) {
            break;
        }
    }
    let skipped = denied_note(denied) + &walker.notes(workspace);
    if found == 0 {
        return Ok(ToolResult::text(format!(
            "No files matching {:?} in {shown}.{skipped}",
            args.pattern
        )));
    }
    if more || out.full {
        let _ = write!(
            out.text,
            "\n[Stopped at {found} paths; narrow the search with path or a more specific pattern.]"
        );
    }
    Ok(ToolResult::text(format!(
        "{}{skipped}",
        out.text.trim_end()
    )))
}

/// Arguments of `ls`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct LsArgs {
    /// Directory to list, relative to the working directory or absolute (default: the working
    /// directory).
    path: Option<String>,
    /// Most entries to return (at most 500).
    #[schemars(range(min = 1))]
    limit: Option<u64>,
}

pub(super) fn ls(workspace: Arc<Workspace>) -> Tool {
    Tool::typed(
        "ls",
        "List a directory: its entries sorted by name, folders ending in /, hidden ones \
         included. At most 500 entries.",
        blocking("ls", workspace, run_ls),
    )
    .with_replay(crate::tool::Replay::Safe)
}

fn run_ls(
    workspace: &Workspace,
    args: &LsArgs,
    cancel: &CancellationToken,
) -> Result<ToolResult, BoxError> {
    let (dir, shown) = start(workspace, args.path.as_deref())?;
    let limit = args
        .limit
        .map_or(LS_LIMIT, |limit| usize::try_from(limit).unwrap_or(LS_LIMIT))
        .clamp(1, LS_LIMIT);
    if !dir.is_dir() {
        return Err(
            format!("{shown} is not a directory; read it, or ls the folder it is in").into(),
        );
    }
    let real_dir = real(&dir);
    if denied_under(workspace, &dir, &real_dir, &dir) {
        return Err(denied_start(&shown).into());
    }
    let entries = std::fs::read_dir(&dir)
        .map_err(|error| super::paths::failure(format_args!("Could not list {shown}"), &error))?;
    let mut names: Vec<String> = Vec::new();
    let mut denied = 0usize;
    for entry in entries.flatten() {
        if cancel.is_cancelled() {
            return Err("ls was cancelled".into());
        }
        if denied_under(workspace, &dir, &real_dir, &entry.path()) {
            denied += 1;
            continue;
        }
        let mut name = entry.file_name().to_string_lossy().into_owned();
        if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
            name.push('/');
        }
        names.push(name);
    }
    names.sort();
    let skipped = denied_note(denied);
    if names.is_empty() {
        return Ok(ToolResult::text(format!("{shown} is empty.{skipped}")));
    }
    let total = names.len();
    let mut out = Bounded::default();
    let mut shown_count = 0;
    for name in names.iter().take(limit) {
        if !out.line(name) {
            break;
        }
        shown_count += 1;
    }
    if shown_count < total {
        let _ = write!(
            out.text,
            "\n[{shown_count} of {total} entries shown; use find or grep to look for something in particular.]"
        );
    }
    Ok(ToolResult::text(format!(
        "{}{skipped}",
        out.text.trim_end()
    )))
}
