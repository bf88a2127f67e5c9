//! `golato run --journal FILE` under kill -9 (issue 17, point 1): the run's steps are synced to
//! the file as they happen; a run started again on the file after golato was SIGKILLed mid-batch
//! runs no call the file recorded, tells the model the one that was running was interrupted (or
//! runs it again, where a `[durable] safe` rule says it may), and finishes.

use crate::support;

use std::process::Stdio;
use std::time::Instant;

use serde_json::json;
use support::cli::*;
use support::HANG_GUARD;

fn wait_for(what: &str, done: impl Fn() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < HANG_GUARD, "{what} never happened");
        std::thread::yield_now();
    }
}

#[test]
fn a_run_killed_mid_batch_is_picked_up_from_its_journal() {
    killed_mid_batch(None);
}

#[test]
fn a_durable_safe_rule_runs_the_interrupted_command_again() {
    killed_mid_batch(Some("[durable]\nsafe = [\"bash\"]\n"));
}

/// A rule naming a script run by its shell (issue 54: `bash(bash x.sh *)` never matched, the
/// script's name and arguments taken for commands of their own).
#[test]
fn a_durable_safe_rule_naming_a_script_run_by_bash_runs_it_again() {
    killed_mid_batch_as(
        Some("[durable]\nsafe = [\"bash(bash */b.sh *)\"]\n"),
        Shape::Script,
    );
}

fn killed_mid_batch(user_config: Option<&str>) {
    killed_mid_batch_as(user_config, Shape::Line);
}

/// How call b's command is given.
#[derive(PartialEq)]
enum Shape {
    /// As a line of its own.
    Line,
    /// As `bash DIR/b.sh now`, the line in the script.
    Script,
}

/// golato run --journal killed while call b runs, and started again: b (a bash call, `once`
/// unless `user_config` makes it safe) is not run again, its result saying it was interrupted;
/// a rule covering it runs it again as attempt 2.
fn killed_mid_batch_as(user_config: Option<&str>, shape: Shape) {
    let dir = tempfile::tempdir().unwrap();
    // Call a appends to the ledger and ends; call b appends, says it started and (the first
    // time) sleeps until it is killed with golato.
    // b.pid comes last, whole (renamed into place): the test kills the command as soon as it
    // sees it, and b.started must be there by then. All in a folder outside the working
    // directory, written in place (a sandboxed command's changes to the working directory
    // reach it when the command ends, which b's first run never does).
    let signals = support::signals();
    let g = signals.path().display();
    // b also writes partial.txt in the working directory before it sleeps: captured, it
    // reaches the folder only when golato starts again, and b's result names it.
    let mut b = format!("echo b >> {g}/ledger; if [ -e {g}/b.started ]; then echo again; else echo half > partial.txt; touch {g}/b.started; echo $$ > {g}/b.pid.new; mv {g}/b.pid.new {g}/b.pid; exec sleep 1000.4321; fi");
    if shape == Shape::Script {
        std::fs::write(signals.path().join("b.sh"), format!("{b}\n")).unwrap();
        b = format!("bash {g}/b.sh now");
    }
    let script = script_file(
        dir.path(),
        "script.jsonl",
        &[
            json!({"tool_calls": [
                {"id": "a", "name": "bash", "arguments": {"command": format!("echo a >> {g}/ledger; echo done-a")}},
                {"id": "b", "name": "bash", "arguments": {"command": b}},
            ]}),
            json!({"text": "finished"}),
        ],
    );
    let journal = dir.path().join("run.journal");
    let config = dir.path().join("user.toml");
    std::fs::write(&config, user_config.unwrap_or_default()).unwrap();
    let run = || {
        let mut command = golato();
        command
            .env("GOLATO_CONFIG", &config)
            .args(["run", "--json", "--cwd"])
            .arg(dir.path())
            .arg("--script")
            .arg(&script)
            .arg("--journal")
            .arg(&journal)
            .arg("go")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        command
    };
    let mut first = run().spawn().unwrap();
    // The handshake: a's result is in the journal and b is running.
    wait_for("a's record and b's start", || {
        std::fs::read_to_string(&journal)
            // a's record, not its start (`{"started": …}`): both name the step.
            .is_ok_and(|text| text.contains("\"step\":\"turn-1/call-a\""))
            && signals.path().join("b.pid").exists()
    });
    let sleeping = || {
        std::fs::read_dir("/proc").unwrap().flatten().any(|entry| {
            std::fs::read(entry.path().join("cmdline"))
                .is_ok_and(|cmdline| cmdline.starts_with(b"sleep\x001000.4321"))
        })
    };
    wait_for("b to sleep", sleeping);
    first.kill().unwrap();
    first.wait().unwrap();
    // The sandboxed command ends with golato, SIGKILL included (it would otherwise sleep on,
    // unreaped).
    wait_for("the sleeping command to end with golato", || !sleeping());

    let second = run().output().unwrap();
    assert!(second.status.success(), "{second:?}");
    let stdout = String::from_utf8_lossy(&second.stdout);
    assert!(stdout.contains("finished"), "{stdout}");
    let ledger = std::fs::read_to_string(signals.path().join("ledger")).unwrap();
    let count = |line: &str| ledger.lines().filter(|entry| *entry == line).count();
    assert_eq!(
        count("a"),
        1,
        "a's result was journaled: it did not run again"
    );
    let b_end = stdout
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .find(|line| line["type"] == "tool_end" && line["call_id"] == "b")
        .unwrap();
    assert_eq!(b_end["attempt"], 2, "{b_end}");
    match user_config {
        Some(_) => {
            assert_eq!(
                count("b"),
                2,
                "b was running at the kill, and is safe: it ran again"
            );
            assert_eq!(b_end["result"]["is_error"], false, "{b_end}");
        }
        None => {
            assert_eq!(
                count("b"),
                1,
                "b was running at the kill: bash runs a call at most once"
            );
            let text = b_end["result"]["content"][0]["text"].as_str().unwrap();
            assert!(
                text.contains("interrupted") && text.contains("attempt 2"),
                "{text}"
            );
            assert_eq!(b_end["result"]["is_error"], true, "{b_end}");
            assert_eq!(b_end["result"]["details"]["interrupted"]["replay"], "once");
            // What its command changed before the kill was applied and is named.
            assert!(text.contains("partial.txt"), "{text}");
            assert_eq!(
                std::fs::read_to_string(dir.path().join("partial.txt")).unwrap(),
                "half\n"
            );
            let recovered = &b_end["result"]["details"]["recovered"]["changes"];
            assert!(recovered.to_string().contains("partial.txt"), "{b_end}");
        }
    }
    let journaled = std::fs::read_to_string(&journal).unwrap();
    for step in ["turn-1", "turn-1/call-a", "turn-1/call-b", "turn-2"] {
        assert!(
            journaled.contains(&format!("\"step\":\"{step}\"")),
            "{step} missing from {journaled}"
        );
    }
}

#[test]
fn a_journal_that_is_not_golatos_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("notes.txt");
    std::fs::write(&journal, "shopping list\n").unwrap();
    let output = golato_output(&[
        "run",
        "--journal",
        journal.to_str().unwrap(),
        "--script",
        script_file(dir.path(), "s.jsonl", &[json!({"text": "hi"})])
            .to_str()
            .unwrap(),
        "go",
    ]);
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("line 1") && stderr.contains("not golato's"),
        "{stderr}"
    );
}
