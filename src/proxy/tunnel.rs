//! A `CONNECT` tunnel's bytes, carried both ways; a TLS ClientHello naming another host than
//! the tunnel's ends it before any of the client's bytes reach the host.

use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _};

/// The most of a client's first bytes read to find a TLS ClientHello's name.
const HELLO_LIMIT: usize = 16 * 1024;

/// Carries a tunnel both ways until either side ends (the bytes are counted by the host's
/// stream); the TLS name (SNI) the client's ClientHello gave instead of `host`, when it did.
/// The host's bytes flow from the start (a server that speaks first, as SSH does, is not
/// held); the client's wait until its first bytes are read as TLS or found not to be.
pub(super) async fn carry<C, U>(client: C, upstream: U, host: &str) -> Option<String>
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
        let mut acceptor = rustls::server::Acceptor::default();
        let named = loop {
            let mut buffer = [0u8; 4096];
            let count = match from_client.read(&mut buffer).await {
                Ok(0) | Err(_) => break None,
                Ok(count) => count,
            };
            first.extend_from_slice(&buffer[..count]);
            if acceptor.read_tls(&mut &buffer[..count]).is_err() {
                break None;
            }
            match acceptor.accept() {
                Ok(Some(accepted)) => {
                    break accepted.client_hello().server_name().map(str::to_owned)
                }
                Ok(None) if first.len() < HELLO_LIMIT => {}
                // Not TLS (or no hello within the limit): the host was judged; carry it.
                Ok(None) | Err(_) => break None,
            }
        };
        if let Some(named) = named.filter(|named| !named.eq_ignore_ascii_case(host)) {
            return Some(named);
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
    let named = loop {
        tokio::select! {
            named = &mut up => break named,
            () = &mut down, if !down_done => down_done = true,
        }
    };
    // Refused: the tunnel ends here, the host's side dropped unread.
    if named.is_none() && !down_done {
        down.await;
    }
    named
}
