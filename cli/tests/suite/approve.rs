//! `--approve`: calls that wait for a yes on the terminal (the binary on a pseudo terminal, a
//! person's answers typed at it), and the same calls where no terminal can answer.

use crate::support;

use std::path::Path;
use std::process::Stdio;

use serde_json::json;
use support::cli::*;

/// Two batches: bash and write, then bash again.
fn three_calls(dir: &Path) -> std::path::PathBuf {
    script_file(
        dir,
        "script.jsonl",
        &[
            json!({"text": "Working.", "tool_calls": [
                {"id": "a", "name": "bash", "arguments": {"command": "echo one > one.txt"}},
                {"id": "b", "name": "write", "arguments": {"path": "two.txt", "content": "2"}},
            ]}),
            json!({"tool_calls": [{"id": "c", "name": "bash", "arguments": {"command": "echo three > three.txt"}}]}),
            json!({"text": "Done."}),
        ],
    )
}

/// `golato run FLAGS --cwd DIR --script SCRIPT go` on a pseudo terminal.
fn on_a_terminal(dir: &Path, script: &Path, flags: &[&str]) -> Terminal {
    let mut command = golato();
    command.arg("run").args(flags).arg("--cwd").arg(dir);
    command.arg("--script").arg(script).arg("go");
    Terminal::start(command)
}

/// The same with standard input closed, as a pipeline or a CI job runs it.
fn without_a_terminal(dir: &Path, script: &Path, flags: &[&str]) -> std::process::Output {
    golato()
        .arg("run")
        .args(flags)
        .arg("--cwd")
        .arg(dir)
        .arg("--script")
        .arg(script)
        .arg("go")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn on_a_terminal_each_call_waits_for_yes_no_or_always() {
    let dir = tempfile::tempdir().unwrap();
    let script = three_calls(dir.path());
    let mut terminal = on_a_terminal(dir.path(), &script, &["--approve", "ask"]);
    terminal.wait_for("Allow bash $ echo one > one.txt?", 1);
    // Nothing ran before the answer.
    assert!(!dir.path().join("one.txt").exists());
    terminal.type_line("always");
    terminal.wait_for("Allow write two.txt", 1);
    terminal.type_line("n");
    let (code, screen) = terminal.finish();
    assert_eq!(code, Some(0), "{screen}");
    assert!(screen.contains(" · approve ask"), "{screen}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("one.txt")).unwrap(),
        "one\n"
    );
    assert!(!dir.path().join("two.txt").exists(), "{screen}");
    assert!(
        screen.contains("The user did not allow this write call"),
        "{screen}"
    );
    // "always" covered the later bash call: it ran without a question.
    assert_eq!(
        std::fs::read_to_string(dir.path().join("three.txt")).unwrap(),
        "three\n"
    );
    assert_eq!(screen.matches("Allow bash").count(), 1, "{screen}");
}

#[test]
fn ctrl_c_at_a_question_cancels_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let script = three_calls(dir.path());
    let mut terminal = on_a_terminal(dir.path(), &script, &["--approve", "ask"]);
    terminal.wait_for("Allow bash", 1);
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(terminal.child.id() as i32).unwrap(),
        rustix::process::Signal::INT,
    )
    .unwrap();
    let (code, screen) = terminal.finish();
    assert_eq!(code, Some(130), "{screen}");
    assert!(!dir.path().join("one.txt").exists(), "{screen}");
    assert!(!dir.path().join("three.txt").exists(), "{screen}");
}

#[test]
fn without_a_terminal_a_call_that_needs_a_yes_is_refused_with_how_to_allow_it() {
    let dir = tempfile::tempdir().unwrap();
    let script = three_calls(dir.path());
    let output = without_a_terminal(dir.path(), &script, &["--json", "--approve", "ask"]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let lines = json_lines(&output);
    assert_eq!(of_type(&lines, "run_start")[0]["approve"], "ask");
    let ends = of_type(&lines, "tool_end");
    assert_eq!(ends.len(), 3);
    for end in ends {
        assert_eq!(end["result"]["is_error"], true, "{end}");
        let text = end["result"]["content"][0]["text"].as_str().unwrap();
        assert!(text.contains("--approve never"), "{text}");
    }
    for file in ["one.txt", "two.txt", "three.txt"] {
        assert!(!dir.path().join(file).exists(), "{file}");
    }
}

#[test]
fn approve_edits_lets_writes_inside_the_workspace_through_and_asks_for_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let outside = elsewhere.path().join("outside.txt");
    let script = script_file(
        dir.path(),
        "script.jsonl",
        &[
            json!({"tool_calls": [
                {"id": "in", "name": "write", "arguments": {"path": "sub/inside.txt", "content": "in"}},
                {"id": "out", "name": "write", "arguments": {"path": outside, "content": "out"}},
                {"id": "up", "name": "write", "arguments": {"path": "../escape.txt", "content": "up"}},
                {"id": "sh", "name": "bash", "arguments": {"command": "echo x > bash.txt"}},
            ]}),
            json!({"text": "Done."}),
        ],
    );
    let output = golato()
        .args([
            "run",
            "--json",
            "--approve",
            "edits",
            "--sandbox",
            "off",
            "--cwd",
        ])
        .arg(dir.path())
        .arg("--script")
        .arg(&script)
        .arg("go")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("sub/inside.txt")).unwrap(),
        "in"
    );
    assert!(!outside.exists());
    assert!(!dir.path().parent().unwrap().join("escape.txt").exists());
    assert!(!dir.path().join("bash.txt").exists());
}

#[test]
fn the_default_asks_only_an_unconfined_run_on_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let script = three_calls(dir.path());
    // Sandboxed (the default) and piped: nothing asks, everything runs.
    let output = run_script(dir.path(), &script, &["--json"]);
    let lines = json_lines(&output);
    assert_eq!(of_type(&lines, "run_start")[0]["approve"], "never");
    assert!(dir.path().join("two.txt").exists());
    // Unconfined on a terminal: the first call asks.
    let mut terminal = on_a_terminal(dir.path(), &script, &["--sandbox", "off"]);
    terminal.wait_for("Allow bash", 1);
    terminal.type_line("y");
    terminal.wait_for("Allow write", 1);
    terminal.type_line("y");
    terminal.wait_for("Allow bash", 2);
    terminal.type_line("y");
    let (code, screen) = terminal.finish();
    assert_eq!(code, Some(0), "{screen}");
    assert!(screen.contains(" · sandbox off · approve ask"), "{screen}");
}
