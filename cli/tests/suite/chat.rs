//! `golato chat --plain` (the line-by-line chat) on a pseudo terminal, as a person uses it:
//! prompts, steering typed while a run works, Ctrl-C cancelling a run (not the program),
//! Ctrl-D leaving; the session saved. The full front end's tests are `front.rs`.

use crate::support;

use serde_json::json;
use support::cli::*;
use support::wait_for_file;

#[test]
fn a_chat_takes_prompts_steering_and_ctrl_c_then_ctrl_d_leaves() {
    let dir = tempfile::tempdir().unwrap();
    let signals = support::signals();
    let g = signals.path().display().to_string();
    let wait = |id: &str, name: &str, until: &str| json!({"id": id, "name": "bash", "arguments": {"command": format!("touch {g}/{name}; while [ ! -e {g}/{until} ]; do sleep 0.01; done; echo {name}-done")}});
    let script = script_file(
        dir.path(),
        "script.jsonl",
        &[
            json!({"text": "Working.", "tool_calls": [wait("a", "first", "go")]}),
            json!({"text": "First done."}),
            json!({"text": "Second answer."}),
            json!({"tool_calls": [wait("b", "slow", "never")]}),
        ],
    );
    let mut command = golato();
    command
        .args(["chat", "--plain", "-C"])
        .arg(dir.path())
        .arg("--script")
        .arg(&script);
    let mut terminal = Terminal::start(command);
    terminal.wait_for("› ", 1);
    terminal.type_line("do the thing");
    wait_for_file(&signals.path().join("first"));
    // Typed while the run works: it steers it.
    terminal.type_line("also check the docs");
    terminal.wait_for("» steering: also check the docs", 1);
    std::fs::write(signals.path().join("go"), "").unwrap();
    terminal.wait_for("First done.", 1);
    terminal.wait_for("› ", 2);
    terminal.type_line("next");
    terminal.wait_for("Second answer.", 1);
    terminal.wait_for("› ", 3);
    // Ctrl-C cancels the run that works, and the chat goes on.
    terminal.type_line("something slow");
    wait_for_file(&signals.path().join("slow"));
    let pid = rustix::process::Pid::from_raw(terminal.child.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
    terminal.wait_for("interrupted", 1);
    terminal.wait_for("› ", 4);
    // At the prompt, Ctrl-C only says how to leave; Ctrl-D leaves.
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
    terminal.wait_for("(Ctrl-D or /exit leaves)", 1);
    terminal.type_raw("\x04");
    let (code, screen) = terminal.finish();
    assert_eq!(code, Some(0), "{screen}");

    // The session holds the conversation in order, steering where it joined.
    let id = screen
        .lines()
        .find_map(|line| line.split(" · session ").nth(1))
        .map(|id| id.trim().to_owned())
        .unwrap();
    let file = data_dir().join("sessions").join(format!("{id}.jsonl"));
    let prompts: Vec<String> = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|step| step["message"]["role"] == "user")
        .map(|step| {
            step["message"]["content"][0]["text"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(
        prompts,
        [
            "do the thing",
            "also check the docs",
            "next",
            "something slow"
        ]
    );
}

#[test]
fn a_chat_goes_on_from_its_summary_after_a_compaction() {
    use support::compaction;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("page.txt"), "word ".repeat(400)).unwrap();
    let mut turns = compaction::tool_turns(6, "read", &json!({"path": "page.txt"}));
    turns.push(json!({"text": "Nothing changed."}));
    let (_runtime, url, provider) = compaction::provider(12_000, turns);
    let mut command = golato();
    command
        .args([
            "chat",
            "--plain",
            "--base-url",
            &url,
            "--model",
            "local-model",
            "--tools",
            "read",
            "-C",
        ])
        .arg(dir.path());
    let mut terminal = Terminal::start(command);
    terminal.wait_for("› ", 1);
    terminal.type_line("Read page.txt six times.");
    terminal.wait_for("context compacted", 1);
    terminal.wait_for("› ", 2);
    let before = provider.bodies().len();
    terminal.type_line("Anything new?");
    terminal.wait_for("Nothing changed.", 1);
    terminal.wait_for("› ", 3);
    terminal.type_raw("\x04");
    let (code, screen) = terminal.finish();
    assert_eq!(code, Some(0), "{screen}");
    let bodies = provider.bodies();
    // The second line's run asked once, starting from the first run's summary.
    assert_eq!(bodies.len(), before + 1, "{screen}");
    let first = &bodies[before].1["messages"][1];
    let text = compaction::wire_text(first);
    assert!(
        text.starts_with(golato::agent::compaction::SUMMARY_HEADER),
        "{first}"
    );
}

#[test]
fn golato_alone_chats_on_a_terminal_and_runs_what_is_piped_in() {
    let dir = tempfile::tempdir().unwrap();
    let script = script_file(
        dir.path(),
        "script.jsonl",
        &[json!({"text": "Hello there."})],
    );
    let args = |command: &mut std::process::Command| {
        command
            .args(["--ephemeral", "-C"])
            .arg(dir.path())
            .arg("--script")
            .arg(&script);
    };
    // The plain chat here; `front.rs` drives the full front end `golato` alone starts.
    let mut command = golato();
    command.arg("--plain");
    args(&mut command);
    let mut terminal = Terminal::start(command);
    terminal.wait_for("› ", 1);
    terminal.type_line("hi");
    terminal.wait_for("Hello there.", 1);
    terminal.wait_for("› ", 2);
    terminal.type_raw("\x04");
    let (code, screen) = terminal.finish();
    assert_eq!(code, Some(0), "{screen}");

    // Not a terminal: the prompt comes from standard input, as with `golato run`.
    let mut command = golato();
    args(&mut command);
    let mut child = command
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write as _;
    child.stdin.take().unwrap().write_all(b"hi\n").unwrap();
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert_eq!(stdout(&output), "Hello there.\n");
}
