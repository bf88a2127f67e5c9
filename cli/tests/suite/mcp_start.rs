//! An MCP server that never finishes starting, through the binary: the wait has a bound that
//! the error states (and says how to raise), and Ctrl-C while it starts stops it too.

use crate::support;

use std::path::Path;
use std::process::Stdio;

use serde_json::json;
use support::cli::*;
use support::wait_for_file;

/// A server that writes its PID to `pid` and never answers `initialize`.
fn silent_server(dir: &Path) -> String {
    format!(
        "python3 -c 'import os, time; open(\"{}\", \"w\").write(str(os.getpid())); time.sleep(1000)'",
        dir.join("pid").display()
    )
}

fn alive(pid: i32) -> bool {
    // A zombie is gone for this purpose: it runs nothing.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|stat| !stat[stat.rfind(')').unwrap() + 2..].starts_with('Z'))
}

fn wait_gone(pid: i32) {
    let started = std::time::Instant::now();
    while alive(pid) {
        assert!(
            started.elapsed() < support::HANG_GUARD,
            "the server {pid} is still running"
        );
        std::thread::yield_now();
    }
}

#[test]
fn a_server_that_never_answers_fails_within_the_stated_bound_and_is_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let script = script_file(dir.path(), "s.jsonl", &[json!({"text": "done"})]);
    let output = golato()
        .args([
            "run",
            "--mcp",
            &silent_server(dir.path()),
            "--mcp-timeout",
            "0.5",
        ])
        .arg("--script")
        .arg(&script)
        .arg("go")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let error = one_error_line(&output);
    assert!(error.contains("within 0.5 s"), "{error}");
    assert!(error.contains("--mcp-timeout"), "{error}");
    let pid: i32 = std::fs::read_to_string(dir.path().join("pid"))
        .unwrap()
        .parse()
        .unwrap();
    wait_gone(pid);
}

#[test]
fn ctrl_c_while_a_server_starts_exits_130_and_stops_it() {
    let dir = tempfile::tempdir().unwrap();
    let script = script_file(dir.path(), "s.jsonl", &[json!({"text": "done"})]);
    let child = golato()
        .args(["run", "--mcp", &silent_server(dir.path())])
        .arg("--script")
        .arg(&script)
        .arg("go")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_file(&dir.path().join("pid"));
    let pid: i32 = loop {
        if let Ok(pid) = std::fs::read_to_string(dir.path().join("pid"))
            .unwrap()
            .parse()
        {
            break pid;
        }
        std::thread::yield_now();
    };
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(child.id() as i32).unwrap(),
        rustix::process::Signal::INT,
    )
    .unwrap();
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(130), "{output:?}");
    wait_gone(pid);
}
