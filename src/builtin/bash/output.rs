//! Everything a command printed: a bounded tail in memory ([`MAX_LINES`] lines, [`MAX_BYTES`]
//! bytes shown), the whole output in a temporary file once it outgrows what a result shows.

use std::io::Write as _;
use std::path::PathBuf;

use serde_json::json;

use super::super::paths::failure;
use super::{killed_line, processes, Ending};
use crate::tool::ToolResult;

/// Most lines of output returned (the tail).
pub(super) const MAX_LINES: usize = 2_000;

/// Most bytes of output returned (the tail, whole lines where possible): 50 KiB.
pub(super) const MAX_BYTES: usize = 50 * 1024;

/// Output kept in memory to render the tail from.
pub(super) const TAIL_KEEP: usize = 2 * MAX_BYTES;

/// Everything the command printed: a bounded tail in memory, the whole output in a temporary
/// file once it outgrows what a result shows.
pub(super) struct Output {
    /// Most bytes the full-output file takes.
    file_limit: u64,
    /// Bytes written to the file so far.
    file_bytes: u64,
    total_bytes: u64,
    newlines: u64,
    last_byte: Option<u8>,
    /// All output while it is small; emptied into `file` when it outgrows the limits.
    head: Vec<u8>,
    tail: std::collections::VecDeque<u8>,
    file: Option<(std::fs::File, PathBuf)>,
    /// Why the whole output could not be saved: the tail is still shown, and the cut says so.
    file_error: Option<String>,
}

pub(super) fn could_not_create(error: &std::io::Error) -> String {
    failure(
        format_args!(
            "could not create a file in {}",
            std::env::temp_dir().display()
        ),
        error,
    )
}

/// A new file for a command's whole output, with `bytes` in it.
pub(super) fn save_output(bytes: &[u8]) -> std::io::Result<(std::fs::File, PathBuf)> {
    let (mut file, path) = tempfile::Builder::new()
        .prefix("golato-bash-")
        .suffix(".log")
        .tempfile()?
        .keep()
        .map_err(|error| error.error)?;
    file.write_all(bytes)?;
    Ok((file, path))
}

impl Output {
    pub(super) fn new(file_limit: u64) -> Output {
        Output {
            file_limit,
            file_bytes: 0,
            total_bytes: 0,
            newlines: 0,
            last_byte: None,
            head: Vec::new(),
            tail: std::collections::VecDeque::new(),
            file: None,
            file_error: None,
        }
    }

    /// Writes what of `bytes` the file still takes.
    fn save(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        let room =
            usize::try_from(self.file_limit.saturating_sub(self.file_bytes)).unwrap_or(usize::MAX);
        let part = &bytes[..bytes.len().min(room)];
        if let Some((file, _)) = &mut self.file {
            file.write_all(part)?;
        }
        self.file_bytes += part.len() as u64;
        Ok(())
    }

    /// Whether the full-output file stopped at its limit.
    fn file_cut(&self) -> bool {
        self.total_bytes > self.file_bytes && self.file_bytes >= self.file_limit
    }

    /// Takes more output. The tail is always kept; a failure to save the whole output is
    /// remembered for the result (and the command goes on, so its group is still reaped).
    pub(super) fn push(&mut self, bytes: &[u8]) {
        self.total_bytes += bytes.len() as u64;
        self.newlines += memchr::memchr_iter(b'\n', bytes).count() as u64;
        self.last_byte = bytes.last().copied().or(self.last_byte);
        self.tail.extend(bytes);
        let excess = self.tail.len().saturating_sub(TAIL_KEEP);
        self.tail.drain(..excess);
        if self.file_error.is_some() {
            return;
        }
        let saved = match &mut self.file {
            Some(_) => self.save(bytes),
            None if self.total_bytes as usize > MAX_BYTES || self.newlines as usize > MAX_LINES => {
                self.head.extend_from_slice(bytes);
                let head = std::mem::take(&mut self.head);
                save_output(&[]).and_then(|file| {
                    self.file = Some(file);
                    self.save(&head)
                })
            }
            None => {
                self.head.extend_from_slice(bytes);
                Ok(())
            }
        };
        if let Err(error) = saved {
            self.file_error = Some(match &self.file {
                Some((_, path)) => {
                    failure(format_args!("could not write {}", path.display()), &error)
                }
                None => could_not_create(&error),
            });
            self.file = None;
            self.head = Vec::new();
        }
    }

    fn total_lines(&self) -> u64 {
        self.newlines + u64::from(self.last_byte.is_some_and(|byte| byte != b'\n'))
    }

    /// The last lines that fit the limits, and how many lines they are.
    fn tail_lines(&self) -> (String, usize, bool) {
        let (front, back) = self.tail.as_slices();
        let mut bytes = Vec::with_capacity(self.tail.len());
        bytes.extend_from_slice(front);
        bytes.extend_from_slice(back);
        let text = String::from_utf8_lossy(&bytes);
        let text = text.strip_suffix('\n').unwrap_or(&text);
        let mut kept: Vec<&str> = Vec::new();
        let mut size = 0;
        let mut line_cut = false;
        for line in text.rsplit('\n') {
            let cost = line.len() + usize::from(!kept.is_empty());
            if kept.len() == MAX_LINES {
                break;
            }
            if size + cost > MAX_BYTES {
                if kept.is_empty() {
                    // The last line alone is too long: keep its end.
                    let mut start = line.len() - MAX_BYTES.min(line.len());
                    while !line.is_char_boundary(start) {
                        start += 1;
                    }
                    kept.push(&line[start..]);
                    line_cut = true;
                }
                break;
            }
            size += cost;
            kept.push(line);
        }
        let count = kept.len();
        kept.reverse();
        (kept.join("\n"), count, line_cut)
    }

    pub(super) fn tail_text(&self) -> String {
        self.tail_lines().0
    }

    pub(super) fn finish(mut self, ending: Ending, killed: &[processes::Killed]) -> ToolResult {
        let (mut text, shown, line_cut) = self.tail_lines();
        let total = self.total_lines();
        let truncated = line_cut || (shown as u64) < total;
        // Output can be cut without having outgrown the limits that start the file (a last
        // line without a newline, bytes that are not UTF-8): every cut still names a file.
        if truncated && self.file.is_none() && self.file_error.is_none() {
            let head = std::mem::take(&mut self.head);
            match save_output(&[]) {
                Ok(file) => {
                    self.file = Some(file);
                    if let Err(error) = self.save(&head) {
                        self.file_error = Some(could_not_create(&error));
                        self.file = None;
                    }
                }
                Err(error) => {
                    self.file_error = Some(could_not_create(&error));
                }
            }
        }
        let full_output = match self.file.take() {
            Some((mut file, path)) => match file.flush() {
                Ok(()) => Some(path),
                Err(error) => {
                    self.file_error = Some(failure(
                        format_args!("could not write {}", path.display()),
                        &error,
                    ));
                    None
                }
            },
            None => None,
        };
        if text.is_empty() {
            text.push_str("(no output)");
        }
        if truncated {
            let shown_part = if line_cut {
                format!("Showing the last {}KB of line {total}.", MAX_BYTES / 1024)
            } else {
                format!(
                    "Showing lines {}-{total} of {total}.",
                    total - shown as u64 + 1
                )
            };
            let whole = match (&full_output, &self.file_error) {
                (Some(path), _) if self.file_cut() => format!(
                    "Full output: {} (its first {} of {} bytes: the file stops at its limit)",
                    path.display(),
                    self.file_bytes,
                    self.total_bytes
                ),
                (Some(path), _) => format!("Full output: {}", path.display()),
                (None, Some(error)) => {
                    format!("The full output could not be saved to a file: {error}")
                }
                (None, None) => "The full output was not saved.".to_owned(),
            };
            text.push_str(&format!("\n\n[{shown_part} {whole}]"));
        }
        let (is_error, exit_code) = match &ending {
            Ending::Exited(status) => match status.code() {
                Some(0) => (false, Some(0)),
                Some(code) => {
                    text.push_str(&format!("\n\nCommand exited with code {code}"));
                    (true, Some(code))
                }
                None => {
                    use std::os::unix::process::ExitStatusExt;
                    let signal = status.signal().unwrap_or_default();
                    text.push_str(&format!("\n\nCommand was killed by signal {signal}"));
                    (true, None)
                }
            },
            Ending::TimedOut(seconds) => {
                text.push_str(&format!(
                    "\n\n{}Command timed out after {seconds} seconds",
                    killed_line(killed)
                ));
                (true, None)
            }
            Ending::Aborted => {
                text.push_str(&format!("\n\n{}Command aborted", killed_line(killed)));
                (true, None)
            }
        };
        ToolResult {
            is_error,
            ..ToolResult::text(text).with_details(json!({
                "exit_code": exit_code,
                "truncated": truncated,
                "total_lines": total,
                "total_bytes": self.total_bytes,
                "full_output_path": full_output,
                "full_output_cut": self.file_cut(),
                "killed": killed.iter().filter(|process| !process.internal).map(|process| json!({"pid": process.pid, "name": process.name})).collect::<Vec<_>>(),
            }))
        }
    }
}
