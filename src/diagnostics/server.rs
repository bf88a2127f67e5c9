//! One running language server: its process (confined read-only when the session has a
//! sandbox), the protocol's framing on its pipes, bounded in bytes, and the diagnostics it
//! published for each file.

mod launch;
mod wire;

pub(crate) use launch::reading_confined;
pub(crate) use wire::MAX_KEPT;

use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use launch::{confined, fifo_path, refusal};
use lsp_types::Diagnostic;
use serde_json::{json, Value};
use tokio::sync::{oneshot, watch};
use wire::{read_messages, write_message};

use super::ServerSpec;

/// What a server last published for one file.
#[derive(Debug, Clone, Default)]
pub(crate) struct Published {
    /// Which publication of the server's this was (they are counted from 1).
    pub(crate) seq: u64,
    /// The document version it is for, when the server says.
    pub(crate) version: Option<i32>,
    pub(crate) diagnostics: Vec<Diagnostic>,
    /// How many more it published than were kept.
    pub(crate) left_out: usize,
}

#[derive(Default)]
struct State {
    published: HashMap<String, Published>,
    seq: u64,
    /// Why the server stopped, once it did.
    stopped: Option<String>,
    replies: HashMap<i64, oneshot::Sender<Result<Value, String>>>,
}

/// The server's standard input (or its FIFO), shared by golato's side and the reader, which
/// answers the server's own requests.
type Input = Arc<tokio::sync::Mutex<Box<dyn tokio::io::AsyncWrite + Send + Unpin>>>;

/// A language server, started and initialized.
pub(crate) struct Server {
    pub(crate) name: String,
    input: Input,
    state: Arc<Mutex<State>>,
    changed: watch::Receiver<u64>,
    next_id: AtomicI64,
    /// The open documents' versions, and a hash of the text last shown, by URI.
    versions: tokio::sync::Mutex<HashMap<String, (i32, u64)>>,
    child: Mutex<Option<tokio::process::Child>>,
    /// Where a sandboxed server's input pipe lives; removed with it.
    _fifo_dir: Option<tempfile::TempDir>,
}

impl Server {
    /// Starts `spec`'s server in `root` (under `sandbox`, read-only, when given), and
    /// initializes it within `within`.
    pub(crate) async fn start(
        spec: &ServerSpec,
        root: &Path,
        sandbox: Option<&golato_sandbox::Prepared>,
        within: Duration,
    ) -> Result<Server, String> {
        let Some((program, arguments)) = spec.command.split_first() else {
            return Err("its command is empty".to_owned());
        };
        let (mut command, fifo_dir, status) = match sandbox {
            None => {
                let mut command = tokio::process::Command::new(program);
                command.args(arguments).stdin(Stdio::piped());
                (command, None, None)
            }
            Some(sandbox) => confined(sandbox, program, arguments)?,
        };
        command
            .current_dir(root)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .process_group(0)
            .kill_on_drop(true);
        let mut child = command.spawn().map_err(|error| match error.kind() {
            std::io::ErrorKind::NotFound => format!("{program} was not found on PATH"),
            _ => format!("could not start {program}: {error}"),
        })?;
        drop(command);
        let started = async {
            if let Some(status) = status {
                refusal(status).await?;
            }
            let input: Box<dyn tokio::io::AsyncWrite + Send + Unpin> = match &fifo_dir {
                Some(dir) => Box::new(
                    tokio::net::unix::pipe::OpenOptions::new()
                        .read_write(true)
                        .open_sender(fifo_path(dir))
                        .map_err(|error| format!("could not open its input pipe: {error}"))?,
                ),
                None => Box::new(
                    child
                        .stdin
                        .take()
                        .ok_or_else(|| "its standard input is missing".to_owned())?,
                ),
            };
            let output = child
                .stdout
                .take()
                .ok_or_else(|| "its standard output is missing".to_owned())?;
            Ok::<_, String>((input, output))
        };
        let (input, output) = tokio::time::timeout(within, started)
            .await
            .map_err(|_| format!("it did not start within {} ms", within.as_millis()))??;
        let state = Arc::new(Mutex::new(State::default()));
        let (tell, changed) = watch::channel(0);
        let server = Server {
            name: spec.name.clone(),
            input: Arc::new(tokio::sync::Mutex::new(input)),
            state: Arc::clone(&state),
            changed,
            next_id: AtomicI64::new(1),
            versions: tokio::sync::Mutex::new(HashMap::new()),
            child: Mutex::new(Some(child)),
            _fifo_dir: fifo_dir,
        };
        tokio::spawn(read_messages(
            output,
            state,
            tell,
            Arc::clone(&server.input),
            root_uri(root),
        ));
        let initialized = server.request(
            "initialize",
            json!({
                "processId": std::process::id(),
                "rootUri": root_uri(root),
                "workspaceFolders": [{"uri": root_uri(root), "name": "workspace"}],
                "capabilities": {
                    "textDocument": {
                        "publishDiagnostics": {"versionSupport": true},
                        "synchronization": {"dynamicRegistration": false},
                    },
                    // No `workspace` capabilities: a server told the client can give settings
                    // or folders waits to be asked for them (pyright 1.1.407 analyses nothing
                    // until then), and golato has none to give.
                },
            }),
        );
        match tokio::time::timeout(within, initialized).await {
            Err(_) => {
                server.stop();
                return Err(format!(
                    "it did not answer `initialize` within {} ms",
                    within.as_millis()
                ));
            }
            Ok(Err(error)) => {
                server.stop();
                return Err(error);
            }
            Ok(Ok(_)) => {}
        }
        server.notify("initialized", json!({})).await?;
        Ok(server)
    }

    /// Why it stopped, if it did.
    pub(crate) fn stopped(&self) -> Option<String> {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .stopped
            .clone()
    }

    /// Kills the server.
    pub(crate) fn stop(&self) {
        if let Some(mut child) = self
            .child
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            let _ = child.start_kill();
        }
    }

    /// Gives the server the file's `text` (opening it, or as its next version); returns the
    /// version sent and the publication count before it. Text the server already has is not
    /// sent again: its version, and 0 (any publication for that version answers).
    pub(crate) async fn show(
        &self,
        uri: &str,
        language: &str,
        text: &str,
    ) -> Result<(i32, u64), String> {
        use std::hash::{Hash as _, Hasher as _};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        text.hash(&mut hasher);
        let hash = hasher.finish();
        let mut versions = self.versions.lock().await;
        let seq = self
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .seq;
        let version = match versions.get(uri) {
            Some((version, shown)) if *shown == hash => return Ok((*version, 0)),
            None => {
                self.notify(
                    "textDocument/didOpen",
                    json!({"textDocument": {"uri": uri, "languageId": language, "version": 1, "text": text}}),
                )
                .await?;
                1
            }
            Some((version, _)) => {
                let next = version.saturating_add(1);
                self.notify(
                    "textDocument/didChange",
                    json!({"textDocument": {"uri": uri, "version": next}, "contentChanges": [{"text": text}]}),
                )
                .await?;
                next
            }
        };
        versions.insert(uri.to_owned(), (version, hash));
        Ok((version, seq))
    }

    /// The first publication for `uri` after publication `after` that is for `version` (or
    /// says no version), waiting until `deadline`; `None` when none came in time.
    pub(crate) async fn published(
        &self,
        uri: &str,
        after: u64,
        version: i32,
        deadline: tokio::time::Instant,
    ) -> Result<Option<Published>, String> {
        let mut changed = self.changed.clone();
        loop {
            {
                let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
                if let Some(published) = state.published.get(uri) {
                    if published.seq > after && published.version.is_none_or(|v| v >= version) {
                        return Ok(Some(published.clone()));
                    }
                }
                if let Some(why) = &state.stopped {
                    return Err(why.clone());
                }
            }
            match tokio::time::timeout_at(deadline, changed.changed()).await {
                Err(_) => return Ok(None),
                Ok(Err(_)) => return Err(self.stopped().unwrap_or_else(|| "it stopped".into())),
                Ok(Ok(())) => {}
            }
        }
    }

    /// What the server last published for `uri`, if anything.
    pub(crate) fn last_published(&self, uri: &str) -> Option<Vec<Diagnostic>> {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state
            .published
            .get(uri)
            .map(|published| published.diagnostics.clone())
    }

    /// What the server last published for every file.
    pub(crate) fn all_published(&self) -> Vec<(String, Published)> {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let mut all: Vec<_> = state
            .published
            .iter()
            .map(|(uri, published)| (uri.clone(), published.clone()))
            .collect();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all
    }

    async fn request(&self, method: &str, params: Value) -> Result<Value, String> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (reply, answer) = oneshot::channel();
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .replies
            .insert(id, reply);
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await?;
        answer
            .await
            .unwrap_or_else(|_| Err(self.stopped().unwrap_or_else(|| "it stopped".into())))
    }

    async fn notify(&self, method: &str, params: Value) -> Result<(), String> {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}))
            .await
    }

    async fn send(&self, message: &Value) -> Result<(), String> {
        if let Some(why) = self.stopped() {
            return Err(why);
        }
        write_message(&self.input, message).await
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

/// `file://` and the path, as the protocol names folders and files.
pub(crate) fn root_uri(path: &Path) -> String {
    url::Url::from_file_path(path)
        .map(String::from)
        .unwrap_or_else(|()| format!("file://{}", path.display()))
}
