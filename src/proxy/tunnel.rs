//! A `CONNECT` tunnel's bytes, carried both ways; a TLS ClientHello that names another host
//! than the tunnel's, or cannot be read whole, ends it before any of the client's bytes reach
//! the host.

use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _};

use golato_sandbox::network::{Refusal, Why};

use super::hello::{self, Hello};

/// Why a tunnel was closed before the client's bytes reached the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Closed {
    /// The hello named this (shown escaped), not the tunnel's host.
    Named(String),
    /// The hello could not be read whole: why.
    Unreadable(&'static str),
}

impl Closed {
    /// The refusal the tunnel to `host` is told as.
    pub(super) fn refusal(self, host: String) -> Refusal {
        let why = match self {
            Closed::Named(named) => Why::TlsName(named),
            Closed::Unreadable(why) => Why::TlsHello(why.to_owned()),
        };
        Refusal { host, why }
    }
}

/// Carries a tunnel both ways until either side ends (the bytes are counted by the host's
/// stream); why it was closed unread, when it was.
/// The host's bytes flow from the start (a server that speaks first, as SSH does, is not
/// held); the client's wait until its first bytes are read as a whole TLS hello or found not
/// to be TLS.
pub(super) async fn carry<C, U>(client: C, upstream: U, host: &str) -> Option<Closed>
where
    C: AsyncRead + AsyncWrite + Unpin,
    U: AsyncRead + AsyncWrite + Unpin,
{
    let (mut from_client, mut to_client) = tokio::io::split(client);
    let (mut from_host, mut to_host) = tokio::io::split(upstream);
    let down = async {
        let _ = tokio::io::copy(&mut from_host, &mut to_client).await;
        let _ = to_client.shutdown().await;
    };
    let up = async {
        let mut first = Vec::new();
        let closed = loop {
            let mut buffer = [0u8; 4096];
            let count = match from_client.read(&mut buffer).await {
                Ok(0) | Err(_) if first.is_empty() => {
                    let _ = to_host.shutdown().await;
                    return None;
                }
                // Ended inside its hello: nothing of it is sent on.
                Ok(0) | Err(_) => {
                    break Some(Closed::Unreadable("the client ended inside its hello"))
                }
                Ok(count) => count,
            };
            first.extend_from_slice(&buffer[..count]);
            match hello::read(&first) {
                Hello::Partial if first.len() < hello::READ_LIMIT => {}
                Hello::Partial => {
                    break Some(Closed::Unreadable("no whole hello within the limit"))
                }
                Hello::NotTls | Hello::Named(None) => break None,
                Hello::Named(Some(named)) if hello::names_host(&named, host) => break None,
                Hello::Named(Some(named)) => break Some(Closed::Named(hello::shown(&named))),
                Hello::Unreadable(why) => break Some(Closed::Unreadable(why)),
            }
        };
        if closed.is_some() {
            return closed;
        }
        if to_host.write_all(&first).await.is_err() {
            return None;
        }
        let _ = tokio::io::copy(&mut from_client, &mut to_host).await;
        let _ = to_host.shutdown().await;
        None
    };
    tokio::pin!(up, down);
    let mut down_done = false;
    let closed = loop {
        tokio::select! {
            closed = &mut up => break closed,
            () = &mut down, if !down_done => down_done = true,
        }
    };
    // Refused: the tunnel ends here, the host's side dropped unread.
    if closed.is_none() && !down_done {
        down.await;
    }
    closed
}
