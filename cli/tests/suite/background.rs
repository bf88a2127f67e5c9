//! Background commands through the binary, in the default sandbox: a dev server started in the
//! background is reached with `curl` by a later call of the same run, then killed; nothing of
//! it outlives golato, whether the run ends, or golato is killed with SIGTERM or SIGKILL.

use crate::support;

use std::process::Stdio;

use serde_json::json;
use support::cli::{golato, json_lines, of_type, script_file};

fn marker(name: &str) -> String {
    format!("GOLATO_BACKGROUND_CLI={name}-{}", std::process::id())
}

/// Waits (bounded) until no live process carries `marker`.
fn assert_all_gone(marker: &str) {
    for _ in 0..2_000 {
        if support::processes_with(marker).is_empty() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    panic!(
        "processes outlived golato: {:?}",
        support::processes_with(marker)
    );
}

/// Waits (bounded) until some live process carries `marker`: the handshake that the command
/// runs.
fn wait_running(marker: &str) {
    for _ in 0..6_000 {
        if !support::processes_with(marker).is_empty() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    panic!("no process carries {marker}");
}

/// `golato run --json --ephemeral --approve never --cwd WS --script SCRIPT go`; more flags may
/// follow (they come after the prompt, as clap takes them).
fn golato_run(ws: &std::path::Path, script: &std::path::Path) -> std::process::Command {
    let mut command = golato();
    command
        .args([
            "run",
            "--json",
            "--ephemeral",
            "--approve",
            "never",
            "--cwd",
        ])
        .arg(ws)
        .arg("--script")
        .arg(script)
        .arg("go");
    command
}

fn bash(id: &str, arguments: serde_json::Value) -> serde_json::Value {
    json!({"tool_calls": [{"id": id, "name": "bash", "arguments": arguments}]})
}

#[test]
fn a_dev_server_in_the_background_is_reached_by_a_later_call_and_killed() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("hello.txt"), "hello from the workspace\n").unwrap();
    let marker = marker("server");
    let script = script_file(
        ws.path(),
        "script.jsonl",
        &[
            bash(
                "start",
                json!({"command": format!("export {marker}; exec python3 -u -m http.server 8765 --bind 127.0.0.1"), "background": true}),
            ),
            json!({"tool_calls": [{"id": "ready", "name": "bash_output", "arguments": {"id": 1, "since": 0, "pattern": "Serving HTTP", "wait": 60}}]}),
            bash(
                "fetch",
                json!({"command": "curl -sS http://127.0.0.1:8765/hello.txt"}),
            ),
            json!({"tool_calls": [{"id": "kill", "name": "bash_kill", "arguments": {"id": 1}}]}),
            json!({"text": "done"}),
        ],
    );
    let output = golato_run(ws.path(), &script).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let lines = json_lines(&output);
    assert_eq!(
        of_type(&lines, "run_start")[0]["tools"],
        json!(["read", "bash", "edit", "write", "bash_output", "bash_kill"])
    );
    let ends = of_type(&lines, "tool_end");
    let text = |index: usize| {
        ends[index]["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    assert!(
        text(0).starts_with("Started in the background as 1: export"),
        "{}",
        text(0)
    );
    assert!(text(1).contains("Serving HTTP"), "{}", text(1));
    assert_eq!(text(2), "hello from the workspace");
    assert!(text(3).contains("1 was ended"), "{}", text(3));
    assert_all_gone(&marker);
}

#[test]
fn background_commands_end_with_golato_however_it_ends() {
    use rustix::process::{kill_process, Pid, Signal};
    for sandbox in ["workspace-write", "off"] {
        for (signal, name) in [
            (Some(Signal::TERM), "term"),
            (Some(Signal::KILL), "kill"),
            (None, "end"),
        ] {
            let ws = tempfile::tempdir().unwrap();
            let marker = marker(&format!("{sandbox}-{name}"));
            let mut script = vec![bash(
                "start",
                json!({"command": format!("export {marker}; setsid sleep 1000 & sleep 1000"), "background": true}),
            )];
            if signal.is_some() {
                // A foreground call that runs until golato is signalled.
                script.push(bash("wait", json!({"command": "sleep 1000"})));
            }
            script.push(json!({"text": "done"}));
            let script = script_file(ws.path(), "script.jsonl", &script);
            let mut child = golato_run(ws.path(), &script)
                .args(["--sandbox", sandbox])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            if let Some(signal) = signal {
                wait_running(&marker);
                kill_process(Pid::from_raw(child.id() as i32).unwrap(), signal).unwrap();
            }
            let mut told = String::new();
            std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut told).unwrap();
            let status = child.wait().unwrap();
            if signal.is_none() {
                assert!(status.success(), "{name}: {status:?}");
                assert!(
                    told.contains("its background commands still running end with it: 1 (export"),
                    "{told}"
                );
            }
            assert_all_gone(&marker);
        }
    }
}

#[test]
fn max_background_zero_turns_them_off_and_the_model_is_told() {
    let ws = tempfile::tempdir().unwrap();
    let script = script_file(
        ws.path(),
        "script.jsonl",
        &[
            bash("start", json!({"command": "true", "background": true})),
            json!({"text": "done"}),
        ],
    );
    let output = golato_run(ws.path(), &script)
        .args(["--max-background", "0"])
        .output()
        .unwrap();
    let lines = json_lines(&output);
    assert_eq!(
        of_type(&lines, "run_start")[0]["tools"],
        json!(["read", "bash", "edit", "write"])
    );
    let end = of_type(&lines, "tool_end")[0];
    assert_eq!(end["result"]["is_error"], true);
    assert!(
        end["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("background commands are not offered here"),
        "{end}"
    );
}

/// The live processes named `marker` (their `argv[0]`: a daemon that cleared its environment
/// carries no other mark).
fn processes_named(marker: &str) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|entry| {
            let pid: i32 = entry.ok()?.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let state = stat[stat.rfind(')')? + 1..].trim_start().chars().next()?;
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            let first = cmdline.split(|byte| *byte == 0).next()?;
            (state != 'Z' && first == marker.as_bytes()).then_some(pid)
        })
        .collect()
}

/// With `--sandbox off`, daemons that clear their environment (`env -i`) and fork twice out of
/// a background command end with golato: when it ends normally, by SIGTERM and by SIGHUP (its
/// guard ends what it adopted before anything kills the guard).
#[test]
fn daemons_that_clear_their_environment_end_with_golato_without_a_sandbox() {
    use rustix::process::{kill_process, Pid, Signal};
    const DAEMONS: usize = 6;
    for (signal, name) in [
        (None, "end"),
        (Some(Signal::TERM), "term"),
        (Some(Signal::HUP), "hup"),
    ] {
        let ws = tempfile::tempdir().unwrap();
        let marker = format!("golato-daemon-{name}-{}", std::process::id());
        let start = format!(
            "for i in $(seq {DAEMONS}); do env -i setsid bash -c '(exec -a {marker} sleep 1000 &)'; done; echo started; sleep 1000"
        );
        let mut script = vec![
            bash("start", json!({"command": start, "background": true})),
            json!({"tool_calls": [{"id": "ready", "name": "bash_output", "arguments": {"id": 1, "since": 0, "pattern": "started", "wait": 60}}]}),
        ];
        if signal.is_some() {
            // A foreground call that runs until golato is signalled.
            script.push(bash("wait", json!({"command": "sleep 1000"})));
        }
        script.push(json!({"text": "done"}));
        let script = script_file(ws.path(), "script.jsonl", &script);
        let mut child = golato_run(ws.path(), &script)
            .args(["--sandbox", "off"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        if let Some(signal) = signal {
            for _ in 0..6_000 {
                if processes_named(&marker).len() == DAEMONS {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            assert_eq!(
                processes_named(&marker).len(),
                DAEMONS,
                "{name}: the daemons never ran"
            );
            kill_process(Pid::from_raw(child.id() as i32).unwrap(), signal).unwrap();
        }
        let mut told = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut told).unwrap();
        let status = child.wait().unwrap();
        if signal.is_none() {
            assert!(status.success(), "{name}: {status:?} {told}");
        }
        let mut left = processes_named(&marker);
        for _ in 0..1_000 {
            if left.is_empty() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
            left = processes_named(&marker);
        }
        for pid in &left {
            let _ = kill_process(Pid::from_raw(*pid).unwrap(), Signal::KILL);
        }
        assert!(
            left.is_empty(),
            "{name}: {} daemons outlived golato: {told}",
            left.len()
        );
    }
}

/// `bash_kill` sends SIGTERM first and waits: a command's TERM handler that takes half a
/// second to clean up finishes, sandbox or not.
#[test]
fn bash_kill_leaves_a_term_handler_its_grace() {
    for sandbox in ["workspace-write", "off"] {
        let ws = tempfile::tempdir().unwrap();
        let command = "trap 'sleep 0.5; echo cleaned > cleaned.txt; exit 0' TERM; echo ready; while true; do sleep 0.05; done";
        let script = script_file(
            ws.path(),
            "script.jsonl",
            &[
                bash("start", json!({"command": command, "background": true})),
                json!({"tool_calls": [{"id": "ready", "name": "bash_output", "arguments": {"id": 1, "since": 0, "pattern": "ready", "wait": 60}}]}),
                json!({"tool_calls": [{"id": "kill", "name": "bash_kill", "arguments": {"id": 1}}]}),
                json!({"text": "done"}),
            ],
        );
        let output = golato_run(ws.path(), &script)
            .args(["--sandbox", sandbox])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{sandbox}: {stderr}");
        let cleaned = std::fs::read_to_string(ws.path().join("cleaned.txt")).unwrap_or_default();
        assert_eq!(
            cleaned, "cleaned\n",
            "{sandbox}: the TERM handler never finished"
        );
    }
}

/// Without a sandbox, `bash_kill` ends the daemons a background command started that cleared
/// their environment too: the guard gives the grace to its whole tree and stays until it is
/// over, so the command's end orphans nothing.
#[test]
fn bash_kill_ends_daemons_that_cleared_their_environment_without_a_sandbox() {
    const DAEMONS: usize = 3;
    let ws = tempfile::tempdir().unwrap();
    let marker = format!("golato-killed-daemon-{}", std::process::id());
    let start = format!(
        "for i in $(seq {DAEMONS}); do env -i setsid bash -c '(exec -a {marker} sleep 1000 &)'; done; echo started; sleep 1000"
    );
    let script = script_file(
        ws.path(),
        "script.jsonl",
        &[
            bash("start", json!({"command": start, "background": true})),
            json!({"tool_calls": [{"id": "ready", "name": "bash_output", "arguments": {"id": 1, "since": 0, "pattern": "started", "wait": 60}}]}),
            json!({"tool_calls": [{"id": "kill", "name": "bash_kill", "arguments": {"id": 1}}]}),
            // Still running when the daemons are counted: golato's own end is not what ends them.
            bash(
                "count",
                json!({"command": format!("pgrep -c -f \"^{marker} \" || true")}),
            ),
            json!({"text": "done"}),
        ],
    );
    let output = golato_run(ws.path(), &script)
        .args(["--sandbox", "off"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let lines = json_lines(&output);
    let ends = of_type(&lines, "tool_end");
    let counted = ends[3]["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert_eq!(
        counted.trim(),
        "0",
        "daemons left after bash_kill: {counted}"
    );
    assert!(processes_named(&marker).is_empty());
}
