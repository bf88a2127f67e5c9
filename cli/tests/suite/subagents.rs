//! `--tools …,task` through the binary: two subagents at once under the parent's sandbox and
//! rules, their events in `--json`, their transcripts beside the session and removed with it.

use crate::support;

use serde_json::{json, Value};
use support::cli::*;
use support::compaction::{answers, first_prompt, sse, wire_call, wire_text};
use support::provider::{FakeProvider, Reply, Script};

/// Answers each run by its first prompt and how far it got: the parent hands two files to two
/// subagents; each child writes its file (child B's is denied by a rule) and says so.
fn respond(request: &Value, _size: usize) -> Reply {
    let (first, answered) = (first_prompt(request), answers(request));
    let calls = |calls: Vec<Value>| {
        let mut calls = calls;
        for (index, call) in calls.iter_mut().enumerate() {
            call["index"] = json!(index);
        }
        json!({"tool_calls": calls})
    };
    let answer = match (first.as_str(), answered) {
        ("main", 0) => calls(vec![
            wire_call(
                "t1",
                "task",
                json!({"description": "write a", "prompt": "child A"}),
            ),
            wire_call(
                "t2",
                "task",
                json!({"description": "write b", "prompt": "child B", "tools": ["write"]}),
            ),
        ]),
        ("main", _) => json!({"text": "both asked"}),
        ("child A", 0) => calls(vec![wire_call(
            "w",
            "write",
            json!({"path": "a.txt", "content": "A"}),
        )]),
        ("child B", 0) => calls(vec![wire_call(
            "w",
            "write",
            json!({"path": "b.txt", "content": "B"}),
        )]),
        (child, _) => json!({"text": format!("{child} finished")}),
    };
    Reply::sse(sse(&answer))
}

#[test]
fn subagents_work_under_the_parents_rules_and_their_transcripts_are_kept_with_the_session() {
    let (_runtime, url, provider) =
        FakeProvider::start_blocking(Script::Respond(Box::new(respond)));
    let dir = tempfile::tempdir().unwrap();
    let output = golato()
        .args([
            "run",
            "--json",
            "--base-url",
            &format!("{url}/v1"),
            "--model",
            "m",
        ])
        .args(["--tools", "read,write,task", "--deny", "write(b.txt)", "-C"])
        .arg(dir.path())
        .arg("main")
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let lines = json_lines(&output);

    // Child A wrote its file; child B's write met the parent's rule.
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
        "A"
    );
    assert!(!dir.path().join("b.txt").exists());
    let ends = of_type(&lines, "tool_end");
    let result = |id: &str| {
        ends.iter()
            .find(|end| end["call"]["id"] == id)
            .map(|end| {
                end["result"]["content"][0]["text"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .unwrap()
    };
    assert!(
        result("t1").starts_with("child A finished"),
        "{}",
        result("t1")
    );
    assert!(
        result("t1").contains("[The subagent changed 1 file(s) with write and edit: a.txt]"),
        "{}",
        result("t1")
    );
    assert!(
        result("t2").starts_with("child B finished"),
        "{}",
        result("t2")
    );

    // Their events came through, tagged with the call that started each.
    let nested = of_type(&lines, "subagent");
    let blocked = nested.iter().find(|event| {
        event["path"] == json!(["t2"])
            && event["event"]["type"] == "tool_end"
            && event["event"]["result"]["is_error"] == true
    });
    let blocked = blocked.expect("child B's refused write is not among the events");
    assert!(
        blocked["event"]["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("b.txt"),
        "{blocked}"
    );
    let session = session_file(dir.path()).expect("the run's session is not saved");
    let session = session.file_stem().unwrap().to_str().unwrap();

    // Each child's transcript beside the session, gone with it.
    let tasks = session_file(dir.path()).unwrap().with_extension("tasks");
    let saved = std::fs::read_to_string(tasks.join("t1.jsonl")).unwrap();
    let saved: Vec<Value> = saved
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(saved[0]["description"], "write a");
    assert_eq!(saved[1]["message"]["role"], "user");
    // Header, prompt, call, result, answer, end.
    assert_eq!(saved.len(), 6, "{saved:?}");
    assert_eq!(saved[5]["end"]["error"], Value::Null);
    assert!(tasks.join("t2.jsonl").is_file());
    // A child's write is its task call's change: undoing the prompt takes it back.
    let undone = golato()
        .args(["undo", "-C"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(undone.status.success(), "{undone:?}");
    assert!(!dir.path().join("a.txt").exists());
    let removed = golato().args(["sessions", "rm", session]).output().unwrap();
    assert!(removed.status.success(), "{removed:?}");
    assert!(!tasks.exists());

    // Depth 2 (the default): child A, which named no tools, may start subagents of its own.
    let offered = |bodies: Vec<Value>, prompt: &str| -> Vec<String> {
        let body = bodies
            .into_iter()
            .find(|body| wire_text(&body["messages"][1]) == prompt)
            .unwrap();
        body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|tool| tool["function"]["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert!(offered(provider.take_bodies(), "child A").contains(&"task".to_owned()));

    // The live view shows each child's calls under the task call that started it; with
    // --task-depth 1 a child gets no task tool.
    let again = tempfile::tempdir().unwrap();
    let output = golato()
        .args([
            "run",
            "--base-url",
            &format!("{url}/v1"),
            "--model",
            "m",
            "--ephemeral",
        ])
        .args(["--task-depth", "1"])
        .args(["--tools", "read,write,task", "--deny", "write(b.txt)", "-C"])
        .arg(again.path())
        .arg("main")
        .output()
        .unwrap();
    let story = story(&output);
    assert!(story.contains("→ task write a"), "{story}");
    assert!(story.contains("  ┆ ✓ write a.txt (1 bytes)"), "{story}");
    assert!(story.contains("  ┆ ✗ write b.txt (1 bytes)"), "{story}");
    assert!(story.contains("✓ task write a"), "{story}");
    assert!(!offered(provider.take_bodies(), "child A").contains(&"task".to_owned()));
}

#[test]
fn the_front_end_shows_a_subagents_calls_under_its_task_and_counts_its_changes() {
    let (_runtime, url, _provider) =
        FakeProvider::start_blocking(Script::Respond(Box::new(respond)));
    for size in super::front::SIZES {
        let dir = tempfile::tempdir().unwrap();
        let mut command = golato();
        command
            .arg("-C")
            .arg(dir.path())
            .args([
                "--base-url",
                &format!("{url}/v1"),
                "--model",
                "m",
                "--ephemeral",
            ])
            .args(["--tools", "read,write,task", "--deny", "write(b.txt)"]);
        let mut terminal = super::front::ready(super::front::in_terminal(command, size), size);
        terminal.type_raw("main\r");
        let shown = super::front::wait_until(&mut terminal, size, "the run's end", |shown| {
            shown.contains("done: 2 turns")
        });
        assert!(shown.contains("  ┆ ✓ write a.txt (1 bytes)"), "{shown}");
        assert!(shown.contains("  ┆ ✗ write b.txt (1 bytes)"), "{shown}");
        assert!(shown.contains("✓ task write a"), "{shown}");
        // Child A's write is this session's change.
        assert!(shown.contains("1 file changed"), "{shown}");
        super::front::leave(terminal, size);
    }
}

/// A parent whose one subagent starts a command that waits: for a kill in the middle.
fn respond_waiting(request: &Value, _size: usize) -> Reply {
    let answer = match first_prompt(request).as_str() {
        "main" => {
            json!({"tool_calls": [wire_call("t1", "task", json!({"description": "wait", "prompt": "child"}))]})
        }
        _ => {
            json!({"tool_calls": [wire_call("b", "bash", json!({"command": "touch started; sleep 1000"}))]})
        }
    };
    Reply::sse(sse(&answer))
}

#[test]
fn a_killed_golato_keeps_what_its_subagent_did_so_far() {
    let (_runtime, url, _provider) =
        FakeProvider::start_blocking(Script::Respond(Box::new(respond_waiting)));
    let dir = tempfile::tempdir().unwrap();
    let mut child = golato()
        .args(["run", "--base-url", &format!("{url}/v1"), "--model", "m"])
        // The test watches for the command's file in the working directory as it runs.
        .args(["--tools", "bash,task", "--no-bash-checkpoints", "-q", "-C"])
        .arg(dir.path())
        .arg("main")
        .spawn()
        .unwrap();
    // The child's transcript is written as it goes: its call is on disk while the command
    // still runs (a transcript written at the child's end would never get there).
    let transcript =
        || session_file(dir.path()).map(|session| session.with_extension("tasks").join("t1.jsonl"));
    let started = std::time::Instant::now();
    loop {
        let lines = transcript()
            .and_then(|path| std::fs::read_to_string(path).ok())
            .map_or(0, |text| text.lines().count());
        if lines >= 3 && dir.path().join("started").exists() {
            break;
        }
        assert!(
            started.elapsed() < support::HANG_GUARD,
            "the child's call was never saved"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let saved = std::fs::read_to_string(transcript().unwrap()).unwrap();
    let lines: Vec<Value> = saved
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    // Header, prompt, and the answer that started the command: what the child did so far.
    assert_eq!(lines.len(), 3, "{saved}");
    assert_eq!(lines[2]["message"]["tool_calls"][0]["id"], "b", "{saved}");
}
