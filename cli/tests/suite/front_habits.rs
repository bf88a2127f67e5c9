//! The front end's daily habits, as a person who lives in Claude Code and codex brings them:
//! new lines without sending, the whole command in a question, narrow rules to remember, what
//! ran kept as it ran, and the session's model found again on resume. Each on pseudo terminals
//! of 80×24 and 120×40, read back through vt100.

use crate::support;

use serde_json::json;
use support::cli::script_file;

use super::front::{leave, ready, start, start_saving, wait_until, SIZES};

/// Shift-Enter as the kitty keyboard protocol sends it (`CSI 13;2u`) and `\`+Enter make new
/// lines; Enter sends the three lines as one prompt. The front end asked for the protocol and
/// gives it back on leaving.
#[test]
fn shift_enter_and_backslash_enter_make_new_lines_and_enter_sends_them_all() {
    for size in SIZES {
        let dir = tempfile::tempdir().unwrap();
        let script = script_file(dir.path(), "script.jsonl", &[json!({"text": "Read."})]);
        let mut terminal = ready(start_saving(dir.path(), &script, &[], size), size);
        terminal.type_raw("first line\x1b[13;2usecond line\\\rthird line");
        let shown = wait_until(&mut terminal, size, "three lines in the input", |shown| {
            shown.contains("third line")
        });
        assert!(shown.contains("› first line"), "{shown}");
        assert!(
            shown.lines().any(|line| line.trim_end() == "  second line"),
            "the backslash is taken, the line kept:\n{shown}"
        );
        assert!(!shown.contains("done:"), "nothing was sent yet:\n{shown}");
        // Shift-Enter in xterm's modifyOtherKeys form (golato does not ask for it; a terminal
        // set to send it anyway) never sends a half-written prompt.
        terminal.type_raw("\x1b[27;2;13~ still");
        wait_until(&mut terminal, size, "the text after it", |shown| {
            shown.contains("third line still")
        });
        terminal.type_raw("\x7f\x7f\x7f\x7f\x7f\x7f\r");
        wait_until(&mut terminal, size, "the answer", |shown| {
            shown.contains("Read.") && shown.contains("Ctrl-D quit")
        });
        leave(terminal, size);
        let session =
            std::fs::read_to_string(support::cli::session_file(dir.path()).unwrap()).unwrap();
        assert!(
            session.contains("first line\\nsecond line\\nthird line"),
            "one prompt of three lines:\n{session}"
        );
    }
}

/// What the front end writes to the terminal asks for the kitty keyboard protocol on start
/// and pops it on leaving, so the shell after it gets plain keys back.
#[test]
fn the_kitty_keyboard_protocol_is_asked_for_and_given_back() {
    let size = SIZES[0];
    let dir = tempfile::tempdir().unwrap();
    let script = script_file(dir.path(), "script.jsonl", &[json!({"text": "Hi."})]);
    let mut terminal = ready(start(dir.path(), &script, &[], size), size);
    terminal.catch_up();
    let drawn = terminal.drawn_bytes().to_vec();
    let asked = String::from_utf8_lossy(&drawn).into_owned();
    assert!(asked.contains("\x1b[>1u"), "{asked:?}");
    let drawn = leave(terminal, size);
    let after = drawn.rfind("\x1b[>1u").unwrap();
    assert!(drawn[after..].contains("\x1b[<1u"), "{drawn:?}");
}

/// The whole command is in the question however long it is: wrapped at the width, every
/// character kept (two spaces inside quotes too), nothing cut at the edge.
#[test]
fn a_long_command_is_shown_whole_in_its_question() {
    let words: Vec<String> = (1..=40).map(|n| format!("part{n:02}")).collect();
    let command = format!("echo 'two  spaces' {} THE-END", words.join(" "));
    for size in SIZES {
        let dir = tempfile::tempdir().unwrap();
        let script = script_file(
            dir.path(),
            "script.jsonl",
            &[
                json!({"tool_calls": [{"id": "a", "name": "bash", "arguments": {"command": command}}]}),
                json!({"text": "Fine."}),
            ],
        );
        let mut terminal = ready(
            start(
                dir.path(),
                &script,
                &["--sandbox", "off", "--approve", "ask"],
                size,
            ),
            size,
        );
        terminal.type_raw("go\r");
        let shown = wait_until(&mut terminal, size, "the question", |shown| {
            shown.contains("y yes · n no")
        });
        let rows: Vec<&str> = shown
            .lines()
            .filter_map(|line| line.strip_prefix("  │ "))
            .collect();
        assert!(rows.len() > 2, "wrapped over rows:\n{shown}");
        assert!(
            rows.iter()
                .all(|row| row.chars().count() <= usize::from(size.1) - 4),
            "{shown}"
        );
        // A row's closing space is not on screen; the words and the quoted spaces are.
        let words: Vec<&str> = rows.iter().flat_map(|row| row.split_whitespace()).collect();
        let expected = format!("bash $ {command}");
        assert_eq!(
            words,
            expected.split_whitespace().collect::<Vec<_>>(),
            "{shown}"
        );
        assert!(rows.concat().contains("'two  spaces'"), "{shown}");
        terminal.type_raw("n");
        wait_until(&mut terminal, size, "the end", |shown| {
            shown.contains("Fine.") && shown.contains("Ctrl-D quit")
        });
        leave(terminal, size);
    }
}

/// "Remember" offers what the call runs (`python3 -m platform`, not every Python program)
/// and, for every project, an edit's file by its absolute path; `w` widens it deliberately.
#[test]
fn remember_offers_the_narrowest_rule_with_its_scope_and_w_widens_it() {
    for (size, widen) in [(SIZES[0], false), (SIZES[1], true)] {
        let dir = tempfile::tempdir().unwrap();
        let user = dir.path().join("user-config.toml");
        let script = script_file(
            dir.path(),
            "script.jsonl",
            &[
                json!({"tool_calls": [{"id": "a", "name": "bash", "arguments": {"command": "python3 -m platform"}}]}),
                json!({"tool_calls": [{"id": "b", "name": "bash", "arguments": {"command": "python3 -m platform --terse"}}]}),
                json!({"tool_calls": [{"id": "c", "name": "write", "arguments": {"path": "calc.py", "content": "x = 1\n"}}]}),
                json!({"text": "Done."}),
            ],
        );
        let mut command = support::cli::golato();
        command
            .env("GOLATO_CONFIG", &user)
            .arg("-C")
            .arg(dir.path())
            .args([
                "--script",
                script.to_str().unwrap(),
                "--ephemeral",
                "--sandbox",
                "off",
                "--approve",
                "ask",
            ]);
        let mut terminal = ready(super::front::in_terminal(command, size), size);
        terminal.type_raw("go\r");
        let shown = wait_until(&mut terminal, size, "the question", |shown| {
            shown.contains("u remember · w wider")
        });
        assert!(
            shown.contains("u  yes, and allow bash(python3 -m platform:*) in every project"),
            "{shown}"
        );
        assert!(
            shown.contains("w  offer the wider bash(python3:*) instead"),
            "{shown}"
        );
        if widen {
            terminal.type_raw("w");
            wait_until(&mut terminal, size, "the wider rule", |shown| {
                shown.contains("u  yes, and allow bash(python3:*) in every project")
            });
        }
        terminal.type_raw("u");
        // The second command is not asked about; the write is, for its one file.
        let shown = wait_until(&mut terminal, size, "the write's question", |shown| {
            shown.contains("a all write (session)")
        });
        assert!(
            shown.contains("✓ bash $ python3 -m platform --terse"),
            "{shown}"
        );
        let real = std::fs::canonicalize(dir.path()).unwrap();
        let file_rule = format!("edit({}/calc.py)", real.display());
        assert!(
            shown.contains(&format!("u  yes, and allow {file_rule} in every project")),
            "{shown}"
        );
        terminal.type_raw("u");
        wait_until(&mut terminal, size, "the end", |shown| {
            shown.contains("Done.") && shown.contains("Ctrl-D quit")
        });
        leave(terminal, size);
        let written = std::fs::read_to_string(&user).unwrap();
        let bash_rule = match widen {
            true => "bash(python3:*)",
            false => "bash(python3 -m platform:*)",
        };
        assert!(written.contains(bash_rule), "{written}");
        assert!(written.contains(&file_rule), "{written}");
        assert!(!written.contains("edit(calc.py)"), "{written}");
    }
}

/// `golato -c` and `golato resume` go on with the model API, model and server the session was
/// started with, through the binary against a loopback model server; flags given now win.
#[test]
fn going_on_with_a_session_reaches_the_model_it_was_started_with() {
    use support::provider::{FakeProvider, Reply, Script};
    let (_runtime, url, server) = FakeProvider::start_blocking(Script::Repeat(Reply::ok(
        support::fixture("openai-chat/text-stop.sse"),
        1,
    )));
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().to_str().unwrap();
    let base = format!("{url}/v1");
    let run = |args: &[&str]| {
        let output = support::cli::golato().args(args).output().unwrap();
        assert_eq!(output.status.code(), Some(0), "{args:?}: {output:?}");
        let sent = server.sent();
        let (path, _, body) = sent.last().unwrap().clone();
        assert_eq!(path, "/v1/chat/completions", "{args:?}");
        body["model"].as_str().unwrap().to_owned()
    };
    let started = [
        "run",
        "-C",
        cwd,
        "--provider",
        "openai",
        "--base-url",
        &base,
    ];
    let mut first = started.to_vec();
    first.extend(["--model", "local-model", "first"]);
    assert_eq!(run(&first), "local-model");
    assert_eq!(run(&["run", "-C", cwd, "-c", "second"]), "local-model");
    let file = support::cli::session_file(dir.path()).unwrap();
    let id = file.file_stem().unwrap().to_str().unwrap().to_owned();
    // From elsewhere: the session's folder, and its model.
    assert_eq!(run(&["resume", &id, "third"]), "local-model");
    assert_eq!(
        run(&["run", "-C", cwd, "-c", "--model", "other-model", "fourth"]),
        "other-model"
    );
    // The front end, on a terminal: the first prompt reaches the same server.
    for size in SIZES {
        let before = server.sent().len();
        let mut command = support::cli::golato();
        command.args(["-C", cwd, "-c"]);
        let mut terminal = ready(super::front::in_terminal(command, size), size);
        terminal.type_raw("fifth\r");
        wait_until(&mut terminal, size, "the answer", |shown| {
            shown.contains("done: ") && shown.contains("Ctrl-D quit")
        });
        leave(terminal, size);
        let sent = server.sent();
        assert_eq!(sent.len(), before + 1);
        assert_eq!(sent[before].2["model"], "local-model");
    }
    // A model chosen with /model is the one the session goes on with.
    let size = SIZES[0];
    let mut command = support::cli::golato();
    command.args(["-C", cwd, "-c"]);
    let mut terminal = ready(super::front::in_terminal(command, size), size);
    terminal.type_raw("/model chosen-later\r");
    wait_until(&mut terminal, size, "the switch", |shown| {
        shown.contains("model: chosen-later")
    });
    terminal.type_raw("sixth\r");
    wait_until(&mut terminal, size, "the answer", |shown| {
        shown.matches("done: ").count() >= 1 && shown.contains("Ctrl-D quit")
    });
    leave(terminal, size);
    assert_eq!(server.sent().last().unwrap().2["model"], "chosen-later");
    assert_eq!(run(&["run", "-C", cwd, "-c", "seventh"]), "chosen-later");
    assert_eq!(run(&["resume", &id, "eighth"]), "chosen-later");
}

/// A command changed with `e` before it runs is shown as it ran (and what the model asked
/// for under it), kept so in the session (a resume shows what ran), and timed from when it
/// started, not from when the question was asked.
#[test]
fn an_edited_command_is_shown_kept_and_timed_as_it_ran() {
    for size in SIZES {
        let dir = tempfile::tempdir().unwrap();
        let script = script_file(
            dir.path(),
            "script.jsonl",
            &[
                json!({"tool_calls": [{"id": "a", "name": "bash", "arguments": {"command": "echo asked-for"}}]}),
                json!({"text": "Noted."}),
            ],
        );
        let mut terminal = ready(
            start_saving(
                dir.path(),
                &script,
                &["--sandbox", "off", "--approve", "ask"],
                size,
            ),
            size,
        );
        terminal.type_raw("go\r");
        wait_until(&mut terminal, size, "the question", |shown| {
            shown.contains("e edit")
        });
        terminal.type_raw("e");
        wait_until(&mut terminal, size, "the command in the input", |shown| {
            shown.contains("Enter run it as it stands")
        });
        terminal.type_raw("\x15echo ran-instead");
        wait_until(&mut terminal, size, "the changed command", |shown| {
            shown.contains("$ echo ran-instead")
        });
        // The person takes their time before Enter; the call's time is the run's alone.
        std::thread::sleep(std::time::Duration::from_millis(1500));
        terminal.type_raw("\r");
        let shown = wait_until(&mut terminal, size, "the end", |shown| {
            shown.contains("Noted.") && shown.contains("Ctrl-D quit")
        });
        let ended = shown
            .lines()
            .find(|line| line.starts_with("✓ bash $ echo ran-instead"))
            .unwrap_or_else(|| panic!("shown as it ran:\n{shown}"));
        let seconds: f64 = ended
            .trim_end()
            .rsplit(' ')
            .next()
            .and_then(|time| time.strip_suffix('s'))
            .and_then(|time| time.parse().ok())
            .unwrap_or_else(|| panic!("a time: {ended}"));
        assert!(seconds < 1.0, "the wait was counted: {ended}");
        assert!(
            shown.contains("│ as you changed it; the model asked for: bash $ echo asked-for"),
            "{shown}"
        );
        assert!(shown.contains("│ ran-instead"), "{shown}");
        leave(terminal, size);
        let file = support::cli::session_file(dir.path()).unwrap();
        let session = std::fs::read_to_string(&file).unwrap();
        assert!(
            session.contains(r#""ran":{"command":"echo ran-instead"}"#),
            "{session}"
        );
        // Going on with the session shows what ran.
        let id = file.file_stem().unwrap().to_str().unwrap().to_owned();
        let mut command = support::cli::golato();
        command.args(["resume", &id, "--script", script.to_str().unwrap()]);
        let mut terminal = ready(super::front::in_terminal(command, size), size);
        let shown = wait_until(&mut terminal, size, "the earlier conversation", |shown| {
            shown.contains("going on with this session")
        });
        assert!(shown.contains("· bash $ echo ran-instead"), "{shown}");
        assert!(!shown.contains("· bash $ echo asked-for"), "{shown}");
        leave(terminal, size);
    }
}

/// `!command` shows its newest line of output while it runs, and its spinner turns.
#[test]
fn a_bang_command_shows_its_newest_line_while_it_runs() {
    for size in SIZES {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("go-on");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let script = script_file(dir.path(), "script.jsonl", &[json!({"text": "Seen."})]);
        let mut terminal = ready(
            start(dir.path(), &script, &["--sandbox", "off"], size),
            size,
        );
        terminal.type_raw("!echo first-line; echo newest-line; cat go-on\r");
        let status = |shown: &str| {
            shown
                .lines()
                .find(|line| {
                    line.contains("bash $ echo first") && line.contains("Esc to interrupt")
                })
                .map(str::to_owned)
        };
        let shown = wait_until(&mut terminal, size, "the newest line", |shown| {
            status(shown).is_some_and(|line| line.contains("· newest-line"))
        });
        let first = status(&shown).unwrap().chars().next().unwrap();
        wait_until(&mut terminal, size, "the spinner turning", |shown| {
            status(shown).is_some_and(|line| !line.starts_with(first))
        });
        std::fs::write(&fifo, "done\n").unwrap();
        wait_until(&mut terminal, size, "the command's end", |shown| {
            shown.contains("✓ bash $ echo first-line") && shown.contains("Ctrl-D quit")
        });
        leave(terminal, size);
    }
}

/// A block pasted by a terminal without bracketed paste arrives as keys, its line ends as
/// Enter: it is one prompt of many lines, not a prompt and steering.
#[test]
fn a_paste_typed_as_keys_is_one_prompt() {
    for size in SIZES {
        let dir = tempfile::tempdir().unwrap();
        let script = script_file(dir.path(), "script.jsonl", &[json!({"text": "One."})]);
        let mut terminal = ready(start_saving(dir.path(), &script, &[], size), size);
        // One write, as a terminal types a paste: the lines' ends are CR.
        terminal.type_raw("line one of the paste\rline two\rline three");
        let shown = wait_until(&mut terminal, size, "the pasted lines", |shown| {
            shown.contains("line three")
        });
        assert!(!shown.contains("done:"), "nothing sent yet:\n{shown}");
        terminal.type_raw("\r");
        // The run's end, not only its answer: the answer shows before the run's summary line
        // (CI caught the screen in between).
        let shown = wait_until(&mut terminal, size, "the answer", |shown| {
            shown.contains("One.") && shown.contains("done: ") && shown.contains("Ctrl-D quit")
        });
        assert_eq!(shown.matches("done: ").count(), 1, "{shown}");
        assert!(!shown.contains("steering"), "{shown}");
        leave(terminal, size);
        let session =
            std::fs::read_to_string(support::cli::session_file(dir.path()).unwrap()).unwrap();
        assert!(
            session.contains("line one of the paste\\nline two\\nline three"),
            "{session}"
        );
    }
}

/// Ctrl-L clears the screen and draws the input at its top; the first Ctrl-C's warning is on
/// the line above the input, never in the scrollback; leaving a session the model never
/// answered in says nothing was saved.
#[test]
fn ctrl_l_clears_the_screen_the_quit_warning_passes_and_an_empty_session_is_not_saved() {
    for size in SIZES {
        let dir = tempfile::tempdir().unwrap();
        let script = script_file(dir.path(), "script.jsonl", &[json!({"text": "Hello."})]);
        let mut terminal = ready(start_saving(dir.path(), &script, &[], size), size);
        terminal.type_raw("\x0c");
        // The header line went from the screen: the input is at its top.
        let shown = wait_until(&mut terminal, size, "the cleared screen", |shown| {
            let visible: Vec<&str> = shown.lines().rev().take(usize::from(size.0)).collect();
            !visible
                .iter()
                .any(|line| line.contains("golato: script at"))
                && visible.iter().any(|line| line.contains("Ctrl-D quit"))
        });
        let n = |n: u16| std::num::NonZeroU16::new(n).unwrap();
        let mut parser = vt100::Parser::new(n(size.0), n(size.1), 0);
        terminal.catch_up();
        parser.process(terminal.drawn_bytes());
        let top = parser.screen().rows(0, size.1).nth(1).unwrap_or_default();
        assert!(top.starts_with("›"), "the input at the top:\n{shown}");
        terminal.type_raw("\x03");
        wait_until(&mut terminal, size, "the warning", |shown| {
            shown.contains("Ctrl-C again quits")
        });
        terminal.type_raw("x\x7f");
        wait_until(&mut terminal, size, "the warning gone", |shown| {
            !shown.contains("Ctrl-C again quits")
        });
        terminal.type_raw("\x04");
        let (code, drawn) = terminal.finish();
        assert_eq!(code, Some(0), "{drawn}");
        assert!(!drawn.contains("saved"), "nothing was saved: {drawn}");
        assert!(support::cli::session_file(dir.path()).is_none());
    }
}

/// `golato -h` names the flags a person starting the front end reaches for, and each is one
/// `golato chat` takes.
#[test]
fn help_names_the_front_ends_flags() {
    let output = support::cli::golato().arg("-h").output().unwrap();
    let help = String::from_utf8(output.stdout).unwrap();
    let chat = support::cli::golato()
        .args(["chat", "--help"])
        .output()
        .unwrap();
    let chat = String::from_utf8(chat.stdout).unwrap();
    for flag in [
        "--continue",
        "--model",
        "--provider",
        "--base-url",
        "--sandbox",
        "--approve",
        "--cwd",
        "--plain",
    ] {
        assert!(
            help.contains(flag),
            "{flag} missing from golato -h:\n{help}"
        );
        assert!(chat.contains(flag), "{flag} is not a chat flag:\n{chat}");
    }
}

/// The trust question names every file trusting would let in (the configuration and the
/// instructions, AGENTS.md), wraps between words, takes one key, and after a no every later
/// start says one line.
#[test]
fn the_trust_question_names_every_file_takes_one_key_and_a_no_is_one_line_after() {
    for size in SIZES {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        std::fs::create_dir(dir.path().join(".golato")).unwrap();
        std::fs::write(
            dir.path().join(".golato/config.toml"),
            "sandbox = \"off\"\n[rules]\nallow = [\"bash(make:*)\"]\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("AGENTS.md"), "Use tabs.").unwrap();
        let script = script_file(dir.path(), "script.jsonl", &[json!({"text": "Hi."})]);
        let mut terminal = start(dir.path(), &script, &[], size);
        let shown = wait_until(&mut terminal, size, "the question", |shown| {
            shown.contains("any other key no:")
        });
        assert!(shown.contains("! sandbox = \"off\""), "{shown}");
        assert!(
            shown.contains("AGENTS.md (instructions for the model)"),
            "{shown}"
        );
        // Between words: each word of the question is whole on its line.
        for word in [
            "trusting",
            "project",
            "Remembered",
            "instructions",
            "undoes",
        ] {
            assert!(
                shown.lines().any(|line| line
                    .split(|c: char| !c.is_alphanumeric())
                    .any(|w| w == word)),
                "{word} broken at {size:?}:\n{shown}"
            );
        }
        terminal.type_raw("n");
        let terminal = ready(terminal, size);
        leave(terminal, size);
        let mut again = ready(start(dir.path(), &script, &[], size), size);
        let shown = wait_until(&mut again, size, "the input", |shown| {
            shown.contains("Enter send")
        });
        let said: Vec<&str> = shown
            .lines()
            .filter(|line| line.starts_with("golato: ") && !line.contains("golato: script at"))
            .collect();
        assert_eq!(said.len(), 1, "one line:\n{shown}");
        assert!(said[0].contains("(you said no)"), "{shown}");
        assert!(!shown.contains("any other key no"), "{shown}");
        leave(again, size);
    }
}

/// `/` lists the commands with what each does; ↑↓ choose, Tab completes the chosen one, Enter
/// runs it. `/model` on an OpenAI-compatible server lists the server's own models, and the
/// one chosen is what the next request asks.
#[test]
fn the_slash_list_is_chosen_with_arrows_and_model_lists_the_servers_models() {
    use support::provider::{FakeProvider, Reply, Script, LISTED_MODELS};
    let (_runtime, url, server) = FakeProvider::start_blocking(Script::Repeat(Reply::ok(
        support::fixture("openai-chat/text-stop.sse"),
        1,
    )));
    for size in SIZES {
        let dir = tempfile::tempdir().unwrap();
        let mut command = support::cli::golato();
        command.arg("-C").arg(dir.path()).args([
            "--ephemeral",
            "--provider",
            "openai",
            "--model",
            "served-model",
            "--base-url",
            &format!("{url}/v1"),
        ]);
        let mut terminal = ready(super::front::in_terminal(command, size), size);
        terminal.type_raw("/");
        let shown = wait_until(&mut terminal, size, "the list", |shown| {
            shown.contains("› /help      this list")
        });
        assert!(shown.contains("  /model     pick the model"), "{shown}");
        assert!(shown.contains("↑↓ choose · Tab complete"), "{shown}");
        // Down to /model, Tab puts it in the input.
        terminal.type_raw("\x1b[B");
        wait_until(&mut terminal, size, "the second chosen", |shown| {
            shown.contains("› /model     pick the model")
        });
        terminal.type_raw("\t");
        wait_until(&mut terminal, size, "the completed command", |shown| {
            shown.lines().any(|line| line.trim_end() == "› /model") && !shown.contains("› /help")
        });
        // Enter on a name being typed runs the chosen command: /mo is /model.
        terminal.type_raw("\x15/mo\r");
        let shown = wait_until(&mut terminal, size, "the server's models", |shown| {
            shown.contains("› served-model (now)") && shown.contains(LISTED_MODELS[0])
        });
        assert!(shown.contains(LISTED_MODELS[1]), "{shown}");
        assert!(
            !shown.contains("gpt-4"),
            "OpenAI's names on another server:\n{shown}"
        );
        terminal.type_raw("llama");
        wait_until(&mut terminal, size, "the one left", |shown| {
            shown.contains(&format!("› {}", LISTED_MODELS[0]))
        });
        terminal.type_raw("\r");
        wait_until(&mut terminal, size, "the switch", |shown| {
            shown.contains(&format!(
                "model: {}; the next turn asks it",
                LISTED_MODELS[0]
            ))
        });
        let before = server.sent().len();
        terminal.type_raw("hello\r");
        wait_until(&mut terminal, size, "the answer", |shown| {
            shown.contains("done: ") && shown.contains("Ctrl-D quit")
        });
        leave(terminal, size);
        let sent = server.sent();
        assert_eq!(sent[before].2["model"], LISTED_MODELS[0]);
    }
}

/// The input grows with what is typed up to a third of the screen (not four lines at 40
/// rows), keeps the cursor's line in view, and shrinks back once sent; Up on an entry of many
/// lines brought back goes to the entry before it.
#[test]
fn the_input_grows_to_a_third_of_the_screen_and_up_walks_entries_of_many_lines() {
    for size in SIZES {
        let dir = tempfile::tempdir().unwrap();
        let script = script_file(
            dir.path(),
            "script.jsonl",
            &[json!({"text": "One."}), json!({"text": "Two."})],
        );
        let mut terminal = ready(start(dir.path(), &script, &[], size), size);
        terminal.type_raw("an earlier prompt\r");
        wait_until(&mut terminal, size, "the first answer", |shown| {
            shown.contains("One.") && shown.contains("Ctrl-D quit")
        });
        let lines: Vec<String> = (1..=20).map(|n| format!("line-{n:02}")).collect();
        terminal.type_raw(&lines.join("\x1b[13;2u"));
        let third = usize::from(size.0) / 3;
        let shown = wait_until(&mut terminal, size, "the grown input", |shown| {
            shown.contains("line-20")
        });
        let input: Vec<&str> = shown
            .lines()
            .filter(|line| line.trim_start().starts_with("line-") || line.starts_with("› line-"))
            .collect();
        assert_eq!(input.len(), third, "a third of {} rows:\n{shown}", size.0);
        // The cursor's line (the last) is in view.
        assert!(input.last().unwrap().contains("line-20"), "{shown}");
        terminal.type_raw("\r");
        // Shrunk back once sent: below the answer's end line, the status line, the idle input
        // and the keys, no row of the twenty left.
        wait_until(&mut terminal, size, "the live area shrunk back", |shown| {
            let Some((_, after)) = shown.rsplit_once("done: 1 turn") else {
                return false;
            };
            shown.contains("Two.")
                && after.lines().any(|line| line.trim_end() == "›")
                && after.contains("Ctrl-D quit")
                && !after.contains("line-")
        });
        // Up brings the 20-line entry back; Up again goes to the entry before it.
        terminal.type_raw("\x1b[A");
        wait_until(&mut terminal, size, "the recalled entry", |shown| {
            shown.contains("line-20") && shown.contains("Ctrl-D quit")
        });
        terminal.type_raw("\x1b[A");
        wait_until(&mut terminal, size, "the entry before it", |shown| {
            shown
                .lines()
                .any(|line| line.trim_end() == "› an earlier prompt")
                && shown.contains("Ctrl-D quit")
        });
        terminal.type_raw("\x15");
        leave(terminal, size);
    }
}

/// golato on a real terminal multiplexer (tmux re-wraps its lines on a resize, as VTE, kitty
/// and iTerm2 do; vt100 does not), its pane captured with its history.
pub(super) struct Tmux {
    socket: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl Tmux {
    /// golato with `args` in a tmux pane of `size` (rows, columns).
    pub(super) fn start(args: &[&str], size: (u16, u16)) -> Tmux {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("tmux.sock");
        let data = support::cli::data_dir();
        let mut line = format!(
            "env -u OPENAI_API_KEY -u ANTHROPIC_API_KEY -u OPENAI_BASE_URL GOLATO_DATA_DIR='{}' GOLATO_CONFIG='{}' '{}'",
            data.display(),
            data.join("no-config.toml").display(),
            support::golato_binary()
        );
        for arg in args {
            line.push_str(&format!(" '{arg}'"));
        }
        // The pane stays after golato ends, for its last screen to be read.
        line.push_str("; sleep 600");
        let status = std::process::Command::new("tmux")
            .arg("-S")
            .arg(&socket)
            .args(["-f", "/dev/null", "new-session", "-d", "-s", "golato"])
            .args(["-x", &size.1.to_string(), "-y", &size.0.to_string(), &line])
            .status()
            .expect("tmux runs the front end's resize tests: install it (apt-get install tmux)");
        assert!(status.success());
        Tmux { socket, _dir: dir }
    }

    pub(super) fn tmux(&self, args: &[&str]) -> String {
        let output = std::process::Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// The pane's history and screen, each line's closing blanks cut.
    pub(super) fn captured(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-t", "golato", "-S", "-"])
            .lines()
            .map(str::trim_end)
            .collect::<Vec<_>>()
            .join("\n")
    }

    pub(super) fn wait_until(&self, what: &str, check: impl Fn(&str) -> bool) -> String {
        let started = std::time::Instant::now();
        loop {
            let shown = self.captured();
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

    pub(super) fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "golato"];
        args.extend_from_slice(keys);
        self.tmux(&args);
    }

    /// Resizes the pane, and waits until its terminal says the new size (tmux re-wraps its
    /// lines at once and tells the program a moment later).
    pub(super) fn resize(&self, (rows, columns): (u16, u16)) {
        self.tmux(&[
            "resize-window",
            "-t",
            "golato",
            "-x",
            &columns.to_string(),
            "-y",
            &rows.to_string(),
        ]);
        let tty = self.tmux(&["display", "-p", "-t", "golato", "#{pane_tty}"]);
        let started = std::time::Instant::now();
        loop {
            let said = std::process::Command::new("stty")
                .args(["-F", tty.trim(), "size"])
                .output()
                .unwrap();
            if String::from_utf8_lossy(&said.stdout).trim() == format!("{rows} {columns}") {
                return;
            }
            assert!(
                started.elapsed() < support::HANG_GUARD,
                "tmux never resized {tty}"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        self.tmux(&["kill-server"]);
    }
}

/// Resizes, narrower and wider, while an answer streams and then idle, leave nothing of the
/// live area behind in the scrollback: no piece of the footer a narrower terminal re-wrapped,
/// no spinner line drawn at the old size.
#[test]
fn resizes_while_an_answer_streams_leave_no_debris_in_the_scrollback() {
    let (url, go_on) = super::front::held_stream(
        "The first part of the answer, streamed while the terminal changes size.",
        " And its end.",
    );
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().to_str().unwrap();
    let tmux = Tmux::start(
        &[
            "-C",
            cwd,
            "--ephemeral",
            "--provider",
            "openai",
            "--model",
            "held",
            "--base-url",
            &url,
        ],
        SIZES[1],
    );
    tmux.wait_until("the input", |shown| shown.contains("Enter send"));
    tmux.keys(&["go", "Enter"]);
    tmux.wait_until("the stream", |shown| shown.contains("Esc to interrupt"));
    // Each size followed before the next: what is typed shows in the live area drawn anew.
    let mut typed = String::new();
    for size in [SIZES[0], (30, 100), SIZES[1], (24, 70), SIZES[0]] {
        tmux.resize(size);
        typed.push('x');
        tmux.keys(&["x"]);
        tmux.wait_until("the live area at the new size", |shown| {
            shown.lines().any(|line| line == format!("› {typed}"))
        });
    }
    go_on.send(()).unwrap();
    tmux.keys(&["C-u"]);
    let shown = tmux.wait_until("the run's end", |shown| {
        shown.contains("done: 1 turn") && shown.contains("Ctrl-D quit")
    });
    let spinners = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
    assert!(
        !shown.lines().any(|line| line.starts_with(spinners)),
        "a spinner line was left:\n{shown}"
    );
    assert_eq!(
        shown.matches("approve never · sandbox").count(),
        1,
        "a piece of the footer was left:\n{shown}"
    );
    assert_eq!(shown.matches("Enter send").count(), 1, "{shown}");
    // And idle: wider, then narrower.
    for size in [SIZES[1], SIZES[0]] {
        tmux.resize(size);
        typed.push('y');
        tmux.keys(&["y"]);
        tmux.wait_until("the live area at the new size", |shown| {
            shown.lines().any(|line| line.starts_with("› y"))
        });
        tmux.keys(&["C-u"]);
    }
    let shown = tmux.wait_until("the idle input", |shown| {
        shown.lines().any(|line| line == "›")
    });
    assert_eq!(
        shown.matches("approve never · sandbox").count(),
        1,
        "a piece of the footer was left:\n{shown}"
    );
    assert!(shown.contains("The first part of the answer"), "{shown}");
}
