//! A sandboxed call's network by domain: the proxy serves the listener the sandbox's helper
//! sends from the command's own network namespace, for this call only, and the call's result
//! says what its command contacted.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::json;
use tokio::net::{TcpListener, UnixListener, UnixStream};
use tokio_util::sync::{CancellationToken, DropGuard};

use crate::message::Content;
use crate::proxy::{Connection, ConnectionLog, Proxy, Verdict};
use crate::tool::ToolResult;

/// Most connections a result's details list (the rest are counted).
const MAX_LISTED: usize = 500;
/// Most characters of a host the model is told (the longest DNS name).
const MAX_HOST: usize = 253;
/// The longest folder the socket's own folder is made in (107 bytes for the whole path, less
/// `/golato-proxy-XXXXXX/listener`).
const MAX_BASE: usize = 70;
/// Most refused hosts the model is told of by name.
const MAX_NAMED: usize = 10;

/// The proxy of one call, from before its command starts until it ends.
pub(super) struct CallNetwork {
    /// Where the helper sends the listener (in a folder private to this user, gone once the
    /// listener came).
    socket: PathBuf,
    cancel: CancellationToken,
    /// Ends the proxy when the call is left early (the command never started).
    _ends: DropGuard,
    served: tokio::task::JoinHandle<()>,
    told: Arc<Mutex<Vec<Connection>>>,
}

impl CallNetwork {
    /// Waits, in a task of its own, for the helper's listener and serves `proxy` on it.
    pub(super) fn open(proxy: &Proxy, call_id: &str) -> std::io::Result<CallNetwork> {
        // A Unix socket's path has at most 107 bytes: a long TMPDIR gives way to /tmp.
        let base = std::env::temp_dir();
        let base = match base.as_os_str().len() <= MAX_BASE {
            true => base,
            false => PathBuf::from("/tmp"),
        };
        let place = tempfile::Builder::new()
            .prefix("golato-proxy-")
            .tempdir_in(base)?;
        let socket = place.path().join("listener");
        let listener = UnixListener::bind(&socket)?;
        let told = Arc::new(Mutex::new(Vec::new()));
        let proxy = proxy
            .clone()
            .for_call(call_id)
            .with_log(ConnectionLog::new({
                let told = Arc::clone(&told);
                move |connection| {
                    told.lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .push(connection.clone());
                }
            }));
        let cancel = CancellationToken::new();
        let served = tokio::spawn({
            let cancel = cancel.clone();
            async move {
                let received = tokio::select! {
                    () = cancel.cancelled() => return,
                    received = receive(&listener) => received,
                };
                // The socket's folder is needed only until the listener came: a command that
                // outlives golato (in the background, say) leaves nothing in the temporary
                // directory.
                drop(listener);
                drop(place);
                match received {
                    Ok(listener) => proxy.serve(listener, cancel).await,
                    Err(error) => {
                        tracing::warn!(%error, "the sandbox's helper sent no listener for the proxy");
                    }
                }
            }
        });
        Ok(CallNetwork {
            socket,
            _ends: cancel.clone().drop_guard(),
            cancel,
            served,
            told,
        })
    }

    /// Where the helper sends the listener.
    pub(super) fn socket(&self) -> &Path {
        &self.socket
    }

    /// Ends the call's connections and adds what they were to `result`.
    pub(super) async fn finish(self, result: &mut ToolResult) {
        self.cancel.cancel();
        let _ = self.served.await;
        let told = std::mem::take(&mut *self.told.lock().unwrap_or_else(PoisonError::into_inner));
        annotate(result, &told);
    }
}

/// The listener the helper sends over the first connection to `listener`.
async fn receive(listener: &UnixListener) -> std::io::Result<TcpListener> {
    let (stream, _) = listener.accept().await?;
    let fd = loop {
        stream.readable().await?;
        match stream.try_io(tokio::io::Interest::READABLE, || received_fd(&stream)) {
            Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {}
            other => break other?,
        }
    };
    let listener = std::net::TcpListener::from(fd);
    listener.set_nonblocking(true)?;
    TcpListener::from_std(listener)
}

fn received_fd(stream: &UnixStream) -> std::io::Result<OwnedFd> {
    let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut ancillary = rustix::net::RecvAncillaryBuffer::new(&mut space);
    let mut buffer = [0u8; 16];
    rustix::net::recvmsg(
        stream,
        &mut [std::io::IoSliceMut::new(&mut buffer)],
        &mut ancillary,
        rustix::net::RecvFlags::CMSG_CLOEXEC | rustix::net::RecvFlags::DONTWAIT,
    )?;
    ancillary
        .drain()
        .find_map(|message| match message {
            rustix::net::RecvAncillaryMessage::ScmRights(mut fds) => fds.next(),
            _ => None,
        })
        .ok_or_else(|| std::io::Error::other("the message held no descriptor"))
}

/// The network's part of a result: every connection in the details (`network`), and for the
/// model a line per refused host.
fn annotate(result: &mut ToolResult, told: &[Connection]) {
    if told.is_empty() {
        return;
    }
    let mut blocked: Vec<(String, String)> = Vec::new();
    for connection in told {
        if let Verdict::Refused(refusal) = &connection.verdict {
            // A name is at most 253 characters; a command may ask for anything.
            let host: String = connection.host.chars().take(MAX_HOST).collect();
            let line = (host, refusal.reason());
            if !blocked.contains(&line) {
                blocked.push(line);
            }
        }
    }
    if !blocked.is_empty() {
        let mut lines: Vec<String> = blocked
            .iter()
            .take(MAX_NAMED)
            .map(|(host, reason)| format!("network: blocked {host} ({reason})"))
            .collect();
        if blocked.len() > MAX_NAMED {
            lines.push(format!(
                "network: and {} more hosts blocked",
                blocked.len() - MAX_NAMED
            ));
        }
        result
            .content
            .push(Content::text(format!("\n\n{}", lines.join("\n"))));
    }
    let listed: Vec<serde_json::Value> = told
        .iter()
        .take(MAX_LISTED)
        .map(Connection::to_json)
        .collect();
    let details = result.details.get_or_insert_with(|| json!({}));
    if let Some(details) = details.as_object_mut() {
        details.insert("network".into(), json!(listed));
        if told.len() > MAX_LISTED {
            details.insert("network_unlisted".into(), json!(told.len() - MAX_LISTED));
        }
    }
}
