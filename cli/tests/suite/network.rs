//! The network by domain, end to end on loopback only: a sandboxed `bash` whose policy names
//! domains reaches the test's own web server under a test name (resolved by the test's
//! resolver) through golato's proxy, with `curl` as a user's tools would; a host it does not
//! allow is refused with the flag that would allow it, and the result tells the model; every
//! way around the proxy (TCP to the test's server on 127.0.0.1 and [::1], UDP, a Unix socket,
//! the proxy variables unset) fails; read mode refuses a POST. Public, private and metadata
//! addresses are judged in golato-sandbox's unit tests, never connected to.

use crate::support;

use std::io::{BufRead as _, Read as _, Write as _};
use std::net::{SocketAddr, TcpListener};
use std::sync::{Arc, Mutex};

use golato::message::ToolResultMessage;
use golato::proxy::{Connection, ConnectionLog};
use golato::sandbox::network::{Methods, NetworkPolicy};
use golato::sandbox::Policy;
use golato::Tool;
use serde_json::json;

/// A web server answering every request with its method and target, one connection at a time
/// (on a thread: the tools run on the agent's own runtime).
fn web_server() -> SocketAddr {
    serve(TcpListener::bind("127.0.0.1:0").unwrap(), None)
}

/// Serves on `listener`: the files under `root` for a GET (a folder's `index.html`; 404 for
/// others), else every request answered with its method and target.
fn serve(listener: TcpListener, root: Option<std::path::PathBuf>) -> SocketAddr {
    let address = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = std::io::BufReader::new(stream.try_clone().unwrap());
            let mut first = String::new();
            let _ = reader.read_line(&mut first);
            let mut length = 0usize;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = value.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0u8; length];
            let _ = reader.read_exact(&mut body);
            let (status, answer) = match &root {
                Some(root) => {
                    let target = first.split(' ').nth(1).unwrap_or("/");
                    let path = target
                        .split('?')
                        .next()
                        .unwrap_or("/")
                        .trim_start_matches('/');
                    let mut file = root.join(path);
                    if file.is_dir() {
                        file.push("index.html");
                    }
                    match (path.contains(".."), std::fs::read(file)) {
                        (false, Ok(bytes)) => ("200 OK", bytes),
                        _ => ("404 Not Found", b"not found".to_vec()),
                    }
                }
                None => ("200 OK", format!("served {}", first.trim()).into_bytes()),
            };
            // pip reads a simple index only when it says it is HTML.
            let kind = match answer.starts_with(b"<html") {
                true => "text/html",
                false => "application/octet-stream",
            };
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                answer.len()
            );
            let _ = stream.write_all(&answer);
        }
    });
    address
}

struct Network {
    tools: Vec<Tool>,
    told: Arc<Mutex<Vec<Connection>>>,
    _workspace: tempfile::TempDir,
}

fn network(allow: &[&str], methods: Methods, names: &[(&str, SocketAddr)]) -> Network {
    let workspace = tempfile::tempdir().unwrap();
    let told = Arc::new(Mutex::new(Vec::new()));
    let policy = Policy::workspace_write()
        .with_domains(NetworkPolicy::new(allow, &[], methods).unwrap())
        .with_helper(support::golato_binary());
    let tools = golato::builtin::new(golato::builtin::Config {
        working_directory: workspace.path().into(),
        sandbox: policy,
        network_resolver: Some(Arc::new(support::TestNames::new(names))),
        network_log: Some(ConnectionLog::new({
            let told = Arc::clone(&told);
            move |connection| told.lock().unwrap().push(connection.clone())
        })),
        ..Default::default()
    })
    .expect("the sandbox is available on the test machine");
    Network {
        tools,
        told,
        _workspace: workspace,
    }
}

fn bash(tools: &[Tool], command: &str) -> (ToolResultMessage, String) {
    let result = support::call_tool(tools, "bash", &json!({ "command": command }).to_string());
    let text = result
        .content
        .iter()
        .filter_map(|part| match part {
            golato::message::Content::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n");
    (result, text)
}

#[test]
fn curl_reaches_an_allowed_host_through_the_proxy_and_a_refused_one_is_named_with_its_flag() {
    let server = web_server();
    let port = server.port();
    let net = network(
        &["registry.test", "*.wild.test"],
        Methods::All,
        &[
            ("registry.test", server),
            ("elsewhere.test", server),
            ("sub.wild.test", server),
        ],
    );
    let (result, text) = bash(
        &net.tools,
        &format!(
            "curl -sS http://registry.test:{port}/crates/index; echo
             curl -sS --proxytunnel http://registry.test:{port}/tunnelled; echo
             curl -sS -D - http://elsewhere.test:{port}/secret; echo
             curl -sS http://sub.wild.test:{port}/; echo"
        ),
    );
    assert!(text.contains("served GET /crates/index HTTP/1.1"), "{text}");
    // Through a CONNECT tunnel (curl asks for one with --proxytunnel, as it does for https).
    assert!(text.contains("served GET /tunnelled HTTP/1.1"), "{text}");
    assert!(text.contains("403"), "{text}");
    assert!(
        text.to_ascii_lowercase().contains("x-golato-refused"),
        "{text}"
    );
    assert!(
        text.contains("golato: elsewhere.test is not allowed; --allow-domain elsewhere.test"),
        "{text}"
    );
    assert!(!text.contains("served GET /secret"), "{text}");
    // A wildcard never reaches a local address (the test's server is on loopback).
    assert!(text.contains("a local address"), "{text}");
    // The model is told, once per host.
    assert!(
        text.contains("network: blocked elsewhere.test (not in the allowed domains)"),
        "{text}"
    );
    assert!(
        text.contains(
            "network: blocked sub.wild.test (it resolves to the local address 127.0.0.1)"
        ),
        "{text}"
    );
    // The details list every connection; the run-wide log has them too, with the call.
    let listed = result.details.as_ref().unwrap()["network"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(listed.len(), 4, "{listed:?}");
    assert_eq!(listed.iter().filter(|c| c["allowed"] == true).count(), 2);
    assert!(listed.iter().all(|c| c["call"] == "only"), "{listed:?}");
    assert!(listed
        .iter()
        .any(|c| c["method"] == "CONNECT" && c["received"].as_u64() > Some(0)));
    assert_eq!(net.told.lock().unwrap().len(), 4);
}

#[test]
fn every_way_around_the_proxy_fails() {
    let server = web_server();
    let port = server.port();
    let v6 = TcpListener::bind("[::1]:0").ok();
    let port_v6 = v6
        .as_ref()
        .map_or(port, |listener| listener.local_addr().unwrap().port());
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let udp_port = udp.local_addr().unwrap().port();
    udp.set_nonblocking(true).unwrap();
    let place = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let unix_path = place.path().join("daemon.sock");
    let unix = std::os::unix::net::UnixListener::bind(&unix_path).unwrap();
    unix.set_nonblocking(true).unwrap();
    let net = network(
        &["registry.test"],
        Methods::All,
        &[("registry.test", server)],
    );
    let (_, text) = bash(
        &net.tools,
        &format!(
            "curl -sS --noproxy '*' --max-time 5 http://127.0.0.1:{port}/ && echo escaped-direct
             env -u HTTP_PROXY -u http_proxy -u ALL_PROXY -u all_proxy curl -sS --max-time 5 http://registry.test:{port}/ && echo escaped-unset
             (exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo escaped-v4
             (exec 3<>/dev/tcp/::1/{port_v6}) 2>/dev/null && echo escaped-v6
             (echo dns-query > /dev/udp/127.0.0.1/{udp_port}) 2>/dev/null
             getent hosts registry.test && echo escaped-dns
             python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])' {} 2>/dev/null && echo escaped-unix
             echo checked",
            unix_path.display()
        ),
    );
    assert!(text.contains("checked"), "{text}");
    assert!(!text.contains("escaped"), "{text}");
    // What was sent is on the sockets already if it got out: loopback delivers at once.
    let mut buffer = [0u8; 64];
    assert!(udp.recv(&mut buffer).is_err(), "a datagram got out");
    assert!(unix.accept().is_err(), "a Unix socket connection got out");
    // Nothing reached the proxy either: the attempts went around it.
    assert!(net.told.lock().unwrap().is_empty());
}

#[test]
fn read_mode_lets_a_get_through_and_refuses_a_post_and_a_tunnel() {
    let server = web_server();
    let port = server.port();
    let net = network(
        &["registry.test"],
        Methods::Read,
        &[("registry.test", server)],
    );
    let (_, text) = bash(
        &net.tools,
        &format!(
            "curl -sS http://registry.test:{port}/read; echo
             curl -sS -d secret=1 http://registry.test:{port}/upload; echo
             curl -sS --proxytunnel http://registry.test:{port}/t; echo"
        ),
    );
    assert!(text.contains("served GET /read"), "{text}");
    assert!(!text.contains("served POST"), "{text}");
    assert!(
        text.contains("POST to registry.test is refused: the network is read-only"),
        "{text}"
    );
    assert!(!text.contains("served GET /t"), "{text}");
    assert!(
        text.contains("network: blocked registry.test (POST refused: the network is read-only)"),
        "{text}"
    );
}

/// `golato run --json --ephemeral` in `ws` with one bash call, the given flags; the call's
/// `tool_end`.
fn golato_run(ws: &std::path::Path, command: &str, flags: &[&str]) -> (serde_json::Value, String) {
    let flags = [&["--ephemeral"], flags].concat();
    let (lines, stderr) = golato_run_lines(ws, command, &flags, None);
    let end = support::cli::of_type(&lines, "tool_end")
        .into_iter()
        .next()
        .unwrap_or_else(|| panic!("no tool_end: {stderr}"))
        .clone();
    (end, stderr)
}

/// `golato run --json` in `ws` with one bash call and the given flags (and data directory):
/// every line it printed, and its standard error.
fn golato_run_lines(
    ws: &std::path::Path,
    command: &str,
    flags: &[&str],
    data: Option<&std::path::Path>,
) -> (Vec<serde_json::Value>, String) {
    use support::cli::{golato, json_lines, script_file};
    let script = script_file(
        ws,
        "script.jsonl",
        &[
            json!({"tool_calls": [{"id": "c1", "name": "bash", "arguments": {"command": command}}]}),
            json!({"text": "done"}),
        ],
    );
    let mut golato = golato();
    if let Some(data) = data {
        golato.env("GOLATO_DATA_DIR", data);
    }
    let output = golato
        .args(["run", "--json", "--approve", "never"])
        .args(flags)
        .arg("--cwd")
        .arg(ws)
        .arg("--script")
        .arg(&script)
        .arg("go")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    (json_lines(&output), stderr)
}

#[test]
fn the_command_line_allows_domains_logs_every_connection_and_an_untrusted_project_only_narrows() {
    let server = web_server();
    let port = server.port();
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap();
    let log = ws.join("network.jsonl");
    // `localhost` named exactly: its loopback address is allowed; 127.0.0.1 is not named.
    // (NO_PROXY keeps loopback names direct, for the command's own servers: unset here, so
    // that the test's server, outside, is asked for through the proxy.)
    let (end, stderr) = golato_run(
        &ws,
        &format!(
            "unset NO_PROXY no_proxy; curl -sS http://localhost:{port}/ok; echo; curl -sS http://127.0.0.1:{port}/no; echo"
        ),
        &[
            "--allow-domain",
            "localhost",
            "--network-log",
            log.to_str().unwrap(),
        ],
    );
    let text = end["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
        + end["result"]["content"][1]["text"]
            .as_str()
            .unwrap_or_default();
    assert!(text.contains("served GET /ok"), "{text}\n{stderr}");
    assert!(!text.contains("served GET /no"), "{text}");
    assert!(
        text.contains("network: blocked 127.0.0.1 (not in the allowed domains)"),
        "{text}"
    );
    let network = end["result"]["details"]["network"].as_array().unwrap();
    assert_eq!(network.len(), 2, "{network:?}");
    let logged: Vec<serde_json::Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(logged.len(), 2, "{logged:?}");
    // In the order they ended: a refusal is told at once, an allowed request when it ends.
    let by_host = |host: &str| {
        logged
            .iter()
            .find(|line| line["host"] == host)
            .unwrap_or_else(|| panic!("{host} not logged: {logged:?}"))
    };
    assert_eq!(by_host("localhost")["allowed"], true);
    assert!(by_host("localhost")["received"].as_u64() > Some(0));
    assert_eq!(by_host("127.0.0.1")["allowed"], false);
    assert!(logged
        .iter()
        .all(|line| line["call"] == "c1" && line["time"].is_number()));

    // The live view names each host once, with its bytes or why it was blocked.
    let script = ws.join("script.jsonl");
    let story = |tmpdir: Option<&std::path::Path>| {
        let mut command = support::cli::golato();
        if let Some(tmpdir) = tmpdir {
            command.env("TMPDIR", tmpdir);
        }
        let output = command
            .args(["run", "--ephemeral", "--approve", "never"])
            .args(["--allow-domain", "localhost", "--cwd"])
            .arg(&ws)
            .arg("--script")
            .arg(&script)
            .arg("go")
            .output()
            .unwrap();
        String::from_utf8_lossy(&output.stderr).into_owned()
    };
    let told = story(None);
    assert!(
        told.contains("network: localhost ")
            && told.contains("127.0.0.1 blocked (not in the allowed domains)"),
        "{told}"
    );

    // A TMPDIR too long for a Unix socket's path: the proxy's socket goes to /tmp.
    let long = ws.join("t".repeat(120));
    std::fs::create_dir(&long).unwrap();
    let told = story(Some(&long));
    assert!(told.contains("network: localhost "), "{told}");

    // A bad pattern is a usage error naming it.
    let output = support::cli::golato()
        .args(["run", "--allow-domain", "*bad*", "--cwd"])
        .arg(&ws)
        .arg("go")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("\"*bad*\" is not a domain pattern"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );

    // An untrusted project's file: its allowed domains are ignored (and said), its denials
    // and read-only methods stand.
    std::fs::create_dir(ws.join(".golato")).unwrap();
    std::fs::write(
        ws.join(".golato/config.toml"),
        "allow_domain = [\"127.0.0.1\"]\ndeny_domain = [\"localhost\"]\n",
    )
    .unwrap();
    let (end, stderr) = golato_run(
        &ws,
        &format!(
            "unset NO_PROXY no_proxy; curl -sS http://localhost:{port}/a; echo; curl -sS http://127.0.0.1:{port}/b; echo"
        ),
        &["--allow-domain", "localhost"],
    );
    let text = end["result"]["content"].to_string();
    assert!(stderr.contains("allow_domain"), "{stderr}");
    assert!(!text.contains("served GET"), "{text}\n{stderr}");
    assert!(
        text.contains("network: blocked localhost (in the denied domains)"),
        "{text}"
    );
    assert!(
        text.contains("network: blocked 127.0.0.1 (not in the allowed domains)"),
        "{text}"
    );
}

/// Runs `program` with `args` in `dir`, which must succeed; its standard output.
fn must(dir: &std::path::Path, program: &str, args: &[&str]) -> String {
    let output = std::process::Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// What the user's build needs, as the tools fetch it: `cargo fetch` from a sparse registry and
/// `git clone` over HTTP, both served by the test on loopback under a test name and reached
/// through the proxy alone.
#[test]
fn cargo_and_git_fetch_through_the_proxy_from_a_registry_on_loopback() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let served = tempfile::tempdir().unwrap();
    let root = served.path();
    let base = format!("http://registry.test:{port}");

    // A git repository, served as files (git's "dumb" HTTP protocol).
    let source = tempfile::tempdir().unwrap();
    must(source.path(), "git", &["init", "-q", "-b", "main"]);
    std::fs::write(source.path().join("README"), "fetched through the proxy\n").unwrap();
    must(source.path(), "git", &["add", "README"]);
    must(
        source.path(),
        "git",
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-q",
            "-m",
            "one",
        ],
    );
    let bare = root.join("repo.git");
    must(
        root,
        "git",
        &[
            "clone",
            "-q",
            "--bare",
            source.path().to_str().unwrap(),
            bare.to_str().unwrap(),
        ],
    );
    must(&bare, "git", &["update-server-info"]);

    // A sparse cargo registry with one crate, `tiny`.
    let tiny = tempfile::tempdir().unwrap();
    std::fs::create_dir(tiny.path().join("src")).unwrap();
    std::fs::write(
        tiny.path().join("Cargo.toml"),
        "[package]\nname = \"tiny\"\nversion = \"0.1.0\"\nedition = \"2021\"\ndescription = \"t\"\nlicense = \"MIT\"\n",
    )
    .unwrap();
    std::fs::write(
        tiny.path().join("src/lib.rs"),
        "pub fn tiny() -> u8 { 7 }\n",
    )
    .unwrap();
    must(
        tiny.path(),
        "cargo",
        // Its own target folder: CARGO_TARGET_DIR (as .ci/run sets it) would move the package.
        &[
            "package",
            "-q",
            "--no-verify",
            "--allow-dirty",
            "--offline",
            "--target-dir",
            "target",
        ],
    );
    let packaged = tiny.path().join("target/package/tiny-0.1.0.crate");
    let download = root.join("dl/tiny/0.1.0");
    std::fs::create_dir_all(&download).unwrap();
    std::fs::copy(&packaged, download.join("download")).unwrap();
    let sum = must(root, "sha256sum", &[packaged.to_str().unwrap()]);
    let sum = sum.split_whitespace().next().unwrap();
    std::fs::create_dir_all(root.join("index/ti/ny")).unwrap();
    std::fs::write(
        root.join("index/config.json"),
        format!("{{\"dl\": \"{base}/dl/{{crate}}/{{version}}/download\"}}"),
    )
    .unwrap();
    std::fs::write(
        root.join("index/ti/ny/tiny"),
        format!("{{\"name\":\"tiny\",\"vers\":\"0.1.0\",\"deps\":[],\"cksum\":\"{sum}\",\"features\":{{}},\"yanked\":false}}\n"),
    )
    .unwrap();
    let server = serve(listener, Some(root.to_owned()));

    let net = network(
        &["registry.test"],
        Methods::All,
        &[("registry.test", server)],
    );
    let ws = net._workspace.path();
    std::fs::create_dir(ws.join("src")).unwrap();
    std::fs::write(
        ws.join("Cargo.toml"),
        "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\ntiny = { version = \"0.1\", registry = \"local\" }\n",
    )
    .unwrap();
    std::fs::write(
        ws.join("src/main.rs"),
        "fn main() { println!(\"{}\", tiny::tiny()); }\n",
    )
    .unwrap();
    let (result, text) = bash(
        &net.tools,
        &format!(
            "export CARGO_HOME=$PWD/.cargo-home CARGO_REGISTRIES_LOCAL_INDEX=sparse+{base}/index/
             cargo fetch 2>&1 && echo fetched-crates
             git clone -q {base}/repo.git cloned 2>&1 && cat cloned/README"
        ),
    );
    assert!(text.contains("fetched-crates"), "{text}");
    assert!(text.contains("fetched through the proxy"), "{text}");
    let listed = result.details.as_ref().unwrap()["network"]
        .as_array()
        .unwrap()
        .clone();
    assert!(
        listed
            .iter()
            .all(|c| c["allowed"] == true && c["host"] == "registry.test"),
        "{listed:?}"
    );
    assert!(
        listed.iter().any(|c| c["received"].as_u64() > Some(100)),
        "{listed:?}"
    );
}

#[test]
fn socks5_on_the_same_port_is_judged_as_a_tunnel_is() {
    let server = web_server();
    let port = server.port();
    let net = network(
        &["registry.test"],
        Methods::All,
        &[("registry.test", server), ("elsewhere.test", server)],
    );
    let (result, text) = bash(
        &net.tools,
        &format!(
            "curl -sS --proxy socks5h://127.0.0.1:3128 http://registry.test:{port}/socks; echo
             curl -sS --proxy socks5h://127.0.0.1:3128 http://elsewhere.test:{port}/no; echo"
        ),
    );
    assert!(text.contains("served GET /socks HTTP/1.1"), "{text}");
    assert!(!text.contains("served GET /no"), "{text}");
    assert!(
        text.contains("network: blocked elsewhere.test (not in the allowed domains)"),
        "{text}"
    );
    let listed = result.details.as_ref().unwrap()["network"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(listed.len(), 2, "{listed:?}");
    assert!(
        listed
            .iter()
            .any(|c| c["allowed"] == true && c["received"].as_u64() > Some(0)),
        "{listed:?}"
    );
}

#[test]
fn a_sessions_connections_are_kept_and_listed() {
    let server = web_server();
    let port = server.port();
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap();
    let data = ws.join("data");
    let (lines, stderr) = golato_run_lines(
        &ws,
        &format!(
            "unset NO_PROXY no_proxy; curl -sS http://localhost:{port}/kept; curl -sS http://127.0.0.1:{port}/no"
        ),
        &["--allow-domain", "localhost"],
        Some(&data),
    );
    let session = support::cli::of_type(&lines, "run_start")
        .first()
        .and_then(|start| start["session"].as_str())
        .unwrap_or_else(|| panic!("no session: {stderr}"))
        .to_owned();
    let list = |json: bool| {
        let mut command = support::cli::golato();
        command
            .env("GOLATO_DATA_DIR", &data)
            .args(["sessions", "network", &session]);
        if json {
            command.arg("--json");
        }
        let output = command.output().unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    let shown = list(false);
    assert!(
        shown.contains(&format!("localhost:{port}  GET  allowed")),
        "{shown}"
    );
    assert!(
        shown.contains(&format!(
            "127.0.0.1:{port}  GET  blocked (not in the allowed domains)"
        )),
        "{shown}"
    );
    assert!(shown.contains("call c1"), "{shown}");
    let json: Vec<serde_json::Value> = list(true)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(json.len(), 2, "{json:?}");
}

/// A wheel of `probe` 0.1 (pure Python), made with Python's zipfile.
fn make_wheel(path: &std::path::Path) {
    must(
        path.parent().unwrap(),
        "python3",
        &[
            "-c",
            "import zipfile,sys
z = zipfile.ZipFile(sys.argv[1], 'w')
z.writestr('probe/__init__.py', 'VALUE = 7\\n')
z.writestr('probe-0.1.dist-info/METADATA', 'Metadata-Version: 2.1\\nName: probe\\nVersion: 0.1\\n')
z.writestr('probe-0.1.dist-info/WHEEL', 'Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n')
z.writestr('probe-0.1.dist-info/RECORD', '')
z.close()",
            path.to_str().unwrap(),
        ],
    );
}

/// pip and npm as a build uses them, from a Python simple index and an npm registry served by
/// the test on loopback, through the proxy alone (`.ci/run` installs both).
#[test]
fn pip_and_npm_fetch_through_the_proxy_from_registries_on_loopback() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let served = tempfile::tempdir().unwrap();
    let root = served.path();
    let base = format!("http://registry.test:{port}");
    // A simple index with one wheel.
    std::fs::create_dir_all(root.join("simple/probe")).unwrap();
    std::fs::create_dir_all(root.join("files")).unwrap();
    make_wheel(&root.join("files/probe-0.1-py3-none-any.whl"));
    std::fs::write(
        root.join("simple/probe/index.html"),
        format!("<html><body><a href=\"{base}/files/probe-0.1-py3-none-any.whl\">probe-0.1-py3-none-any.whl</a></body></html>"),
    )
    .unwrap();
    // An npm registry with one package: its document and its tarball.
    let package = tempfile::tempdir().unwrap();
    std::fs::create_dir(package.path().join("package")).unwrap();
    std::fs::write(
        package.path().join("package/package.json"),
        "{\"name\": \"probe\", \"version\": \"1.0.0\", \"main\": \"index.js\"}",
    )
    .unwrap();
    std::fs::write(
        package.path().join("package/index.js"),
        "module.exports = 7;\n",
    )
    .unwrap();
    std::fs::create_dir_all(root.join("npm/probe/-")).unwrap();
    let tarball = root.join("npm/probe/-/probe-1.0.0.tgz");
    must(
        package.path(),
        "tar",
        &["czf", tarball.to_str().unwrap(), "package"],
    );
    let shasum = must(root, "sha1sum", &[tarball.to_str().unwrap()]);
    let shasum = shasum.split_whitespace().next().unwrap();
    std::fs::write(
        root.join("npm/probe/index.html"),
        json!({
            "name": "probe",
            "dist-tags": {"latest": "1.0.0"},
            "versions": {"1.0.0": {
                "name": "probe", "version": "1.0.0", "main": "index.js",
                "dist": {"tarball": format!("{base}/npm/probe/-/probe-1.0.0.tgz"), "shasum": shasum},
            }},
        })
        .to_string(),
    )
    .unwrap();
    let server = serve(listener, Some(root.to_owned()));

    let net = network(
        &["registry.test"],
        Methods::All,
        &[("registry.test", server)],
    );
    let (result, text) = bash(
        &net.tools,
        &format!(
            "PIP_CACHE_DIR=$PWD/.pip pip3 download -q --no-deps --index-url {base}/simple/ --trusted-host registry.test -d dl probe 2>&1 && ls dl
             npm_config_cache=$PWD/.npm npm install --no-audit --no-fund --registry {base}/npm/ probe 2>&1 >/dev/null && node -e 'console.log(\"npm-probe\", require(\"probe\"))'"
        ),
    );
    assert!(text.contains("probe-0.1-py3-none-any.whl"), "{text}");
    assert!(text.contains("npm-probe 7"), "{text}");
    let listed = result.details.as_ref().unwrap()["network"]
        .as_array()
        .unwrap()
        .clone();
    assert!(
        listed
            .iter()
            .all(|c| c["allowed"] == true && c["host"] == "registry.test"),
        "{listed:?}"
    );
}

/// The network by domain works for an unprivileged user too: the helper brings up the
/// loopback of a namespace its own user namespace owns (as `nobody` when the tests run as
/// root, through `golato tool bash`).
#[test]
fn an_unprivileged_user_reaches_an_allowed_host_through_the_proxy() {
    use std::os::unix::process::CommandExt as _;
    let server = web_server();
    let port = server.port();
    let dir = tempfile::tempdir().unwrap();
    support::chmod(dir.path(), 0o777);
    let arguments = json!({
        "command": format!("unset NO_PROXY no_proxy; curl -sS http://localhost:{port}/as-nobody")
    })
    .to_string();
    let mut command = std::process::Command::new(support::reachable_golato());
    command
        .args(["tool", "bash", &arguments, "--sandbox", "workspace-write"])
        .args(["--allow-domain", "localhost", "--cwd"])
        .arg(dir.path())
        .env("HOME", dir.path());
    if support::is_root() {
        command.uid(support::NOBODY).gid(support::NOBODY);
    }
    let mut attempts = 0;
    let output = loop {
        match command.output() {
            // The copy may be held open by a child another test thread forked meanwhile.
            Err(error)
                if error.kind() == std::io::ErrorKind::ExecutableFileBusy && attempts < 100 =>
            {
                attempts += 1;
                std::thread::yield_now();
            }
            other => break other.unwrap(),
        }
    };
    let said = format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(said.contains("served GET /as-nobody"), "{said}");
}

/// `golato tool … --network-log FILE` writes each connection, as `golato run` does.
#[test]
fn golato_tool_writes_its_network_log() {
    let server = web_server();
    let port = server.port();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("net.jsonl");
    let arguments = json!({
        "command": format!("unset NO_PROXY no_proxy; curl -sS http://localhost:{port}/logged")
    })
    .to_string();
    let output = support::cli::golato()
        .args(["tool", "bash", &arguments, "--sandbox", "workspace-write"])
        .args(["--allow-domain", "localhost", "--network-log"])
        .arg(&log)
        .arg("--cwd")
        .arg(dir.path())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&output.stdout);
    assert!(said.contains("served GET /logged"), "{said}");
    let written = std::fs::read_to_string(&log).unwrap_or_default();
    let lines: Vec<serde_json::Value> = written
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(lines.len(), 1, "{written}");
    assert_eq!(
        (&lines[0]["host"], &lines[0]["allowed"], &lines[0]["method"]),
        (&json!("localhost"), &json!(true), &json!("GET"))
    );
}

/// A background command under network by domain still running when golato ends leaves no
/// `golato-proxy-*` folder in the temporary directory.
#[test]
fn a_background_command_at_exit_leaves_no_proxy_folder() {
    use support::cli::{golato, script_file};
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    let tmp = dir.path().join("tmp");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(&tmp).unwrap();
    let script = script_file(
        &ws,
        "script.jsonl",
        &[
            json!({"tool_calls": [{"id": "c1", "name": "bash", "arguments": {"command": "sleep 60", "background": true}}]}),
            json!({"text": "done"}),
        ],
    );
    let output = golato()
        .env("TMPDIR", &tmp)
        .args(["run", "--json", "--approve", "never", "--ephemeral"])
        .args(["--allow-domain", "localhost", "--cwd"])
        .arg(&ws)
        .arg("--script")
        .arg(&script)
        .arg("go")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let ended = support::cli::json_lines(&output);
    assert!(
        support::cli::of_type(&ended, "tool_end")
            .iter()
            .any(|end| end["result"]["is_error"] == false),
        "{ended:?}"
    );
    let left: Vec<_> = std::fs::read_dir(&tmp)
        .unwrap()
        .filter_map(Result::ok)
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("golato-proxy-"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}
