//! Diagnostics after edits (issue 58): the real pyright (npm, pinned: `.ci/run` installs it and
//! sets `GOLATO_PYRIGHT` to its `pyright-langserver`), and a hostile fake server written here
//! (`tests/fixtures/lsp/fake_server.py`) that never answers, floods, sends malformed frames,
//! crashes, asks golato to change files outside the workspace, and tries to write the
//! workspace and reach the network from inside the sandbox.

use crate::support;

use std::path::Path;
use std::sync::Arc;

use golato::agent::{self, Agent};
use golato::diagnostics::{Config, Diagnostics, ServerSpec};
use golato::generator::Scripted;
use golato::message::{AssistantMessage, Message, ToolCall};
use serde_json::json;

fn pyright() -> String {
    std::env::var("GOLATO_PYRIGHT").expect(
        "GOLATO_PYRIGHT must name pyright-langserver (.ci/run installs pyright from npm and sets it)",
    )
}

/// A workspace in a folder whose name does not start with a dot (pyright leaves files under
/// hidden folders out of its analysis, as `tempfile`'s `.tmpXXXX` are).
fn workspace() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("golato-lsp-")
        .tempdir()
        .unwrap()
}

fn call(id: &str, name: &str, arguments: serde_json::Value) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: arguments.to_string(),
    }
}

/// Runs the scripted turns (each one call) with the built-ins and `diagnostics` in `dir`;
/// returns each call's result text, by ID.
fn run(
    dir: &Path,
    diagnostics: &Diagnostics,
    calls: Vec<ToolCall>,
) -> std::collections::HashMap<String, String> {
    let mut turns: Vec<AssistantMessage> = calls
        .into_iter()
        .map(|call| AssistantMessage::with_tool_calls([call]))
        .collect();
    turns.push(AssistantMessage::with_text("done"));
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let agent = Agent::new(agent::Config {
            generator: Some(Arc::new(Scripted::new(turns))),
            tools: golato::builtin::new(golato::builtin::Config {
                working_directory: dir.into(),
                ..Default::default()
            })
            .unwrap(),
            hooks: vec![diagnostics.hook()],
            ..Default::default()
        })
        .unwrap();
        let outcome = agent
            .start(golato::message::UserMessage::new("fix calc.py"))
            .finish()
            .await
            .unwrap();
        outcome
            .messages
            .iter()
            .filter_map(|message| match message {
                Message::ToolResult(result) => Some((result.tool_call_id.clone(), result.text())),
                _ => None,
            })
            .collect()
    })
}

#[test]
#[ignore = "needs pyright: GOLATO_PYRIGHT (.ci/run)"]
fn pyright_tells_the_error_an_edit_introduced_not_the_ones_before_and_a_fix_clears_it() {
    let dir = workspace();
    let root = dir.path().canonicalize().unwrap();
    std::fs::write(
        root.join("calc.py"),
        "def total() -> int:\n    return \"old\"\n\n\ndef double(x: int) -> int:\n    return x * 2\n",
    )
    .unwrap();
    let mut config = Config::new(&root);
    config.servers = vec![ServerSpec::new(
        "pyright",
        [pyright(), "--stdio".into()],
        ["py"],
    )];
    let diagnostics = Diagnostics::new(config);
    let results = run(
        &root,
        &diagnostics,
        vec![
            call(
                "break",
                "edit",
                json!({"path": "calc.py", "edits": [{"oldText": "return x * 2", "newText": "return x.upper()"}]}),
            ),
            call(
                "fix",
                "edit",
                json!({"path": "calc.py", "edits": [{"oldText": "return x.upper()", "newText": "return x * 3"}]}),
            ),
            call(
                "notes",
                "write",
                json!({"path": "notes.txt", "content": "x: int = 'no'\n"}),
            ),
        ],
    );
    let broke = &results["break"];
    assert!(
        broke.contains("Diagnostics after this change: 1 new error in calc.py"),
        "{broke}"
    );
    assert!(broke.contains("calc.py:6:"), "{broke}");
    assert!(broke.contains("upper"), "{broke}");
    assert!(broke.contains("1 other it did not introduce"), "{broke}");
    assert!(
        !results["fix"].contains("Diagnostics"),
        "{}",
        results["fix"]
    );
    assert!(
        !results["notes"].contains("Diagnostics"),
        "{}",
        results["notes"]
    );
}

const FAKE_SERVER: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tests/fixtures/lsp/fake_server.py"
);

/// Diagnostics from the fake server in `mode` (with `more` arguments) for `*.fk` files of
/// `root`, bounded tightly: 1 s to start, 1 s to answer.
fn fake(root: &Path, mode: &str, more: &[String]) -> Config {
    let mut command = vec![
        "python3".to_owned(),
        FAKE_SERVER.to_owned(),
        mode.to_owned(),
    ];
    command.extend_from_slice(more);
    let mut config = Config::new(root);
    config.servers = vec![ServerSpec::new("fake", command, ["fk"])];
    config.start_within = std::time::Duration::from_secs(1);
    config.wait = std::time::Duration::from_secs(1);
    config
}

fn edit(id: &str, old: &str, new: &str) -> ToolCall {
    call(
        id,
        "edit",
        json!({"path": "a.fk", "edits": [{"oldText": old, "newText": new}]}),
    )
}

#[test]
fn a_server_that_never_answers_or_crashes_is_left_off_with_one_line_and_the_edit_stands() {
    for (mode, said) in [
        (
            "silent",
            "language server fake could not start (it did not answer `initialize` within 1000 ms): left off for this session",
        ),
        (
            "crash",
            "language server fake could not start (it exited): left off for this session",
        ),
    ] {
        let dir = workspace();
        std::fs::write(dir.path().join("a.fk"), "one\n").unwrap();
        let diagnostics = Diagnostics::new(fake(dir.path(), mode, &[]));
        let results = run(
            dir.path(),
            &diagnostics,
            vec![edit("1", "one", "two"), edit("2", "two", "three")],
        );
        assert!(results["1"].starts_with("Successfully replaced"), "{mode}: {results:?}");
        assert!(results["1"].contains(said), "{mode}: {results:?}");
        // Said once; the next edit waits for nothing.
        assert_eq!(results["2"], "Successfully replaced 1 block(s) in a.fk.", "{mode}");
        assert_eq!(std::fs::read_to_string(dir.path().join("a.fk")).unwrap(), "three\n");
        assert_eq!(diagnostics.notes(), [said.to_owned()], "{mode}");
    }
}

#[test]
fn a_server_that_sends_malformed_frames_is_restarted_twice_then_left_off() {
    let dir = workspace();
    std::fs::write(dir.path().join("a.fk"), "a\n").unwrap();
    let diagnostics = Diagnostics::new(fake(dir.path(), "malformed", &[]));
    let calls = (1..=4)
        .map(|n| {
            edit(
                &n.to_string(),
                &format!("{}", (b'a' + n - 1) as char),
                &format!("{}", (b'a' + n) as char),
            )
        })
        .collect();
    let results = run(dir.path(), &diagnostics, calls);
    for n in 1..=4 {
        let text = &results[&n.to_string()];
        assert!(text.starts_with("Successfully replaced"), "{results:?}");
    }
    assert!(
        results["1"].contains("it sent a Content-Length that is not a number"),
        "{results:?}"
    );
    let notes = diagnostics.notes();
    assert!(
        notes
            .last()
            .unwrap()
            .contains("was started again 2 times already: left off for this session"),
        "{notes:?}"
    );
    assert_eq!(
        notes
            .iter()
            .filter(|note| note.contains("starting it again"))
            .count(),
        2,
        "{notes:?}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.fk")).unwrap(),
        "e\n"
    );
}

#[test]
fn a_flood_of_100k_diagnostics_is_bounded_and_counted() {
    let dir = workspace();
    std::fs::write(dir.path().join("a.fk"), "calm\n").unwrap();
    let diagnostics = Diagnostics::new(fake(dir.path(), "flood", &[]));
    let results = run(dir.path(), &diagnostics, vec![edit("1", "calm", "FLOOD")]);
    let text = &results["1"];
    assert!(text.starts_with("Successfully replaced"), "{text}");
    assert!(text.contains("500 new errors in a.fk"), "{text}");
    assert!(text.contains("(99980 more not shown)"), "{text}");
    assert!(text.lines().count() <= 24, "{text}");
}

#[test]
fn a_server_asking_to_change_or_read_files_outside_the_workspace_is_refused() {
    let dir = workspace();
    let escaped = Path::new("/tmp/golato-lsp-escaped");
    let _ = std::fs::remove_file(escaped);
    std::fs::write(dir.path().join("a.fk"), "one\n").unwrap();
    let diagnostics = Diagnostics::new(fake(dir.path(), "outside", &[]));
    let results = run(dir.path(), &diagnostics, vec![edit("1", "one", "two")]);
    // Its diagnostic of the edit is told as any; what it asked was refused, nothing made.
    assert!(
        results["1"].contains("a.fk:1:1: error [fake] still told: two"),
        "{results:?}"
    );
    assert!(!escaped.exists());
}

#[test]
fn an_edit_in_a_language_no_server_serves_adds_nothing() {
    let dir = workspace();
    std::fs::write(dir.path().join("notes.txt"), "one\n").unwrap();
    let diagnostics = Diagnostics::new(fake(dir.path(), "normal", &[]));
    let results = run(
        dir.path(),
        &diagnostics,
        vec![call(
            "1",
            "edit",
            json!({"path": "notes.txt", "edits": [{"oldText": "one", "newText": "BROKEN"}]}),
        )],
    );
    assert_eq!(
        results["1"],
        "Successfully replaced 1 block(s) in notes.txt."
    );
}

/// The fake server's probe: what it could do from where golato started it.
fn probe(sandboxed: bool) -> (String, bool) {
    let dir = workspace();
    let root = dir.path().canonicalize().unwrap();
    std::fs::write(root.join("a.fk"), "one\n").unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port().to_string();
    let mut config = fake(&root, "probe", &[port, "1.1.1.1".into()]);
    config.start_within = std::time::Duration::from_secs(10);
    config.wait = std::time::Duration::from_secs(10);
    if sandboxed {
        let policy = golato::sandbox::Policy::read_only().with_helper(support::golato_binary());
        let prepared = golato::sandbox::Prepared::new(&policy, &root)
            .unwrap()
            .unwrap();
        config.sandbox = Some(Arc::new(prepared));
    }
    let diagnostics = Diagnostics::new(config);
    let results = run(&root, &diagnostics, vec![edit("1", "one", "two")]);
    (
        results["1"].clone(),
        root.join("written-by-server").exists(),
    )
}

#[test]
fn a_sandboxed_server_can_neither_write_the_workspace_nor_reach_the_network() {
    // Unconfined, the probe can do both (so the test below can fail).
    let (said, written) = probe(false);
    assert!(
        said.contains("write succeeded; loopback succeeded"),
        "{said}"
    );
    assert!(written);

    let (said, written) = probe(true);
    assert!(said.contains("write failed"), "{said}");
    assert!(said.contains("loopback failed"), "{said}");
    assert!(said.contains("public failed"), "{said}");
    assert!(!written);
}

/// An OpenAI stream of one `edit` call.
fn edit_turn(path: &str, old: &str, new: &str) -> support::provider::Reply {
    let arguments = json!({"path": path, "edits": [{"oldText": old, "newText": new}]});
    support::provider::Reply::sse(support::compaction::sse(&json!({"tool_calls": [{
        "index": 0, "id": "e1", "type": "function",
        "function": {"name": "edit", "arguments": arguments.to_string()}}]})))
}

#[test]
#[ignore = "needs pyright: GOLATO_PYRIGHT (.ci/run)"]
fn through_the_binary_the_model_reads_the_error_its_edit_made_and_the_person_sees_the_count() {
    use support::provider::{FakeProvider, Reply, Script};
    let pyright = std::path::PathBuf::from(pyright());
    let path = format!(
        "{}:{}",
        pyright.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    for json_lines in [true, false] {
        let dir = workspace();
        std::fs::write(
            dir.path().join("calc.py"),
            "def double(x: int) -> int:\n    return x * 2\n",
        )
        .unwrap();
        let (_runtime, url, server) = FakeProvider::start_blocking(Script::Queue(
            [
                edit_turn("calc.py", "return x * 2", "return x.upper()"),
                Reply::sse(support::compaction::sse(&json!({"text": "done"}))),
            ]
            .into(),
        ));
        let mut command = support::cli::golato();
        command
            .args([
                "run",
                "--ephemeral",
                "--base-url",
                &format!("{url}/v1"),
                "-m",
                "m",
            ])
            .arg("--cwd")
            .arg(dir.path())
            .env("PATH", &path)
            .stdin(std::process::Stdio::null());
        if json_lines {
            command.arg("--json");
        }
        let output = command.arg("double it").output().unwrap();
        assert_eq!(output.status.code(), Some(0), "{output:?}");
        // The next request carries what the edit broke.
        let sent = server.take_bodies();
        let told = sent[1]["messages"].to_string();
        assert!(
            told.contains("Diagnostics after this change: 1 new error in calc.py"),
            "{told}"
        );
        let stdout = String::from_utf8_lossy(&output.stdout);
        if json_lines {
            let ended = support::cli::json_lines(&output)
                .into_iter()
                .find(|line| line["type"] == "tool_end")
                .unwrap();
            assert_eq!(
                ended["result"]["details"]["diagnostics"]["summary"], "1 new error in calc.py",
                "{ended}"
            );
        } else {
            let shown = format!("{stdout}{}", String::from_utf8_lossy(&output.stderr));
            assert!(shown.contains("⚠ 1 new error in calc.py"), "{shown}");
        }
    }
}

#[test]
fn an_untrusted_project_cannot_name_a_language_server_and_a_trusted_one_can() {
    let dir = workspace();
    let mark = dir.path().join("server-started");
    std::fs::create_dir(dir.path().join(".golato")).unwrap();
    std::fs::write(
        dir.path().join(".golato/config.toml"),
        format!(
            "[lsp.evil]\ncommand = [\"sh\", \"-c\", \"touch {}\"]\nextensions = [\"ev\"]\n",
            mark.display()
        ),
    )
    .unwrap();
    std::fs::write(dir.path().join("a.ev"), "one\n").unwrap();
    let script = support::cli::script_file(
        dir.path(),
        "script.jsonl",
        &[
            json!({"tool_calls": [{"id": "e", "name": "edit", "arguments": {"path": "a.ev", "edits": [{"oldText": "one", "newText": "two"}]}}]}),
            json!({"text": "done"}),
        ],
    );
    let run = |more: &[&str]| {
        support::cli::golato()
            .args([
                "run",
                "--ephemeral",
                "--sandbox",
                "off",
                "--approve",
                "never",
            ])
            .args(more)
            .arg("--cwd")
            .arg(dir.path())
            .arg("--script")
            .arg(&script)
            .arg("go")
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
    };
    let output = run(&[]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(said.contains("lsp = "), "{said}");
    assert!(!mark.exists(), "an untrusted project's server was started");

    std::fs::write(dir.path().join("a.ev"), "one\n").unwrap();
    let output = run(&["--trust"]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert!(mark.exists(), "a trusted project's server was not started");
    // It exited at once: said in the edit's result (shown on stderr), once.
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(
        said.contains("language server evil could not start"),
        "{said}"
    );
}

/// Whether the header names the `diagnostics` tool.
fn screen_has_tool(terminal: &mut support::cli::Terminal, size: (u16, u16)) -> bool {
    super::front::wait_until(terminal, size, "the header", |shown| {
        shown.contains("tools")
    })
    .contains(",diagnostics")
}

/// The front end (80×24 and 120×40): the count under the edit, and `/diagnostics` listing what
/// the server reports.
#[test]
fn the_front_end_shows_what_an_edit_broke_and_diagnostics_lists_it() {
    use super::front::{in_terminal, leave, ready, wait_until, SIZES};
    for size in SIZES {
        let dir = workspace();
        std::fs::write(dir.path().join("a.fk"), "fine\n").unwrap();
        let config = dir.path().join("user.toml");
        std::fs::write(
            &config,
            format!(
                "[lsp.fake]\ncommand = [\"python3\", \"{FAKE_SERVER}\", \"normal\"]\nextensions = [\"fk\"]\n"
            ),
        )
        .unwrap();
        let script = support::cli::script_file(
            dir.path(),
            "script.jsonl",
            &[
                json!({"tool_calls": [{"id": "e", "name": "edit", "arguments": {"path": "a.fk", "edits": [{"oldText": "fine", "newText": "BROKEN"}]}}]}),
                json!({"text": "Edited."}),
            ],
        );
        let mut command = support::cli::golato();
        command
            .env("GOLATO_CONFIG", &config)
            .arg("-C")
            .arg(dir.path())
            .args(["--script", script.to_str().unwrap(), "--ephemeral"]);
        let mut terminal = ready(in_terminal(command, size), size);
        terminal.type_raw("break it\r");
        wait_until(&mut terminal, size, "the count under the edit", |shown| {
            shown.contains("⚠ 1 new error in a.fk") && shown.contains("Edited.")
        });
        // The person's /diagnostics needs no tool: the model's is offered when asked for.
        assert!(!screen_has_tool(&mut terminal, size));
        terminal.type_raw("/diagnostics\r");
        wait_until(&mut terminal, size, "the listing", |shown| {
            shown.contains("a.fk:1:1: error [fake] broken here")
        });
        leave(terminal, size);
    }
}

/// The fake server in its normal mode for `*.fk` files, as a user's configuration.
fn fake_config() -> String {
    format!("[lsp.fake]\ncommand = [\"python3\", \"{FAKE_SERVER}\", \"normal\"]\nextensions = [\"fk\"]\n")
}

/// `golato run --json` in `dir` with `config` as the user's configuration, the scripted turns
/// and `flags`, without a terminal; each call's result, by ID.
fn run_binary(
    dir: &Path,
    config: &str,
    turns: &[serde_json::Value],
    flags: &[&str],
) -> std::collections::HashMap<String, serde_json::Value> {
    let file = dir.join("user.toml");
    std::fs::write(&file, config).unwrap();
    let mut turns = turns.to_vec();
    turns.push(json!({"text": "done"}));
    let script = support::cli::script_file(dir, "script.jsonl", &turns);
    let output = support::cli::golato()
        .env("GOLATO_CONFIG", &file)
        .args(["run", "--json"])
        .args(flags)
        .arg("--cwd")
        .arg(dir)
        .arg("--script")
        .arg(&script)
        .arg("go")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    support::cli::json_lines(&output)
        .into_iter()
        .filter(|line| line["type"] == "tool_end")
        .map(|line| {
            (
                line["call"]["id"].as_str().unwrap().to_owned(),
                line["result"].clone(),
            )
        })
        .collect()
}

/// A turn of one call.
fn turn(id: &str, tool: &str, arguments: serde_json::Value) -> serde_json::Value {
    json!({"tool_calls": [{"id": id, "name": tool, "arguments": arguments}]})
}

#[test]
fn the_diagnostics_tool_is_offered_when_asked_for_and_lists_a_files_errors() {
    let dir = workspace();
    std::fs::write(dir.path().join("a.fk"), "ok\nBROKEN\n").unwrap();
    let results = run_binary(
        dir.path(),
        &fake_config(),
        &[turn("d", "diagnostics", json!({"path": "a.fk"}))],
        &["--ephemeral", "--tools", "read,edit,diagnostics"],
    );
    assert_eq!(results["d"]["is_error"], false, "{results:?}");
    let listed = results["d"]["content"].to_string();
    assert!(
        listed.contains("a.fk:2:1: error [fake] broken here"),
        "{listed}"
    );
}

#[test]
fn a_command_that_changes_served_files_is_told_what_it_broke_not_what_was_there() {
    let dir = workspace();
    std::fs::write(dir.path().join("seen.fk"), "fine\n").unwrap();
    std::fs::write(dir.path().join("unseen.fk"), "BROKEN before\n").unwrap();
    let bash = |id: &str, command: &str| turn(id, "bash", json!({ "command": command }));
    let results = run_binary(
        dir.path(),
        &fake_config(),
        &[
            // A new file: everything in it is the command's.
            bash("new", "printf 'ok\\nBROKEN\\n' > made.fk"),
            // A file the server has open (an edit showed it): only what the command added.
            turn(
                "edit",
                "edit",
                json!({"path": "seen.fk", "edits": [{"oldText": "fine", "newText": "fine still"}]}),
            ),
            bash("seen", "printf 'fine still\\nBROKEN too\\n' > seen.fk"),
            // A file no server saw: its old error is not blamed on the command.
            bash("unseen", "printf 'BROKEN before\\nmore\\n' > unseen.fk"),
        ],
        // Saved (not --ephemeral): a command's changes are captured with the session's
        // checkpoints.
        &["--sandbox", "workspace-write"],
    );
    let text = |id: &str| format!("{} {}", results[id]["content"], results[id]["details"]);
    assert!(
        text("new").contains("1 new error in made.fk"),
        "{}",
        text("new")
    );
    assert_eq!(
        results["new"]["details"]["diagnostics"]["summary"],
        "1 new error in made.fk"
    );
    assert!(
        text("seen").contains("seen.fk:2:1: error [fake] broken here"),
        "{}",
        text("seen")
    );
    assert!(
        !text("unseen").contains("Diagnostics"),
        "{}",
        text("unseen")
    );
}

#[test]
fn a_configured_linter_tells_what_an_edit_broke_and_one_that_hangs_is_bounded() {
    let dir = workspace();
    std::fs::write(dir.path().join("a.lt"), "fine\n").unwrap();
    std::fs::write(dir.path().join("b.slow"), "x\n").unwrap();
    let linter = "import sys\nfor n, line in enumerate(sys.stdin, 1):\n    'BROKEN' in line and print(f'{sys.argv[1]}:{n}:1: error: L001 broken here')\n";
    let config = format!(
        "[lint.lines]\ncommand = [\"python3\", \"-c\", {linter:?}, \"{{file}}\"]\nextensions = [\"lt\"]\nformat = \"gcc\"\n\n[lint.slow]\ncommand = [\"sleep\", \"30\"]\nextensions = [\"slow\"]\nformat = \"gcc\"\n"
    );
    let edit = |id: &str, path: &str, old: &str, new: &str| {
        turn(
            id,
            "edit",
            json!({"path": path, "edits": [{"oldText": old, "newText": new}]}),
        )
    };
    let results = run_binary(
        dir.path(),
        &config,
        &[
            edit("lint", "a.lt", "fine", "fine\nBROKEN"),
            edit("slow", "b.slow", "x", "y"),
        ],
        &["--ephemeral", "--no-lsp"],
    );
    let text = |id: &str| results[id]["content"].to_string();
    assert!(
        text("lint").contains("a.lt:2:1: error [L001] broken here"),
        "{results:?}"
    );
    // The linter had what was left of the call's 2 s wait when it started: a little less.
    let slow = text("slow");
    let waited: u64 = slow
        .split("linter slow did not finish within ")
        .nth(1)
        .and_then(|rest| rest.split(" ms").next())
        .and_then(|ms| ms.parse().ok())
        .unwrap_or_else(|| panic!("{results:?}"));
    assert!((1000..=2000).contains(&waited), "{results:?}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("b.slow")).unwrap(),
        "y\n"
    );
}

#[test]
fn a_server_starts_in_the_nearest_folder_with_its_root_marker_one_per_root() {
    let dir = workspace();
    let root = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join("pkg/src")).unwrap();
    std::fs::write(root.join("pkg/project.marker"), "").unwrap();
    std::fs::write(root.join("pkg/src/a.fk"), "one\n").unwrap();
    std::fs::write(root.join("b.fk"), "one\n").unwrap();
    let mut config = fake(&root, "root", &[]);
    config.servers[0].root_markers = vec!["project.marker".into()];
    let diagnostics = Diagnostics::new(config);
    let results = run(
        &root,
        &diagnostics,
        vec![
            call(
                "a",
                "edit",
                json!({"path": "pkg/src/a.fk", "edits": [{"oldText": "one", "newText": "BROKEN"}]}),
            ),
            call(
                "b",
                "edit",
                json!({"path": "b.fk", "edits": [{"oldText": "one", "newText": "BROKEN"}]}),
            ),
        ],
    );
    let pkg = format!("root {}", root.join("pkg").display());
    assert!(results["a"].contains(&pkg), "{results:?}");
    assert!(
        results["b"].contains(&format!("root {}\n", root.display()))
            || results["b"].ends_with(&format!("root {}", root.display())),
        "{results:?}"
    );
}

/// A hostile model names a served file outside the workspace (`..`, an absolute path, a link
/// planted in the workspace) or a FIFO: none is read or shown to a server, and no call hangs.
#[test]
fn files_outside_the_workspace_links_out_of_it_and_fifos_are_never_read_or_shown() {
    let outside = workspace();
    let secret = outside.path().canonicalize().unwrap().join("secret.fk");
    std::fs::write(&secret, "BROKEN secret\n").unwrap();
    let dir = workspace();
    let root = dir.path().canonicalize().unwrap();
    std::os::unix::fs::symlink(&secret, root.join("link.fk")).unwrap();
    rustix::fs::mknodat(
        rustix::fs::CWD,
        root.join("pipe.fk"),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    let diagnostics = Diagnostics::new(fake(&root, "normal", &[]));
    let relative = format!(
        "../{}/secret.fk",
        secret
            .parent()
            .unwrap()
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
    );
    let write = |id: &str, path: &str| {
        call(
            id,
            "write",
            json!({"path": path, "content": "BROKEN again\n"}),
        )
    };
    let results = run(
        &root,
        &diagnostics,
        vec![
            write("dotdot", &relative),
            write("absolute", secret.to_str().unwrap()),
            write("link", "link.fk"),
            write("pipe", "pipe.fk"),
        ],
    );
    for id in ["dotdot", "absolute", "link", "pipe"] {
        assert!(!results[id].contains("Diagnostics"), "{id}: {results:?}");
    }
    // Nor can the model's tool look there.
    let listing = tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(diagnostics.listing(Some(&relative), false));
    assert!(listing.unwrap_err().contains("is outside the workspace"));
    assert!(diagnostics.notes().is_empty(), "{:?}", diagnostics.notes());
}
