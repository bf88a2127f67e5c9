//! `golato demo`, and the live terminal view as a person sees it (the binary on a pseudo
//! terminal).

use crate::support;

use std::process::Command;

use pretty_assertions::assert_eq;
use serde_json::json;
use support::cli::*;

#[test]
fn the_demo_fixes_its_project_and_the_check_ends_green() {
    let parent = tempfile::tempdir().unwrap();
    let dir = parent.path().join("demo");
    let output = golato_output(&["demo", "--json", "--dir", dir.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let lines = json_lines(&output);
    let outcome = lines.last().unwrap();
    assert_eq!(outcome["status"], "completed");
    assert_eq!(outcome["replay_mismatches"], 0, "{lines:#?}");
    assert_eq!(
        outcome["workspace"],
        dir.canonicalize().unwrap().to_str().unwrap()
    );
    // The session ran the check twice: red, then green.
    let checks: Vec<bool> = of_type(&lines, "tool_end")
        .iter()
        .filter(|end| end["tool_name"] == "bash")
        .map(|end| end["result"]["is_error"].as_bool().unwrap())
        .collect();
    assert_eq!(checks, [true, false]);
    // And the project it left behind passes its check.
    let check = Command::new("bash")
        .arg("check.sh")
        .current_dir(&dir)
        .output()
        .unwrap();
    assert_eq!(check.status.code(), Some(0), "{check:?}");
    assert!(String::from_utf8_lossy(&check.stdout).contains("all checks passed"));
    assert!(dir.join("NOTES.md").exists());
    // The demo never writes over anything.
    let output = golato_output(&["demo", "--dir", dir.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    assert!(one_error_line(&output).contains("is not empty"));
}

#[test]
fn the_demo_without_a_directory_says_where_its_project_is() {
    let output = golato_output(&["demo"]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let text = stdout(&output);
    let last = text.lines().last().unwrap();
    let dir = last
        .strip_prefix("The demo project is in ")
        .and_then(|rest| rest.split_once(';'))
        .map(|(dir, _)| std::path::PathBuf::from(dir))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(dir.join("NOTES.md").exists());
    std::fs::remove_dir_all(dir).unwrap();
}

/// Runs `golato run` on a terminal with a bash call that waits for the test: the screen must
/// show a spinner for it before the test lets it finish. Returns everything the program drew.
fn run_on_a_terminal(no_color: bool) -> String {
    let dir = tempfile::tempdir().unwrap();
    let signals = support::signals();
    let go = signals.path().join("go");
    let script = script_file(
        dir.path(),
        "script.jsonl",
        &[
            json!({"text": "Working.", "tool_calls": [{"id": "w", "name": "bash", "arguments": {"command": format!("echo $((6 * 7))ready; while [ ! -e {} ]; do sleep 0.01; done; echo finished", go.display())}}]}),
            json!({"text": "All done."}),
        ],
    );
    let mut command = golato();
    command.args([
        "run",
        "--cwd",
        dir.path().to_str().unwrap(),
        "--script",
        script.to_str().unwrap(),
        "go",
    ]);
    if no_color {
        command.env("NO_COLOR", "1");
    }
    let mut terminal = Terminal::start(command);
    // The handshake: the spinner line shows the tool's latest output ("42ready" is in no
    // argument, only in what the shell printed).
    terminal.wait_for("42ready", 1);
    std::fs::write(&go, "").unwrap();
    let (code, screen) = terminal.finish();
    assert_eq!(code, Some(0));
    screen
}

#[test]
fn on_a_terminal_a_running_call_has_a_spinner_then_a_coloured_mark() {
    let screen = run_on_a_terminal(false);
    let spinner_frames = ['⠁', '⠂', '⠄', '⡀', '⢀', '⠠', '⠐', '⠈'];
    let spinner_line = screen
        .split(['\r', '\n'])
        .find(|line| line.contains("bash $ echo $((6 * 7))ready") && line.contains("42ready"))
        .unwrap_or_else(|| panic!("{screen:?}"));
    assert!(spinner_line.contains(spinner_frames), "{spinner_line:?}");
    assert!(screen.contains("\x1b[32m✓"), "no green mark: {screen:?}");
    assert!(screen.contains("finished"));
    assert!(screen.contains("All done."));
    assert!(screen.contains("done"));
}

#[test]
fn no_color_keeps_the_spinner_and_drops_the_colours() {
    let screen = run_on_a_terminal(true);
    assert!(screen.contains("✓ bash"), "{screen:?}");
    assert!(
        !screen.contains("\x1b[32m"),
        "colour despite NO_COLOR: {screen:?}"
    );
    assert!(
        !screen.contains("\x1b[1m"),
        "bold despite NO_COLOR: {screen:?}"
    );
}
