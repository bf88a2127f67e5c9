//! `read`: a window of a text file, or an image.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::{images, Workspace};
use crate::message::Content;
use crate::tool::{BoxError, Tool, ToolContext, ToolResult};

/// Most lines one read returns.
pub(super) const MAX_LINES: usize = 2_000;
/// Most bytes of whole lines one read returns (50 KiB).
pub(super) const MAX_BYTES: usize = 50 * 1024;

/// How far past its window a read goes on counting the file's lines (for "of N lines"): a file
/// larger than that, or one that never ends, is said to have more than the lines counted.
const COUNT_BEYOND_BYTES: u64 = 256 * 1024 * 1024;

/// Arguments of `read`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ReadArgs {
    /// Path of the file to read, relative to the working directory or absolute.
    path: String,
    /// Line number to start from, 1-indexed.
    #[schemars(range(min = 1))]
    #[serde(default, deserialize_with = "whole_number")]
    offset: Option<u64>,
    /// Most lines to return.
    #[schemars(range(min = 1))]
    #[serde(default, deserialize_with = "whole_number")]
    limit: Option<u64>,
}

/// A whole number, also when written with a decimal point (`2.0`): the schema says integer,
/// and JSON Schema counts `2.0` as one, so validation lets it through.
fn whole_number<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<u64>, D::Error> {
    let Some(number) = Option::<serde_json::Number>::deserialize(deserializer)? else {
        return Ok(None);
    };
    if let Some(whole) = number.as_u64() {
        return Ok(Some(whole));
    }
    match number.as_f64() {
        Some(float) if float >= 0.0 && float.fract() == 0.0 && float <= u64::MAX as f64 => {
            Ok(Some(float as u64))
        }
        _ => Err(serde::de::Error::custom(format!(
            "expected a whole number, got {number}"
        ))),
    }
}

pub(super) fn tool(workspace: Arc<Workspace>) -> Tool {
    Tool::typed(
        "read",
        "Read a file. Text comes back as at most 2000 lines or 50KB (whole lines), with a notice \
         telling how to continue with offset (1-indexed) and limit. PNG, JPEG, GIF and WebP \
         images come back as images.",
        move |ctx: ToolContext, args: ReadArgs| {
            let workspace = Arc::clone(&workspace);
            let cancel = ctx.cancellation_token().clone();
            async move {
                let text_files = workspace.text_files.clone();
                let path = workspace.resolve(&args.path);
                let shown = super::paths::shown(&args.path);
                let (found, args) = {
                    let cancel = cancel.clone();
                    tokio::task::spawn_blocking(move || {
                        read(&workspace, &args, &cancel).map(|found| (found, args))
                    })
                    .await
                    .map_err(|error| format!("read did not finish: {error}"))??
                };
                let (Found::Text, Some(text_files)) = (&found, text_files) else {
                    return match found {
                        Found::Done(result) => Ok(result),
                        Found::Text => Err("read found text it was not to read".into()),
                    };
                };
                // The checks passed on disk; the text is the one held elsewhere (an editor's
                // buffer, unsaved changes included).
                // Cancellable: the text may come from a program that never answers.
                let text = tokio::select! {
                    text = text_files.read(&path) => {
                        text.map_err(|why| format!("Could not read {shown}: {why}"))?
                    }
                    () = cancel.cancelled() => return Err("read was cancelled".into()),
                };
                tokio::task::spawn_blocking(move || {
                    read_text(
                        &mut io::Cursor::new(text.into_bytes()),
                        &args,
                        &shown,
                        &cancel,
                    )
                })
                .await
                .map_err(|error| format!("read did not finish: {error}"))?
            }
        },
    )
    .with_replay(crate::tool::Replay::Safe)
}

/// What reading from disk found.
enum Found {
    /// The result: an image, a binary file, or text read from disk.
    Done(ToolResult),
    /// Text, left for the workspace's [`TextFiles`](super::TextFiles) to give.
    Text,
}

fn read(
    workspace: &Workspace,
    args: &ReadArgs,
    cancel: &CancellationToken,
) -> Result<Found, BoxError> {
    let path = workspace.resolve(&args.path);
    let shown = &super::paths::shown(&args.path);
    let file = open(workspace, &path, shown)?;
    workspace.check_read(&file, shown)?;
    let mut reader = BufReader::with_capacity(64 * 1024, file);
    let head = reader.fill_buf().map_err(|e| describe(e, shown))?;
    if let Some(mime_type) = image_type(head) {
        return match read_image(&mut reader, mime_type, shown, cancel)? {
            Image::Read(result) => Ok(Found::Done(result)),
            // It only started like an image: a text file is read as text.
            Image::Text(_) if workspace.text_files.is_some() => Ok(Found::Text),
            Image::Text(bytes) => {
                read_text(&mut io::Cursor::new(bytes), args, shown, cancel).map(Found::Done)
            }
        };
    }
    if looks_binary(head) {
        // A file in /proc or /sys says 0 although it has bytes to read.
        let size = match std::fs::metadata(&path).map_or(0, |metadata| metadata.len()) {
            0 => "size not reported".to_owned(),
            size => format!("{size} bytes"),
        };
        return Ok(Found::Done(ToolResult::text(format!(
            "{shown} is a binary file ({size}, {}), not text or an image read can show; inspect it with bash (file, xxd, strings)",
            describe_binary(head)
        ))));
    }
    if workspace.text_files.is_some() {
        return Ok(Found::Text);
    }
    read_text(&mut reader, args, shown, cancel).map(Found::Done)
}

/// The window of text the arguments ask for.
fn read_text(
    reader: &mut impl BufRead,
    args: &ReadArgs,
    shown: &str,
    cancel: &CancellationToken,
) -> Result<ToolResult, BoxError> {
    let start = usize::try_from(args.offset.unwrap_or(1).max(1)).unwrap_or(usize::MAX);
    let user_limit = args
        .limit
        .map(|limit| usize::try_from(limit).unwrap_or(usize::MAX));
    let max_lines = user_limit.unwrap_or(MAX_LINES).min(MAX_LINES);
    let limits = Limits {
        max_lines,
        max_bytes: MAX_BYTES,
        count_beyond: COUNT_BEYOND_BYTES,
    };
    let window = scan(reader, start, &limits, cancel).map_err(|error| {
        if cancel.is_cancelled() {
            format!("reading {shown} was cancelled").into()
        } else {
            describe(error, shown)
        }
    })?;
    Ok(ToolResult::text(render(&window, start, user_limit, shown)?))
}

/// Whether the file's first bytes say it is not text: a NUL byte (which text does not have),
/// or bytes that are not UTF-8 (a character cut at the end of the sample does not count).
fn looks_binary(head: &[u8]) -> bool {
    let sample = &head[..head.len().min(8 * 1024)];
    if sample.contains(&0) {
        return true;
    }
    match std::str::from_utf8(sample) {
        Ok(_) => false,
        Err(error) => error.error_len().is_some(),
    }
}

/// What a binary file looks like from its first bytes.
fn describe_binary(head: &[u8]) -> String {
    let known: [(&[u8], &str); 6] = [
        (b"\x7fELF", "an ELF executable or library"),
        (b"PK\x03\x04", "a ZIP archive"),
        (b"%PDF", "a PDF document"),
        (b"\x1f\x8b", "gzip-compressed"),
        (b"SQLite format 3\0", "an SQLite database"),
        (b"\xfd7zXZ\0", "xz-compressed"),
    ];
    if let Some((_, what)) = known.iter().find(|(magic, _)| head.starts_with(magic)) {
        return (*what).to_owned();
    }
    let shown: Vec<String> = head
        .iter()
        .take(8)
        .map(|byte| format!("{byte:02x}"))
        .collect();
    format!("starting {}", shown.join(" "))
}

fn open(workspace: &Workspace, path: &Path, shown: &str) -> Result<File, BoxError> {
    let metadata = std::fs::metadata(path).map_err(|error| describe(error, shown))?;
    if metadata.is_dir() {
        return Err(
            format!("{shown} is a directory, not a file; list it with bash (ls {shown})").into(),
        );
    }
    // Checked before opening: opening a FIFO with no writer blocks, and a device may never end.
    if !metadata.is_file() {
        return Err(format!(
            "{shown} is {}, not a regular file; read only reads files (for a pipe or a device, use bash with a bound, such as head -c 4096 {shown})",
            super::paths::kind(&metadata.file_type())
        )
        .into());
    }
    // The path may have changed since it was looked at (a link turned to a FIFO): what was
    // opened is checked again, and the open never blocks.
    workspace.open_to_read(path).map_err(|error| {
        match super::paths::NotRegular::in_error(&error) {
            Some(not_regular) => format!(
                "{shown} is {} (it changed while read looked at it), not a regular file; read only reads files",
                not_regular.kind
            )
            .into(),
            None => describe(error, shown),
        }
    })
}

fn describe(error: io::Error, shown: &str) -> BoxError {
    match error.kind() {
        io::ErrorKind::WouldBlock => format!(
            "{shown} has no data to read now and would make read wait for it (a kernel or device file such as /proc/kmsg); read it with bash with a bound, such as timeout 5 head -c 4096 {shown}"
        )
        .into(),
        io::ErrorKind::NotFound => format!("File not found: {shown}").into(),
        io::ErrorKind::PermissionDenied => format!("Permission denied: cannot read {shown}").into(),
        _ => super::paths::failure(format_args!("Could not read {shown}"), &error).into(),
    }
}

/// A window of lines and what was seen around it.
#[derive(Debug, Default, PartialEq)]
struct Window {
    lines: Vec<String>,
    /// The first line of the window alone is over the byte limit: its size.
    first_line_too_long: Option<usize>,
    /// The byte limit, not the line limit, ended the window.
    stopped_by_bytes: bool,
    /// Lines in the file, or counted before giving up on counting (see `more_uncounted`).
    total_lines: usize,
    /// Counting stopped [`Limits::count_beyond`] bytes past the window: the file has more lines
    /// than `total_lines`.
    more_uncounted: bool,
}

/// How much one read keeps and looks at.
struct Limits {
    max_lines: usize,
    max_bytes: usize,
    /// Bytes read past the window to count the rest of the file's lines.
    count_beyond: u64,
}

/// Reads `reader` once: keeps up to `max_lines` whole lines (at most `max_bytes` together) from
/// line `start` on, and counts the lines, for at most `count_beyond` bytes after the window is
/// complete. Memory stays bounded by the window whatever the file's size or the length of its
/// lines; time too, once the window is complete (a file that never ends included). Stops with
/// an error when `cancel` is cancelled (checked at every buffer).
fn scan(
    reader: &mut impl BufRead,
    start: usize,
    limits: &Limits,
    cancel: &CancellationToken,
) -> io::Result<Window> {
    let mut scanner = Scanner {
        window: Window::default(),
        start,
        max_lines: limits.max_lines,
        max_bytes: limits.max_bytes,
        line_number: 1,
        current: Vec::new(),
        current_len: 0,
        window_bytes: 0,
        collecting: true,
    };
    let mut pending = false;
    let mut counted_beyond: u64 = 0;
    loop {
        if cancel.is_cancelled() {
            return Err(io::Error::new(io::ErrorKind::Interrupted, "cancelled"));
        }
        if scanner.settled() && counted_beyond > limits.count_beyond {
            scanner.window.more_uncounted = true;
            break;
        }
        let buffer = reader.fill_buf()?;
        if buffer.is_empty() {
            break;
        }
        let filled = buffer.len();
        if scanner.settled() {
            counted_beyond += filled as u64;
        }
        let mut rest = buffer;
        while !rest.is_empty() {
            let (segment, ends_line) = match memchr::memchr(b'\n', rest) {
                Some(at) => (&rest[..at], true),
                None => (rest, false),
            };
            scanner.extend(segment);
            pending = !ends_line;
            rest = &rest[segment.len() + usize::from(ends_line)..];
            if ends_line {
                scanner.finish_line();
            }
        }
        reader.consume(filled);
    }
    if pending {
        scanner.finish_line();
    }
    scanner.window.total_lines = scanner.line_number - 1;
    Ok(scanner.window)
}

/// The state of one pass of [`scan`].
struct Scanner {
    window: Window,
    start: usize,
    max_lines: usize,
    max_bytes: usize,
    line_number: usize,
    /// The current line's bytes, kept only while it may join the window (and never more than
    /// one byte past the limit).
    current: Vec<u8>,
    current_len: usize,
    window_bytes: usize,
    collecting: bool,
}

impl Scanner {
    fn wanted(&self) -> bool {
        self.collecting && self.line_number >= self.start
    }

    /// Nothing more can join the window: it is complete, or the line being read is already
    /// too long for it (and ends it).
    fn settled(&self) -> bool {
        !self.collecting || (self.wanted() && self.current_len > self.max_bytes)
    }

    fn extend(&mut self, segment: &[u8]) {
        if self.wanted() && self.current.len() <= self.max_bytes {
            let room = self.max_bytes + 1 - self.current.len();
            self.current
                .extend_from_slice(&segment[..segment.len().min(room)]);
        }
        self.current_len += segment.len();
    }

    fn finish_line(&mut self) {
        if self.wanted() {
            let len = self.current_len;
            let separator = usize::from(!self.window.lines.is_empty());
            if self.window.lines.len() >= self.max_lines {
                self.collecting = false;
            } else if self.window_bytes + separator + len > self.max_bytes {
                if self.window.lines.is_empty() {
                    self.window.first_line_too_long = Some(len);
                }
                self.window.stopped_by_bytes = true;
                self.collecting = false;
            } else {
                self.window_bytes += separator + len;
                let line = String::from_utf8_lossy(&self.current);
                self.window
                    .lines
                    .push(line.strip_suffix('\r').unwrap_or(&line).to_owned());
            }
        }
        self.current.clear();
        self.current_len = 0;
        self.line_number += 1;
    }
}

fn format_size(bytes: usize) -> String {
    if bytes < 1024 {
        format!("{bytes}B")
    } else if bytes < 1024 * 1024 {
        format!("{:.1}KB", bytes as f64 / 1024.0)
    } else {
        format!("{:.1}MB", bytes as f64 / (1024.0 * 1024.0))
    }
}

fn render(
    window: &Window,
    start: usize,
    user_limit: Option<usize>,
    shown: &str,
) -> Result<String, BoxError> {
    let total = window.total_lines;
    // "of 12345" or, when counting stopped short of the end, "of more than 12345".
    let of_total = if window.more_uncounted {
        format!("more than {total}")
    } else {
        total.to_string()
    };
    if start > total.max(1) {
        return Err(format!("Offset {start} is beyond end of file ({total} lines total)").into());
    }
    if let Some(size) = window.first_line_too_long {
        // Read only so far when counting stopped inside it.
        let over = if window.more_uncounted { "over " } else { "" };
        return Ok(format!(
            "[Line {start} is {over}{}, exceeds {} limit. Use bash: sed -n '{start}p' {shown} | head -c {MAX_BYTES}]",
            format_size(size),
            format_size(MAX_BYTES)
        ));
    }
    let mut text = window.lines.join("\n");
    let end = start + window.lines.len() - 1;
    if end < total || window.more_uncounted {
        let next = end + 1;
        let stopped_by_user = !window.stopped_by_bytes
            && user_limit.is_some_and(|limit| limit <= MAX_LINES && window.lines.len() == limit);
        let notice = if stopped_by_user {
            let more = if window.more_uncounted {
                format!("More than {}", total - end)
            } else {
                (total - end).to_string()
            };
            format!("[{more} more lines in file. Use offset={next} to continue.]")
        } else if window.stopped_by_bytes {
            format!("[Showing lines {start}-{end} of {of_total} ({} limit). Use offset={next} to continue.]", format_size(MAX_BYTES))
        } else {
            format!("[Showing lines {start}-{end} of {of_total}. Use offset={next} to continue.]")
        };
        text.push_str("\n\n");
        text.push_str(&notice);
    }
    Ok(text)
}

/// The image type of a file from its first bytes, if it is one `read` returns as an image.
fn image_type(head: &[u8]) -> Option<&'static str> {
    if head.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if head.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if head.len() >= 12 && head.starts_with(b"RIFF") && &head[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// What an image file came to.
enum Image {
    /// The image, or why it was left out.
    Read(ToolResult),
    /// Not an image after all, but text: its bytes.
    Text(Vec<u8>),
}

fn read_image(
    reader: &mut impl Read,
    mime_type: &'static str,
    shown: &str,
    cancel: &CancellationToken,
) -> Result<Image, BoxError> {
    let mut bytes = Vec::new();
    reader
        .by_ref()
        .take(images::MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|error| describe(error, shown))?;
    let omitted = |reason: String| {
        Image::Read(ToolResult::text(format!(
            "Read image file {shown} [{mime_type}]\n[Image omitted: {reason}.]"
        )))
    };
    if bytes.len() as u64 > images::MAX_FILE_BYTES {
        return Ok(omitted(format!(
            "the file is larger than {}",
            format_size(images::MAX_FILE_BYTES as usize)
        )));
    }
    let (text, mime_type, data) = match images::fit(&bytes, mime_type, &|| cancel.is_cancelled()) {
        images::Fitted::Original { mime_type, data } => (format!("Read image file {shown} [{mime_type}]"), mime_type, data),
        images::Fitted::Reduced { mime_type, data, original, displayed } => (
            format!(
                "Read image file {shown} [{mime_type}]\n[Image resized from {}x{} to {}x{} to fit the {}x{} and 4MB limits.]",
                original.0, original.1, displayed.0, displayed.1, images::MAX_DIMENSION, images::MAX_DIMENSION
            ),
            mime_type,
            data,
        ),
        images::Fitted::NotDecoded { .. } if !looks_binary(&bytes) => return Ok(Image::Text(bytes)),
        images::Fitted::Omitted { reason } | images::Fitted::NotDecoded { reason } => {
            return Ok(omitted(reason))
        }
    };
    Ok(Image::Read(ToolResult {
        content: vec![Content::text(text), Content::image(mime_type, data)],
        ..ToolResult::default()
    }))
}

#[cfg(test)]
#[path = "read_tests.rs"]
mod tests;
