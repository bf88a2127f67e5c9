//! The interactive front end (`golato` on a terminal), as a person uses it: on pseudo terminals
//! of 80×24 and 120×40, keys typed, a block pasted, the screen read back through a terminal
//! emulator (vt100) as the person would see it.

use crate::support;

use std::path::Path;

use serde_json::json;
use support::cli::{golato, script_file, Terminal};

pub(crate) const SIZES: [(u16, u16); 2] = [(24, 80), (40, 120)];

/// What the person can see now and scroll back to, top to bottom.
pub(super) fn screen(terminal: &mut Terminal, (rows, columns): (u16, u16)) -> String {
    terminal.catch_up();
    let size = |n: u16| std::num::NonZeroU16::new(n).unwrap();
    let mut parser = vt100::Parser::new(size(rows), size(columns), 10_000);
    parser.process(terminal.drawn_bytes());
    parser.screen_mut().set_scrollback(usize::MAX);
    let back = parser.screen().scrollback();
    let mut lines: Vec<String> = Vec::new();
    // The top row of each position of the scrollback, then the screen itself.
    for offset in (1..=back).rev() {
        parser.screen_mut().set_scrollback(offset);
        lines.extend(parser.screen().rows(0, columns).take(1));
    }
    parser.screen_mut().set_scrollback(0);
    lines.extend(parser.screen().rows(0, columns));
    lines.join("\n")
}

/// Waits until the screen satisfies `check`; returns it.
pub(crate) fn wait_until(
    terminal: &mut Terminal,
    size: (u16, u16),
    what: &str,
    check: impl Fn(&str) -> bool,
) -> String {
    let started = std::time::Instant::now();
    loop {
        let shown = screen(terminal, size);
        if check(&shown) {
            return shown;
        }
        assert!(
            started.elapsed() < support::HANG_GUARD,
            "{what} never showed:\n{shown}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

pub(super) fn start(dir: &Path, script: &Path, flags: &[&str], size: (u16, u16)) -> Terminal {
    let mut flags = flags.to_vec();
    flags.push("--ephemeral");
    start_saving(dir, script, &flags, size)
}

/// As `start`, with the session saved.
pub(super) fn start_saving(
    dir: &Path,
    script: &Path,
    flags: &[&str],
    size: (u16, u16),
) -> Terminal {
    let mut command = golato();
    command
        .arg("-C")
        .arg(dir)
        .arg("--script")
        .arg(script)
        .args(flags);
    in_terminal(command, size)
}

/// The front end `command` starts, on a pseudo terminal of `size` (rows, columns).
pub(crate) fn in_terminal(command: std::process::Command, size: (u16, u16)) -> Terminal {
    // A terminal answers where its cursor is (the inline viewport starts there).
    let n = |n: u16| std::num::NonZeroU16::new(n).unwrap();
    let mut emulator = vt100::Parser::new(n(size.0), n(size.1), 0);
    Terminal::start_answering(command, size.0, size.1, move |written, (rows, columns)| {
        emulator.screen_mut().set_size(n(rows), n(columns));
        emulator.process(written);
        let asked = written.windows(4).any(|window| window == b"\x1b[6n");
        asked.then(|| {
            let (row, column) = emulator.screen().cursor_position();
            format!("\x1b[{};{}R", row + 1, column + 1).into_bytes()
        })
    })
}

/// `terminal` once its input area is drawn.
pub(super) fn ready(mut terminal: Terminal, size: (u16, u16)) -> Terminal {
    wait_until(&mut terminal, size, "the input", |shown| {
        shown.contains("Enter send")
    });
    terminal
}

/// Ctrl-D once the front end is idle (its key line says so): it leaves.
pub(super) fn leave(mut terminal: Terminal, size: (u16, u16)) -> String {
    wait_until(&mut terminal, size, "the idle input", |shown| {
        shown
            .lines()
            .rev()
            .find(|line| !line.trim().is_empty())
            .is_some_and(|line| line.contains("Ctrl-D quit"))
    });
    terminal.type_raw("\x04");
    let (code, drawn) = terminal.finish();
    assert_eq!(code, Some(0), "{drawn}");
    drawn
}

#[test]
fn an_answer_is_markdown_wrapped_at_the_width_and_a_call_is_one_compact_block() {
    for size in SIZES {
        let dir = tempfile::tempdir().unwrap();
        let script = script_file(
            dir.path(),
            "script.jsonl",
            &[
                json!({"text": "Looking.", "tool_calls": [{"id": "a", "name": "bash", "arguments": {"command": "seq 1 9"}}]}),
                json!({"text": "# Findings\n\nThe **cause** is a missing semicolon in the parser, which the compiler reports two lines later than where it really is.\n\n1. read the file\n2. fix it"}),
            ],
        );
        let mut terminal = ready(start(dir.path(), &script, &[], size), size);
        terminal.type_raw("why does it fail?\r");
        let shown = wait_until(&mut terminal, size, "the run's end", |shown| {
            shown.contains("done: 2 turns · 1 tool call")
        });
        assert!(shown.contains("› why does it fail?"), "{shown}");
        assert!(shown.contains("✓ bash $ seq 1 9"), "{shown}");
        assert!(shown.contains("│ … 5 earlier lines"), "{shown}");
        assert!(shown.contains("Findings"), "{shown}");
        assert!(
            !shown.contains("**") && !shown.contains("# Findings"),
            "{shown}"
        );
        assert!(shown.contains("1. read the file"), "{shown}");
        // Wrapped between words: every word of the paragraph whole on some line.
        for word in ["semicolon", "compiler", "reports", "really"] {
            assert!(
                shown
                    .lines()
                    .any(|line| line.split_whitespace().any(|w| w.trim_matches(',') == word)),
                "{word} broken at {size:?}:\n{shown}"
            );
        }
        leave(terminal, size);
    }
}

#[test]
fn a_pasted_block_is_one_message_and_up_brings_it_back() {
    for size in SIZES {
        let dir = tempfile::tempdir().unwrap();
        let script = script_file(
            dir.path(),
            "script.jsonl",
            &[json!({"text": "One message."}), json!({"text": "Two."})],
        );
        let mut terminal = ready(start(dir.path(), &script, &[], size), size);
        // As a terminal pastes: bracketed, lines ended by CR.
        terminal.type_raw("\x1b[200~Traceback (most recent call last):\r  File \"a.py\", line 1\rNameError: x\x1b[201~");
        let shown = wait_until(&mut terminal, size, "the pasted lines", |shown| {
            shown.contains("NameError: x")
        });
        assert!(
            shown.contains("› Traceback (most recent call last):"),
            "{shown}"
        );
        terminal.type_raw("\r");
        let shown = wait_until(&mut terminal, size, "the answer", |shown| {
            shown.contains("One message.") && shown.contains("done: 1 turn")
        });
        assert_eq!(shown.matches("done: ").count(), 1, "{shown}");
        assert!(shown.contains("  File \"a.py\", line 1"), "{shown}");
        // Up brings the sent text back into the input: shown twice now, sent and being edited.
        terminal.type_raw("\x1b[A");
        wait_until(&mut terminal, size, "the history", |shown| {
            shown
                .matches("› Traceback (most recent call last):")
                .count()
                == 2
        });
        // Ctrl-C empties the input (Ctrl-D then leaves).
        terminal.type_raw("\x03");
        wait_until(&mut terminal, size, "the input emptied", |shown| {
            shown
                .matches("› Traceback (most recent call last):")
                .count()
                == 1
        });
        leave(terminal, size);
    }
}

#[test]
fn a_long_paste_is_shown_collapsed_sent_whole_and_ctrl_x_shows_it() {
    for size in SIZES {
        let dir = tempfile::tempdir().unwrap();
        let script = script_file(
            dir.path(),
            "script.jsonl",
            &[json!({"text": "Read it."}), json!({"text": "Again."})],
        );
        let mut terminal = ready(start(dir.path(), &script, &[], size), size);
        let lines: Vec<String> = (1..=30).map(|n| format!("log line {n:02}")).collect();
        terminal.type_raw(&format!("look: \x1b[200~{}\x1b[201~", lines.join("\r")));
        let shown = wait_until(&mut terminal, size, "the collapsed paste", |shown| {
            shown.contains("› look: [pasted 30 lines]")
        });
        assert!(!shown.contains("log line 27"), "{shown}");
        assert!(shown.contains("Ctrl-X"), "{shown}");
        terminal.type_raw("\r");
        // Sent whole: the prompt in the scrollback has every line.
        let shown = wait_until(&mut terminal, size, "the answer", |shown| {
            shown.contains("Read it.") && shown.contains("Ctrl-D quit")
        });
        for line in &lines {
            assert!(
                shown.contains(line.as_str()),
                "{line} was not sent:\n{shown}"
            );
        }
        // Backspace takes a placeholder whole; Ctrl-X puts the lines in the input.
        terminal.type_raw(&format!("\x1b[200~{}\x1b[201~", lines[..6].join("\r")));
        wait_until(&mut terminal, size, "the second paste", |shown| {
            shown.contains("› [pasted 6 lines]")
        });
        terminal.type_raw("\x7f");
        wait_until(&mut terminal, size, "the paste gone", |shown| {
            !shown.contains("[pasted 6 lines]") && shown.contains("Ctrl-D quit")
        });
        terminal.type_raw(&format!("\x1b[200~{}\x1b[201~", lines[..6].join("\r")));
        wait_until(&mut terminal, size, "the third paste", |shown| {
            shown.contains("› [pasted 6 lines]")
        });
        terminal.type_raw("\x18");
        wait_until(&mut terminal, size, "the lines in the input", |shown| {
            !shown.contains("[pasted 6 lines]") && shown.contains("  log line 06")
        });
        // Ctrl-C empties the input; Ctrl-D then leaves.
        terminal.type_raw("\x03");
        leave(terminal, size);
    }
}

#[test]
fn the_footer_shows_model_modes_and_context_left_and_shift_tab_cycles_the_mode() {
    for size in SIZES {
        let dir = tempfile::tempdir().unwrap();
        let script = script_file(
            dir.path(),
            "script.jsonl",
            &[json!({"text": "Hi.", "usage": {"input_tokens": 300, "output_tokens": 50}})],
        );
        let mut terminal = ready(
            start(dir.path(), &script, &["--context-window", "1000"], size),
            size,
        );
        wait_until(&mut terminal, size, "the footer", |shown| {
            shown.contains("scripted · approve never · sandbox workspace-write")
        });
        terminal.type_raw("hi\r");
        wait_until(&mut terminal, size, "the context left", |shown| {
            shown.contains("sandbox workspace-write · 65% context left")
        });
        for mode in ["edits", "ask", "plan", "never"] {
            terminal.type_raw("\x1b[Z");
            wait_until(&mut terminal, size, mode, |shown| {
                let last_footer = shown
                    .lines()
                    .rev()
                    .find(|line| line.contains("approve ") && !line.contains("approve:"));
                last_footer.is_some_and(|line| line.contains(&format!("approve {mode}")))
            });
        }
        leave(terminal, size);
    }
}

#[test]
fn a_bang_command_runs_in_the_sandbox_shows_its_output_and_reaches_the_model_with_the_next_prompt()
{
    for size in SIZES {
        let dir = tempfile::tempdir().unwrap();
        let script = script_file(dir.path(), "script.jsonl", &[json!({"text": "Seen."})]);
        let mut terminal = ready(start_saving(dir.path(), &script, &[], size), size);
        terminal.type_raw("!echo bang-output; touch /etc/golato-bang\r");
        let shown = wait_until(&mut terminal, size, "the command's block", |shown| {
            shown.contains("bash $ echo bang-output") && shown.contains("Ctrl-D quit")
        });
        assert!(shown.contains("│ bang-output"), "{shown}");
        // The session's sandbox held: /etc is not writable.
        assert!(!std::path::Path::new("/etc/golato-bang").exists());
        // A long one shows while it runs, and Esc stops it.
        // Its newest line shows once `sleep` was started: Esc then has it to stop.
        terminal.type_raw("!sleep 30 & echo started; wait\r");
        wait_until(&mut terminal, size, "the running command", |shown| {
            shown.contains("· started · ") && shown.contains("Esc or Ctrl-C stops it")
        });
        terminal.type_raw("\x1b");
        let shown = wait_until(&mut terminal, size, "the stopped command", |shown| {
            shown.contains("✗ bash $ sleep 30 & echo started; wait")
                && shown.contains("Ctrl-D quit")
        });
        // What was killed is the command's: the sandbox's own helpers are not named.
        assert!(shown.contains("sleep ("), "{shown}");
        assert!(
            !shown.contains("golato-sandbox (") && !shown.contains(" exe ("),
            "{shown}"
        );
        // The next prompt carries what the commands printed.
        terminal.type_raw("what did it say?\r");
        wait_until(&mut terminal, size, "the answer", |shown| {
            shown.contains("Seen.") && shown.contains("Ctrl-D quit")
        });
        leave(terminal, size);
        let session =
            std::fs::read_to_string(support::cli::session_file(dir.path()).unwrap()).unwrap();
        let prompt = session
            .lines()
            .find(|line| line.contains("what did it say?"))
            .expect("the prompt was saved");
        assert!(prompt.contains("I ran this command myself"), "{prompt}");
        assert!(prompt.contains("bang-output"), "{prompt}");
        assert!(prompt.contains("sleep 30"), "{prompt}");
    }
}

#[test]
fn init_has_the_model_write_agents_md_and_never_over_one() {
    let size = SIZES[1];
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("Makefile"), "test:\n\tcargo test\n").unwrap();
    let script = script_file(
        dir.path(),
        "script.jsonl",
        &[
            json!({"tool_calls": [{"id": "r", "name": "read", "arguments": {"path": "Makefile"}}]}),
            json!({"text": "Here it is:\n\n```markdown\n# AGENTS.md\n\nTest with `make test`.\n```\n"}),
        ],
    );
    let mut terminal = ready(start_saving(dir.path(), &script, &[], size), size);
    terminal.type_raw("/init\r");
    // Shown whole as it would be written, and written only on `y`.
    let shown = wait_until(&mut terminal, size, "the draft", |shown| {
        shown.contains("y write it to AGENTS.md")
    });
    assert!(
        shown.contains("AGENTS.md as it would be written (3 lines):"),
        "{shown}"
    );
    assert!(shown.contains("  │ Test with `make test`."), "{shown}");
    assert!(!dir.path().join("AGENTS.md").exists());
    terminal.type_raw("y");
    let shown = wait_until(&mut terminal, size, "the model's AGENTS.md", |shown| {
        shown.contains("AGENTS.md (3 lines): read it through") && shown.contains("Ctrl-D quit")
    });
    let written = std::fs::read_to_string(dir.path().join("AGENTS.md"))
        .unwrap_or_else(|error| panic!("{error}: {shown}"));
    assert_eq!(written, "# AGENTS.md\n\nTest with `make test`.\n");
    // What the model was asked: to read first, and never to write over one.
    let session = std::fs::read_to_string(support::cli::session_file(dir.path()).unwrap()).unwrap();
    assert!(session.contains("First read the repository"), "{session}");
    // The model never wrote it: golato did, from its answer.
    assert!(!shown.contains("✗ write"), "{shown}");
    terminal.type_raw("/init\r");
    wait_until(&mut terminal, size, "not twice", |shown| {
        shown.contains("AGENTS.md exists already; nothing was written")
    });
    leave(terminal, size);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("AGENTS.md")).unwrap(),
        written
    );
}

#[test]
fn model_alone_picks_among_the_providers_known_models() {
    let size = SIZES[0];
    let dir = tempfile::tempdir().unwrap();
    let mut command = golato();
    // No request is made: the picker needs only the provider.
    command
        .env("OPENAI_API_KEY", "test-key")
        .arg("-C")
        .arg(dir.path())
        .args(["--provider", "openai", "--model", "gpt-4o", "--ephemeral"])
        .args(["--base-url", "https://api.openai.com/v1"]);
    let mut terminal = ready(in_terminal(command, size), size);
    terminal.type_raw("/model\r");
    wait_until(&mut terminal, size, "the picker", |shown| {
        shown.contains("› gpt-4o (now)") && shown.contains("  gpt-4.1")
    });
    terminal.type_raw("4.1-mini");
    wait_until(&mut terminal, size, "the one left", |shown| {
        shown.contains("(1 of ") && shown.contains("› gpt-4.1-mini")
    });
    terminal.type_raw("\r");
    wait_until(&mut terminal, size, "the switch", |shown| {
        shown.contains("model: gpt-4.1-mini; the next turn asks it")
            && shown.contains("gpt-4.1-mini · approve never")
    });
    leave(terminal, size);
}

/// A terminal that stops reading (a stalled connection) must not hold golato: its writes go
/// through a thread of their own, so SIGTERM is still handled and golato ends.
#[test]
fn a_terminal_that_stops_reading_does_not_keep_golato_from_ending() {
    let size = SIZES[1];
    let dir = tempfile::tempdir().unwrap();
    // Far more than a terminal buffers (64 KiB): 4,000 short paragraphs, each its own block.
    let long: String = (0..4_000)
        .map(|n| format!("paragraph {n} of an answer nobody reads\n\n"))
        .collect();
    let script = script_file(dir.path(), "script.jsonl", &[json!({ "text": long })]);
    let mut terminal = ready(start(dir.path(), &script, &[], size), size);
    terminal.pause(true);
    terminal.type_raw("go\r");
    // The terminal's buffer fills (a pty's holds 4 KiB unread): the answer's 150 KiB cannot
    // all be written.
    let started = std::time::Instant::now();
    loop {
        let unread = rustix::io::ioctl_fionread(terminal.master()).unwrap();
        if unread >= 4000 {
            break;
        }
        assert!(
            started.elapsed() < support::HANG_GUARD,
            "golato wrote {unread} bytes"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let pid = rustix::process::Pid::from_raw(terminal.child.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let started = std::time::Instant::now();
    let ended = loop {
        if let Some(status) = terminal.child.try_wait().unwrap() {
            break Some(status);
        }
        if started.elapsed() > support::HANG_GUARD {
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    terminal.pause(false);
    assert!(
        ended.is_some(),
        "golato never ended: a write to the stalled terminal held it"
    );
}

#[test]
fn slash_commands_are_the_front_ends_own_and_never_reach_the_model() {
    let size = (24, 80);
    let dir = tempfile::tempdir().unwrap();
    let script = script_file(
        dir.path(),
        "script.jsonl",
        &[json!({"text": "The first answer."})],
    );
    let mut terminal = ready(start(dir.path(), &script, &[], size), size);
    terminal.type_raw("/hel\t\r");
    wait_until(&mut terminal, size, "the help", |shown| {
        shown.contains("/new")
    });
    terminal.type_raw("/bogus\r");
    wait_until(&mut terminal, size, "the refusal", |shown| {
        shown.contains("/bogus is not a command (nothing was sent to the model)")
    });
    terminal.type_raw("/undo\r");
    wait_until(&mut terminal, size, "nothing to undo", |shown| {
        shown.contains("nothing saved (--ephemeral): there is nothing to undo")
    });
    // The model's first answer is still the first: nothing above reached it.
    terminal.type_raw("hi\r");
    wait_until(&mut terminal, size, "the answer", |shown| {
        shown.contains("The first answer.")
    });
    leave(terminal, size);
}

#[test]
fn an_approval_is_one_key_and_the_model_is_told_of_a_no() {
    for size in SIZES {
        let dir = tempfile::tempdir().unwrap();
        let script = script_file(
            dir.path(),
            "script.jsonl",
            &[
                json!({"tool_calls": [{"id": "a", "name": "bash", "arguments": {"command": "touch made"}}]}),
                json!({"text": "Understood."}),
            ],
        );
        let mut terminal = start(
            dir.path(),
            &script,
            &["--sandbox", "off", "--approve", "ask"],
            size,
        );
        wait_until(&mut terminal, size, "the input", |shown| {
            shown.contains("Enter send")
        });
        terminal.type_raw("make it\r");
        let shown = wait_until(&mut terminal, size, "the question", |shown| {
            shown.contains("y yes · n no · a all bash (session)")
        });
        assert!(shown.contains("│ bash $ touch made"), "{shown}");
        terminal.type_raw("n");
        let shown = wait_until(&mut terminal, size, "the run's end", |shown| {
            shown.contains("done: ")
        });
        assert!(shown.contains("✗ bash $ touch made"), "{shown}");
        assert!(
            shown.contains("The user did not allow this bash call"),
            "{shown}"
        );
        assert!(!shown.contains("hook"), "{shown}");
        assert!(!dir.path().join("made").exists());
        leave(terminal, size);
    }
}

/// "Yes, and don't ask again" for calls like this one: a narrow rule, shown before it is
/// taken, kept for the session and written to the project's (trusted) or the user's file.
#[test]
fn a_remembered_approval_is_a_narrow_rule_written_where_the_person_chose() {
    for (size, key) in [(SIZES[0], "p"), (SIZES[1], "u")] {
        let dir = tempfile::tempdir().unwrap();
        let user = dir.path().join("user-config.toml");
        std::fs::write(&user, "# my settings\nmodel = \"m\"\n").unwrap();
        let script = script_file(
            dir.path(),
            "script.jsonl",
            &[
                json!({"tool_calls": [{"id": "a", "name": "bash", "arguments": {"command": "echo one"}}]}),
                json!({"tool_calls": [{"id": "b", "name": "bash", "arguments": {"command": "echo two"}}]}),
                json!({"tool_calls": [{"id": "c", "name": "bash", "arguments": {"command": "touch other"}}]}),
                json!({"text": "Done."}),
            ],
        );
        let mut command = golato();
        command
            .env("GOLATO_CONFIG", &user)
            .arg("-C")
            .arg(dir.path())
            .args([
                "--script",
                script.to_str().unwrap(),
                "--ephemeral",
                "--trust",
            ])
            .args(["--approve", "ask"]);
        let mut terminal = ready(in_terminal(command, size), size);
        terminal.type_raw("go\r");
        let shown = wait_until(&mut terminal, size, "the question", |shown| {
            shown.contains("p/u remember")
        });
        assert!(
            shown.contains("p  yes, and allow bash(echo:*) in this project"),
            "{shown}"
        );
        terminal.type_raw(key);
        // `echo two` is not asked about; `touch other` is.
        let shown = wait_until(&mut terminal, size, "the next question", |shown| {
            shown.contains("│ bash $ touch other")
        });
        assert!(shown.contains("✓ bash $ echo two"), "{shown}");
        assert!(!shown.contains("│ bash $ echo two"), "{shown}");
        terminal.type_raw("n");
        wait_until(&mut terminal, size, "the end", |shown| {
            shown.contains("Done.") && shown.contains("Ctrl-D quit")
        });
        leave(terminal, size);
        let (written, other) = match key {
            "p" => (dir.path().join(".golato/config.toml"), user.clone()),
            _ => (user.clone(), dir.path().join(".golato/config.toml")),
        };
        let text = std::fs::read_to_string(&written).unwrap();
        assert!(text.contains("allow = [\"bash(echo:*)\"]"), "{text}");
        assert!(
            !std::fs::read_to_string(&other)
                .unwrap_or_default()
                .contains("bash(echo"),
            "written twice"
        );
        if key == "u" {
            assert!(text.starts_with("# my settings\nmodel = \"m\"\n"), "{text}");
        }
    }
}

#[test]
fn typed_while_a_run_works_steers_it_and_esc_interrupts_it() {
    let size = (24, 80);
    let dir = tempfile::tempdir().unwrap();
    let signals = support::signals();
    let g = signals.path().display();
    let script = script_file(
        dir.path(),
        "script.jsonl",
        &[
            json!({"tool_calls": [{"id": "a", "name": "bash", "arguments": {"command": format!("touch {g}/started; while [ ! -e {g}/never ]; do sleep 0.05; done")}}]}),
        ],
    );
    let mut terminal = ready(start(dir.path(), &script, &[], size), size);
    terminal.type_raw("work\r");
    support::wait_for_file(&signals.path().join("started"));
    // The status line names the running call.
    let shown = wait_until(&mut terminal, size, "the status line", |shown| {
        shown
            .lines()
            .any(|line| line.contains("touch") && line.contains("Esc to interrupt"))
    });
    assert!(shown.contains("Enter steer · Tab follow-up"), "{shown}");
    terminal.type_raw("also check the docs\r");
    wait_until(&mut terminal, size, "the steering", |shown| {
        shown.contains("» steering: also check the docs")
    });
    // Queued, not joined: the call that runs has not ended.
    assert!(!screen(&mut terminal, size).contains("joined the conversation"));
    terminal.type_raw("\x1b");
    // The input area is drawn again at the next frame, a moment after the line above it.
    wait_until(&mut terminal, size, "the interruption", |shown| {
        shown.contains("interrupted: 1 turn") && shown.contains("Enter send")
    });
    leave(terminal, size);
}

#[test]
fn escape_sequences_from_the_model_are_shown_never_obeyed() {
    let size = (24, 80);
    let dir = tempfile::tempdir().unwrap();
    let script = script_file(
        dir.path(),
        "script.jsonl",
        &[json!({"text": "title\u{1b}]0;pwned\u{7} and clipboard \u{1b}]52;c;aGk=\u{7} done"})],
    );
    let mut terminal = ready(start(dir.path(), &script, &[], size), size);
    terminal.type_raw("hi\r");
    let shown = wait_until(&mut terminal, size, "the answer", |shown| {
        shown.contains("done: 1 turn")
    });
    assert!(shown.contains("title^[]0;pwned"), "{shown}");
    // Replayed through a terminal emulator: no title set, nothing put on the clipboard.
    #[derive(Default)]
    struct Obeyed(Vec<String>);
    impl vt100::Callbacks for Obeyed {
        fn set_window_title(&mut self, _: &mut vt100::Screen, title: &[u8]) {
            self.0
                .push(format!("title {}", String::from_utf8_lossy(title)));
        }
        fn copy_to_clipboard(&mut self, _: &mut vt100::Screen, _: &[u8], data: &[u8]) {
            self.0
                .push(format!("clipboard {}", String::from_utf8_lossy(data)));
        }
    }
    terminal.catch_up();
    let n = |n: u16| std::num::NonZeroU16::new(n).unwrap();
    let mut parser = vt100::Parser::new_with_callbacks(n(size.0), n(size.1), 0, Obeyed::default());
    parser.process(terminal.drawn_bytes());
    assert_eq!(parser.callbacks().0, Vec::<String>::new());
    leave(terminal, size);
}

#[test]
fn a_closed_terminal_ends_the_front_end_even_while_a_question_waits() {
    let size = (24, 80);
    let dir = tempfile::tempdir().unwrap();
    let script = script_file(
        dir.path(),
        "script.jsonl",
        &[
            json!({"tool_calls": [{"id": "a", "name": "bash", "arguments": {"command": "true"}}]}),
            json!({"text": "Done."}),
        ],
    );
    let mut terminal = start(
        dir.path(),
        &script,
        &["--sandbox", "off", "--approve", "ask"],
        size,
    );
    wait_until(&mut terminal, size, "the input", |shown| {
        shown.contains("Enter send")
    });
    terminal.type_raw("go\r");
    wait_until(&mut terminal, size, "the question", |shown| {
        shown.contains("y yes · n no")
    });
    // What a terminal sends when its window closes.
    let pid = rustix::process::Pid::from_raw(terminal.child.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::HUP).unwrap();
    let started = std::time::Instant::now();
    while terminal.child.try_wait().unwrap().is_none() {
        assert!(
            started.elapsed() < support::HANG_GUARD,
            "golato went on after its terminal closed"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn an_edit_is_approved_seeing_its_diff_and_a_command_is_changed_or_refused_saying_why() {
    for size in SIZES {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("notes.txt"), "alpha\nbeta\ngamma\n").unwrap();
        let script = script_file(
            dir.path(),
            "script.jsonl",
            &[
                json!({"tool_calls": [{"id": "a", "name": "edit", "arguments": {"path": "notes.txt", "edits": [{"oldText": "beta", "newText": "BETA"}]}}]}),
                json!({"tool_calls": [{"id": "b", "name": "bash", "arguments": {"command": "touch wrong"}}]}),
                json!({"tool_calls": [{"id": "c", "name": "bash", "arguments": {"command": "touch refused"}}]}),
                json!({"text": "Understood."}),
            ],
        );
        let mut terminal = start(
            dir.path(),
            &script,
            &["--sandbox", "off", "--approve", "ask"],
            size,
        );
        wait_until(&mut terminal, size, "the input", |shown| {
            shown.contains("Enter send")
        });
        terminal.type_raw("tidy up\r");
        // The diff the edit would make, before it runs.
        let shown = wait_until(&mut terminal, size, "the edit's question", |shown| {
            shown.contains("a all edit (session)")
        });
        assert!(
            shown.contains("│ -beta") && shown.contains("│ +BETA"),
            "{shown}"
        );
        assert!(shown.contains("│  alpha"), "{shown}");
        assert!(
            !shown.contains("e edit"),
            "only a command is edited: {shown}"
        );
        terminal.type_raw("y");
        wait_until(&mut terminal, size, "the command's question", |shown| {
            shown.contains("a all bash (session) · u remember · e edit")
        });
        // e: the command into the input, changed, then run as it stands.
        terminal.type_raw("e");
        wait_until(&mut terminal, size, "the command being edited", |shown| {
            shown.contains("$ touch wrong") && shown.contains("Enter run it as it stands")
        });
        terminal.type_raw("\x7f\x7f\x7f\x7f\x7fright\r");
        wait_until(
            &mut terminal,
            size,
            "the second command's question",
            |shown| shown.contains("│ bash $ touch refused"),
        );
        // Esc: no, and why, for the model.
        terminal.type_raw("\x1b");
        wait_until(&mut terminal, size, "the reason's input", |shown| {
            shown.contains("Enter refuse with it")
        });
        terminal.type_raw("not in this folder\r");
        let shown = wait_until(&mut terminal, size, "the run's end", |shown| {
            shown.contains("done: 4 turns")
        });
        assert!(
            shown.contains("allowed as you changed it: $ touch right"),
            "{shown}"
        );
        assert!(shown.contains("They said why: not"), "{shown}");
        assert!(shown.contains("1 file changed"), "{shown}");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("notes.txt")).unwrap(),
            "alpha\nBETA\ngamma\n"
        );
        assert!(dir.path().join("right").exists());
        assert!(!dir.path().join("wrong").exists());
        assert!(!dir.path().join("refused").exists());
        leave(terminal, size);
    }
}

#[test]
fn commands_switch_model_and_approval_show_the_diff_and_write_agents_md() {
    let size = (40, 120);
    let dir = tempfile::tempdir().unwrap();
    let script = script_file(
        dir.path(),
        "script.jsonl",
        &[
            // A script answers by the number of answers in the request: the summary `/compact`
            // asks for (none in it) is the first entry's text.
            json!({"text": "The user asked for a plan; it was written.", "tool_calls": [{"id": "a", "name": "write", "arguments": {"path": "plan.md", "content": "step one\n"}}]}),
            json!({"text": "Written."}),
        ],
    );
    let mut terminal = ready(
        start(dir.path(), &script, &["--sandbox", "off"], size),
        size,
    );
    // Completion offers what a command can be while it is typed.
    terminal.type_raw("/co");
    wait_until(&mut terminal, size, "the completions", |shown| {
        shown.contains("› /compact   summarize") && shown.contains("  /cost      tokens")
    });
    terminal.type_raw("\x03/model other-model\r");
    wait_until(&mut terminal, size, "the switch", |shown| {
        shown.contains("model: other-model; the next turn asks it")
    });
    terminal.type_raw("/approve sometimes\r");
    wait_until(&mut terminal, size, "the refusal", |shown| {
        shown.contains("/approve takes ask, edits or never")
    });
    terminal.type_raw("/approve ask\r");
    wait_until(&mut terminal, size, "the new mode", |shown| {
        shown.contains("approve: ask: every bash, write and edit call asks first")
    });
    // The mode holds for the next call: the write asks now.
    terminal.type_raw("write the plan\r");
    wait_until(&mut terminal, size, "the write's question", |shown| {
        shown.contains("a all write (session)") && shown.contains("│ +step one")
    });
    terminal.type_raw("y");
    wait_until(&mut terminal, size, "the run's end", |shown| {
        shown.contains("done: 2 turns")
    });
    terminal.type_raw("/compact\r");
    wait_until(&mut terminal, size, "the compaction", |shown| {
        shown.contains("compacted: ") && shown.contains("summarized, about")
    });
    terminal.type_raw("/diff\r");
    wait_until(&mut terminal, size, "the session's diff", |shown| {
        shown.contains("plan.md") && shown.contains("commands outside the sandbox are not tracked")
    });
    terminal.type_raw("/fork\r");
    wait_until(&mut terminal, size, "no fork", |shown| {
        shown.contains("nothing saved (--ephemeral)")
    });
    leave(terminal, size);
}

#[test]
fn resume_picks_an_earlier_session_shows_it_and_fork_keeps_the_old_one() {
    let size = (24, 80);
    let dir = tempfile::tempdir().unwrap();
    let script = script_file(
        dir.path(),
        "script.jsonl",
        &[json!({"text": "I will remember 42."})],
    );
    let mut terminal = ready(start_saving(dir.path(), &script, &[], size), size);
    terminal.type_raw("remember the number 42\r");
    wait_until(&mut terminal, size, "the answer", |shown| {
        shown.contains("done: 1 turn")
    });
    leave(terminal, size);
    let sessions = |dir: &Path| -> Vec<String> {
        let out = golato().args(["sessions", "-C"]).arg(dir).output().unwrap();
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .skip(1)
            .map(|line| {
                line.split_whitespace()
                    .next()
                    .unwrap_or_default()
                    .to_owned()
            })
            .collect()
    };
    let first = sessions(dir.path());
    assert_eq!(first.len(), 1, "{first:?}");
    // A script replays by the transcript's answers: the earlier one is the first.
    let script = script_file(
        dir.path(),
        "again.jsonl",
        &[
            json!({"text": "I will remember 42."}),
            json!({"text": "It was 42."}),
        ],
    );
    let mut terminal = ready(start_saving(dir.path(), &script, &[], size), size);
    terminal.type_raw("/resume\r");
    let shown = wait_until(&mut terminal, size, "the picker", |shown| {
        shown.contains("Enter go on with it") && shown.contains("remember the number 42")
    });
    // When, how long, and typing narrows the sessions down.
    assert!(shown.contains("s ago · 1 turn · "), "{shown}");
    terminal.type_raw("cats");
    wait_until(&mut terminal, size, "no match", |shown| {
        shown.contains("search: cats (0 of 1)")
    });
    terminal.type_raw("\x7f\x7f\x7f\x7fnumber 42");
    wait_until(&mut terminal, size, "the match", |shown| {
        shown.contains("search: number 42 (1 of 1)")
    });
    terminal.type_raw("\r");
    let shown = wait_until(&mut terminal, size, "the earlier conversation", |shown| {
        shown.contains("going on with the session")
    });
    assert!(shown.contains("earlier in this session:"), "{shown}");
    assert!(shown.contains("› remember the number 42"), "{shown}");
    assert!(shown.contains("  I will remember 42."), "{shown}");
    terminal.type_raw("/fork\r");
    wait_until(&mut terminal, size, "the fork", |shown| {
        shown.contains("forked: this is now session") && shown.contains("is kept")
    });
    terminal.type_raw("what was it?\r");
    wait_until(&mut terminal, size, "the answer", |shown| {
        shown.contains("It was 42.")
    });
    leave(terminal, size);
    let both = sessions(dir.path());
    assert_eq!(both.len(), 2, "{both:?}");
    assert!(both.contains(&first[0]));
}

#[test]
fn ctrl_r_finds_an_earlier_prompt_and_at_completes_a_file_and_attaches_an_image() {
    let size = (24, 80);
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("src")).unwrap();
    std::fs::create_dir_all(dir.path().join("build")).unwrap();
    std::fs::write(dir.path().join("src/parser.rs"), "").unwrap();
    std::fs::write(dir.path().join("build/parser.rs.o"), "").unwrap();
    std::fs::write(dir.path().join(".gitignore"), "build/\n").unwrap();
    std::fs::write(dir.path().join("shot.png"), b"\x89PNG\r\n\x1a\n0000").unwrap();
    let script = script_file(
        dir.path(),
        "script.jsonl",
        &[json!({"text": "First."}), json!({"text": "Second."})],
    );
    let mut terminal = ready(start(dir.path(), &script, &[], size), size);
    terminal.type_raw("the zebra-7731 prompt\r");
    wait_until(&mut terminal, size, "the answer", |shown| {
        shown.contains("done: 1 turn")
    });
    terminal.type_raw("\x12zebra-77");
    wait_until(&mut terminal, size, "the search", |shown| {
        shown.contains("search history: zebra-77  the zebra-7731 prompt")
    });
    terminal.type_raw("\r");
    wait_until(&mut terminal, size, "the prompt taken back", |shown| {
        shown.contains("› the zebra-7731 prompt")
            && shown.contains("Enter send")
            && !shown.contains("search history")
    });
    terminal.type_raw("\x03look at @prsr");
    let shown = wait_until(&mut terminal, size, "the file offered", |shown| {
        shown.contains("@ src/parser.rs")
    });
    assert!(
        !shown.contains("build/parser"),
        "ignored files are not offered: {shown}"
    );
    terminal.type_raw("\t and @shot.png\r");
    let shown = wait_until(&mut terminal, size, "the second answer", |shown| {
        shown.contains("Second.")
    });
    assert!(
        shown.contains("› look at @src/parser.rs and @shot.png"),
        "{shown}"
    );
    assert!(shown.contains("attached 1 image"), "{shown}");
    leave(terminal, size);
}

#[test]
fn steering_is_shown_queued_and_then_joined_when_the_running_call_ends() {
    let size = (24, 80);
    let dir = tempfile::tempdir().unwrap();
    let signals = support::signals();
    let g = signals.path().display();
    let script = script_file(
        dir.path(),
        "script.jsonl",
        &[
            json!({"tool_calls": [{"id": "a", "name": "bash", "arguments": {"command": format!("touch {g}/started; while [ ! -e {g}/go ]; do sleep 0.05; done")}}]}),
            json!({"text": "Noted."}),
        ],
    );
    let mut terminal = ready(start(dir.path(), &script, &[], size), size);
    terminal.type_raw("work\r");
    support::wait_for_file(&signals.path().join("started"));
    terminal.type_raw("use tabs\r");
    wait_until(&mut terminal, size, "the steering queued", |shown| {
        shown.contains("» steering: use tabs")
    });
    assert!(!screen(&mut terminal, size).contains("joined the conversation"));
    std::fs::write(signals.path().join("go"), "").unwrap();
    let shown = wait_until(&mut terminal, size, "the run's end", |shown| {
        shown.contains("done: 2 turns")
    });
    assert!(
        shown.contains("↳ your steering joined the conversation"),
        "{shown}"
    );
    let joined = shown.find("↳ your steering joined").unwrap();
    assert!(joined < shown.find("Noted.").unwrap(), "{shown}");
    leave(terminal, size);
}

#[test]
fn plan_mode_shows_the_plan_changes_nothing_and_accept_carries_it_out() {
    for size in SIZES {
        let dir = tempfile::tempdir().unwrap();
        let plan = json!({"plan": [
            {"step": "Look at the code", "status": "completed"},
            {"step": "Write the notes", "status": "pending"}
        ]});
        let script = script_file(
            dir.path(),
            "script.jsonl",
            &[
                json!({"tool_calls": [
                    {"id": "p", "name": "update_plan", "arguments": plan},
                    {"id": "w", "name": "write", "arguments": {"path": "early.txt", "content": "x"}}
                ]}),
                json!({"text": "That is the plan."}),
                json!({"tool_calls": [{"id": "w2", "name": "write", "arguments": {"path": "notes.txt", "content": "x"}}]}),
                json!({"text": "Written."}),
            ],
        );
        let mut terminal = ready(start(dir.path(), &script, &[], size), size);
        terminal.type_raw("/plan\r");
        wait_until(&mut terminal, size, "plan mode", |shown| {
            shown.contains("plan mode: read-only sandbox")
                && shown.contains("plan mode · read-only · /accept carries the plan out")
        });
        terminal.type_raw("what would you do?\r");
        let shown = wait_until(&mut terminal, size, "the plan", |shown| {
            shown.contains("That is the plan.") && shown.contains("Ctrl-D quit")
        });
        assert!(shown.contains("✓ update_plan 2 steps"), "{shown}");
        assert!(shown.contains("│ [x] Look at the code"), "{shown}");
        assert!(shown.contains("│ [ ] Write the notes"), "{shown}");
        assert!(shown.contains("✗ write early.txt"), "{shown}");
        assert!(!dir.path().join("early.txt").exists());
        terminal.type_raw("/accept\r");
        let shown = wait_until(&mut terminal, size, "the plan carried out", |shown| {
            shown.contains("Written.") && shown.contains("Ctrl-D quit")
        });
        assert!(shown.contains("plan accepted"), "{shown}");
        assert!(dir.path().join("notes.txt").exists());
        leave(terminal, size);
    }
}

#[test]
fn undo_takes_back_the_last_prompts_write_and_command_and_goes_on_from_before_it() {
    let size = SIZES[0];
    let dir = tempfile::tempdir().unwrap();
    let script = script_file(
        dir.path(),
        "script.jsonl",
        &[
            json!({"tool_calls": [
                {"id": "w", "name": "write", "arguments": {"path": "made.txt", "content": "x"}},
                {"id": "b", "name": "bash", "arguments": {"command": "echo by-bash > bashed.txt"}}
            ]}),
            json!({"text": "Made it."}),
        ],
    );
    let mut terminal = ready(start_saving(dir.path(), &script, &[], size), size);
    terminal.type_raw("make it\r");
    let shown = wait_until(&mut terminal, size, "the run's end", |shown| {
        shown.contains("Made it.") && shown.contains("Ctrl-D quit")
    });
    assert!(shown.contains("2 files changed"), "{shown}");
    assert!(dir.path().join("made.txt").exists());
    assert!(dir.path().join("bashed.txt").exists());
    // The sandboxed command's file is the session's change too.
    terminal.type_raw("/diff\r");
    wait_until(&mut terminal, size, "the diff", |shown| {
        shown.contains("bashed.txt") && shown.contains("made by a command")
    });
    terminal.type_raw("/undo\r");
    let shown = wait_until(&mut terminal, size, "the undo", |shown| {
        shown.contains("undone: the session is back to before prompt 1")
    });
    assert!(shown.contains("removed"), "{shown}");
    assert!(!dir.path().join("made.txt").exists());
    assert!(!dir.path().join("bashed.txt").exists());
    // The same script answers again from its start: the conversation was cut back.
    terminal.type_raw("make it again\r");
    wait_until(&mut terminal, size, "the second run's end", |shown| {
        shown.matches("Made it.").count() == 2 && shown.contains("Ctrl-D quit")
    });
    assert!(dir.path().join("made.txt").exists());
    leave(terminal, size);
}

/// An OpenAI-compatible server on loopback that streams `before`, waits until the test lets it
/// go on, then streams `after` and ends the message: what is on screen between the two was
/// drawn while the message was still being written.
pub(super) fn held_stream(before: &str, after: &str) -> (String, std::sync::mpsc::Sender<()>) {
    use std::io::{Read as _, Write as _};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let (go_on, release) = std::sync::mpsc::channel::<()>();
    let chunk = |text: &str, finish: Option<&str>| {
        format!(
            "data: {}\n\n",
            json!({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": finish}]})
        )
    };
    let (first, second) = (chunk(before, None), chunk(after, Some("stop")));
    std::thread::spawn(move || {
        let Ok((mut socket, _)) = listener.accept() else {
            return;
        };
        // The request: its head, then the body its length announces.
        let mut request = Vec::new();
        let mut buffer = [0u8; 8192];
        loop {
            let read = socket.read(&mut buffer).unwrap_or(0);
            if read == 0 {
                return;
            }
            request.extend_from_slice(&buffer[..read]);
            let text = String::from_utf8_lossy(&request).to_ascii_lowercase();
            if let Some(end) = text.find("\r\n\r\n") {
                let length = text[..end]
                    .lines()
                    .find_map(|line| line.strip_prefix("content-length:"))
                    .and_then(|value| value.trim().parse::<usize>().ok())
                    .unwrap_or(0);
                if request.len() >= end + 4 + length {
                    break;
                }
            }
        }
        let head =
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
        let _ = socket.write_all(format!("{head}{first}").as_bytes());
        let _ = socket.flush();
        let _ = release.recv();
        let _ = socket.write_all(format!("{second}data: [DONE]\n\n").as_bytes());
    });
    (url, go_on)
}

#[test]
fn an_answer_is_on_screen_block_by_block_before_its_message_ends() {
    for size in SIZES {
        let dir = tempfile::tempdir().unwrap();
        let (url, go_on) = held_stream(
            "The first paragraph is whole once the second begins.\n\n- one item\n- two items\n\nThe third is being writ",
            "ten and ends here.",
        );
        let mut command = golato();
        command
            .arg("-C")
            .arg(dir.path())
            .args(["--provider", "openai", "--base-url", &url, "--model", "m"])
            .arg("--ephemeral");
        let mut terminal = ready(in_terminal(command, size), size);
        terminal.type_raw("write three paragraphs\r");
        // The finished blocks are in the scrollback, rendered; the open one is in the status
        // line, at its end; the message has not ended (the server holds it).
        let shown = wait_until(&mut terminal, size, "the finished blocks", |shown| {
            shown.contains("The first paragraph is whole") && shown.contains("• two items")
        });
        assert!(!shown.contains("ends here"), "{shown}");
        wait_until(&mut terminal, size, "the open block", |shown| {
            shown.contains("third is being writ")
        });
        go_on.send(()).unwrap();
        let shown = wait_until(&mut terminal, size, "the whole answer", |shown| {
            shown.contains("The third is being written and ends here.")
        });
        // Each block once: nothing committed is drawn again.
        assert_eq!(
            shown.matches("The first paragraph is whole").count(),
            1,
            "{shown}"
        );
        assert_eq!(shown.matches("• one item").count(), 1, "{shown}");
        leave(terminal, size);
    }
}

#[test]
fn a_running_command_shows_its_name_and_latest_output_while_it_runs() {
    for size in SIZES {
        let dir = tempfile::tempdir().unwrap();
        let signals = support::signals();
        let g = signals.path().display();
        let script = script_file(
            dir.path(),
            "script.jsonl",
            &[
                json!({"tool_calls": [{"id": "a", "name": "bash", "arguments": {"command": format!("echo compiling-step-1; echo compiling-step-2; while [ ! -e {g}/release ]; do sleep 0.05; done; echo finished")}}]}),
                json!({"text": "Built."}),
            ],
        );
        let mut terminal = ready(start(dir.path(), &script, &[], size), size);
        terminal.type_raw("build it\r");
        wait_until(
            &mut terminal,
            size,
            "the running call and its output",
            |shown| {
                shown.lines().any(|line| {
                    line.contains("bash")
                        && line.contains("compiling-step-2")
                        && line.contains("Esc")
                })
            },
        );
        std::fs::write(signals.path().join("release"), "").unwrap();
        wait_until(&mut terminal, size, "the answer", |shown| {
            shown.contains("Built.")
        });
        leave(terminal, size);
    }
}

#[test]
fn a_four_column_table_and_a_long_code_line_lose_nothing_at_80_columns() {
    let size = (24, 80);
    let dir = tempfile::tempdir().unwrap();
    let long: String = (0..170)
        .map(|i| char::from(b'a' + (i % 26) as u8))
        .collect();
    let answer = format!(
        "| setting | what it does | default | where it is set |\n|---|---|---|---|\n| sandbox | confines commands to the workspace and temporary folders | workspace-write | flags, configuration files, /sandbox |\n| approve | which calls ask first | never | --approve, /approve |\n\n```\n{long}\n```\n"
    );
    let script = script_file(dir.path(), "script.jsonl", &[json!({"text": answer})]);
    let mut terminal = ready(start(dir.path(), &script, &[], size), size);
    terminal.type_raw("show the settings\r");
    let shown = wait_until(&mut terminal, size, "the table", |shown| {
        shown.contains("/approve") && shown.contains('↪')
    });
    for word in [
        "setting",
        "does",
        "default",
        "where",
        "confines",
        "commands",
        "workspace",
        "temporary",
        "folders",
        "workspace-write",
        "configuration",
        "/sandbox",
        "approve",
        "calls",
        "first",
        "never",
        "--approve",
    ] {
        assert!(shown.contains(word), "{word:?} lost:\n{shown}");
    }
    let code: String = shown
        .lines()
        .filter(|line| line.starts_with("  ") || line.starts_with("↪ "))
        .map(|line| {
            line.trim_start_matches("  ")
                .trim_start_matches("↪ ")
                .trim_end()
        })
        .collect();
    assert!(
        code.contains(&long),
        "the code line lost characters:\n{shown}"
    );
    leave(terminal, size);
}

#[test]
fn leaving_takes_the_live_area_away_says_how_to_go_on_and_one_ctrl_c_does_not_quit() {
    for size in SIZES {
        let dir = tempfile::tempdir().unwrap();
        let script = script_file(dir.path(), "script.jsonl", &[json!({"text": "Hello."})]);
        let mut terminal = ready(start_saving(dir.path(), &script, &[], size), size);
        terminal.type_raw("hi\r");
        // The run's end line: the run is over (the key line may still be the one drawn before
        // it began), so Ctrl-C is not an interrupt.
        wait_until(&mut terminal, size, "the answer", |shown| {
            shown.contains("Hello.") && shown.contains("done: ")
        });
        wait_until(&mut terminal, size, "the idle input", |shown| {
            shown.contains("Ctrl-D quit")
        });
        // One Ctrl-C on an empty input says what a second does, and quits nothing.
        terminal.type_raw("\x03");
        wait_until(&mut terminal, size, "the warning", |shown| {
            shown.contains("Ctrl-C again quits")
        });
        terminal.type_raw("\x03");
        let (code, _) = terminal.finish();
        assert_eq!(code, Some(0));
    }
    for size in SIZES {
        let dir = tempfile::tempdir().unwrap();
        let script = script_file(dir.path(), "script.jsonl", &[json!({"text": "Hello."})]);
        let mut terminal = ready(start_saving(dir.path(), &script, &[], size), size);
        terminal.type_raw("hi\r");
        wait_until(&mut terminal, size, "the answer", |shown| {
            shown.contains("Hello.")
        });
        let drawn = leave(terminal, size);
        // What the person sees once golato has gone: the conversation, the hint, no input box.
        let n = |n: u16| std::num::NonZeroU16::new(n).unwrap();
        let mut parser = vt100::Parser::new(n(size.0), n(size.1), 0);
        parser.process(drawn.as_bytes());
        let last = parser.screen().contents();
        assert!(last.contains("Hello."), "{last}");
        assert!(last.contains("golato -c"), "{last}");
        assert!(
            !last.contains("Ctrl-D quit"),
            "the key line stayed:\n{last}"
        );
        assert!(!last.contains("Enter send"), "the key line stayed:\n{last}");
        assert!(
            !last.lines().any(|line| line.trim() == "›"),
            "the input stayed:\n{last}"
        );
    }
}

/// Everything on screen and in the scrollback of a terminal that began at `first` and was
/// resized to each `(size, at)` once `at` bytes had been drawn.
fn screen_resized(drawn: &[u8], first: (u16, u16), resizes: &[((u16, u16), usize)]) -> String {
    let n = |n: u16| std::num::NonZeroU16::new(n).unwrap();
    let mut parser = vt100::Parser::new(n(first.0), n(first.1), 10_000);
    let mut done = 0;
    let mut columns = first.1;
    for ((rows, cols), at) in resizes {
        parser.process(&drawn[done..*at]);
        parser.screen_mut().set_size(n(*rows), n(*cols));
        (done, columns) = (*at, *cols);
    }
    parser.process(&drawn[done..]);
    parser.screen_mut().set_scrollback(usize::MAX);
    let back = parser.screen().scrollback();
    let mut lines: Vec<String> = Vec::new();
    for offset in (1..=back).rev() {
        parser.screen_mut().set_scrollback(offset);
        lines.extend(parser.screen().rows(0, columns).take(1));
    }
    parser.screen_mut().set_scrollback(0);
    lines.extend(parser.screen().rows(0, columns));
    lines.join("\n")
}

#[test]
fn a_resize_leaves_no_copy_of_the_live_area_and_clears_nothing_else() {
    for (size, other) in [(SIZES[1], SIZES[0]), (SIZES[0], SIZES[1])] {
        let dir = tempfile::tempdir().unwrap();
        let script = script_file(dir.path(), "script.jsonl", &[json!({"text": "Hello."})]);
        let mut terminal = ready(start(dir.path(), &script, &[], size), size);
        terminal.type_raw("hi\r");
        wait_until(&mut terminal, size, "the answer", |shown| {
            shown.contains("Hello.") && shown.contains("Ctrl-D quit")
        });
        let mut resizes = Vec::new();
        for to in [other, size, (size.0 - 3, size.1 - 17)] {
            terminal.catch_up();
            resizes.push((to, terminal.drawn_bytes().len()));
            terminal.resize(to.0, to.1);
            // Drawn again at the new size: typing shows in the new live area.
            terminal.type_raw("x");
            let started = std::time::Instant::now();
            loop {
                terminal.catch_up();
                let shown = screen_resized(terminal.drawn_bytes(), size, &resizes);
                let typed = "x".repeat(resizes.len());
                if shown.contains(&format!("› {typed}")) {
                    break;
                }
                assert!(
                    started.elapsed() < support::HANG_GUARD,
                    "{shown}\n{:?}",
                    String::from_utf8_lossy(&terminal.drawn_bytes()[resizes.last().unwrap().1..])
                );
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        }
        let shown = screen_resized(terminal.drawn_bytes(), size, &resizes);
        assert_eq!(
            shown.matches("Enter send").count(),
            1,
            "copies of the key line:\n{shown}"
        );
        assert_eq!(
            shown.matches("› ").count(),
            2,
            "copies of the input:\n{shown}"
        );
        // The conversation is still on screen: nothing cleared it away.
        assert!(
            shown.contains("› hi") && shown.contains("Hello."),
            "{shown}"
        );
        // No full-screen clear was ever written (a terminal pushes its screen into the
        // scrollback on one).
        assert!(
            !terminal.drawn().contains("\x1b[2J"),
            "the screen was cleared"
        );
        terminal.type_raw("\x15\x04");
        let (code, _) = terminal.finish();
        assert_eq!(code, Some(0));
    }
}

#[test]
fn a_long_prompt_wraps_in_the_input_and_readline_keys_cut_and_yank() {
    for size in SIZES {
        let dir = tempfile::tempdir().unwrap();
        let script = script_file(dir.path(), "script.jsonl", &[json!({"text": "Read."})]);
        let mut terminal = ready(start(dir.path(), &script, &[], size), size);
        let words: Vec<String> = (0..40).map(|n| format!("w{n:02}")).collect();
        let prompt = words.join(" ");
        assert!(prompt.len() >= 150);
        terminal.type_raw(&prompt);
        // Every word of the prompt is on screen, in the input's rows.
        wait_until(&mut terminal, size, "the whole prompt", |shown| {
            words.iter().all(|word| shown.contains(word.as_str()))
        });
        // Ctrl-U cuts it all (Ctrl-D would now quit), Ctrl-Y puts it back.
        terminal.type_raw("\x15");
        wait_until(&mut terminal, size, "the input emptied", |shown| {
            !shown.contains("w39")
        });
        terminal.type_raw("\x19");
        wait_until(&mut terminal, size, "the prompt back", |shown| {
            shown.contains("w00") && shown.contains("w39")
        });
        // Ctrl-A, then Ctrl-K cuts to the end of the line.
        terminal.type_raw("\x01\x0b");
        wait_until(&mut terminal, size, "the input cut to its end", |shown| {
            !shown.contains("w00")
        });
        leave(terminal, size);
    }
}

#[test]
fn slash_alone_lists_the_commands_a_path_is_a_prompt_and_ctrl_r_starts_at_the_newest() {
    let size = (24, 120);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "x").unwrap();
    let script = script_file(
        dir.path(),
        "script.jsonl",
        &[json!({"text": "Looked at it."}), json!({"text": "Again."})],
    );
    let mut terminal = ready(start(dir.path(), &script, &[], size), size);
    terminal.type_raw("/");
    wait_until(&mut terminal, size, "the commands", |shown| {
        shown.contains("› /help      this list") && shown.contains("  /model     pick the model")
    });
    terminal.type_raw("und");
    wait_until(&mut terminal, size, "what /undo does", |shown| {
        shown.contains("› /undo      take back the last prompt")
    });
    // A first word that is a path (absolute, or of the working directory) is a prompt.
    terminal.type_raw("\x15/etc/hosts looks odd, read it\r");
    wait_until(&mut terminal, size, "the answer", |shown| {
        shown.contains("Looked at it.")
    });
    let shown = screen(&mut terminal, size);
    assert!(!shown.contains("is not a command"), "{shown}");
    // Ctrl-R with nothing typed offers the newest entry.
    wait_until(&mut terminal, size, "the idle input", |shown| {
        shown.contains("Ctrl-D quit")
    });
    terminal.type_raw("\x12");
    wait_until(&mut terminal, size, "the newest entry", |shown| {
        shown.contains("search history:") && shown.contains("/etc/hosts looks odd")
    });
    terminal.type_raw("\x1b");
    wait_until(&mut terminal, size, "the search left", |shown| {
        !shown.contains("search history:")
    });
    // /undo in a session with no prompt says so.
    terminal.type_raw("/new\r");
    wait_until(&mut terminal, size, "the new session", |shown| {
        shown.contains("a new session")
    });
    terminal.type_raw("/undo\r");
    wait_until(&mut terminal, size, "nothing to undo", |shown| {
        shown.contains("nothing to undo")
    });
    leave(terminal, size);
}

#[test]
fn a_project_with_instructions_is_asked_about_once_and_the_answer_is_remembered() {
    let size = (24, 120);
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    std::fs::write(dir.path().join("AGENTS.md"), "Use tabs.").unwrap();
    let script = script_file(dir.path(), "script.jsonl", &[json!({"text": "Hi."})]);
    let mut terminal = start(dir.path(), &script, &[], size);
    wait_until(&mut terminal, size, "the question", |shown| {
        shown.contains("lets its project steer golato") && shown.contains("AGENTS.md")
    });
    // One key.
    terminal.type_raw("n");
    let terminal = ready(terminal, size);
    leave(terminal, size);
    // Asked once: the next start goes straight to the input.
    let terminal = ready(start(dir.path(), &script, &[], size), size);
    let drawn = leave(terminal, size);
    assert!(!drawn.contains("lets its project steer"), "{drawn}");
}

#[test]
fn resume_without_a_prompt_on_a_terminal_opens_the_front_end_on_the_session() {
    let size = (24, 100);
    let dir = tempfile::tempdir().unwrap();
    let script = script_file(
        dir.path(),
        "script.jsonl",
        &[
            json!({"text": "The **first** answer."}),
            json!({"text": "Second answer."}),
        ],
    );
    // A prompt longer than a line: kept whole in the scrollback, then in the resumed history.
    let words: Vec<String> = (0..30).map(|n| format!("q{n:02}")).collect();
    let question = words.join(" ");
    let mut terminal = ready(start_saving(dir.path(), &script, &[], size), size);
    terminal.type_raw(&format!("{question}\r"));
    let shown = wait_until(&mut terminal, size, "the answer", |shown| {
        shown.contains("first answer.")
    });
    assert!(
        words.iter().all(|word| shown.contains(word.as_str())),
        "{shown}"
    );
    // The session's ID, as the header names it (other tests save sessions beside it).
    let id = shown
        .split_whitespace()
        .skip_while(|word| *word != "session")
        .nth(1)
        .unwrap_or_else(|| panic!("no session ID in the header:\n{shown}"))
        .to_owned();
    leave(terminal, size);
    let mut command = golato();
    command
        .args(["resume", &id, "-C"])
        .arg(dir.path())
        .arg("--script")
        .arg(&script);
    let mut terminal = in_terminal(command, size);
    let shown = wait_until(&mut terminal, size, "the resumed session", |shown| {
        shown.contains("going on with this session") && shown.contains("Enter send")
    });
    let resumed = &shown[shown.find("earlier in this session").unwrap_or(0)..];
    assert!(
        words.iter().all(|word| resumed.contains(word.as_str())),
        "{resumed}"
    );
    assert!(
        resumed.contains("The first answer."),
        "rendered:\n{resumed}"
    );
    assert!(!resumed.contains("**"), "rendered:\n{resumed}");
    leave(terminal, size);
}

#[test]
fn a_second_tab_goes_to_the_next_file_completion() {
    let size = (24, 100);
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/alpha.rs"), "").unwrap();
    std::fs::write(dir.path().join("src/alpine.rs"), "").unwrap();
    let script = script_file(dir.path(), "script.jsonl", &[json!({"text": "Ok."})]);
    let mut terminal = ready(start(dir.path(), &script, &[], size), size);
    terminal.type_raw("look at @alp");
    wait_until(&mut terminal, size, "the completions", |shown| {
        shown.contains("src/alpha.rs") && shown.contains("src/alpine.rs")
    });
    let input = |shown: &str| -> String {
        shown
            .lines()
            .find(|line| line.starts_with("› look at"))
            .unwrap_or_default()
            .to_owned()
    };
    terminal.type_raw("\t");
    let first = input(&wait_until(&mut terminal, size, "the first", |shown| {
        input(shown).contains("@src/alp")
    }));
    terminal.type_raw("\t");
    let second = input(&wait_until(&mut terminal, size, "the next", |shown| {
        let now = input(shown);
        now.contains("@src/alp") && now != first
    }));
    assert_ne!(first.trim(), second.trim());
    terminal.type_raw("\x15");
    leave(terminal, size);
}

/// A sandboxed command's connections through golato's proxy: each host once under the call,
/// with its bytes or why it was blocked.
#[test]
fn a_calls_connections_are_named_under_it() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut request = [0u8; 4096];
            let _ = std::io::Read::read(&mut stream, &mut request);
            let _ = std::io::Write::write_all(
                &mut stream,
                b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello",
            );
        }
    });
    for size in SIZES {
        let dir = tempfile::tempdir().unwrap();
        let command = format!(
            "unset NO_PROXY no_proxy; curl -sS http://localhost:{port}/; curl -sS http://127.0.0.1:{port}/"
        );
        let script = script_file(
            dir.path(),
            "script.jsonl",
            &[
                json!({"tool_calls": [{"id": "a", "name": "bash", "arguments": {"command": command}}]}),
                json!({"text": "Fetched."}),
            ],
        );
        let mut terminal = start(dir.path(), &script, &["--allow-domain", "localhost"], size);
        wait_until(&mut terminal, size, "the input", |shown| {
            shown.contains("Enter send")
        });
        terminal.type_raw("fetch it\r");
        let shown = wait_until(&mut terminal, size, "the run's end", |shown| {
            shown.contains("Fetched.")
        });
        assert!(shown.contains("network: localhost "), "{shown}");
        assert!(shown.contains("127.0.0.1 blocked"), "{shown}");
        leave(terminal, size);
    }
}

#[test]
fn the_footer_counts_background_commands_and_ps_lists_them_and_kill_ends_one() {
    for size in SIZES {
        let dir = tempfile::tempdir().unwrap();
        let marker = format!("GOLATO_FRONT_PS={}-{}", std::process::id(), size.1);
        let script = script_file(
            dir.path(),
            "script.jsonl",
            &[
                json!({"tool_calls": [{"id": "a", "name": "bash", "arguments": {"command": format!("export {marker}; echo watching files; exec python3 -u -m http.server 8766 --bind 127.0.0.1"), "background": true}}]}),
                json!({"text": "Started."}),
            ],
        );
        let mut terminal = ready(start(dir.path(), &script, &[], size), size);
        terminal.type_raw("watch\r");
        wait_until(&mut terminal, size, "the count", |shown| {
            shown.contains("Started.") && shown.contains("1 running (/ps)")
        });
        std::fs::write(dir.path().join("hello.txt"), "served to the person\n").unwrap();
        terminal.type_raw("/ps\r");
        wait_until(&mut terminal, size, "the list", |shown| {
            shown.contains(&format!("1 export {marker}; echo watching"))
                && shown.contains(" s · running ·")
        });
        // The person's own command reaches the server the model started (one network for
        // the session), once it listens.
        wait_until(&mut terminal, size, "the server", |_| {
            support::processes_with(&marker).iter().any(|pid| {
                std::fs::read_to_string(format!("/proc/{pid}/net/tcp"))
                    .is_ok_and(|tcp| tcp.contains(":223E 00000000:0000 0A"))
            })
        });
        terminal.type_raw("!curl -sS http://127.0.0.1:8766/hello.txt\r");
        wait_until(&mut terminal, size, "the person's curl", |shown| {
            shown.contains("│ served to the person")
        });
        terminal.type_raw("/kill 1\r");
        wait_until(&mut terminal, size, "the count gone", |shown| {
            let footer = shown
                .lines()
                .rev()
                .find(|line| line.contains("approve "))
                .unwrap_or_default()
                .to_owned();
            shown.contains("1 is being ended") && !footer.contains("running (/ps)")
        });
        assert!(support::processes_with(&marker).is_empty());
        leave(terminal, size);
    }
}
