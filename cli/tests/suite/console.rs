//! `golato console` as a person uses it: a golato run serving its console, the viewer in tmux
//! at 80x24 and 120x40 showing the actor list, a run and a lint; `--json` for scripts.

use crate::support;

use super::front_habits::Tmux;
use support::cli::{golato, script_file};

use serde_json::json;
use std::process::Stdio;

/// A `golato run` whose one call waits (bash, polling for a gate file) with its console on a
/// Unix socket in `dir`, flagging anything running past 1 s.
fn waiting_run(dir: &std::path::Path) -> (std::process::Child, std::path::PathBuf) {
    let gate = dir.join("gate");
    let script = script_file(
        dir,
        "script.jsonl",
        &[
            json!({"tool_calls": [{"id": "slow", "name": "bash", "arguments": {"command": format!("touch '{}'; while [ ! -e '{}' ]; do sleep 0.05; done; echo opened", dir.join("started").display(), gate.display())}}]}),
            json!({"text": "finished"}),
        ],
    );
    let socket = dir.join("console.sock");
    let child = golato()
        .args(["run", "--script"])
        .arg(&script)
        .args(["--sandbox", "off", "--console"])
        .arg(&socket)
        .args(["--console-lint-after", "1", "go"])
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // The call runs (its command said so): the console shows it from now on.
    let started = std::time::Instant::now();
    while !(socket.exists() && dir.join("started").exists()) {
        assert!(
            started.elapsed() < support::HANG_GUARD,
            "no console socket, or the call never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    (child, gate)
}

#[test]
fn the_viewer_shows_the_actors_a_run_and_a_lint_at_80x24_and_120x40() {
    for size in [(24, 80), (40, 120)] {
        let dir = tempfile::tempdir().unwrap();
        let (mut run, gate) = waiting_run(dir.path());
        let socket = dir.path().join("console.sock");
        let viewer = Tmux::start(&["console", socket.to_str().unwrap()], size);
        // The list: the run waiting on its call, the call running bash.
        viewer.wait_until("the actor list", |shown| {
            shown.contains("run 1")
                && shown.contains("call 1/slow (bash)")
                && shown.contains("running its tool")
        });
        // Past 1 s the call is flagged; the lint names it, and Enter goes to it.
        viewer.wait_until("a lint", |shown| shown.contains("1 lints"));
        viewer.keys(&["4"]);
        let lints = viewer.wait_until("the lint list", |shown| shown.contains("handler_running"));
        assert!(
            lints.contains("call 1/slow (bash) has been running its tool"),
            "{lints}"
        );
        viewer.keys(&["Enter"]);
        viewer.wait_until("the actor the lint names", |shown| shown.contains("mbox"));
        // The run's view: the run, its batch's call and its timeline.
        viewer.keys(&["Enter"]);
        let run_view = viewer.wait_until("the run's view", |shown| {
            shown.contains("run 1") && shown.contains("slow bash") && shown.contains("█")
        });
        assert!(run_view.contains("path locks: none"), "{run_view}");
        viewer.keys(&["q"]);
        std::fs::write(&gate, "").unwrap();
        assert!(run.wait().unwrap().success());
    }
}

#[test]
fn json_prints_the_stream_and_a_missing_console_says_how_to_start_one() {
    let dir = tempfile::tempdir().unwrap();
    let (mut run, gate) = waiting_run(dir.path());
    let socket = dir.path().join("console.sock");
    let output = golato()
        .args(["console", "--json", "--updates", "2"])
        .arg(&socket)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let lines: Vec<serde_json::Value> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["type"], "hello");
    assert_eq!(lines[1]["type"], "snapshot");
    let calls: Vec<&serde_json::Value> = lines[1]["actors"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|actor| actor["kind"] == "call")
        .collect();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0]["call"], "slow");
    std::fs::write(&gate, "").unwrap();
    assert!(run.wait().unwrap().success());

    let missing = golato()
        .args(["console", "--json"])
        .arg(dir.path().join("nobody.sock"))
        .output()
        .unwrap();
    assert!(!missing.status.success());
    let said = String::from_utf8_lossy(&missing.stderr);
    assert!(said.contains("could not reach the console"), "{said}");
    assert!(said.contains("--console"), "{said}");
    let bad = golato()
        .args(["console", "not an address"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn a_hostile_stream_cannot_write_to_the_terminal_through_the_viewer() {
    // What a real console sends, taken from one, with escape sequences put in a call's ID.
    let dir = tempfile::tempdir().unwrap();
    let (mut run, gate) = waiting_run(dir.path());
    let output = golato()
        .args(["console", "--json", "--updates", "2"])
        .arg(dir.path().join("console.sock"))
        .output()
        .unwrap();
    std::fs::write(&gate, "").unwrap();
    assert!(run.wait().unwrap().success());
    let mut lines: Vec<serde_json::Value> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let call = lines[1]["actors"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|actor| actor["kind"] == "call")
        .unwrap();
    call["call"] = json!("s\u{1b}[2Jx\u{1b}]0;t\u{7}");
    // Served from a socket of the test's own, kept open until the viewer is done.
    let fake = dir.path().join("fake.sock");
    let listener = std::os::unix::net::UnixListener::bind(&fake).unwrap();
    let served = std::thread::spawn(move || {
        use std::io::{Read as _, Write as _};
        let (mut stream, _) = listener.accept().unwrap();
        for line in &lines {
            writeln!(stream, "{line}").unwrap();
        }
        let _ = stream.read(&mut [0u8; 1]);
    });
    let viewer = Tmux::start(&["console", fake.to_str().unwrap()], (40, 120));
    let shown = viewer.wait_until("the planted call", |shown| shown.contains("2Jx"));
    assert!(shown.contains("call 1/s^[[2Jx^[]0;t^G"), "{shown}");
    viewer.keys(&["q"]);
    drop(viewer);
    served.join().unwrap();
}

#[test]
fn a_stream_whose_line_never_ends_is_refused_at_the_bound_with_what_it_was() {
    // 256 MiB and a byte more of one line: the viewer stops at its bound instead of holding
    // whatever a server sends.
    let dir = tempfile::tempdir().unwrap();
    let fake = dir.path().join("endless.sock");
    let listener = std::os::unix::net::UnixListener::bind(&fake).unwrap();
    let served = std::thread::spawn(move || {
        use std::io::Write as _;
        let (mut stream, _) = listener.accept().unwrap();
        let chunk = vec![b'x'; 1 << 20];
        for _ in 0..=256 {
            if stream.write_all(&chunk).is_err() {
                // The viewer hung up at its bound.
                return;
            }
        }
    });
    let output = golato()
        .args(["console", "--json"])
        .arg(&fake)
        .output()
        .unwrap();
    served.join().unwrap();
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("longer than 256 MiB"), "{stderr}");
    assert!(output.stdout.is_empty());
}
