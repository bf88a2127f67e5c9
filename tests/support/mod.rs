//! Helpers shared by the integration tests.
#![allow(dead_code, unreachable_pub, missing_docs)]

pub mod compaction;
pub mod pages;
pub mod provider;

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use golato::agent::{self, Agent, Event, Input, Run};
use golato::generator::{EventStream, Generator, Request, Scripted};
use golato::message::{AssistantMessage, ToolCall, UserMessage};
use golato::tool::{Tool, ToolResult};
use serde_json::{json, Value};

/// How long a test waits for something that should happen at once before failing instead of
/// hanging. Only a guard against hangs; no test asserts on time.
pub const HANG_GUARD: Duration = Duration::from_secs(30);

pub fn prompt(text: &str) -> Input {
    Input::from(UserMessage::new(text))
}

pub fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
    ToolCall::new(id, name, arguments)
}

/// A script: one message with `calls`, then a final text.
pub fn script(calls: Vec<ToolCall>) -> Scripted {
    Scripted::new([
        AssistantMessage::with_tool_calls(calls),
        AssistantMessage::with_text("done"),
    ])
}

pub fn agent_with(generator: impl Generator, tools: Vec<Tool>) -> Agent {
    Agent::new(agent::Config {
        generator: Some(Arc::new(generator)),
        tools,
        ..Default::default()
    })
    .expect("agent builds")
}

pub fn object_schema(properties: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": properties, "required": required})
}

/// A tool that echoes its `text` argument.
pub fn echo_tool() -> Tool {
    Tool::new(
        "echo",
        "Echoes text.",
        object_schema(json!({"text": {"type": "string"}}), &["text"]),
        |_ctx, args| async move {
            let text = args["text"].as_str().unwrap_or_default().to_owned();
            Ok(ToolResult::text(text))
        },
    )
}

/// A tool that counts how often its function ran.
pub fn counting_tool(name: &str, counter: Arc<AtomicUsize>) -> Tool {
    Tool::new(
        name,
        "Counts calls.",
        json!({"type": "object"}),
        move |_ctx, _args| {
            let counter = Arc::clone(&counter);
            async move {
                counter.fetch_add(1, Ordering::SeqCst);
                Ok(ToolResult::text("counted"))
            }
        },
    )
}

/// Runs to the end on the calling thread, returning every event and the outcome.
pub fn collect(run: Run) -> (Vec<Event>, Result<agent::RunResult, agent::Error>) {
    let events: Vec<Event> = run.events().collect();
    (events, run.wait())
}

/// All four built-in tools, working in `dir`.
pub fn tools_in(dir: &std::path::Path) -> Vec<Tool> {
    golato::builtin::new(golato::builtin::Config {
        working_directory: dir.into(),
        ..Default::default()
    })
    .unwrap()
}

/// The text of every partial result among `events`, in order.
pub fn update_texts(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|event| match event {
            Event::ToolExecutionUpdate(update) => Some(update.partial_result.text_content()),
            _ => None,
        })
        .collect()
}

/// A compact trace of the tool events: `start:i`, `update:i`, `end:i`.
pub fn tool_trace(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|event| match event {
            Event::ToolExecutionStart(e) => Some(format!("start:{}", e.index)),
            Event::ToolExecutionUpdate(e) => Some(format!("update:{}", e.index)),
            Event::ToolExecutionEnd(e) => Some(format!("end:{}", e.index)),
            _ => None,
        })
        .collect()
}

/// The `ToolExecutionEnd` results, in event order.
pub fn end_results(events: &[Event]) -> Vec<golato::message::ToolResultMessage> {
    events
        .iter()
        .filter_map(|event| match event {
            Event::ToolExecutionEnd(e) => Some(e.result.clone()),
            _ => None,
        })
        .collect()
}

/// The tool results recorded in a transcript, in order.
pub fn transcript_results(
    messages: &[golato::message::Message],
) -> Vec<golato::message::ToolResultMessage> {
    messages
        .iter()
        .filter_map(|message| match message {
            golato::message::Message::ToolResult(result) => Some(result.clone()),
            _ => None,
        })
        .collect()
}

type Gate = Box<dyn Fn(usize) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

/// Wraps a generator so that, before answering request *n* (0-based count of assistant messages
/// in the transcript), it awaits `gate(n)`: a handshake point for tests.
pub struct Gated {
    inner: Scripted,
    gate: Gate,
}

impl Gated {
    pub fn new<F, Fut>(inner: Scripted, gate: F) -> Gated
    where
        F: Fn(usize) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        Gated {
            inner,
            gate: Box::new(move |n| Box::pin(gate(n))),
        }
    }
}

impl Generator for Gated {
    fn stream(&self, request: Request) -> EventStream {
        use futures::StreamExt;
        let n = request
            .messages
            .iter()
            .filter(|m| matches!(m, golato::message::Message::Assistant(_)))
            .count();
        let gate = (self.gate)(n);
        let inner = self.inner.stream(request);
        futures::stream::once(gate)
            .filter_map(|()| async { None })
            .chain(inner)
            .boxed()
    }
}

/// A log that tool functions append to from any thread.
#[derive(Clone, Default)]
pub struct Log(Arc<Mutex<Vec<String>>>);

impl Log {
    pub fn push(&self, entry: impl Into<String>) {
        self.0.lock().unwrap().push(entry.into());
    }
    pub fn entries(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

/// The built-ins in `workspace` under the sandbox `policy`, the `golato` binary as the helper.
pub fn sandboxed_tools(workspace: &std::path::Path, policy: golato::sandbox::Policy) -> Vec<Tool> {
    golato::builtin::new(golato::builtin::Config {
        working_directory: workspace.into(),
        sandbox: policy.with_helper(golato_binary()),
        ..Default::default()
    })
    .expect("the sandbox is available on the test machine")
}

/// Runs one call of `name` with `arguments` through a whole agent run (validation included) and
/// returns its result message.
pub fn call_tool(
    tools: &[Tool],
    name: &str,
    arguments: &str,
) -> golato::message::ToolResultMessage {
    let agent = agent_with(script(vec![call("only", name, arguments)]), tools.to_vec());
    let result = agent
        .start(prompt("go"))
        .wait()
        .expect("the run ends normally");
    transcript_results(&result.messages).remove(0)
}

/// The repository's root: the library's and the command line's tests both include this module.
pub fn repository() -> &'static std::path::Path {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .find(|dir| dir.join("tests/fixtures/llm").is_dir())
        .expect("the tests run inside the repository")
}

/// The built `golato` binary (only the command line's tests have one).
pub fn golato_binary() -> &'static str {
    match option_env!("CARGO_BIN_EXE_golato") {
        Some(path) => path,
        None => panic!("only golato-cli's tests drive the golato binary"),
    }
}

/// A recorded provider stream from `tests/fixtures/llm/` (copied into the repository; `SOURCES.md` there says from where).
pub fn fixture(path: &str) -> Vec<u8> {
    let full = repository().join("tests/fixtures/llm").join(path);
    std::fs::read(&full)
        .unwrap_or_else(|error| panic!("fixture {} is missing ({error})", full.display()))
}

/// Peak resident memory of this test process so far, in KiB (Linux).
pub fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status
        .lines()
        .find(|line| line.starts_with("VmHWM:"))
        .unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Waits (yielding, not sleeping) until `path` exists: a handshake with a command that
/// creates it.
/// A folder outside any working directory for a test and a running command to signal each
/// other through: a sandboxed command's changes to its working directory reach the real tree
/// only when it ends (golato captures them for undo), while `/tmp` is written in place.
pub fn signals() -> tempfile::TempDir {
    tempfile::tempdir().expect("a temporary folder")
}

pub fn wait_for_file(path: &std::path::Path) {
    let started = std::time::Instant::now();
    while !path.exists() {
        assert!(
            started.elapsed() < HANG_GUARD,
            "{} never appeared",
            path.display()
        );
        std::thread::yield_now();
    }
}

pub mod cli;
pub mod restate;

/// The unprivileged user and group the root-only checks act as.
pub const NOBODY: u32 = 65534;

pub fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

pub fn chmod(path: &std::path::Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// A copy of the `golato` binary the unprivileged user can reach (the build directory may be
/// private), made once for the whole test binary.
pub fn reachable_golato() -> &'static std::path::Path {
    static COPY: std::sync::OnceLock<(tempfile::TempDir, std::path::PathBuf)> =
        std::sync::OnceLock::new();
    let (_, bin) = COPY.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        chmod(dir.path(), 0o755);
        let bin = dir.path().join("golato");
        std::fs::copy(golato_binary(), &bin).unwrap();
        chmod(&bin, 0o755);
        (dir, bin)
    });
    bin
}

/// Runs `golato tool NAME ARGS --cwd DIR` as the unprivileged user. Returns (exit code, stdout).
pub fn golato_as_nobody(
    name: &str,
    arguments: &str,
    cwd: &std::path::Path,
) -> (Option<i32>, String) {
    use std::os::unix::process::CommandExt as _;
    let mut attempts = 0;
    let output = loop {
        let spawned = std::process::Command::new(reachable_golato())
            .args(["tool", name, arguments, "--cwd", cwd.to_str().unwrap()])
            .uid(NOBODY)
            .gid(NOBODY)
            .output();
        match spawned {
            // The copy's descriptor, inherited by a child another test thread was forking while
            // it was written, lives until that child execs: transient, so try again.
            Err(error)
                if error.kind() == std::io::ErrorKind::ExecutableFileBusy && attempts < 100 =>
            {
                attempts += 1;
                std::thread::yield_now();
            }
            other => break other.unwrap(),
        }
    };
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

/// Reads one HTTP request (headers and a `content-length` body) from `socket`.
pub async fn read_request(socket: &mut tokio::net::TcpStream) {
    use tokio::io::AsyncReadExt as _;
    let mut received = Vec::new();
    let mut buffer = [0u8; 4096];
    loop {
        let count = socket.read(&mut buffer).await.unwrap();
        assert!(count > 0, "the client closed before sending its request");
        received.extend_from_slice(&buffer[..count]);
        let Some(end) = received.windows(4).position(|w| w == b"\r\n\r\n") else {
            continue;
        };
        let headers = String::from_utf8_lossy(&received[..end]).to_lowercase();
        let length: usize = headers
            .lines()
            .find_map(|line| line.strip_prefix("content-length:"))
            .map_or(0, |value| value.trim().parse().unwrap());
        if received.len() >= end + 4 + length {
            return;
        }
    }
}

/// The processes whose environment holds `entry` (`NAME=VALUE`).
pub fn processes_with(entry: &str) -> Vec<i32> {
    let needle = format!("{entry}\u{0}");
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|process| {
            let pid: i32 = process.file_name().to_str()?.parse().ok()?;
            let environment = std::fs::read(process.path().join("environ")).ok()?;
            let state = std::fs::read_to_string(process.path().join("stat")).ok()?;
            let zombie = state[state.rfind(')')? + 2..].starts_with('Z');
            let found = environment
                .split(|byte| *byte == 0)
                .any(|variable| variable == &needle.as_bytes()[..needle.len() - 1]);
            (found && !zombie).then_some(pid)
        })
        .collect()
}

/// A resolver for the network proxy's tests: the test's own names, each to one of its
/// loopback servers (or, made by [`TestNames::by_address`], to an address on the port asked).
#[derive(Debug)]
pub struct TestNames {
    names: std::collections::HashMap<String, std::net::SocketAddr>,
    port_asked: bool,
}

impl TestNames {
    pub fn new(names: &[(&str, std::net::SocketAddr)]) -> TestNames {
        TestNames {
            names: names
                .iter()
                .map(|(name, address)| ((*name).to_owned(), *address))
                .collect(),
            port_asked: false,
        }
    }

    /// Each name resolved to its address, on whatever port was asked for.
    pub fn by_address(names: &[(&str, std::net::IpAddr)]) -> TestNames {
        TestNames {
            names: names
                .iter()
                .map(|(name, address)| ((*name).to_owned(), (*address, 0).into()))
                .collect(),
            port_asked: true,
        }
    }
}

impl golato::proxy::Resolve for TestNames {
    fn resolve(
        &self,
        host: &str,
        port: u16,
    ) -> futures::future::BoxFuture<'static, std::io::Result<Vec<std::net::SocketAddr>>> {
        let port_asked = self.port_asked;
        let found = self.names.get(host).map(|address| match port_asked {
            true => std::net::SocketAddr::new(address.ip(), port),
            false => *address,
        });
        Box::pin(async move {
            found.map(|address| vec![address]).ok_or_else(|| {
                std::io::Error::new(std::io::ErrorKind::NotFound, "no such test name")
            })
        })
    }
}
