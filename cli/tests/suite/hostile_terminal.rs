//! What reaches the terminal, as a person at one meets it (the binary on a pseudo terminal):
//! escape sequences from a model, a tool, a call's name or a saved prompt are shown, never
//! obeyed; an approval shows the whole call; a write through `link/..` is judged where it
//! lands; `golato chat` survives a line that is not UTF-8 and leaves on `/exit` while busy.

use crate::support;

use std::path::Path;
use std::process::Stdio;

use serde_json::json;
use support::cli::*;
use support::wait_for_file;

/// OSC 52 (write the clipboard), CSI 2J (clear the screen), OSC 0 (set the title).
const HOSTILE: &str = "\u{1b}]52;c;cHduZWQ=\u{7}\u{1b}[2J\u{1b}]0;owned\u{7}";

fn run_on_terminal(dir: &Path, script: &Path, flags: &[&str]) -> Terminal {
    let mut command = golato();
    command.arg("run").args(flags).arg("--cwd").arg(dir);
    command.arg("--script").arg(script).arg("go");
    Terminal::start(command)
}

#[test]
fn escape_sequences_from_outside_are_shown_not_obeyed() {
    let dir = tempfile::tempdir().unwrap();
    let script = script_file(
        dir.path(),
        "script.jsonl",
        &[
            json!({"text": format!("Look{HOSTILE}"), "tool_calls": [
                {"id": "a", "name": "bash", "arguments": {"command": "printf 'out\\033]0;tool-title\\007\\n'"}},
                {"id": "b", "name": format!("evil{HOSTILE}"), "arguments": {}},
            ]}),
            json!({"text": format!("Done{HOSTILE}")}),
        ],
    );
    let terminal = run_on_terminal(dir.path(), &script, &[]);
    let (code, screen) = terminal.finish();
    assert_eq!(code, Some(0), "{screen}");
    // golato's own colours are the only escape sequences: none of the hostile ones got through.
    for obeyed in ["\u{1b}]52", "\u{1b}[2J", "\u{1b}]0;"] {
        assert!(
            !screen.contains(obeyed),
            "{obeyed:?} reached the terminal: {screen:?}"
        );
    }
    assert!(screen.contains("Look^[]52;c;cHduZWQ=^G^[[2J"), "{screen:?}");
    assert!(screen.contains("out^[]0;tool-title^G"), "{screen:?}");
    assert!(screen.contains("evil^[]52"), "{screen:?}");
    assert!(screen.contains("Done^[]52"), "{screen:?}");

    // --json stays exact.
    let output = run_script(dir.path(), &script, &["--json"]);
    let lines = json_lines(&output);
    let end = of_type(&lines, "message_end")[0];
    assert_eq!(
        end["message"]["content"][0]["text"],
        format!("Look{HOSTILE}")
    );

    // A saved prompt in the session list.
    let prompt = format!("a prompt{HOSTILE}");
    let output = golato()
        .args(["run", "--cwd", dir.path().to_str().unwrap(), "--script"])
        .arg(&script)
        .arg(&prompt)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let listed = stdout(&golato_output(&["sessions", "--all"]));
    assert!(listed.contains("a prompt^[]52"), "{listed:?}");
    assert!(!listed.contains('\u{1b}'), "{listed:?}");
}

#[test]
fn an_approval_shows_the_whole_command_made_visible() {
    let dir = tempfile::tempdir().unwrap();
    let command = format!("echo harmless\ntouch pwned{HOSTILE}");
    let script = script_file(
        dir.path(),
        "script.jsonl",
        &[
            json!({"tool_calls": [{"id": "a", "name": "bash", "arguments": {"command": command}}]}),
            json!({"text": "Done."}),
        ],
    );
    let mut terminal = run_on_terminal(dir.path(), &script, &["--approve", "ask"]);
    terminal.wait_for("Allow it?", 1);
    let screen = terminal.drawn();
    assert!(screen.contains("This call is 2 lines:"), "{screen:?}");
    assert!(screen.contains("│ bash $ echo harmless"), "{screen:?}");
    assert!(screen.contains("│ touch pwned^[]52"), "{screen:?}");
    terminal.type_line("n");
    let (code, screen) = terminal.finish();
    assert_eq!(code, Some(0), "{screen}");
    assert!(!dir.path().join("pwned").exists());

    // A long command is paged, never cut: the rest on [v].
    let long: String = (1..=30).map(|n| format!("echo line{n}\n")).collect();
    let script = script_file(
        dir.path(),
        "long.jsonl",
        &[
            json!({"tool_calls": [{"id": "a", "name": "bash", "arguments": {"command": long}}]}),
            json!({"text": "Done."}),
        ],
    );
    let mut terminal = run_on_terminal(dir.path(), &script, &["--approve", "ask"]);
    terminal.wait_for("[v]iew all", 1);
    assert!(terminal.drawn().contains("… 10 more lines"));
    assert!(!terminal.drawn().contains("line30"));
    terminal.type_line("v");
    terminal.wait_for("echo line30", 1);
    terminal.type_line("n");
    let (code, screen) = terminal.finish();
    assert_eq!(code, Some(0), "{screen}");
}

#[test]
fn approve_edits_judges_a_write_by_where_it_lands() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::create_dir(outside.path().join("deep")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("deep"), dir.path().join("link")).unwrap();
    let script = script_file(
        dir.path(),
        "script.jsonl",
        &[
            json!({"tool_calls": [{"id": "a", "name": "write", "arguments": {"path": "link/../x.txt", "content": "escaped"}}]}),
            json!({"text": "Done."}),
        ],
    );
    let output = golato()
        .args([
            "run",
            "--sandbox",
            "off",
            "--approve",
            "edits",
            "--json",
            "--cwd",
        ])
        .arg(dir.path())
        .arg("--script")
        .arg(&script)
        .arg("go")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let lines = json_lines(&output);
    let end = of_type(&lines, "tool_end")[0];
    assert_eq!(end["result"]["is_error"], true, "{end}");
    assert!(
        !outside.path().join("x.txt").exists(),
        "the write landed outside unasked"
    );
}

#[test]
fn chat_survives_a_line_that_is_not_text_and_leaves_on_exit_while_busy() {
    let dir = tempfile::tempdir().unwrap();
    let signals = support::signals();
    let busy = signals.path().join("busy");
    let script = script_file(
        dir.path(),
        "script.jsonl",
        &[
            json!({"text": "First."}),
            json!({"tool_calls": [{"id": "w", "name": "bash", "arguments": {"command": format!("touch {}; while true; do sleep 0.01; done", busy.display())}}]}),
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
    terminal.type_bytes(b"caf\xe9 au lait\r");
    terminal.wait_for("not UTF-8 text", 1);
    terminal.wait_for("› ", 2);
    terminal.type_line("hello");
    terminal.wait_for("First.", 1);
    terminal.wait_for("› ", 3);
    terminal.type_line("work");
    wait_for_file(&busy);
    terminal.type_line("/exit");
    let (code, screen) = terminal.finish();
    assert_eq!(code, Some(0), "{screen}");
    assert!(screen.contains("leaving"), "{screen}");
    assert!(!screen.contains("» steering: /exit"), "{screen}");
}

/// Paths golato prints (`golato config`, `golato skills`) go through the same visible-text
/// function as model output: a folder or skill named with an escape sequence drove the
/// terminal (issue 42 point 8).
#[test]
fn paths_named_with_escape_sequences_are_printed_visibly() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("proj\u{1b}]0;owned\u{7}");
    std::fs::create_dir_all(project.join(".golato")).unwrap();
    std::fs::write(
        project.join(".golato/config.toml"),
        "[rules]\ndeny = [\"read(x\\u001b)\"]\n",
    )
    .unwrap();
    let skill = project.join(".agents/skills/evil\u{1b}[31m");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: evil\ndescription: red\n---\n",
    )
    .unwrap();
    for args in [&["config"][..], &["skills", "--trust"]] {
        let output = golato()
            .args(args)
            .arg("-C")
            .arg(&project)
            .output()
            .unwrap();
        assert!(output.status.success(), "{args:?}: {output:?}");
        assert!(
            !output.stdout.contains(&0x1b),
            "{args:?} printed a raw escape: {}",
            String::from_utf8_lossy(&output.stdout)
        );
        assert!(
            String::from_utf8_lossy(&output.stdout).contains("proj"),
            "{output:?}"
        );
    }
}
