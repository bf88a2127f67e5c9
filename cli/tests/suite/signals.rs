//! Ctrl-C (SIGINT), SIGTERM, SIGHUP and SIGQUIT sent to the `golato` process while a bash tool runs: the run is
//! cancelled, the tool's whole process group is killed, what happened is printed and recorded,
//! and the exit status is 130 or 143.

use crate::support;

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::time::Instant;

use pretty_assertions::assert_eq;
use rustix::process::{kill_process, test_kill_process_group, Pid, Signal};
use serde_json::{json, Value};
use support::cli::*;
use support::HANG_GUARD;

fn send(child: &Child, signal: Signal) {
    let pid = Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap();
    kill_process(pid, signal).unwrap();
}

/// Waits until no process is left in the group: the killed shell's children are reaped by
/// init, a moment after the shell itself.
fn assert_group_gone(group: i32) {
    let pid = Pid::from_raw(group).unwrap();
    let started = Instant::now();
    while test_kill_process_group(pid).is_ok() {
        assert!(
            started.elapsed() < HANG_GUARD,
            "process group {group} still alive"
        );
        std::thread::yield_now();
    }
}

/// The process group (as this process sees it) of the process whose command line starts with
/// `cmdline` (arguments separated by NUL), once it exists.
fn group_of_command(cmdline: &str) -> i32 {
    let started = Instant::now();
    loop {
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(found) = std::fs::read(entry.path().join("cmdline")) else {
                continue;
            };
            if found.starts_with(cmdline.as_bytes()) {
                let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap();
                let after_name = &stat[stat.rfind(')').unwrap() + 2..];
                return after_name.split(' ').nth(2).unwrap().parse().unwrap();
            }
        }
        assert!(started.elapsed() < HANG_GUARD, "{cmdline:?} never started");
        std::thread::yield_now();
    }
}

fn interrupt_a_sleeping_bash(signal: Signal, code: i32, name: &str) {
    let dir = tempfile::tempdir().unwrap();
    let script = script_file(
        dir.path(),
        "script.jsonl",
        &[
            json!({"text": "Sleeping.", "tool_calls": [{"id": "s", "name": "bash", "arguments": {"command": "echo ready; sleep 1000.137"}}]}),
            json!({"text": "never reached"}),
        ],
    );
    let record = dir.path().join("record.jsonl");
    let mut child = golato()
        .args([
            "run",
            "--json",
            "--record",
            record.to_str().unwrap(),
            "--cwd",
            dir.path().to_str().unwrap(),
            "--script",
            script.to_str().unwrap(),
            "go",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen: Vec<Value> = Vec::new();
    // The handshake: the tool's own progress update says the shell is up; its sleep's process
    // group, seen from here (the sandboxed shell's own `$$` is a PID of its namespace), is the
    // one that must be gone afterwards.
    let group: i32 = loop {
        let line = lines
            .next()
            .expect("golato exited before the tool ran")
            .unwrap();
        let value: Value = serde_json::from_str(&line).unwrap();
        seen.push(value.clone());
        if value["type"] != "tool_update" {
            continue;
        }
        let text = value["partial_result"]["content"][0]["text"]
            .as_str()
            .unwrap();
        if text.trim() == "ready" {
            break group_of_command("sleep\u{0}1000.137");
        }
    };
    test_kill_process_group(Pid::from_raw(group).unwrap()).unwrap();
    send(&child, signal);
    for line in lines {
        seen.push(serde_json::from_str(&line.unwrap()).unwrap());
    }
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(code));
    assert_group_gone(group);

    let kinds: Vec<&str> = seen.iter().map(|v| v["type"].as_str().unwrap()).collect();
    assert!(kinds.contains(&"interrupted"));
    let interrupted = seen.iter().find(|v| v["type"] == "interrupted").unwrap();
    assert_eq!(interrupted["signal"], name);
    let end = seen.iter().find(|v| v["type"] == "tool_end").unwrap();
    let text = end["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.ends_with("Command aborted"), "{text}");
    let outcome = seen.last().unwrap();
    assert_eq!(outcome["type"], "outcome");
    assert_eq!(outcome["status"], "interrupted");
    assert_eq!(outcome["exit_code"], code);

    // The partial transcript is in the recording: the call and its aborted result.
    let recorded: Vec<Value> = std::fs::read_to_string(&record)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(recorded.len(), 1);
    assert_eq!(recorded[0]["tool_calls"][0]["id"], "s");
    let result = recorded[0]["tool_results"][0]["content"][0]["text"]
        .as_str()
        .unwrap();
    assert!(result.ends_with("Command aborted"), "{result}");
}

#[test]
fn ctrl_c_cancels_the_run_kills_the_tool_and_exits_130() {
    interrupt_a_sleeping_bash(Signal::INT, 130, "SIGINT");
}

#[test]
fn sigterm_cancels_the_run_kills_the_tool_and_exits_143() {
    interrupt_a_sleeping_bash(Signal::TERM, 143, "SIGTERM");
}

#[test]
fn sighup_and_sigquit_cancel_the_run_like_sigterm() {
    // Issue 21 item 15: a closed terminal (SIGHUP) or Ctrl-\\ (SIGQUIT) left the command running.
    interrupt_a_sleeping_bash(Signal::HUP, 129, "SIGHUP");
    interrupt_a_sleeping_bash(Signal::QUIT, 131, "SIGQUIT");
}

#[test]
fn ctrl_c_during_golato_tool_bash_kills_the_command_and_its_children() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    // The shell starts a grandchild that would outlive it if only the shell were killed.
    let command = json!({"command": "sleep 1000 & echo $$ > pid.tmp && mv pid.tmp pid; wait"});
    let child = golato()
        .args([
            "tool",
            "bash",
            &command.to_string(),
            "--cwd",
            dir.path().to_str().unwrap(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The handshake: the shell wrote its pid (renamed into place, so it is whole).
    let started = Instant::now();
    let group: i32 = loop {
        if let Ok(text) = std::fs::read_to_string(&pid_file) {
            break text.trim().parse().unwrap();
        }
        assert!(started.elapsed() < HANG_GUARD, "the command never started");
        std::thread::yield_now();
    };
    send(&child, Signal::INT);
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(130), "{output:?}");
    assert_group_gone(group);
    let printed: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(printed["is_error"], true);
    let text = printed["content"][0]["text"].as_str().unwrap();
    assert!(text.ends_with("Command aborted"), "{text}");
}

/// golato killed with SIGKILL (no chance to clean up) while a command runs: the command, a
/// background job and a daemon that left the session all end with it, sandboxed or not.
fn killed_golato_leaves_no_command_running(sandbox: &str) {
    let dir = tempfile::tempdir().unwrap();
    let marker = format!("GOLATO_TEST_KILLED={sandbox}-{}", std::process::id());
    let script = script_file(
        dir.path(),
        "script.jsonl",
        &[
            json!({"tool_calls": [{"id": "s", "name": "bash", "arguments": {"command":
                "(sleep 1000 &); setsid sleep 1001 & sleep 0.01; echo ready; sleep 1002"}}]}),
            json!({"text": "never reached"}),
        ],
    );
    let (name, value) = marker.split_once('=').unwrap();
    let mut child = golato()
        .args(["run", "--json", "--sandbox", sandbox, "--approve", "never"])
        .args(["--pass-env", name, "--cwd", dir.path().to_str().unwrap()])
        .args(["--script", script.to_str().unwrap(), "go"])
        .env(name, value)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    loop {
        let line = lines.next().expect("golato exited early").unwrap();
        let value: Value = serde_json::from_str(&line).unwrap();
        if value["type"] == "tool_update"
            && value["partial_result"]["content"][0]["text"]
                .as_str()
                .is_some_and(|text| text.contains("ready"))
        {
            break;
        }
    }
    // bash, the subshell's sleep, the daemon's sleep and the foreground sleep.
    assert!(
        support::processes_with(&marker).len() >= 4,
        "{:?}",
        support::processes_with(&marker)
    );
    send(&child, Signal::KILL);
    child.wait().unwrap();
    let killed = Instant::now();
    while !support::processes_with(&marker).is_empty() {
        assert!(
            killed.elapsed() < HANG_GUARD,
            "still running after golato was killed: {:?}",
            support::processes_with(&marker)
        );
        std::thread::yield_now();
    }
    eprintln!(
        "sandbox {sandbox}: every process gone {:?} after the kill",
        killed.elapsed()
    );
}

#[test]
fn a_killed_golato_leaves_no_command_running_without_a_sandbox() {
    killed_golato_leaves_no_command_running("off");
}

#[test]
fn a_killed_golato_leaves_no_command_running_in_the_sandbox() {
    killed_golato_leaves_no_command_running("workspace-write");
}
