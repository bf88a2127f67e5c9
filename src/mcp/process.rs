//! A stdio MCP server's process: started in a process group of its own, its standard output
//! read through [`BoundedLines`], and its whole group killed when golato is done with it (the
//! last handle dropped, or [`stop_servers`] at exit).

use std::collections::HashSet;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};

/// The longest line (one JSON-RPC message) read from a stdio server: 16 MiB, rmcp's own limit.
/// A longer one ends the connection with a clear error instead of being dropped silently (which
/// left its call waiting for ever).
pub(super) const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// What a server did wrong on its standard output, for the errors of the calls it breaks.
#[derive(Debug, Default, Clone)]
pub(super) struct Diagnosis(Arc<Mutex<Option<String>>>);

impl Diagnosis {
    fn set(&self, text: String) {
        let mut slot = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.is_none() {
            *slot = Some(text);
        }
    }

    /// "; the server …" when something was noticed, else nothing.
    pub(super) fn suffix(&self) -> String {
        match &*self.0.lock().unwrap_or_else(PoisonError::into_inner) {
            Some(text) => format!("; the server {text}"),
            None => String::new(),
        }
    }
}

/// A server's standard output, checked line by line as it passes: a line over
/// [`MAX_MESSAGE_BYTES`] ends the stream with an error, and a line that cannot be a JSON-RPC
/// message (not starting with `{`) is remembered for the errors it will cause.
pub(super) struct BoundedLines<R> {
    inner: R,
    line_bytes: usize,
    /// The start of the current line, while it is still being judged.
    line_start: Vec<u8>,
    diagnosis: Diagnosis,
}

impl<R> BoundedLines<R> {
    pub(super) fn new(inner: R, diagnosis: Diagnosis) -> Self {
        BoundedLines {
            inner,
            line_bytes: 0,
            line_start: Vec::new(),
            diagnosis,
        }
    }

    /// Looks at bytes just read; an error when a line outgrew the limit.
    fn check(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        const JUDGED: usize = 120;
        for &byte in bytes {
            if byte == b'\n' {
                self.judge(true);
                self.line_bytes = 0;
                self.line_start.clear();
                continue;
            }
            self.line_bytes += 1;
            if self.line_start.len() < JUDGED {
                self.line_start.push(byte);
                if self.line_start.len() == JUDGED {
                    self.judge(false);
                }
            }
            if self.line_bytes > MAX_MESSAGE_BYTES {
                let text = format!(
                    "sent a message of more than {} MiB, more than golato reads",
                    MAX_MESSAGE_BYTES / (1024 * 1024)
                );
                self.diagnosis.set(text.clone());
                return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, text));
            }
        }
        Ok(())
    }

    fn judge(&mut self, whole: bool) {
        let text = String::from_utf8_lossy(&self.line_start);
        let trimmed = text.trim();
        if trimmed.is_empty() && whole {
            return;
        }
        if !trimmed.is_empty() && !trimmed.starts_with('{') {
            let excerpt: String = trimmed.chars().take(80).collect();
            self.diagnosis.set(format!(
                "wrote lines that are not MCP messages to its standard output, such as {excerpt:?} (a server must log to standard error)"
            ));
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for BoundedLines<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                let checked = this.check(&buf.filled()[before..]);
                if let Err(error) = checked {
                    buf.set_filled(before);
                    return Poll::Ready(Err(error));
                }
                Poll::Ready(Ok(()))
            }
            other => other,
        }
    }
}

/// The process groups of the stdio servers alive now, for [`stop_servers`].
static GROUPS: Mutex<Option<HashSet<i32>>> = Mutex::new(None);

/// Kills the process group of every stdio MCP server this process started and has not yet
/// stopped. For a program's exit: a server held by a call that was abandoned (or by a task the
/// exit never finishes) would otherwise outlive the program. `golato`'s command line calls it on
/// every way out.
pub fn stop_servers() {
    let groups: Vec<i32> = GROUPS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .as_mut()
        .map(|groups| groups.drain().collect())
        .unwrap_or_default();
    for group in groups {
        kill_group(group);
    }
}

fn kill_group(group: i32) {
    if let Some(pid) = rustix::process::Pid::from_raw(group) {
        // Already gone is fine.
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
}

/// A running stdio server: its group is killed when this is dropped.
#[derive(Debug)]
pub(super) struct ServerProcess {
    group: Option<i32>,
    /// Kept so that tokio reaps it once killed.
    _child: tokio::process::Child,
}

impl ServerProcess {
    /// Starts `program args…` in a process group of its own, with piped standard input and
    /// output and standard error discarded.
    pub(super) fn start(
        program: &str,
        args: &[String],
        env: &[(String, String)],
    ) -> std::io::Result<(
        ServerProcess,
        tokio::process::ChildStdout,
        tokio::process::ChildStdin,
    )> {
        let mut child = tokio::process::Command::new(program)
            .args(args)
            .envs(env.iter().map(|(name, value)| (name, value)))
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()?;
        let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
            return Err(std::io::Error::other("the server's pipes were not set up"));
        };
        let group = child.id().and_then(|pid| i32::try_from(pid).ok());
        if let Some(group) = group {
            GROUPS
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get_or_insert_with(HashSet::new)
                .insert(group);
        }
        Ok((
            ServerProcess {
                group,
                _child: child,
            },
            stdout,
            stdin,
        ))
    }

    /// The server's process ID (its group's).
    pub(super) fn id(&self) -> Option<i32> {
        self.group
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        if let Some(group) = self.group.take() {
            if let Some(groups) = GROUPS
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .as_mut()
            {
                groups.remove(&group);
            }
            kill_group(group);
        }
    }
}
