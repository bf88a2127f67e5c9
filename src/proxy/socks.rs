//! SOCKS5 on the proxy's port (a first byte of 5 says SOCKS; HTTP requests start with a
//! letter): `CONNECT` only, no authentication, judged as an HTTP tunnel is. The messages are
//! read and written by `socks5-proto`; a refusal is the protocol's "connection not allowed"
//! (SOCKS has no room for a text: the call's result names the host for the model).

use std::sync::Arc;

use socks5_proto::handshake::{Method as AuthMethod, Request as Hello, Response as HelloAnswer};
use socks5_proto::{Address, Command, Reply, Request, Response};
use tokio::io::AsyncWriteExt as _;
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

use super::counted::{Counted, Counters};
use super::{tunnel, Opened, Proxy, Verdict};
use golato_sandbox::network::Refusal;

/// The first byte of a SOCKS5 client's greeting.
pub(super) const VERSION: u8 = 5;

impl Proxy {
    /// Serves one SOCKS5 connection: the greeting, one `CONNECT`, then the tunnel.
    pub(super) async fn socks(&self, mut client: TcpStream, cancel: CancellationToken) {
        let Ok(hello) = Hello::read_from(&mut client).await else {
            return;
        };
        if !hello.methods.contains(&AuthMethod::NONE) {
            let _ = HelloAnswer::new(AuthMethod::UNACCEPTABLE)
                .write_to(&mut client)
                .await;
            return;
        }
        if HelloAnswer::new(AuthMethod::NONE)
            .write_to(&mut client)
            .await
            .is_err()
        {
            return;
        }
        let Ok(request) = Request::read_from(&mut client).await else {
            return;
        };
        let (host, port) = match &request.address {
            Address::DomainAddress(name, port) => (super::hello::shown(name), *port),
            Address::SocketAddress(address) => (address.ip().to_string(), address.port()),
        };
        let method = "CONNECT";
        if request.command != Command::Connect {
            answer(&mut client, Reply::CommandNotSupported).await;
            return;
        }
        let judged = self
            .policy
            .judge_host(&host, port)
            .and_then(|()| self.policy.judge_method(&host, method));
        if let Err(refusal) = judged {
            self.told_refusal(&host, port, refusal);
            answer(&mut client, Reply::ConnectionNotAllowed).await;
            return;
        }
        let counters = Arc::new(Counters::default());
        let upstream = match self.open(&host, port).await {
            Ok(upstream) => Counted::new(upstream, Arc::clone(&counters)),
            Err(Opened::Refused(refusal)) => {
                self.told_refusal(&host, port, refusal);
                answer(&mut client, Reply::ConnectionNotAllowed).await;
                return;
            }
            Err(Opened::Failed(why)) => {
                self.tell(
                    host.clone(),
                    port,
                    method.to_owned(),
                    Verdict::Failed(format!("golato: {host}: {why}")),
                    &Counters::default(),
                );
                answer(&mut client, Reply::HostUnreachable).await;
                return;
            }
        };
        if Response::new(Reply::Succeeded, Address::unspecified())
            .write_to(&mut client)
            .await
            .is_err()
        {
            return;
        }
        let closed = tokio::select! {
            () = cancel.cancelled() => None,
            closed = tunnel::carry(client, upstream, &host) => closed,
        };
        let verdict = match closed {
            Some(closed) => Verdict::Refused(closed.refusal(host.clone())),
            None => Verdict::Allowed,
        };
        self.tell(host, port, method.to_owned(), verdict, &counters);
    }

    fn told_refusal(&self, host: &str, port: u16, refusal: Refusal) {
        tracing::debug!(%refusal, "a SOCKS5 request was refused");
        self.tell(
            host.to_owned(),
            port,
            "CONNECT".to_owned(),
            Verdict::Refused(refusal),
            &Counters::default(),
        );
    }
}

/// The reply `reply`, then the end of the connection.
async fn answer(client: &mut TcpStream, reply: Reply) {
    let _ = Response::new(reply, Address::unspecified())
        .write_to(client)
        .await;
    let _ = client.shutdown().await;
}
