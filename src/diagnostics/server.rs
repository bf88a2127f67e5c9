//! One running language server: its process (confined read-only when the session has a
//! sandbox), the protocol's framing on its pipes, bounded in bytes, and the diagnostics it
//! published for each file.

use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use lsp_types::Diagnostic;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::sync::{oneshot, watch};

use super::ServerSpec;

/// The most bytes one message of a server may have; a bigger one stops the server.
pub(crate) const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;
/// The most bytes of a message's header lines.
const MAX_HEADER_BYTES: usize = 8 * 1024;
/// The most diagnostics kept for one file (the rest are counted, not kept).
pub(crate) const MAX_KEPT: usize = 500;

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

/// Writes one message; a server that stops reading must not hold the call (its pipe fills,
/// the write waits): bounded.
async fn write_message(input: &Input, message: &Value) -> Result<(), String> {
    let body = message.to_string();
    let frame = format!("Content-Length: {}\r\n\r\n{body}", body.len());
    let mut input = input.lock().await;
    let written = tokio::time::timeout(Duration::from_secs(5), async {
        input.write_all(frame.as_bytes()).await?;
        input.flush().await
    })
    .await;
    match written {
        Ok(Ok(())) => Ok(()),
        Ok(Err(error)) => Err(format!("could not write to it: {error}")),
        Err(_) => Err("it stopped reading what golato sends".to_owned()),
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

/// `bash -c 'exec "$@" < FIFO'` in the sandbox's helper: the helper gives a confined command
/// no standard input (its own is golato's status pipe), so the server reads a FIFO golato
/// writes, made in a private folder.
fn confined(
    sandbox: &golato_sandbox::Prepared,
    program: &str,
    arguments: &[String],
) -> Result<
    (
        tokio::process::Command,
        Option<tempfile::TempDir>,
        Option<std::io::PipeReader>,
    ),
    String,
> {
    let dir = tempfile::Builder::new()
        .prefix("golato-lsp-")
        .tempdir()
        .map_err(|error| format!("could not make its input pipe's folder: {error}"))?;
    rustix::fs::mknodat(
        rustix::fs::CWD,
        fifo_path(&dir),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .map_err(|error| format!("could not make its input pipe: {error}"))?;
    let (status, status_writer) = std::io::pipe()
        .map_err(|error| format!("could not make the sandbox's status pipe: {error}"))?;
    let mut command = reading_confined(sandbox, &fifo_path(&dir), program, arguments);
    command.stdin(status_writer);
    Ok((command, Some(dir), Some(status)))
}

/// `program` with `arguments` in `sandbox`, its standard input `input` (the helper gives a
/// confined command none of golato's: `bash -c 'exec "$@" < FILE'` opens it inside).
pub(crate) fn reading_confined(
    sandbox: &golato_sandbox::Prepared,
    input: &Path,
    program: &str,
    arguments: &[String],
) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(sandbox.helper());
    command
        .args(sandbox.helper_args())
        .args(["bash", "-c", "f=$1; shift; exec \"$@\" < \"$f\"", "golato"])
        .arg(input)
        .arg(program)
        .args(arguments);
    command
}

fn fifo_path(dir: &tempfile::TempDir) -> std::path::PathBuf {
    dir.path().join("input")
}

/// What the sandbox's helper said before the server started: nothing, or why it could not
/// confine it.
async fn refusal(status: std::io::PipeReader) -> Result<(), String> {
    let said = tokio::task::spawn_blocking(move || {
        let mut said = String::new();
        let _ = std::io::Read::read_to_string(&mut std::io::Read::take(status, 4096), &mut said);
        said
    })
    .await
    .unwrap_or_default();
    match said.trim() {
        "" => Ok(()),
        said => Err(format!(
            "the sandbox could not confine it, so it did not start: {said}"
        )),
    }
}

/// `file://` and the path, as the protocol names folders and files.
pub(crate) fn root_uri(path: &Path) -> String {
    url::Url::from_file_path(path)
        .map(String::from)
        .unwrap_or_else(|()| format!("file://{}", path.display()))
}

/// Reads the server's messages until it stops: keeps what it publishes, answers its requests,
/// hands our requests their replies. A message past the bounds or not the protocol's stops it.
async fn read_messages(
    output: tokio::process::ChildStdout,
    state: Arc<Mutex<State>>,
    tell: watch::Sender<u64>,
    input: Input,
    root: String,
) {
    let mut reader = BufReader::new(output);
    let why = loop {
        let body = match read_frame(&mut reader).await {
            Ok(Some(body)) => body,
            Ok(None) => break "it exited".to_owned(),
            Err(why) => break why,
        };
        let Ok(message) = serde_json::from_slice::<Envelope>(&body) else {
            break "it sent a message that is not JSON-RPC".to_owned();
        };
        let params = || {
            message
                .params
                .as_deref()
                .and_then(|raw| serde_json::from_str::<Value>(raw.get()).ok())
                .unwrap_or(Value::Null)
        };
        match (message.id.clone(), message.method.as_deref()) {
            (Some(id), Some(method)) => {
                // The server asks golato: answered at once, with as little as the protocol
                // allows; nothing is served from disk, nothing is changed.
                let reply = match answer_request(method, &params(), &root) {
                    Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
                    Err(why) => {
                        json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": why}})
                    }
                };
                if let Err(why) = write_message(&input, &reply).await {
                    break why;
                }
            }
            (None, Some("textDocument/publishDiagnostics")) => {
                let Some(Ok(params)) = message
                    .params
                    .as_deref()
                    .map(|raw| serde_json::from_str::<Publish>(raw.get()))
                else {
                    break "it published diagnostics that are not the protocol's".to_owned();
                };
                let mut state = state.lock().unwrap_or_else(PoisonError::into_inner);
                state.seq += 1;
                let (diagnostics, left_out) = params.diagnostics;
                let published = Published {
                    seq: state.seq,
                    version: params.version,
                    diagnostics,
                    left_out,
                };
                state.published.insert(params.uri.to_string(), published);
                let seq = state.seq;
                drop(state);
                tell.send_replace(seq);
            }
            (Some(id), None) => {
                let reply = id.as_i64().and_then(|id| {
                    state
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .replies
                        .remove(&id)
                });
                if let Some(reply) = reply {
                    let result = match &message.error {
                        Some(error) => Err(format!(
                            "it answered with an error: {}",
                            error["message"].as_str().unwrap_or("no message")
                        )),
                        None => Ok(message
                            .result
                            .as_deref()
                            .and_then(|raw| serde_json::from_str(raw.get()).ok())
                            .unwrap_or(Value::Null)),
                    };
                    let _ = reply.send(result);
                }
            }
            _ => {}
        }
    };
    tracing::info!(target: "golato::diagnostics", why, "a language server stopped");
    let mut state = state.lock().unwrap_or_else(PoisonError::into_inner);
    state.stopped = Some(why);
    state.replies.clear();
    drop(state);
    tell.send_modify(|seq| *seq += 1);
}

/// A message as it is routed: what kind it is, its parts left unread until needed.
#[derive(serde::Deserialize)]
struct Envelope {
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    params: Option<Box<serde_json::value::RawValue>>,
    #[serde(default)]
    result: Option<Box<serde_json::value::RawValue>>,
    #[serde(default)]
    error: Option<Value>,
}

/// `textDocument/publishDiagnostics`'s params, with at most [`MAX_KEPT`] diagnostics built
/// and the rest only counted.
#[derive(serde::Deserialize)]
struct Publish {
    uri: lsp_types::Uri,
    #[serde(default)]
    version: Option<i32>,
    #[serde(deserialize_with = "kept")]
    diagnostics: (Vec<Diagnostic>, usize),
}

fn kept<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<(Vec<Diagnostic>, usize), D::Error> {
    struct Kept;
    impl<'de> serde::de::Visitor<'de> for Kept {
        type Value = (Vec<Diagnostic>, usize);

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a list of diagnostics")
        }

        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> Result<Self::Value, A::Error> {
            let mut kept = Vec::new();
            while kept.len() < MAX_KEPT {
                match seq.next_element::<Diagnostic>()? {
                    Some(diagnostic) => kept.push(diagnostic),
                    None => return Ok((kept, 0)),
                }
            }
            let mut left_out = 0;
            while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {
                left_out += 1;
            }
            Ok((kept, left_out))
        }
    }
    deserializer.deserialize_seq(Kept)
}

/// golato's answer to a request of the server's.
fn answer_request(method: &str, params: &Value, root: &str) -> Result<Value, String> {
    match method {
        // One `null` per item asked: the server's defaults.
        "workspace/configuration" => Ok(Value::Array(vec![
            Value::Null;
            params["items"]
                .as_array()
                .map_or(0, Vec::len)
                .min(64)
        ])),
        "workspace/workspaceFolders" => Ok(json!([{"uri": root, "name": "workspace"}])),
        "window/workDoneProgress/create"
        | "client/registerCapability"
        | "client/unregisterCapability"
        | "window/showMessageRequest" => Ok(Value::Null),
        other => Err(format!("golato does not serve {other}")),
    }
}

/// One message's body, or `None` at the end of the stream.
async fn read_frame(
    reader: &mut BufReader<tokio::process::ChildStdout>,
) -> Result<Option<Vec<u8>>, String> {
    let mut length = None;
    let mut header_bytes = 0;
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = (&mut *reader)
            .take((MAX_HEADER_BYTES - header_bytes + 1) as u64)
            .read_until(b'\n', &mut line)
            .await
            .map_err(|error| format!("could not read from it: {error}"))?;
        if read == 0 {
            return match header_bytes {
                0 => Ok(None),
                _ => Err("it stopped in the middle of a message".to_owned()),
            };
        }
        header_bytes += read;
        if header_bytes > MAX_HEADER_BYTES || !line.ends_with(b"\n") {
            return Err(format!(
                "it sent a message header over {MAX_HEADER_BYTES} bytes"
            ));
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches(['\r', '\n']);
        if text.is_empty() {
            break;
        }
        match text.split_once(':') {
            Some((name, value)) if name.eq_ignore_ascii_case("content-length") => {
                length = Some(value.trim().parse::<usize>().map_err(|_| {
                    format!("it sent a Content-Length that is not a number: {value:?}")
                })?);
            }
            Some(_) => {}
            None => return Err(format!("it sent a header line that is not one: {text:?}")),
        }
    }
    let Some(length) = length else {
        return Err("it sent a message without a Content-Length".to_owned());
    };
    if length > MAX_MESSAGE_BYTES {
        return Err(format!(
            "it sent a message of {length} bytes, over the bound of {MAX_MESSAGE_BYTES}"
        ));
    }
    let mut body = vec![0; length];
    reader
        .read_exact(&mut body)
        .await
        .map_err(|_| "it stopped in the middle of a message".to_owned())?;
    Ok(Some(body))
}
