//! `golato acp` spoken to over its standard input and output as a client would: bad input,
//! unknown methods and sessions, a client that never answers a permission request, a client
//! that goes away mid-run, and sessions working at once. A full session through the official
//! TypeScript client library is `the_official_typescript_client_drives_a_whole_session`
//! (run by `.ci/run`, which installs it).

use crate::support;

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::Path;
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{json, Value};
use support::cli::{golato, script_file};

/// `golato acp` with piped standard input and output, its messages read by a thread.
pub(super) struct Acp {
    child: Child,
    input: Option<ChildStdin>,
    messages: mpsc::Receiver<Value>,
    /// Messages read and not yet asked for: a later `until` finds them.
    backlog: Vec<Value>,
    next_id: u64,
}

impl Acp {
    pub(super) fn start(dir: &Path, script: &Path, flags: &[&str]) -> Acp {
        Acp::start_offering(dir, script, flags, json!({}))
    }

    /// As `start`, the client saying it offers `capabilities`.
    pub(super) fn start_offering(
        dir: &Path,
        script: &Path,
        flags: &[&str],
        capabilities: Value,
    ) -> Acp {
        let mut all = vec!["--ephemeral"];
        all.extend_from_slice(flags);
        Acp::start_saving(dir, script, &all, capabilities)
    }

    /// As `start_offering`, sessions saved unless `flags` say `--ephemeral`.
    pub(super) fn start_saving(
        dir: &Path,
        script: &Path,
        flags: &[&str],
        capabilities: Value,
    ) -> Acp {
        Acp::spawn(
            dir,
            &[&["--script", script.to_str().unwrap()], flags].concat(),
            capabilities,
        )
    }

    /// `golato acp` with `flags`, initialized with the client offering `capabilities`.
    pub(super) fn spawn(dir: &Path, flags: &[&str], capabilities: Value) -> Acp {
        let mut command = golato();
        command.arg("acp").args(flags).current_dir(dir);
        Acp::from_command(command, capabilities)
    }

    /// `command` (a `golato acp`, perhaps started through a shell), initialized.
    pub(super) fn from_command(mut command: std::process::Command, capabilities: Value) -> Acp {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let output = child.stdout.take().unwrap();
        let (sender, messages) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(output).lines() {
                let Ok(line) = line else { break };
                let value: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|error| panic!("not JSON from golato acp ({error}): {line}"));
                if sender.send(value).is_err() {
                    break;
                }
            }
        });
        let input = child.stdin.take();
        let mut acp = Acp {
            child,
            input,
            messages,
            backlog: Vec::new(),
            next_id: 1,
        };
        let init = acp.request(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": capabilities}),
        );
        assert_eq!(init["result"]["protocolVersion"], 1, "{init}");
        acp
    }

    /// The process ID of `golato acp`.
    pub(super) fn pid(&self) -> u32 {
        self.child.id()
    }

    pub(super) fn send_bytes(&mut self, line: &[u8]) {
        let input = self.input.as_mut().unwrap();
        input.write_all(line).unwrap();
        input.write_all(b"\n").unwrap();
        input.flush().unwrap();
    }

    pub(super) fn send_raw(&mut self, line: &str) {
        let input = self.input.as_mut().unwrap();
        writeln!(input, "{line}").unwrap();
        input.flush().unwrap();
    }

    pub(super) fn send(&mut self, message: Value) {
        self.send_raw(&message.to_string());
    }

    /// Sends a request; returns its ID.
    pub(super) fn ask(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    /// The next message `check` accepts; the ones before it are returned too (and kept for a
    /// later call: answers to different requests may come in any order).
    pub(super) fn until(
        &mut self,
        what: &str,
        check: impl Fn(&Value) -> bool,
    ) -> (Value, Vec<Value>) {
        if let Some(at) = self.backlog.iter().position(&check) {
            let found = self.backlog.remove(at);
            return (found, self.backlog[..at].to_vec());
        }
        let mut before = self.backlog.clone();
        loop {
            let message = self
                .messages
                .recv_timeout(support::HANG_GUARD)
                .unwrap_or_else(|_| panic!("{what} never came; before it: {before:#?}"));
            if check(&message) {
                return (message, before);
            }
            self.backlog.push(message.clone());
            before.push(message);
        }
    }

    pub(super) fn response(&mut self, id: u64) -> (Value, Vec<Value>) {
        self.until(&format!("the answer to request {id}"), |message| {
            message["id"] == id && message.get("method").is_none()
        })
    }

    pub(super) fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.ask(method, params);
        self.response(id).0
    }

    pub(super) fn new_session(&mut self, cwd: &Path) -> String {
        let created = self.request("session/new", json!({"cwd": cwd, "mcpServers": []}));
        created["result"]["sessionId"].as_str().unwrap().to_owned()
    }

    pub(super) fn prompt(&mut self, session: &str, text: &str) -> u64 {
        self.ask(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]}),
        )
    }
}

impl Drop for Acp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(super) fn updates<'a>(messages: &'a [Value], kind: &str) -> Vec<&'a Value> {
    messages
        .iter()
        .filter(|message| message["method"] == "session/update")
        .map(|message| &message["params"]["update"])
        .filter(|update| update["sessionUpdate"] == kind)
        .collect()
}

#[test]
fn bad_input_gets_a_json_rpc_error_and_the_connection_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let script = script_file(dir.path(), "script.jsonl", &[json!({"text": "Hello."})]);
    let mut acp = Acp::start(dir.path(), &script, &[]);
    acp.send_raw("{this is not json");
    let (parse, _) = acp.until("the parse error", |message| message["error"].is_object());
    assert_eq!(parse["error"]["code"], -32700, "{parse}");
    // A line that is not UTF-8 ended the connection, and every session with it (issue 41
    // point 6): now a parse error like any unreadable line.
    acp.send_bytes(b"{\"jsonrpc\": \"2.0\", \"id\": 99, \"method\": \"caf\xe9\"}");
    let (parse, _) = acp.until("the parse error of a line not UTF-8", |message| {
        message["error"]["code"] == -32700
    });
    assert_eq!(parse["error"]["code"], -32700, "{parse}");
    let unknown = acp.request("golato/bogus", json!({}));
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");
    let missing = acp.request(
        "session/prompt",
        json!({"sessionId": "no-such-session", "prompt": [{"type": "text", "text": "hi"}]}),
    );
    assert_eq!(missing["error"]["code"], -32602, "{missing}");
    assert!(
        missing["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no session no-such-session"),
        "{missing}"
    );
    let relative = acp.request(
        "session/new",
        json!({"cwd": "relative/dir", "mcpServers": []}),
    );
    assert!(
        relative["error"]["message"]
            .as_str()
            .unwrap()
            .contains("absolute"),
        "{relative}"
    );
    // A huge cwd is echoed cut (whole before: 65 KB in one error).
    let huge = format!("relative/{}", "x".repeat(65_000));
    let cut = acp.request("session/new", json!({"cwd": huge, "mcpServers": []}));
    let message = cut["error"]["message"].as_str().unwrap();
    assert!(
        message.len() < 10_000 && message.contains("bytes in all"),
        "{}",
        message.len()
    );
    // Still serving: a real prompt works.
    let session = acp.new_session(dir.path());
    let id = acp.prompt(&session, "hi");
    let (done, before) = acp.response(id);
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    let chunks = updates(&before, "agent_message_chunk");
    assert_eq!(chunks[0]["content"]["text"], "Hello.");
}

/// 600 sessions under a limit of 1,024 descriptors: a session holds one of its own (each held
/// its folder and `/tmp` before: about #490 failed here, #337 where more was open).
#[test]
fn six_hundred_sessions_fit_in_1024_descriptors() {
    let dir = tempfile::tempdir().unwrap();
    let script = script_file(dir.path(), "script.jsonl", &[json!({"text": "Hello."})]);
    let mut command = golato();
    command
        .arg("-c")
        .arg("ulimit -n 1024 && exec \"$0\" acp --ephemeral --script \"$1\"")
        .arg(support::golato_binary())
        .arg(&script)
        .current_dir(dir.path());
    // `golato()` with bash in its place: the same environment, the binary as `$0`.
    let program = std::process::Command::new("bash");
    let mut wrapped = program;
    wrapped.args(command.get_args());
    for (key, value) in command.get_envs() {
        match value {
            Some(value) => wrapped.env(key, value),
            None => wrapped.env_remove(key),
        };
    }
    wrapped.current_dir(dir.path());
    let mut acp = Acp::from_command(wrapped, json!({}));
    for n in 0..600 {
        let folder = dir.path().join(format!("s{n}"));
        std::fs::create_dir(&folder).unwrap();
        let made = acp.request(
            "session/new",
            json!({"cwd": folder.to_str().unwrap(), "mcpServers": []}),
        );
        assert!(
            made["result"]["sessionId"].is_string(),
            "session {n}: {made}"
        );
    }
}

#[test]
fn usage_says_how_full_the_context_is_after_each_answer() {
    let dir = tempfile::tempdir().unwrap();
    let script = script_file(
        dir.path(),
        "script.jsonl",
        &[json!({"text": "Hello.", "usage": {"input_tokens": 300, "output_tokens": 20}})],
    );
    let mut acp = Acp::start(dir.path(), &script, &["--context-window", "1000"]);
    let session = acp.new_session(dir.path());
    let id = acp.prompt(&session, "hi");
    let (_, before) = acp.response(id);
    let usage = updates(&before, "usage_update");
    assert_eq!(usage.len(), 1, "{before:#?}");
    assert_eq!(
        (usage[0]["used"].as_u64(), usage[0]["size"].as_u64()),
        (Some(320), Some(1000))
    );
}

/// Editors hide an agent's stderr: what an untrusted folder left out (its instruction files,
/// the settings its file may not loosen) reaches the client, once, before the first answer.
#[test]
fn the_client_hears_what_an_untrusted_folder_left_out() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    std::fs::create_dir_all(project.join(".golato")).unwrap();
    std::fs::write(project.join("AGENTS.md"), "Be brief.").unwrap();
    std::fs::write(
        project.join(".golato/config.toml"),
        "allow_network = true\n",
    )
    .unwrap();
    let script = script_file(
        dir.path(),
        "script.jsonl",
        &[json!({"text": "Hello."}), json!({"text": "Again."})],
    );
    let mut acp = Acp::start(dir.path(), &script, &[]);
    let session = acp.new_session(&project);
    let id = acp.prompt(&session, "hi");
    let (_, before) = acp.response(id);
    let said: Vec<&str> = updates(&before, "agent_message_chunk")
        .iter()
        .filter_map(|update| update["content"]["text"].as_str())
        .collect();
    let first = said.first().copied().unwrap_or_default();
    assert!(
        first.contains("AGENTS.md not read: this folder is not trusted"),
        "{said:?}"
    );
    assert!(first.contains("ignored allow_network = true"), "{said:?}");
    assert!(said.concat().contains("Hello."), "{said:?}");
    // Once: the second answer comes alone (what came before it includes the first).
    let id = acp.prompt(&session, "again");
    let (_, before) = acp.response(id);
    let said: String = updates(&before, "agent_message_chunk")
        .iter()
        .filter_map(|update| update["content"]["text"].as_str())
        .collect();
    assert!(said.contains("Again."), "{said}");
    assert_eq!(said.matches("AGENTS.md not read").count(), 1, "{said}");
}

#[test]
fn a_permission_request_nobody_answers_refuses_the_call_in_bounded_time() {
    let dir = tempfile::tempdir().unwrap();
    let script = script_file(
        dir.path(),
        "script.jsonl",
        &[
            json!({"tool_calls": [{"id": "a", "name": "bash", "arguments": {"command": "touch made"}}]}),
            json!({"text": "Understood."}),
        ],
    );
    let mut acp = Acp::start(
        dir.path(),
        &script,
        &["--approve", "ask", "--permission-timeout", "1"],
    );
    let session = acp.new_session(dir.path());
    let id = acp.prompt(&session, "make it");
    let (asked, _) = acp.until("the permission request", |message| {
        message["method"] == "session/request_permission"
    });
    assert_eq!(asked["params"]["toolCall"]["toolCallId"], "a", "{asked}");
    let options: Vec<&str> = asked["params"]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|option| option["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        options,
        ["allow_once", "allow_always", "reject_once", "reject_always"]
    );
    // Not answered: the call is refused once the timeout passes, and the turn goes on.
    let (done, before) = acp.response(id);
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    let failed = updates(&before, "tool_call_update")
        .into_iter()
        .find(|update| update["status"] == "failed")
        .unwrap();
    assert!(
        failed["content"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .contains("This bash call was not run: it needed permission and nobody answered the request within 1 s."),
        "{failed}"
    );
    assert!(!dir.path().join("made").exists());
}

#[test]
fn a_client_that_goes_away_mid_run_leaves_no_process_behind() {
    let dir = tempfile::tempdir().unwrap();
    let script = script_file(
        dir.path(),
        "script.jsonl",
        &[
            json!({"tool_calls": [{"id": "a", "name": "bash", "arguments": {"command": "echo $$ > pid; exec sleep 120"}}]}),
        ],
    );
    // No sandbox: the shell's PID must be the host's to look it up.
    let mut acp = Acp::start(
        dir.path(),
        &script,
        &["--sandbox", "off", "--approve", "never"],
    );
    let session = acp.new_session(dir.path());
    acp.prompt(&session, "wait");
    support::wait_for_file(&dir.path().join("pid"));
    let pid: i32 = loop {
        let text = std::fs::read_to_string(dir.path().join("pid")).unwrap();
        if let Ok(pid) = text.trim().parse() {
            break pid;
        }
    };
    // The client closes its end.
    drop(acp.input.take());
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = acp.child.try_wait().unwrap() {
            break status;
        }
        assert!(
            started.elapsed() < support::HANG_GUARD,
            "golato acp went on after its client left"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status:?}");
    let gone = |pid: i32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |stat| {
            stat.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
    };
    assert!(gone(pid), "the command the run started outlived golato acp");
}

#[test]
fn prompts_to_different_sessions_run_at_once_and_a_busy_session_refuses_a_second() {
    let dir = tempfile::tempdir().unwrap();
    let one = tempfile::tempdir().unwrap();
    let two = tempfile::tempdir().unwrap();
    // Each session's command marks its own directory's name, then waits until both have: the
    // two prompts can only end if they run at once.
    let shared = script_file(
        dir.path(),
        "shared.jsonl",
        &[
            json!({"tool_calls": [{"id": "a", "name": "bash", "arguments": {"command": format!("touch {0}/$(basename \"$PWD\").mark; while [ $(ls -A {0} | grep -c mark) -lt 2 ]; do sleep 0.02; done", dir.path().display())}}]}),
            json!({"text": "Both ran."}),
        ],
    );
    let mut acp = Acp::start(
        dir.path(),
        &shared,
        &["--sandbox", "off", "--approve", "never"],
    );
    let first = acp.new_session(one.path());
    let second = acp.new_session(two.path());
    let a = acp.prompt(&first, "go");
    // A second prompt to the same busy session is refused at once.
    let again = acp.prompt(&first, "again");
    let (refused, _) = acp.response(again);
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("working on a prompt already"),
        "{refused}"
    );
    let b = acp.prompt(&second, "go");
    let (done_a, _) = acp.response(a);
    let (done_b, _) = acp.response(b);
    assert_eq!(done_a["result"]["stopReason"], "end_turn", "{done_a}");
    assert_eq!(done_b["result"]["stopReason"], "end_turn", "{done_b}");
}

#[test]
fn cancel_stops_the_running_command_and_keeps_the_conversation() {
    let dir = tempfile::tempdir().unwrap();
    let signals = support::signals();
    let started = signals.path().join("started");
    let script = script_file(
        dir.path(),
        "script.jsonl",
        &[
            json!({"tool_calls": [{"id": "a", "name": "bash", "arguments": {"command": format!("touch {}; exec sleep 120", started.display())}}]}),
            json!({"text": "Going on."}),
        ],
    );
    let mut acp = Acp::start(dir.path(), &script, &[]);
    let session = acp.new_session(dir.path());
    let id = acp.prompt(&session, "wait");
    support::wait_for_file(&started);
    acp.send(
        json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session}}),
    );
    let (done, before) = acp.response(id);
    assert_eq!(done["result"]["stopReason"], "cancelled", "{done}");
    assert!(updates(&before, "tool_call_update")
        .iter()
        .any(|update| update["status"] == "failed"));
    // The session goes on from the kept transcript.
    let id = acp.prompt(&session, "again");
    let (done, _) = acp.response(id);
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
}

/// Where `.ci/run` installed the official TypeScript client library (its `node_modules`).
/// A folder holding the official client's script `name` (from `tests/acp/`) and the SDK it
/// imports.
pub(crate) fn client_dir(name: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(typescript_sdk(), dir.path().join("node_modules")).unwrap();
    let from = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/acp")
        .join(name);
    std::fs::copy(from, dir.path().join(name)).unwrap();
    dir
}

/// Asserts that a client script passed every check (its last line says so).
pub(crate) fn client_passed(output: &std::process::Output) {
    let said = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the client failed:\n{said}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(said.lines().last() == Some(r#"{"ok":"all"}"#), "{said}");
}

pub(crate) fn typescript_sdk() -> std::path::PathBuf {
    match std::env::var_os("GOLATO_ACP_SDK") {
        Some(dir) => dir.into(),
        None => panic!(
            "GOLATO_ACP_SDK is not set: install the client with `npm install --prefix DIR @agentclientprotocol/sdk@2.4.0` and set it to DIR/node_modules (.ci/run does)"
        ),
    }
}

#[test]
#[ignore = "needs Node and @agentclientprotocol/sdk (GOLATO_ACP_SDK); .ci/run installs them"]
fn the_official_typescript_client_drives_a_whole_session() {
    let work = tempfile::tempdir().unwrap();
    let signals = support::signals();
    let started = signals.path().join("started");
    std::fs::write(work.path().join("notes.txt"), "alpha\nbeta\n").unwrap();
    let client_dir = client_dir("client.mjs");
    let script = script_file(
        client_dir.path(),
        "script.jsonl",
        &[
            json!({"reasoning": "Look first.", "text": "Reading the notes.", "tool_calls": [{"id": "c1", "name": "read", "arguments": {"path": "notes.txt"}}]}),
            json!({"tool_calls": [{"id": "c2", "name": "edit", "arguments": {"path": "notes.txt", "edits": [{"oldText": "beta", "newText": "BETA"}]}}]}),
            json!({"tool_calls": [{"id": "c3", "name": "bash", "arguments": {"command": "echo from bash"}}]}),
            json!({"text": "Tidied."}),
            json!({"tool_calls": [{"id": "c4", "name": "bash", "arguments": {"command": format!("touch {}; exec sleep 120", started.display())}}]}),
            json!({"text": "Not reached."}),
        ],
    );
    let work_path = work.path().canonicalize().unwrap();
    let output = std::process::Command::new("node")
        .arg("client.mjs")
        .arg(support::golato_binary())
        .arg(&work_path)
        .arg(&script)
        .arg(signals.path())
        .current_dir(client_dir.path())
        .env("GOLATO_DATA_DIR", support::cli::data_dir())
        .env(
            "GOLATO_CONFIG",
            support::cli::data_dir().join("no-config.toml"),
        )
        .output()
        .unwrap();
    client_passed(&output);
}

/// A client that offers its files but never answers `fs/read_text_file`: `session/cancel`
/// ends the turn as cancelled, and the session takes the next prompt (it stayed busy for good).
#[test]
fn a_file_read_the_client_never_answers_is_cancelled_with_the_turn() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().canonicalize().unwrap();
    std::fs::write(cwd.join("notes.txt"), "on disk\n").unwrap();
    let script = script_file(
        &cwd,
        "script.jsonl",
        &[
            json!({"tool_calls": [{"id": "r", "name": "read", "arguments": {"path": "notes.txt"}}]}),
            json!({"text": "Done."}),
            json!({"text": "Again."}),
        ],
    );
    let mut acp = Acp::start_offering(
        &cwd,
        &script,
        &[],
        json!({"fs": {"readTextFile": true, "writeTextFile": true}}),
    );
    let session = acp.new_session(&cwd);
    let id = acp.prompt(&session, "go");
    let _ = acp.until("the read request", |message| {
        message["method"] == "fs/read_text_file"
    });
    // Never answered.
    acp.send(
        json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session}}),
    );
    let (done, _) = acp.response(id);
    assert_eq!(done["result"]["stopReason"], "cancelled", "{done}");
    let again = acp.prompt(&session, "again");
    let (done, _) = acp.response(again);
    assert!(
        done["result"].is_object(),
        "the session is still busy: {done}"
    );
}

#[test]
fn a_client_that_offers_its_files_is_where_read_and_edit_take_and_put_text() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().canonicalize().unwrap();
    std::fs::write(cwd.join("notes.txt"), "on disk\n").unwrap();
    let script = script_file(
        &cwd,
        "script.jsonl",
        &[
            json!({"tool_calls": [{"id": "r", "name": "read", "arguments": {"path": "notes.txt"}}]}),
            json!({"tool_calls": [{"id": "e", "name": "edit", "arguments": {"path": "notes.txt", "edits": [{"oldText": "unsaved", "newText": "edited"}]}}]}),
            json!({"text": "Done."}),
        ],
    );
    let mut acp = Acp::start_offering(
        &cwd,
        &script,
        &[],
        json!({"fs": {"readTextFile": true, "writeTextFile": true}}),
    );
    let session = acp.new_session(&cwd);
    let id = acp.prompt(&session, "go");
    let mut buffer = "unsaved in the editor\n".to_owned();
    let mut written = Vec::new();
    let (done, before) = loop {
        let (message, before) = acp.until("a request or the answer", |message| {
            message["id"] == id
                || message["method"]
                    .as_str()
                    .is_some_and(|m| m.starts_with("fs/"))
        });
        match message["method"].as_str() {
            Some("fs/read_text_file") => {
                assert_eq!(
                    message["params"]["path"],
                    cwd.join("notes.txt").to_str().unwrap()
                );
                assert_eq!(message["params"]["sessionId"], session);
                acp.send(
                    json!({"jsonrpc": "2.0", "id": message["id"], "result": {"content": buffer}}),
                );
            }
            Some("fs/write_text_file") => {
                buffer = message["params"]["content"].as_str().unwrap().to_owned();
                written.push(buffer.clone());
                acp.send(json!({"jsonrpc": "2.0", "id": message["id"], "result": {}}));
            }
            _ => break (message, before),
        }
    };
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    // The model read the editor's buffer, and its edit went back to it.
    let read = updates(&before, "tool_call_update")
        .into_iter()
        .find(|update| update["toolCallId"] == "r" && update["status"] == "completed")
        .unwrap();
    assert_eq!(
        read["content"][0]["content"]["text"], "unsaved in the editor",
        "{read}"
    );
    assert_eq!(written, ["edited in the editor\n"]);
    assert_eq!(
        std::fs::read_to_string(cwd.join("notes.txt")).unwrap(),
        "on disk\n"
    );
}

#[test]
fn the_model_is_a_session_setting_the_client_can_change_between_prompts() {
    let dir = tempfile::tempdir().unwrap();
    let script = script_file(dir.path(), "script.jsonl", &[json!({"text": "Hello."})]);
    let mut acp = Acp::start(dir.path(), &script, &[]);
    let created = acp.request("session/new", json!({"cwd": dir.path(), "mcpServers": []}));
    let session = created["result"]["sessionId"].as_str().unwrap().to_owned();
    let model = &created["result"]["configOptions"][0];
    assert_eq!(
        (model["id"].as_str(), model["category"].as_str()),
        (Some("model"), Some("model")),
        "{created}"
    );
    let changed = acp.request(
        "session/set_config_option",
        json!({"sessionId": session, "configId": "model", "value": "claude-haiku-4-5"}),
    );
    assert_eq!(
        changed["result"]["configOptions"][0]["currentValue"], "claude-haiku-4-5",
        "{changed}"
    );
    let unknown = acp.request(
        "session/set_config_option",
        json!({"sessionId": session, "configId": "temperature", "value": "hot"}),
    );
    assert!(
        unknown["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no setting temperature"),
        "{unknown}"
    );
    let id = acp.prompt(&session, "hi");
    let (done, _) = acp.response(id);
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
}

#[test]
fn reject_always_refuses_later_calls_of_the_tool_unasked_and_read_only_mode_holds() {
    let dir = tempfile::tempdir().unwrap();
    let script = script_file(
        dir.path(),
        "script.jsonl",
        &[
            json!({"tool_calls": [{"id": "a", "name": "bash", "arguments": {"command": "touch one"}}]}),
            json!({"tool_calls": [{"id": "b", "name": "bash", "arguments": {"command": "touch two"}}]}),
            json!({"tool_calls": [{"id": "c", "name": "write", "arguments": {"path": "three", "content": "x"}}]}),
            json!({"text": "Understood."}),
        ],
    );
    let mut acp = Acp::start(dir.path(), &script, &["--approve", "ask"]);
    let session = acp.new_session(dir.path());
    let mode = acp.request(
        "session/set_mode",
        json!({"sessionId": session, "modeId": "read-only"}),
    );
    assert!(mode.get("result").is_some(), "{mode}");
    let id = acp.prompt(&session, "go");
    let (asked, _) = acp.until("the first question", |message| {
        message["method"] == "session/request_permission"
    });
    assert_eq!(asked["params"]["toolCall"]["toolCallId"], "a");
    acp.send(json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"outcome": {"outcome": "selected", "optionId": "reject-always"}}}));
    // The second bash call is refused without a question; the write is asked, allowed, and
    // still fails: the session is read-only.
    let (asked, before) = acp.until("the write's question", |message| {
        message["method"] == "session/request_permission"
    });
    assert_eq!(
        asked["params"]["toolCall"]["toolCallId"], "c",
        "{before:#?}"
    );
    acp.send(json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"outcome": {"outcome": "selected", "optionId": "allow-once"}}}));
    let (done, before) = acp.response(id);
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    let failed: Vec<&str> = updates(&before, "tool_call_update")
        .into_iter()
        .filter(|update| update["status"] == "failed")
        .map(|update| update["toolCallId"].as_str().unwrap())
        .collect();
    assert_eq!(failed, ["a", "b", "c"], "{before:#?}");
    for file in ["one", "two", "three"] {
        assert!(!dir.path().join(file).exists(), "{file}");
    }
}

#[test]
fn plan_mode_sends_the_plan_and_changes_nothing_until_another_mode() {
    let dir = tempfile::tempdir().unwrap();
    let plan = json!({"plan": [
        {"step": "Look at the code", "status": "completed"},
        {"step": "Write the file", "status": "pending"}
    ]});
    let script = script_file(
        dir.path(),
        "script.jsonl",
        &[
            json!({"tool_calls": [
                {"id": "p", "name": "update_plan", "arguments": plan},
                {"id": "w", "name": "write", "arguments": {"path": "early", "content": "x"}}
            ]}),
            json!({"text": "Here is the plan."}),
            json!({"tool_calls": [{"id": "w2", "name": "write", "arguments": {"path": "late", "content": "x"}}]}),
            json!({"text": "Done."}),
        ],
    );
    let mut acp = Acp::start(dir.path(), &script, &["--approve", "never"]);
    let session = acp.new_session(dir.path());
    let created_modes = acp.request("session/new", json!({"cwd": dir.path(), "mcpServers": []}));
    let modes: Vec<&str> = created_modes["result"]["modes"]["availableModes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|mode| mode["id"].as_str().unwrap())
        .collect();
    assert!(modes.contains(&"plan"), "{modes:?}");
    let mode = acp.request(
        "session/set_mode",
        json!({"sessionId": session, "modeId": "plan"}),
    );
    assert!(mode.get("result").is_some(), "{mode}");
    let id = acp.prompt(&session, "plan it");
    let (done, before) = acp.response(id);
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    let plans = updates(&before, "plan");
    assert_eq!(plans.len(), 1, "{before:#?}");
    assert_eq!(plans[0]["entries"][0]["content"], "Look at the code");
    assert_eq!(plans[0]["entries"][0]["status"], "completed");
    assert_eq!(plans[0]["entries"][1]["status"], "pending");
    // No write in plan mode: the call failed and nothing was written.
    assert!(!dir.path().join("early").exists());
    // Another mode carries the plan out.
    let mode = acp.request(
        "session/set_mode",
        json!({"sessionId": session, "modeId": "workspace-write"}),
    );
    assert!(mode.get("result").is_some(), "{mode}");
    let id = acp.prompt(&session, "go ahead");
    let (done, _) = acp.response(id);
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    assert!(dir.path().join("late").exists());
}

#[test]
fn a_saved_sessions_writes_are_checkpointed_and_golato_undo_takes_them_back() {
    let dir = tempfile::tempdir().unwrap();
    let script = script_file(
        dir.path(),
        "script.jsonl",
        &[
            json!({"tool_calls": [{"id": "w", "name": "write", "arguments": {"path": "made.txt", "content": "x"}}]}),
            json!({"text": "Made."}),
        ],
    );
    let mut acp = Acp::start_saving(dir.path(), &script, &["--approve", "never"], json!({}));
    let session = acp.new_session(dir.path());
    let id = acp.prompt(&session, "make it");
    let (done, _) = acp.response(id);
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    assert!(dir.path().join("made.txt").exists());
    drop(acp);
    let undone = golato().args(["undo", &session]).output().unwrap();
    assert!(undone.status.success(), "{undone:?}");
    assert!(String::from_utf8_lossy(&undone.stdout).contains("removed"));
    assert!(!dir.path().join("made.txt").exists());
}

#[test]
fn a_subagents_calls_reach_the_client_as_calls_under_the_task() {
    use support::compaction::{answers, first_prompt, sse, wire_call};
    use support::provider::{FakeProvider, Reply, Script};
    let respond = |request: &Value, _size: usize| {
        let call = |id: &str, name: &str, arguments: Value| json!({"tool_calls": [wire_call(id, name, arguments)]});
        let answer = match (first_prompt(request).as_str(), answers(request)) {
            ("go", 0) => call(
                "t1",
                "task",
                json!({"description": "look", "prompt": "child"}),
            ),
            ("child", 0) => call("r1", "read", json!({"path": "note.txt"})),
            ("child", _) => json!({"text": "the note says hi"}),
            _ => json!({"text": "done"}),
        };
        Reply::sse(sse(&answer))
    };
    let (_runtime, url, _provider) =
        FakeProvider::start_blocking(Script::Respond(Box::new(respond)));
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("note.txt"), "hi\n").unwrap();
    let base = format!("{url}/v1");
    let mut acp = Acp::spawn(
        dir.path(),
        &[
            "--ephemeral",
            "--base-url",
            &base,
            "--model",
            "m",
            "--tools",
            "read,task",
            "--approve",
            "never",
        ],
        json!({}),
    );
    let session = acp.new_session(dir.path());
    let id = acp.prompt(&session, "go");
    let (done, before) = acp.response(id);
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    let announced = updates(&before, "tool_call");
    assert!(
        announced
            .iter()
            .any(|call| call["toolCallId"] == "t1/r1" && call["title"] == "↳ read note.txt"),
        "{before:#?}"
    );
    let ended = updates(&before, "tool_call_update");
    assert!(
        ended
            .iter()
            .any(|update| update["toolCallId"] == "t1/r1" && update["status"] == "completed"),
        "{before:#?}"
    );
    assert!(ended.iter().any(|update| update["toolCallId"] == "t1"
        && update["content"][0]["content"]["text"]
            .as_str()
            .is_some_and(|text| text.starts_with("the note says hi"))));
}

/// An ACP session is the same conversation as the command line's: SessionStart, UserPromptSubmit
/// (which may refuse a prompt) and SessionEnd hooks fire, with the session's ID.
#[test]
fn an_acp_session_runs_the_session_hooks_as_the_command_line_does() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap();
    let user = ws.join("user.toml");
    std::fs::write(
        &user,
        "[[hooks.SessionStart]]\ncommand = \"cat > started.json\"\n\n\
         [[hooks.UserPromptSubmit]]\ncommand = \"cat > submitted.json; grep -q password submitted.json && { echo 'no secrets in prompts' >&2; exit 2; } || exit 0\"\n\n\
         [[hooks.SessionEnd]]\ncommand = \"cat > ended.json\"\n",
    )
    .unwrap();
    let script = script_file(&ws, "script.jsonl", &[json!({"text": "Hello."})]);
    let mut command = golato();
    command
        .env("GOLATO_CONFIG", &user)
        .args(["acp", "--script"])
        .arg(&script)
        .current_dir(&ws);
    let mut acp = Acp::from_command(command, json!({}));
    let session = acp.new_session(&ws);
    let read = |name: &str| -> Value {
        serde_json::from_str(&std::fs::read_to_string(ws.join(name)).unwrap()).unwrap()
    };
    assert_eq!(read("started.json")["session_id"], session.as_str());

    let id = acp.prompt(&session, "my password is hunter2");
    let (refused, _) = acp.response(id);
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("no secrets in prompts"), "{refused}");

    let id = acp.prompt(&session, "hello");
    let (done, _) = acp.response(id);
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    let submitted = read("submitted.json");
    assert_eq!(submitted["prompt"], "hello");
    assert_eq!(submitted["session_id"], session.as_str());

    // The client goes away: the session ends with its SessionEnd hooks.
    drop(acp.input.take());
    let status = acp.child.wait().unwrap();
    assert!(status.success(), "{status}");
    assert_eq!(read("ended.json")["session_id"], session.as_str());
}

#[test]
fn a_background_commands_call_stays_in_progress_until_it_ends() {
    let dir = tempfile::tempdir().unwrap();
    let script = script_file(
        dir.path(),
        "script.jsonl",
        &[
            json!({"tool_calls": [{"id": "server", "name": "bash", "arguments": {"command": "echo up; exec sleep 1000", "background": true}}]}),
            json!({"text": "Started."}),
            json!({"tool_calls": [{"id": "stop", "name": "bash_kill", "arguments": {"id": 1}}]}),
            json!({"text": "Stopped."}),
        ],
    );
    let mut acp = Acp::start(dir.path(), &script, &[]);
    let session = acp.new_session(dir.path());
    let id = acp.prompt(&session, "serve");
    let (done, before) = acp.response(id);
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    let server: Vec<&Value> = updates(&before, "tool_call_update")
        .into_iter()
        .filter(|update| update["toolCallId"] == "server")
        .collect();
    assert_eq!(
        server.last().unwrap()["status"],
        "in_progress",
        "{server:#?}"
    );
    // Ended by the model's bash_kill: the start's call is told, as failed (a signal).
    let id = acp.prompt(&session, "stop it");
    let (ended, _) = acp.until("the background call's end", |message| {
        message["params"]["update"]["toolCallId"] == "server"
            && message["params"]["update"]["status"] == "failed"
    });
    let told = ended["params"]["update"]["content"][0]["content"]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        told.starts_with("The background command was ended"),
        "{told}"
    );
    let (done, _) = acp.response(id);
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
}
