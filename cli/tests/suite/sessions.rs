//! Sessions: every `golato run` is saved as it goes; `--continue` and `golato resume` go on
//! from where one stopped (Ctrl-C and SIGKILL included); `golato sessions` lists them.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};

use serde_json::json;
use support::cli::*;
use support::wait_for_file;

/// A session's first turn: a bash call that appends to `ledger`, says it started and waits for
/// `go`; then the answer.
fn waiting_script(dir: &Path) -> PathBuf {
    script_file(
        dir,
        "script.jsonl",
        &[
            json!({"text": "Looking.", "tool_calls": [{"id": "w", "name": "bash", "arguments": {"command": "echo ran >> ledger; touch started; while [ ! -e go ]; do sleep 0.01; done; echo went"}}]}),
            json!({"text": "Done."}),
        ],
    )
}

fn start(dir: &Path, script: &Path, flags: &[&str]) -> Child {
    golato()
        .arg("run")
        .args(flags)
        .arg("-C")
        .arg(dir)
        .arg("--script")
        .arg(script)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn session_id(stderr: &[u8]) -> String {
    let stderr = String::from_utf8_lossy(stderr);
    let header = stderr.lines().find(|line| is_header(line)).unwrap();
    header
        .rsplit_once(" · session ")
        .map(|(_, id)| id.to_owned())
        .unwrap_or_else(|| panic!("no session in {header}"))
}

fn signal(child: &Child, signal: rustix::process::Signal) {
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(child.id() as i32).unwrap(),
        signal,
    )
    .unwrap();
}

#[test]
fn a_run_stopped_by_ctrl_c_goes_on_with_continue_running_the_interrupted_call_again() {
    let dir = tempfile::tempdir().unwrap();
    let script = waiting_script(dir.path());
    let first = start(dir.path(), &script, &["first prompt"]);
    wait_for_file(&dir.path().join("started"));
    signal(&first, rustix::process::Signal::INT);
    let first = first.wait_with_output().unwrap();
    assert_eq!(first.status.code(), Some(130), "{first:?}");
    let id = session_id(&first.stderr);

    std::fs::write(dir.path().join("go"), "").unwrap();
    // No prompt: the session goes on where it stopped, the interrupted call first.
    let second = start(dir.path(), &script, &["-c"])
        .wait_with_output()
        .unwrap();
    assert_eq!(second.status.code(), Some(0), "{second:?}");
    assert_eq!(stdout(&second), "Done.\n");
    assert_eq!(session_id(&second.stderr), id, "the same session");
    let ledger = std::fs::read_to_string(dir.path().join("ledger")).unwrap();
    assert_eq!(ledger, "ran\nran\n", "cancelled, then run again");

    let listed = golato_output(&["sessions"]);
    let line = stdout(&listed)
        .lines()
        .find(|line| line.starts_with(&id))
        .map(str::to_owned)
        .unwrap();
    assert!(line.contains("2 turn(s)"), "{line}");
    assert!(line.contains("first prompt"), "{line}");
    assert!(
        line.contains(&dir.path().canonicalize().unwrap().display().to_string()),
        "{line}"
    );
}

#[test]
fn a_killed_run_leaves_its_session_readable_and_resume_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let script = waiting_script(dir.path());
    let mut first = start(dir.path(), &script, &["go on after a kill"]);
    wait_for_file(&dir.path().join("started"));
    // Nothing can be cleaned up after SIGKILL: what was saved is all there is.
    signal(&first, rustix::process::Signal::KILL);
    first.wait().unwrap();
    let mut stderr = Vec::new();
    std::io::Read::read_to_end(first.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    let id = session_id(&stderr);
    // The orphaned command is still waiting: let it end.
    std::fs::write(dir.path().join("go"), "").unwrap();

    let resumed = golato()
        .args(["resume", &id, "--script"])
        .arg(&script)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(resumed.status.code(), Some(0), "{resumed:?}");
    assert_eq!(stdout(&resumed), "Done.\n");
    // Resumed in the session's own directory.
    assert!(story(&resumed).contains(&format!(
        " · cwd {} ",
        dir.path().canonicalize().unwrap().display()
    )));

    // The model has answered: going on needs a new prompt.
    let again = golato_output(&["resume", &id]);
    assert_eq!(again.status.code(), Some(2));
    assert!(one_error_line(&again).contains("give a prompt to go on"));
}

#[test]
fn ephemeral_saves_nothing_and_an_unknown_session_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let script = script_file(dir.path(), "script.jsonl", &[json!({"text": "Hi."})]);
    let output = start(dir.path(), &script, &["--ephemeral", "hello"])
        .wait_with_output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert!(
        !story(&output).contains(" · session "),
        "{}",
        story(&output)
    );

    let output = golato_output(&["resume", "no-such-session"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(one_error_line(&output).contains("golato sessions"));

    let elsewhere = tempfile::tempdir().unwrap();
    let output = golato()
        .args(["run", "-c", "-C"])
        .arg(elsewhere.path())
        .arg("hi")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(one_error_line(&output).contains("no session to continue"));
}
