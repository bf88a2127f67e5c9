//! Plain HTTP through the proxy: a request in absolute form (`GET http://host/path`) judged by
//! its host and, in `read` mode, its method, then sent on over a connection of its own.

use std::sync::Arc;

use bytes::Bytes;
use http_body_util::BodyExt as _;
use hyper::{Request, StatusCode};
use hyper_util::rt::TokioIo;
use tokio_util::sync::CancellationToken;

use super::counted::{Counted, Counters};
use super::{text, Body, Held, Opened, Proxy, Verdict};

/// Headers through which a server may be told to take a request as another method.
const OVERRIDE_HEADERS: [&str; 3] = [
    "x-http-method-override",
    "x-http-method",
    "x-method-override",
];

/// Headers for this hop only, which are not passed on.
const HOP_HEADERS: [&str; 5] = [
    "proxy-connection",
    "proxy-authorization",
    "connection",
    "keep-alive",
    "upgrade",
];

impl Proxy {
    /// Forwards one plain request to its host and answers with the host's response.
    pub(super) async fn forward(
        &self,
        mut request: Request<hyper::body::Incoming>,
        cancel: CancellationToken,
        held: Held,
    ) -> hyper::Response<Body> {
        let uri = request.uri().clone();
        let (Some(host), Some("http")) = (uri.host(), uri.scheme_str()) else {
            return text(
                StatusCode::BAD_REQUEST,
                "golato: this is a proxy: ask for an absolute http:// URL, or open a tunnel with CONNECT for https".to_owned(),
                false,
            );
        };
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        let port = uri.port_u16().unwrap_or(80);
        let method = request.method().as_str().to_owned();
        let judged = self
            .policy
            .judge_host(&host, port)
            .and_then(|()| self.policy.judge_method(&host, &method))
            .and_then(|()| self.judge_sending(&request, &host, &method));
        if let Err(refusal) = judged {
            return self.refuse(&host, port, &method, refusal);
        }
        let counters = Arc::new(Counters::default());
        let upstream = match self.open(&host, port).await {
            Ok(upstream) => Counted::new(upstream, Arc::clone(&counters)),
            Err(Opened::Refused(refusal)) => return self.refuse(&host, port, &method, refusal),
            Err(Opened::Failed(why)) => return self.fail(&host, port, &method, why),
        };
        let (mut sender, connection) =
            match hyper::client::conn::http1::handshake(TokioIo::new(upstream)).await {
                Ok(handshake) => handshake,
                Err(error) => return self.fail(&host, port, &method, error.to_string()),
            };
        let proxy = self.clone();
        let told_host = host.clone();
        let told_method = method.clone();
        let told = Arc::clone(&counters);
        let tracker = held.tracker.clone();
        tracker.spawn(async move {
            let _held = held;
            tokio::select! {
                () = cancel.cancelled() => {}
                ended = connection => if let Err(error) = ended {
                    tracing::debug!(%error, "a forwarded request's connection ended with an error");
                },
            }
            proxy.tell(told_host, port, told_method, Verdict::Allowed, &told);
        });
        // Origin form for the host, and nothing meant for this hop.
        let origin = uri
            .path_and_query()
            .map_or("/", |path| path.as_str())
            .to_owned();
        *request.uri_mut() = match origin.parse() {
            Ok(origin) => origin,
            Err(error) => return self.fail(&host, port, &method, error.to_string()),
        };
        for name in HOP_HEADERS {
            request.headers_mut().remove(name);
        }
        // The host judged is the host asked: a command's own Host header (one, two, or an
        // HTTP/1.0 one) would front another name on the same server (RFC 9112 3.2.2).
        let authority = match (host.contains(':'), uri.port_u16()) {
            (true, Some(port)) => format!("[{host}]:{port}"),
            (true, None) => format!("[{host}]"),
            (false, Some(port)) => format!("{host}:{port}"),
            (false, None) => host.clone(),
        };
        match hyper::header::HeaderValue::from_str(&authority) {
            Ok(value) => {
                request.headers_mut().insert(hyper::header::HOST, value);
            }
            Err(error) => return self.fail(&host, port, &method, error.to_string()),
        }
        match sender.send_request(request).await {
            Ok(response) => response.map(|body| body.boxed()),
            Err(error) => text(
                StatusCode::BAD_GATEWAY,
                format!("golato: {host}: {error}"),
                false,
            ),
        }
    }

    /// In read mode, a request that would send although its method reads: one with a body,
    /// or one naming another method in an override header a server may obey.
    fn judge_sending(
        &self,
        request: &Request<hyper::body::Incoming>,
        host: &str,
        method: &str,
    ) -> Result<(), golato_sandbox::network::Refusal> {
        if !self.policy.read_only() {
            return Ok(());
        }
        let headers = request.headers();
        let refuse = |what: String| golato_sandbox::network::Refusal {
            host: host.to_owned(),
            why: golato_sandbox::network::Why::Method(what),
        };
        if let Some(name) = OVERRIDE_HEADERS
            .iter()
            .find(|name| headers.contains_key(**name))
        {
            return Err(refuse(format!("{method} with {name}")));
        }
        let sized = headers
            .get_all(hyper::header::CONTENT_LENGTH)
            .iter()
            .any(|length| length.as_bytes() != b"0");
        if sized || headers.contains_key(hyper::header::TRANSFER_ENCODING) {
            return Err(refuse(format!("{method} with a body")));
        }
        Ok(())
    }

    pub(super) fn refuse(
        &self,
        host: &str,
        port: u16,
        method: &str,
        refusal: golato_sandbox::network::Refusal,
    ) -> hyper::Response<Body> {
        tracing::debug!(%refusal, "a request was refused");
        let said = refusal.to_string();
        self.tell(
            host.to_owned(),
            port,
            method.to_owned(),
            Verdict::Refused(refusal),
            &Counters::default(),
        );
        text(StatusCode::FORBIDDEN, said, true)
    }

    pub(super) fn fail(
        &self,
        host: &str,
        port: u16,
        method: &str,
        why: String,
    ) -> hyper::Response<Body> {
        let why = format!("golato: {host}: {why}");
        self.tell(
            host.to_owned(),
            port,
            method.to_owned(),
            Verdict::Failed(why.clone()),
            &Counters::default(),
        );
        text(StatusCode::BAD_GATEWAY, why, false)
    }
}

/// An empty or fixed body, boxed as the host's are.
pub(super) fn full(bytes: Bytes) -> Body {
    http_body_util::Full::new(bytes)
        .map_err(|never| match never {})
        .boxed()
}
