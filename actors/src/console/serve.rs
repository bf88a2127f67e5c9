//! The console on the wire: JSON lines over a local socket.
//!
//! Why JSON lines and not tokio-console's gRPC: the stream is one-way and local, its readers are
//! golato's viewer and scripts (`jq`, `nc`), and serde_json is already here. gRPC would bring
//! tonic, prost and a code generator for one stream whose schema is a handful of structs.
//!
//! Each connection gets [`Update::Hello`], a [`Snapshot`], then a [`Delta`] per tick (at most
//! [`ConsoleConfig::rate`](super::ConsoleConfig::rate) a second): the actors changed since
//! what *this connection* was last sent, the ones that ended, and the locks and lints whole. A
//! connection whose reader is slow blocks only its own task: the ticks it misses are counted
//! (`dropped`) and the next delta still covers everything since its last one.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

use super::{Console, Delta, Update, WIRE_VERSION};

/// Where a console is served: a TCP address (`127.0.0.1:6669`) or a Unix socket's path
/// (`unix:/run/golato.sock`, or any value with a `/`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConsoleAddr {
    /// A TCP address; keep it on loopback: the console shows tool names and paths.
    Tcp(SocketAddr),
    /// A Unix socket's path (created; an existing socket file there is replaced).
    Unix(PathBuf),
}

impl FromStr for ConsoleAddr {
    type Err = ServeError;

    fn from_str(text: &str) -> Result<ConsoleAddr, ServeError> {
        if let Some(path) = text.strip_prefix("unix:") {
            return Ok(ConsoleAddr::Unix(PathBuf::from(path)));
        }
        if text.contains('/') {
            return Ok(ConsoleAddr::Unix(PathBuf::from(text)));
        }
        text.parse()
            .map(ConsoleAddr::Tcp)
            .map_err(|_| ServeError::Address(text.to_owned()))
    }
}

impl fmt::Display for ConsoleAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConsoleAddr::Tcp(addr) => write!(f, "{addr}"),
            ConsoleAddr::Unix(path) => write!(f, "unix:{}", path.display()),
        }
    }
}

/// Why a console could not be served.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The address is neither `HOST:PORT` nor a socket path.
    #[error("{0:?} is not a console address; give HOST:PORT (127.0.0.1:6669) or a Unix socket path (unix:/tmp/golato.sock)")]
    Address(String),
    /// Listening failed.
    #[error("could not serve the console on {addr}: {source}; pick a free port or a writable socket path")]
    Listen {
        /// The address.
        addr: String,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
}

/// A console being served; stops listening (and ends its connections) when dropped.
#[derive(Debug)]
pub struct ConsoleServer {
    addr: ConsoleAddr,
    stop: CancellationToken,
}

impl ConsoleServer {
    /// Where it listens (the port chosen, for `127.0.0.1:0`).
    pub fn addr(&self) -> &ConsoleAddr {
        &self.addr
    }
}

impl Drop for ConsoleServer {
    fn drop(&mut self) {
        self.stop.cancel();
        if let ConsoleAddr::Unix(path) = &self.addr {
            let _ = std::fs::remove_file(path);
        }
    }
}

pub(super) fn serve(
    console: Console,
    addr: &ConsoleAddr,
    runtime: &tokio::runtime::Handle,
) -> Result<ConsoleServer, ServeError> {
    // Bound here, synchronously, so that a bad address is the caller's error; the listener
    // joins the runtime below.
    let _entered = runtime.enter();
    let stop = CancellationToken::new();
    let listen_error = |source| ServeError::Listen {
        addr: addr.to_string(),
        source,
    };
    let (listener, bound) = match addr {
        ConsoleAddr::Tcp(socket) => {
            let listener = std::net::TcpListener::bind(socket)
                .and_then(|listener| {
                    listener.set_nonblocking(true)?;
                    tokio::net::TcpListener::from_std(listener)
                })
                .map_err(listen_error)?;
            let local = listener.local_addr().map_err(listen_error)?;
            (Listener::Tcp(listener), ConsoleAddr::Tcp(local))
        }
        ConsoleAddr::Unix(path) => {
            // Only a socket left behind is replaced, never another file.
            if std::fs::symlink_metadata(path).is_ok_and(|meta| {
                use std::os::unix::fs::FileTypeExt;
                meta.file_type().is_socket()
            }) {
                let _ = std::fs::remove_file(path);
            }
            let listener = tokio::net::UnixListener::bind(path).map_err(listen_error)?;
            (Listener::Unix(listener), ConsoleAddr::Unix(path.clone()))
        }
    };
    let accepting = stop.clone();
    // Each viewer costs a sample per tick: past this many at once, a newcomer is closed at once
    // (a loop of connections cannot make the host sample without end).
    let viewers = Arc::new(tokio::sync::Semaphore::new(MAX_VIEWERS));
    runtime.spawn(async move {
        loop {
            let accepted = tokio::select! {
                () = accepting.cancelled() => return,
                accepted = listener.accept() => accepted,
            };
            match accepted {
                Ok(stream) => {
                    let Ok(seat) = Arc::clone(&viewers).try_acquire_owned() else {
                        tracing::warn!(target: "golato", "console: {MAX_VIEWERS} viewers already; a new one was closed");
                        continue;
                    };
                    let (console, stop) = (console.clone(), accepting.clone());
                    tokio::spawn(async move {
                        connection(console, stream, stop).await;
                        drop(seat);
                    });
                }
                Err(error) => {
                    tracing::warn!(target: "golato", %error, "console: accept failed")
                }
            }
        }
    });
    tracing::info!(target: "golato", addr = %bound, "console served");
    Ok(ConsoleServer { addr: bound, stop })
}

/// Viewers served at once, at most.
pub const MAX_VIEWERS: usize = 16;

/// A console's listening socket.
enum Listener {
    Tcp(tokio::net::TcpListener),
    Unix(tokio::net::UnixListener),
}

type Stream = std::pin::Pin<Box<dyn AsyncWrite + Send>>;

impl Listener {
    async fn accept(&self) -> std::io::Result<Stream> {
        Ok(match self {
            Listener::Tcp(listener) => {
                let (stream, _) = listener.accept().await?;
                // Updates are whole lines written at once: nothing gains by waiting to batch.
                let _ = stream.set_nodelay(true);
                Box::pin(stream)
            }
            Listener::Unix(listener) => Box::pin(listener.accept().await?.0),
        })
    }
}

/// One viewer: hello, a snapshot, then a delta per tick until it goes or the server stops.
async fn connection<W: AsyncWrite + Unpin>(console: Console, mut out: W, stop: CancellationToken) {
    let rate = console.config().rate.max(1);
    let period = Duration::from_secs(1) / rate;
    let hello = Update::Hello {
        version: WIRE_VERSION,
        rate,
        thresholds: console.config().thresholds(),
    };
    let mut sent: HashMap<u64, u64> = HashMap::new();
    let mut dropped = 0u64;
    let mut ticks = tokio::time::interval(period);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    if !write(&mut out, &hello, &stop).await {
        return;
    }
    // The number of the last ended actor this connection told of.
    let mut last_told = 0;
    let mut first = true;
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            _ = ticks.tick() => {}
        }
        let update = if first {
            first = false;
            let sample = console.sample(|_, _| true);
            sent = sample
                .views
                .iter()
                .map(|(version, view)| (view.id, *version))
                .collect();
            let (snapshot, last) = console.snapshot_of(sample, dropped);
            last_told = last;
            Update::Snapshot(snapshot)
        } else {
            let mut seen = HashSet::with_capacity(sent.len());
            let sample = console.sample(|id, version| {
                seen.insert(id);
                sent.get(&id) != Some(&version)
            });
            let ended: Vec<u64> = sent
                .keys()
                .filter(|id| !seen.contains(id))
                .copied()
                .collect();
            for id in &ended {
                sent.remove(id);
            }
            for (version, view) in &sample.views {
                sent.insert(view.id, *version);
            }
            let (history, last) = console.history(sample.now, last_told);
            last_told = last;
            Update::Delta(Delta {
                at_ms: sample.now / 1_000,
                live: seen.len(),
                changed: sample.views.into_iter().map(|(_, view)| view).collect(),
                ended,
                history,
                locks: sample.locks,
                lints: sample.lints,
                dropped,
            })
        };
        let started = tokio::time::Instant::now();
        if !write(&mut out, &update, &stop).await {
            return;
        }
        // Ticks that passed while the reader held the write up are updates it never got.
        let late = started.elapsed().as_nanos() / period.as_nanos().max(1);
        dropped += u64::try_from(late).unwrap_or(u64::MAX);
    }
}

/// Writes one line; false when the reader has gone or the server stops.
async fn write<W: AsyncWrite + Unpin>(
    out: &mut W,
    update: &Update,
    stop: &CancellationToken,
) -> bool {
    let mut line = match serde_json::to_vec(update) {
        Ok(line) => line,
        Err(error) => {
            tracing::warn!(target: "golato", %error, "console: an update could not be written");
            return false;
        }
    };
    line.push(b'\n');
    tokio::select! {
        () = stop.cancelled() => false,
        written = out.write_all(&line) => written.is_ok() && out.flush().await.is_ok(),
    }
}
