//! A language server's wire: the protocol's frames on its pipes, bounded in bytes; what it says
//! read (its publications kept to [`MAX_KEPT`] a file, its requests answered); what golato sends.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use lsp_types::Diagnostic;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::sync::watch;

use super::{Input, Published, State};

/// The most bytes one message of a server may have; a bigger one stops the server.
pub(crate) const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// The most bytes of a message's header lines.
pub(super) const MAX_HEADER_BYTES: usize = 8 * 1024;

/// The most diagnostics kept for one file (the rest are counted, not kept).
pub(crate) const MAX_KEPT: usize = 500;

/// Writes one message; a server that stops reading must not hold the call (its pipe fills,
/// the write waits): bounded.
pub(super) async fn write_message(input: &Input, message: &Value) -> Result<(), String> {
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

/// Reads the server's messages until it stops: keeps what it publishes, answers its requests,
/// hands our requests their replies. A message past the bounds or not the protocol's stops it.
pub(super) async fn read_messages(
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
pub(super) struct Envelope {
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
pub(super) struct Publish {
    uri: lsp_types::Uri,
    #[serde(default)]
    version: Option<i32>,
    #[serde(deserialize_with = "kept")]
    diagnostics: (Vec<Diagnostic>, usize),
}

pub(super) fn kept<'de, D: serde::Deserializer<'de>>(
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
pub(super) fn answer_request(method: &str, params: &Value, root: &str) -> Result<Value, String> {
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
pub(super) async fn read_frame(
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
