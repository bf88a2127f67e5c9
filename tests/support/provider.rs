//! The tests' one fake model provider: an HTTP server on a loopback port that answers the
//! OpenAI Chat Completions, OpenAI Responses and Anthropic Messages paths from a script, keeps
//! every request it was sent, and checks each one as a real provider does for a tool result
//! without its call or a call without its result (OpenAI answers such a request with 400; so does
//! this server, naming the call, so a test that sends one fails whatever it asserts).
//!
//! Tests that must break HTTP itself (a connection dropped mid-chunk, a server that floods or
//! never sends a header) write raw bytes on a socket instead: `hostile_providers.rs` and
//! `faults.rs`.

use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, Mutex};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;
use futures::StreamExt as _;
use serde_json::{json, Value};

/// One canned reply: a status, extra headers, and the body in pieces.
#[derive(Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(&'static str, String)>,
    pub chunks: Vec<Vec<u8>>,
    /// After the last piece, hold the connection open without another byte.
    pub stall: bool,
}

impl Reply {
    /// A 200 with `body` sent in `pieces` parts.
    pub fn ok(body: Vec<u8>, pieces: usize) -> Reply {
        let size = body.len().div_ceil(pieces.max(1)).max(1);
        Reply {
            status: 200,
            headers: vec![],
            chunks: body.chunks(size).map(<[u8]>::to_vec).collect(),
            stall: false,
        }
    }

    /// A reply with `status` and the text `body`.
    pub fn status(status: u16, body: &str) -> Reply {
        Reply {
            status,
            headers: vec![],
            chunks: vec![body.as_bytes().to_vec()],
            stall: false,
        }
    }

    /// A 200 event stream with `body` in one piece.
    pub fn sse(body: impl Into<Vec<u8>>) -> Reply {
        let mut reply = Reply::ok(body.into(), 1);
        reply
            .headers
            .push(("content-type", "text/event-stream".to_owned()));
        reply
    }
}

/// Makes a reply from a request's body and its size in bytes.
pub type Respond = Box<dyn FnMut(&Value, usize) -> Reply + Send>;

/// How the server picks its reply to a request.
pub enum Script {
    /// The next reply of the queue; a 500 when it is empty.
    Queue(VecDeque<Reply>),
    /// The same reply to every request.
    Repeat(Reply),
    /// A reply made from the request's body and size in bytes.
    Respond(Respond),
}

/// The server's state: what it will answer, and what it was sent.
pub struct FakeProvider {
    script: Mutex<Script>,
    /// Each request's headers and body (JSON; `null` when it was not JSON), in order.
    pub requests: Mutex<Vec<(HeaderMap, Value)>>,
    /// Each request's path and size in bytes, beside `requests`.
    sizes: Mutex<Vec<(String, usize)>>,
}

impl FakeProvider {
    /// Starts a server on the current tokio runtime; returns its base URL (`http://ADDRESS`,
    /// without `/v1`) and its state.
    pub async fn start(script: Script) -> (String, Arc<FakeProvider>) {
        let provider = Arc::new(FakeProvider {
            script: Mutex::new(script),
            requests: Mutex::new(Vec::new()),
            sizes: Mutex::new(Vec::new()),
        });
        let app = Router::new()
            .route("/v1/chat/completions", post(answer))
            .route("/v1/messages", post(answer))
            .route("/v1/responses", post(answer))
            .route("/v1/models", get(models))
            .with_state(Arc::clone(&provider));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        (format!("http://{address}"), provider)
    }

    /// Starts a server on a runtime of its own, for a test without one; keep the runtime
    /// alive as long as the server is needed.
    pub fn start_blocking(script: Script) -> (tokio::runtime::Runtime, String, Arc<FakeProvider>) {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let (url, provider) = runtime.block_on(FakeProvider::start(script));
        (runtime, url, provider)
    }

    /// The bodies of the requests received so far, taken.
    pub fn take_bodies(&self) -> Vec<Value> {
        self.sizes.lock().unwrap().clear();
        self.requests
            .lock()
            .unwrap()
            .drain(..)
            .map(|(_, body)| body)
            .collect()
    }

    /// Each request's size in bytes and body, in order.
    pub fn bodies(&self) -> Vec<(usize, Value)> {
        let sizes = self.sizes.lock().unwrap();
        let requests = self.requests.lock().unwrap();
        sizes
            .iter()
            .zip(requests.iter())
            .map(|((_, size), (_, body))| (*size, body.clone()))
            .collect()
    }

    /// Each request's path, credential (`authorization` or `x-api-key`) and body, in order.
    pub fn sent(&self) -> Vec<(String, Option<String>, Value)> {
        let sizes = self.sizes.lock().unwrap();
        let requests = self.requests.lock().unwrap();
        sizes
            .iter()
            .zip(requests.iter())
            .map(|((path, _), (headers, body))| {
                let auth = headers
                    .get("authorization")
                    .or_else(|| headers.get("x-api-key"))
                    .map(|value| value.to_str().unwrap().to_owned());
                (path.clone(), auth, body.clone())
            })
            .collect()
    }
}

/// The models the server lists, as an OpenAI-compatible server (Ollama) names its own.
pub const LISTED_MODELS: [&str; 2] = ["llama3.2:1b", "qwen2.5-coder:7b"];

async fn models() -> Response {
    let data: Vec<Value> = LISTED_MODELS
        .iter()
        .map(|id| json!({"id": id, "object": "model"}))
        .collect();
    let body = json!({"object": "list", "data": data}).to_string();
    Response::builder()
        .header("content-type", "application/json")
        .body(Body::from(body))
        .unwrap()
}

async fn answer(
    State(provider): State<Arc<FakeProvider>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let reply = match unpaired(&request) {
        Some(problem) => Reply {
            status: 400,
            headers: vec![("content-type", "application/json".to_owned())],
            chunks: vec![json!({"error": {
                "message": format!("the fake provider refuses this request: {problem}"),
                "type": "invalid_request_error",
            }})
            .to_string()
            .into_bytes()],
            stall: false,
        },
        None => match &mut *provider.script.lock().unwrap() {
            Script::Queue(replies) => replies
                .pop_front()
                .unwrap_or_else(|| Reply::status(500, "no reply scripted")),
            Script::Repeat(reply) => reply.clone(),
            Script::Respond(respond) => respond(&request, body.len()),
        },
    };
    provider
        .sizes
        .lock()
        .unwrap()
        .push((uri.path().to_owned(), body.len()));
    provider.requests.lock().unwrap().push((headers, request));
    let chunks = reply
        .chunks
        .into_iter()
        .map(|chunk| Ok::<_, std::io::Error>(Bytes::from(chunk)));
    let stream = futures::stream::iter(chunks);
    let body = if reply.stall {
        Body::from_stream(stream.chain(futures::stream::pending()))
    } else {
        Body::from_stream(stream)
    };
    let mut response = Response::builder().status(StatusCode::from_u16(reply.status).unwrap());
    for (name, value) in reply.headers {
        response = response.header(name, value);
    }
    response.body(body).unwrap()
}

/// What is wrong with a request's tool calls and results, if anything: a result whose call
/// does not come before it, or a call with no result after it. Reads the three wire formats:
/// Chat Completions (`tool_calls` / `role: tool`), Messages (`tool_use` / `tool_result`
/// blocks) and Responses (`function_call` / `function_call_output` items).
pub fn unpaired(request: &Value) -> Option<String> {
    // (is a call, its ID), in the order the request holds them.
    let mut steps: Vec<(bool, String)> = Vec::new();
    let id = |value: &Value| value.as_str().unwrap_or_default().to_owned();
    for item in request["input"].as_array().into_iter().flatten() {
        match item["type"].as_str() {
            Some("function_call") => steps.push((true, id(&item["call_id"]))),
            Some("function_call_output") => steps.push((false, id(&item["call_id"]))),
            _ => {}
        }
    }
    for message in request["messages"].as_array().into_iter().flatten() {
        for call in message["tool_calls"].as_array().into_iter().flatten() {
            steps.push((true, id(&call["id"])));
        }
        if message["role"] == "tool" {
            steps.push((false, id(&message["tool_call_id"])));
        }
        for block in message["content"].as_array().into_iter().flatten() {
            match block["type"].as_str() {
                Some("tool_use") => steps.push((true, id(&block["id"]))),
                Some("tool_result") => steps.push((false, id(&block["tool_use_id"]))),
                _ => {}
            }
        }
    }
    let mut called: HashSet<&str> = HashSet::new();
    let mut answered: HashSet<&str> = HashSet::new();
    for (is_call, id) in &steps {
        if *is_call {
            called.insert(id);
        } else if !called.contains(id.as_str()) {
            return Some(format!(
                "a tool result for call {id:?} without that call before it"
            ));
        } else {
            answered.insert(id);
        }
    }
    steps
        .iter()
        .find(|(is_call, id)| *is_call && !answered.contains(id.as_str()))
        .map(|(_, id)| format!("tool call {id:?} has no result"))
}
