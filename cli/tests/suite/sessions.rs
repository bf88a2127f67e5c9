//! Sessions: every `golato run` is saved as it goes; `--continue` and `golato resume` go on
//! from where one stopped (Ctrl-C and SIGKILL included); `golato sessions` lists them.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};

use serde_json::json;
use support::cli::*;
use support::wait_for_file;

/// A session's first turn: a bash call that appends to `ledger` (in the working directory),
/// says it started and waits for `go` (both in `signals`); then the answer.
fn waiting_script(dir: &Path, signals: &Path) -> PathBuf {
    let g = signals.display();
    script_file(
        dir,
        "script.jsonl",
        &[
            json!({"text": "Looking.", "tool_calls": [{"id": "w", "name": "bash", "arguments": {"command": format!("echo ran >> ledger; touch {g}/started; while [ ! -e {g}/go ]; do sleep 0.01; done; echo went")}}]}),
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
    let signals = support::signals();
    let script = waiting_script(dir.path(), signals.path());
    let first = start(dir.path(), &script, &["first prompt"]);
    wait_for_file(&signals.path().join("started"));
    signal(&first, rustix::process::Signal::INT);
    let first = first.wait_with_output().unwrap();
    assert_eq!(first.status.code(), Some(130), "{first:?}");
    let id = session_id(&first.stderr);

    std::fs::write(signals.path().join("go"), "").unwrap();
    // No prompt: the session goes on where it stopped, the interrupted call first.
    let second = start(dir.path(), &script, &["-c"])
        .wait_with_output()
        .unwrap();
    assert_eq!(second.status.code(), Some(0), "{second:?}");
    assert_eq!(stdout(&second), "Done.\n");
    assert_eq!(session_id(&second.stderr), id, "the same session");
    let ledger = std::fs::read_to_string(dir.path().join("ledger")).unwrap();
    assert_eq!(ledger, "ran\nran\n", "cancelled, then run again");

    let listed = golato_output(&["sessions", "--all"]);
    let line = stdout(&listed)
        .lines()
        .find(|line| line.starts_with(&id))
        .map(str::to_owned)
        .unwrap();
    assert!(line.contains("2 turns"), "{line}");
    assert!(line.contains("first prompt"), "{line}");
    assert!(
        line.contains(&dir.path().canonicalize().unwrap().display().to_string()),
        "{line}"
    );
}

#[test]
fn a_killed_run_leaves_its_session_readable_and_resume_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let signals = support::signals();
    let script = waiting_script(dir.path(), signals.path());
    let mut first = start(dir.path(), &script, &["go on after a kill"]);
    wait_for_file(&signals.path().join("started"));
    // The call runs beside the saving of the answer that made it: killed once the answer is
    // saved (a session appears whole, never half written).
    let saved = || {
        std::fs::read_dir(data_dir().join("sessions"))
            .into_iter()
            .flatten()
            .flatten()
            .filter(|entry| entry.path().extension().is_some_and(|e| e == "jsonl"))
            .any(|entry| {
                std::fs::read_to_string(entry.path()).is_ok_and(|text| {
                    text.contains("go on after a kill") && text.contains("Looking.")
                })
            })
    };
    let started = std::time::Instant::now();
    while !saved() {
        assert!(
            started.elapsed() < support::HANG_GUARD,
            "the answer was never saved"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    // Nothing can be cleaned up after SIGKILL: what was saved is all there is.
    signal(&first, rustix::process::Signal::KILL);
    first.wait().unwrap();
    let mut stderr = Vec::new();
    std::io::Read::read_to_end(first.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    let id = session_id(&stderr);
    // The orphaned command is still waiting: let it end.
    std::fs::write(signals.path().join("go"), "").unwrap();

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

#[test]
fn sessions_are_listed_per_directory_found_by_a_unique_start_and_removed() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut ids = Vec::new();
    for dir in [&a, &a, &b] {
        let script = script_file(dir.path(), "s.jsonl", &[json!({"text": "ok"})]);
        let output = run_script(dir.path(), &script, &[]);
        assert_eq!(output.status.code(), Some(0), "{output:?}");
        ids.push(session_id(&output.stderr));
    }
    let list = |flags: &[&str]| stdout(&golato_output(&[&["sessions"], flags].concat()));

    // This directory's, under a header, in words.
    let here = list(&["-C", a.path().to_str().unwrap()]);
    let rows: Vec<&str> = here.lines().collect();
    assert!(
        rows[0].starts_with("ID ") && rows[0].contains("LAST ACTIVE"),
        "{here}"
    );
    assert_eq!(rows.len(), 3, "{here}");
    assert!(
        rows[1].starts_with(&ids[1]) && rows[2].starts_with(&ids[0]),
        "{here}"
    );
    assert!(rows[1].contains(" 1 turn "), "{here}");
    assert!(!here.contains(&ids[2]), "{here}");
    let everywhere = list(&["--all"]);
    assert!(
        ids.iter().all(|id| everywhere.contains(id.as_str())),
        "{everywhere}"
    );

    // A unique start of an ID names it; a start several share is refused, naming them.
    let unique = &ids[2][..ids[2].len() - 1];
    // The recorded model answers by position: the first answer is the session's already.
    let script = script_file(
        b.path(),
        "t.jsonl",
        &[json!({"text": "ok"}), json!({"text": "again"})],
    );
    let resumed = golato()
        .args(["resume", unique, "--script"])
        .arg(&script)
        .arg("and again")
        .output()
        .unwrap();
    assert_eq!(resumed.status.code(), Some(0), "{resumed:?}");
    assert_eq!(session_id(&resumed.stderr), ids[2]);
    let shared = &ids[0][..3];
    let refused = golato_output(&["sessions", "rm", shared]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("give more of the ID"),
        "{refused:?}"
    );

    // Removed: gone from the list and from the disk.
    let removed = golato_output(&["sessions", "rm", &ids[0]]);
    assert_eq!(removed.status.code(), Some(0), "{removed:?}");
    assert!(!data_dir()
        .join("sessions")
        .join(format!("{}.jsonl", ids[0]))
        .exists());
    let here = list(&["-C", a.path().to_str().unwrap()]);
    assert!(!here.contains(&ids[0]) && here.contains(&ids[1]), "{here}");
}
