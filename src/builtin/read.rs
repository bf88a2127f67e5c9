//! `read`: a window of a text file, or an image.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;

use super::{images, Workspace};
use crate::message::Content;
use crate::tool::{BoxError, Tool, ToolContext, ToolResult};

/// Most lines one read returns.
pub(super) const MAX_LINES: usize = 2_000;
/// Most bytes of whole lines one read returns (50 KiB).
pub(super) const MAX_BYTES: usize = 50 * 1024;

/// Arguments of `read`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ReadArgs {
    /// Path of the file to read, relative to the working directory or absolute.
    path: String,
    /// Line number to start from, 1-indexed.
    #[schemars(range(min = 1))]
    offset: Option<u64>,
    /// Most lines to return.
    #[schemars(range(min = 1))]
    limit: Option<u64>,
}

pub(super) fn tool(workspace: Arc<Workspace>) -> Tool {
    Tool::typed(
        "read",
        "Read a file. Text comes back as at most 2000 lines or 50KB (whole lines), with a notice \
         telling how to continue with offset (1-indexed) and limit. PNG, JPEG, GIF and WebP \
         images come back as images.",
        move |_ctx: ToolContext, args: ReadArgs| {
            let workspace = Arc::clone(&workspace);
            async move {
                tokio::task::spawn_blocking(move || read(&workspace, &args))
                    .await
                    .map_err(|error| format!("read did not finish: {error}"))?
            }
        },
    )
}

fn read(workspace: &Workspace, args: &ReadArgs) -> Result<ToolResult, BoxError> {
    let path = workspace.resolve(&args.path);
    let shown = &args.path;
    let file = open(&path, shown)?;
    let mut reader = BufReader::with_capacity(64 * 1024, file);
    if let Some(mime_type) = image_type(reader.fill_buf().map_err(|e| describe(e, shown))?) {
        return read_image(reader, mime_type, shown);
    }
    let start = usize::try_from(args.offset.unwrap_or(1).max(1)).unwrap_or(usize::MAX);
    let user_limit = args
        .limit
        .map(|limit| usize::try_from(limit).unwrap_or(usize::MAX));
    let max_lines = user_limit.unwrap_or(MAX_LINES).min(MAX_LINES);
    let window = scan(&mut reader, start, max_lines, MAX_BYTES).map_err(|e| describe(e, shown))?;
    Ok(ToolResult::text(render(&window, start, user_limit, shown)?))
}

fn open(path: &Path, shown: &str) -> Result<File, BoxError> {
    let metadata = std::fs::metadata(path).map_err(|error| describe(error, shown))?;
    if metadata.is_dir() {
        return Err(
            format!("{shown} is a directory, not a file; list it with bash (ls {shown})").into(),
        );
    }
    File::open(path).map_err(|error| describe(error, shown))
}

fn describe(error: io::Error, shown: &str) -> BoxError {
    match error.kind() {
        io::ErrorKind::NotFound => format!("File not found: {shown}").into(),
        io::ErrorKind::PermissionDenied => format!("Permission denied: cannot read {shown}").into(),
        _ => format!("Could not read {shown}: {error}").into(),
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
    total_lines: usize,
}

/// Reads `reader` once: keeps up to `max_lines` whole lines (at most `max_bytes` together) from
/// line `start` on, and counts every line. Memory stays bounded by the window whatever the file's
/// size or the length of its lines.
fn scan(
    reader: &mut impl BufRead,
    start: usize,
    max_lines: usize,
    max_bytes: usize,
) -> io::Result<Window> {
    let mut window = Window::default();
    let mut line_number = 1;
    let mut current: Vec<u8> = Vec::new();
    let mut current_len = 0usize;
    let mut window_bytes = 0usize;
    let mut collecting = true;
    let mut pending = false;
    loop {
        let buffer = reader.fill_buf()?;
        if buffer.is_empty() {
            break;
        }
        let filled = buffer.len();
        let mut rest = buffer;
        while !rest.is_empty() {
            let (segment, ends_line) = match memchr::memchr(b'\n', rest) {
                Some(at) => (&rest[..at], true),
                None => (rest, false),
            };
            let wanted = collecting && line_number >= start;
            if wanted && current.len() <= max_bytes {
                let room = max_bytes + 1 - current.len();
                current.extend_from_slice(&segment[..segment.len().min(room)]);
            }
            current_len += segment.len();
            pending = true;
            rest = &rest[segment.len()..];
            if ends_line {
                rest = &rest[1..];
                finish_line(
                    &mut window,
                    &mut current,
                    current_len,
                    wanted,
                    &mut collecting,
                    &mut window_bytes,
                    max_lines,
                    max_bytes,
                );
                line_number += 1;
                current_len = 0;
                pending = false;
            }
        }
        reader.consume(filled);
    }
    if pending {
        let wanted = collecting && line_number >= start;
        finish_line(
            &mut window,
            &mut current,
            current_len,
            wanted,
            &mut collecting,
            &mut window_bytes,
            max_lines,
            max_bytes,
        );
        line_number += 1;
    }
    window.total_lines = line_number - 1;
    Ok(window)
}

#[allow(clippy::too_many_arguments)]
fn finish_line(
    window: &mut Window,
    current: &mut Vec<u8>,
    len: usize,
    wanted: bool,
    collecting: &mut bool,
    window_bytes: &mut usize,
    max_lines: usize,
    max_bytes: usize,
) {
    if wanted {
        let separator = usize::from(!window.lines.is_empty());
        if window.lines.len() >= max_lines {
            *collecting = false;
        } else if *window_bytes + separator + len > max_bytes {
            if window.lines.is_empty() {
                window.first_line_too_long = Some(len);
            }
            window.stopped_by_bytes = true;
            *collecting = false;
        } else {
            *window_bytes += separator + len;
            let line = String::from_utf8_lossy(current);
            window
                .lines
                .push(line.strip_suffix('\r').unwrap_or(&line).to_owned());
        }
    }
    current.clear();
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
    if start > total.max(1) {
        return Err(format!("Offset {start} is beyond end of file ({total} lines total)").into());
    }
    if let Some(size) = window.first_line_too_long {
        return Ok(format!(
            "[Line {start} is {}, exceeds {} limit. Use bash: sed -n '{start}p' {shown} | head -c {MAX_BYTES}]",
            format_size(size),
            format_size(MAX_BYTES)
        ));
    }
    let mut text = window.lines.join("\n");
    let end = start + window.lines.len() - 1;
    if end < total {
        let next = end + 1;
        let stopped_by_user = !window.stopped_by_bytes
            && user_limit.is_some_and(|limit| limit <= MAX_LINES && window.lines.len() == limit);
        let notice = if stopped_by_user {
            format!(
                "[{} more lines in file. Use offset={next} to continue.]",
                total - end
            )
        } else if window.stopped_by_bytes {
            format!("[Showing lines {start}-{end} of {total} ({} limit). Use offset={next} to continue.]", format_size(MAX_BYTES))
        } else {
            format!("[Showing lines {start}-{end} of {total}. Use offset={next} to continue.]")
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

fn read_image(
    mut reader: impl Read,
    mime_type: &'static str,
    shown: &str,
) -> Result<ToolResult, BoxError> {
    let mut bytes = Vec::new();
    reader
        .by_ref()
        .take(images::MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|error| describe(error, shown))?;
    let omitted = |reason: String| {
        ToolResult::text(format!(
            "Read image file {shown} [{mime_type}]\n[Image omitted: {reason}.]"
        ))
    };
    if bytes.len() as u64 > images::MAX_FILE_BYTES {
        return Ok(omitted(format!(
            "the file is larger than {}",
            format_size(images::MAX_FILE_BYTES as usize)
        )));
    }
    let (text, mime_type, data) = match images::fit(&bytes, mime_type) {
        images::Fitted::Original { mime_type, data } => (format!("Read image file {shown} [{mime_type}]"), mime_type, data),
        images::Fitted::Reduced { mime_type, data, original, displayed } => (
            format!(
                "Read image file {shown} [{mime_type}]\n[Image resized from {}x{} to {}x{} to fit the {}x{} and 4MB limits.]",
                original.0, original.1, displayed.0, displayed.1, images::MAX_DIMENSION, images::MAX_DIMENSION
            ),
            mime_type,
            data,
        ),
        images::Fitted::Omitted { reason } => return Ok(omitted(reason)),
    };
    Ok(ToolResult {
        content: vec![Content::text(text), Content::image(mime_type, data)],
        ..ToolResult::default()
    })
}

#[cfg(test)]
#[path = "read_tests.rs"]
mod tests;
