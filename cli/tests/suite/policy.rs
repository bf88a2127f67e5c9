//! Rules and command hooks in files, through the binary: what a rule blocks, asks or allows;
//! hook scripts written as Claude Code's are; hooks that hang, flood, die or print nonsense;
//! and what a project's file in an untrusted folder may not bring.

use crate::support;

use std::path::Path;
use std::process::Output;

use serde_json::{json, Value};
use support::cli::{golato, json_lines, of_type, script_file};

/// A workspace with a user configuration of `config`.
fn workspace(config: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap();
    std::fs::write(ws.join("user.toml"), config).unwrap();
    (dir, ws)
}

/// `golato FLAGS… --cwd WS` with the user configuration of `ws`, and for a run its script and
/// the prompt.
fn golato_in(ws: &Path, flags: &[&str], run: Option<(&Path, &str)>) -> Output {
    let mut command = golato();
    command
        .env("GOLATO_CONFIG", ws.join("user.toml"))
        .args(flags)
        .arg("--cwd")
        .arg(ws);
    if let Some((script, prompt)) = run {
        command.arg("--script").arg(script).arg(prompt);
    }
    command.output().unwrap()
}

/// `golato run --json` in `ws` with its user configuration, the model making `calls` at once.
fn run(ws: &Path, calls: &[Value], flags: &[&str]) -> Output {
    let script = script_file(
        ws,
        "script.jsonl",
        &[json!({ "tool_calls": calls }), json!({"text": "done"})],
    );
    let mut args = vec!["run", "--json", "--sandbox", "off", "--ephemeral"];
    args.extend_from_slice(flags);
    golato_in(ws, &args, Some((&script, "go")))
}

fn bash(id: &str, command: &str) -> Value {
    json!({"id": id, "name": "bash", "arguments": {"command": command}})
}

/// Each call's result text, by call ID.
fn results(output: &Output) -> std::collections::BTreeMap<String, String> {
    let lines = json_lines(output);
    of_type(&lines, "tool_end")
        .into_iter()
        .map(|end| {
            let text: String = end["result"]["content"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|part| part["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n");
            (end["call_id"].as_str().unwrap().to_owned(), text)
        })
        .collect()
}

#[test]
fn rules_judge_each_part_of_a_command_and_name_the_rule_that_blocked() {
    let (_dir, ws) = workspace("[rules]\nallow = [\"bash(echo *)\", \"bash(tee *)\"]\ndeny = [\"bash(rm -rf*)\"]\nask = [\"bash(git push:*)\"]\n");
    let output = run(
        &ws,
        &[
            bash("allowed", "echo one | tee one.txt"),
            // A redirection to a file writes what no rule named: asked.
            bash("redirected", "echo three > three.txt"),
            bash("compound", "echo two && touch two.txt"),
            bash("denied", "echo x; rm -rf gone"),
            bash("asked", "git push origin main"),
        ],
        // Every call not allowed by a rule asks, and nobody can answer.
        &["--approve", "ask"],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let results = results(&output);
    assert!(ws.join("one.txt").exists(), "{results:?}");
    assert!(!ws.join("two.txt").exists(), "{results:?}");
    assert!(!ws.join("three.txt").exists(), "{results:?}");
    assert!(
        results["compound"].contains("needs approval"),
        "{results:?}"
    );
    assert!(
        results["denied"].contains("the rule `deny bash(rm -rf*)`")
            && results["denied"].contains("user.toml line 3"),
        "{results:?}"
    );
    assert!(
        results["asked"].contains("the rule `ask bash(git push:*)`"),
        "{results:?}"
    );

    // `golato config` lists the rules with where each is written.
    let output = golato_in(&ws, &["config"], None);
    let shown = String::from_utf8_lossy(&output.stdout);
    assert!(shown.contains("deny bash(rm -rf*)    # "), "{shown}");
    assert!(shown.contains("user.toml line 2"), "{shown}");
}

#[test]
fn a_malformed_rule_or_hook_is_a_usage_error_naming_the_file_and_line() {
    for (config, named) in [
        (
            "model = \"m\"\n[rules]\ndeny = [\"bash(rm -rf\"]\n",
            "line 3",
        ),
        ("[rules]\nallow = [\"bsh\"]\n", "matches no tool"),
        (
            "[[hooks.PreTool]]\ncommand = \"true\"\n",
            "hooks.PreTool is not an event",
        ),
        (
            "\n[[hooks.PreToolUse]]\nmatcher = \"(\"\ncommand = \"true\"\n",
            "line 2",
        ),
        (
            "[[hooks.Stop]]\ncommand = \"true\"\ntimeout = -1\n",
            "timeout",
        ),
    ] {
        let (_dir, ws) = workspace(config);
        let output = run(&ws, &[bash("a", "true")], &[]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{config}: {stderr}");
        assert!(stderr.contains("user.toml"), "{config}: {stderr}");
        assert!(stderr.contains(named), "{config}: {stderr}");
    }
    let (_dir, ws) = workspace("");
    let output = run(&ws, &[bash("a", "true")], &["--deny", "bash("]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--deny"));
}

/// A PreToolUse hook as Claude Code's documentation writes one: JSON on stdin, exit 2 and a
/// reason on stderr to block.
const CLAUDE_STYLE_GUARD: &str = r#"#!/usr/bin/env python3
import json, sys
event = json.load(sys.stdin)
command = event.get("tool_input", {}).get("command", "")
if event["tool_name"] in ("Bash", "bash") and "curl" in command:
    print("no network from here: use the vendored copy", file=sys.stderr)
    sys.exit(2)
if event["tool_name"] in ("Bash", "bash") and "--force" in command:
    print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse",
        "updatedInput": {"command": command.replace(" --force", "")}}}))
sys.exit(0)
"#;

#[test]
fn a_claude_code_hook_script_runs_unchanged_and_a_formatter_runs_after_each_edit() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap();
    let guard = ws.join("guard.py");
    std::fs::write(&guard, CLAUDE_STYLE_GUARD).unwrap();
    std::fs::set_permissions(&guard, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    std::fs::write(
        ws.join("user.toml"),
        format!(
            "[[hooks.PreToolUse]]\nmatcher = \"Bash\"\ncommand = \"{}\"\n\n[[hooks.PostToolUse]]\nmatcher = \"Edit|Write\"\ncommand = \"python3 -c 'import json,sys; e=json.load(sys.stdin); open(\\\"formatted.log\\\",\\\"a\\\").write(e[\\\"tool_input\\\"][\\\"file_path\\\"]+chr(10))'\"\n",
            guard.display()
        ),
    )
    .unwrap();
    let output = run(
        &ws,
        &[
            bash("blocked", "curl https://example.com"),
            bash("rewritten", "echo pushed --force > pushed.txt"),
            json!({"id": "w", "name": "write", "arguments": {"path": "a.txt", "content": "x"}}),
        ],
        &[],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let results = results(&output);
    // The hook's reason, then which hook said it and where it is configured.
    let blocked = &results["blocked"];
    assert!(
        blocked.starts_with(
            "no network from here: use the vendored copy\n(blocked by the PreToolUse hook `"
        ),
        "{blocked}"
    );
    assert!(
        blocked.contains("guard.py` (") && blocked.contains("user.toml line 1))"),
        "{blocked}"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("pushed.txt")).unwrap(),
        "pushed\n"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("formatted.log")).unwrap(),
        "a.txt\n"
    );
}

#[test]
fn a_hook_that_hangs_floods_dies_or_prints_nonsense_never_stalls_the_run() {
    let (_dir, ws) = workspace(
        "[[hooks.PreToolUse]]\ncommand = \"sleep 300\"\ntimeout = 0.5\n\n[[hooks.PreToolUse]]\ncommand = \"head -c 50000000 /dev/zero | tr '\\\\0' x\"\n\n[[hooks.PreToolUse]]\ncommand = \"kill -9 $$\"\n\n[[hooks.PreToolUse]]\ncommand = \"echo '{not json'\"\n\n[[hooks.PostToolUse]]\ncommand = \"exit 3\"\n",
    );
    let output = run(&ws, &[bash("a", "echo ran > ran.txt")], &[]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(ws.join("ran.txt").exists(), "{stderr}");
    assert!(
        stderr.contains("ran past its 0.5 s timeout and was killed"),
        "{stderr}"
    );
    assert!(stderr.contains("was ended by signal 9"), "{stderr}");
    assert!(stderr.contains("not a JSON object"), "{stderr}");
    assert!(stderr.contains("failed (exit 3)"), "{stderr}");
}

#[test]
fn an_untrusted_projects_hooks_and_allow_rules_are_ignored_its_denials_kept() {
    let (_dir, ws) = workspace("");
    std::fs::create_dir(ws.join(".golato")).unwrap();
    std::fs::write(
        ws.join(".golato/config.toml"),
        "[rules]\nallow = [\"bash\"]\ndeny = [\"bash(touch denied*)\"]\n\n[[hooks.SessionStart]]\ncommand = \"touch hooked\"\n",
    )
    .unwrap();
    let output = run(
        &ws,
        &[bash("a", "touch denied.txt"), bash("b", "touch asked.txt")],
        &["--approve", "ask"],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!ws.join("hooked").exists(), "{stderr}");
    assert!(!ws.join("denied.txt").exists(), "{stderr}");
    // Its allow rule does not stand: the call still needs a yes nobody can give.
    assert!(!ws.join("asked.txt").exists(), "{stderr}");
    assert!(
        stderr.contains("allow bash, hook SessionStart touch hooked"),
        "{stderr}"
    );

    let output = run(
        &ws,
        &[bash("a", "touch denied.txt"), bash("b", "touch asked.txt")],
        &["--approve", "ask", "--trust"],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(ws.join("hooked").exists(), "{stderr}");
    assert!(ws.join("asked.txt").exists(), "{stderr}");
    assert!(!ws.join("denied.txt").exists(), "{stderr}");
}

#[test]
fn golato_hooks_lists_each_hook_with_its_source() {
    let (_dir, ws) = workspace("[[hooks.Notification]]\ncommand = \"notify-send golato\"\n");
    let output = golato_in(&ws, &["hooks"], None);
    let shown = String::from_utf8_lossy(&output.stdout);
    assert!(
        shown.contains("Notification notify-send golato (timeout 60 s)"),
        "{shown}"
    );
    assert!(shown.contains("user.toml line 1"), "{shown}");
}

/// A Stop hook as Claude Code's documentation writes one: the first time the model would stop,
/// exit 2 sends it on with a reason; `stop_hook_active` then lets it stop.
const STOP_ONCE: &str = r#"import json, sys
event = json.load(sys.stdin)
if not event["stop_hook_active"]:
    print("run the tests before you finish", file=sys.stderr)
    sys.exit(2)
"#;

#[test]
fn session_hooks_see_the_session_and_a_stop_hook_sends_the_model_on() {
    let (_dir, ws) = workspace("");
    std::fs::write(ws.join("stop.py"), STOP_ONCE).unwrap();
    std::fs::write(
        ws.join("user.toml"),
        "[[hooks.SessionStart]]\ncommand = \"echo 'This project uses tabs.'\"\n\n[[hooks.UserPromptSubmit]]\ncommand = \"cat > submitted.json\"\n\n[[hooks.Stop]]\ncommand = \"python3 stop.py\"\n\n[[hooks.SessionEnd]]\ncommand = \"cat > ended.json\"\n",
    )
    .unwrap();
    let script = script_file(
        &ws,
        "script.jsonl",
        &[
            json!({"text": "first answer"}),
            json!({"text": "tests pass"}),
        ],
    );
    let output = golato_in(&ws, &["run", "--sandbox", "off"], Some((&script, "go")));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        "tests pass",
        "{stderr}"
    );

    let submitted: Value =
        serde_json::from_str(&std::fs::read_to_string(ws.join("submitted.json")).unwrap()).unwrap();
    assert_eq!(submitted["hook_event_name"], "UserPromptSubmit");
    assert_eq!(submitted["prompt"], "go");
    let id = submitted["session_id"].as_str().unwrap();
    assert!(!id.is_empty());
    let transcript = submitted["transcript_path"].as_str().unwrap();
    assert!(transcript.ends_with(&format!("{id}.jsonl")), "{submitted}");
    let ended: Value =
        serde_json::from_str(&std::fs::read_to_string(ws.join("ended.json")).unwrap()).unwrap();
    assert_eq!(ended["session_id"], id);

    // The saved session holds the context SessionStart added and the Stop hook's prompt.
    let saved = std::fs::read_to_string(transcript).unwrap();
    assert!(saved.contains("This project uses tabs."), "{saved}");
    assert!(
        saved.contains("[Stop hook] run the tests before you finish"),
        "{saved}"
    );
}

#[test]
fn a_prompt_a_hook_blocks_is_never_sent() {
    let (_dir, ws) = workspace(
        "[[hooks.UserPromptSubmit]]\ncommand = \"grep -q password && { echo 'no secrets in prompts' >&2; exit 2; } || exit 0\"\n",
    );
    let script = script_file(&ws, "script.jsonl", &[json!({"text": "leaked"})]);
    let output = golato_in(
        &ws,
        &["run", "--sandbox", "off", "--ephemeral"],
        Some((&script, "my password is hunter2")),
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("no secrets in prompts"), "{stderr}");
    assert!(!String::from_utf8_lossy(&output.stdout).contains("leaked"));
}

#[test]
fn a_hooks_rewrite_cannot_take_a_command_out_of_the_sandbox() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap();
    let outside = support::cli::outside_dir();
    let escaped = outside.path().join("escaped");
    std::fs::write(
        ws.join("user.toml"),
        format!(
            "[[hooks.PreToolUse]]\ncommand = \"echo '{{\\\"hookSpecificOutput\\\": {{\\\"permissionDecision\\\": \\\"allow\\\", \\\"updatedInput\\\": {{\\\"command\\\": \\\"touch {}\\\"}}}}}}'\"\n",
            escaped.display()
        ),
    )
    .unwrap();
    let script = script_file(
        &ws,
        "script.jsonl",
        &[
            json!({"tool_calls": [bash("a", "true")]}),
            json!({"text": "done"}),
        ],
    );
    let output = golato_in(
        &ws,
        &["run", "--json", "--ephemeral"],
        Some((&script, "go")),
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(!escaped.exists(), "a hook's rewrite got out: {stderr}");
    // The hook did rewrite the call: the rewrite ran, and was refused, inside the sandbox.
    let results = results(&output);
    assert!(results["a"].contains("cannot touch"), "{results:?}");
}

/// The TOML blocks of the README's Policy section, as a reader copies them.
fn readme_policy_examples() -> Vec<String> {
    let readme = std::fs::read_to_string(support::repository().join("README.md")).unwrap();
    let start = readme.find("### Policy: rules and hooks").unwrap();
    let section = &readme[start..];
    let section = &section[..section[4..]
        .find("\n### ")
        .map_or(section.len(), |end| end + 4)];
    section
        .split("```toml\n")
        .skip(1)
        .map(|block| block[..block.find("```").unwrap()].to_owned())
        .collect()
}

#[test]
fn the_readmes_policy_examples_work_as_written() {
    let examples = readme_policy_examples();
    assert_eq!(examples.len(), 3, "{examples:#?}");
    let (_dir, ws) = workspace(&examples.concat());
    std::fs::write(ws.join(".env"), "KEY=secret\n").unwrap();

    // The rules: rm -rf never runs, git push asks (nobody can answer here), git status runs,
    // .env stays unread.
    let output = run(
        &ws,
        &[
            bash("rm", "rm -rf .git"),
            bash("push", "git push origin main"),
            bash("status", "git status"),
            json!({"id": "env", "name": "read", "arguments": {"path": ".env"}}),
        ],
        &["--approve", "ask"],
    );
    let results = results(&output);
    assert!(
        results["rm"].contains("`deny bash(rm -rf*)`"),
        "{results:?}"
    );
    assert!(
        results["push"].contains("`ask bash(git push:*)`"),
        "{results:?}"
    );
    assert!(!results["status"].contains("was not run"), "{results:?}");
    assert!(
        results["env"].contains("`deny read(**/.env)`"),
        "{results:?}"
    );
    assert!(!results["env"].contains("secret"), "{results:?}");

    // The formatter: the Rust file the model writes is formatted.
    let output = run(
        &ws,
        &[
            json!({"id": "w", "name": "write", "arguments": {"path": "main.rs", "content": "fn main(){println!(\"hi\");}"}}),
        ],
        &[],
    );
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert_eq!(
        std::fs::read_to_string(ws.join("main.rs")).unwrap(),
        "fn main() {\n    println!(\"hi\");\n}\n"
    );

    // The notification: while the question about git push waits on the terminal, the hook
    // runs (a notify-send of the test's own, first on PATH).
    let bin = ws.join("bin");
    std::fs::create_dir(&bin).unwrap();
    let notified = ws.join("notified");
    std::fs::write(
        bin.join("notify-send"),
        format!("#!/bin/sh\necho \"$@\" > {}\n", notified.display()),
    )
    .unwrap();
    std::fs::set_permissions(
        bin.join("notify-send"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let script = script_file(
        &ws,
        "push.jsonl",
        &[
            json!({"tool_calls": [bash("push", "git push origin main")]}),
            json!({"text": "done"}),
        ],
    );
    let mut command = golato();
    command
        .env("GOLATO_CONFIG", ws.join("user.toml"))
        .env(
            "PATH",
            format!("{}:{}", bin.display(), std::env::var("PATH").unwrap()),
        )
        .args(["run", "--ephemeral", "--cwd"])
        .arg(&ws)
        .arg("--script")
        .arg(&script)
        .arg("go");
    let mut terminal = support::cli::Terminal::start(command);
    terminal.wait_for("Asked by the rule `ask bash(git push:*)`", 1);
    terminal.wait_for("[a]lways for bash in this run", 1);
    let started = std::time::Instant::now();
    while !notified.exists() {
        assert!(started.elapsed() < support::HANG_GUARD, "no notification");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    terminal.type_line("n");
    let (code, drawn) = terminal.finish();
    assert_eq!(code, Some(0), "{drawn}");
    assert!(
        drawn.contains("The user did not allow this bash call"),
        "{drawn}"
    );
    assert_eq!(
        std::fs::read_to_string(&notified).unwrap(),
        "golato golato is waiting for you\n"
    );
}

/// Path rules hold however the working directory is named: golato started in the project (no
/// `-C`, as everyone starts it), `-C` relative, through a link or with `..`. They did nothing
/// but with an absolute canonical `-C` before (issue 41 point 1).
#[test]
fn path_rules_hold_however_the_working_directory_is_named() {
    let (_dir, ws) = workspace("");
    let project = ws.join("project");
    std::fs::create_dir(&project).unwrap();
    std::fs::write(project.join(".env"), "SECRET=1\n").unwrap();
    std::os::unix::fs::symlink(&project, ws.join("link")).unwrap();
    // A link whose own name the rule names, leading elsewhere, is judged by its name too.
    std::fs::write(project.join("plain.txt"), "plain\n").unwrap();
    std::os::unix::fs::symlink("plain.txt", project.join("other.env")).unwrap();
    let script = script_file(
        &ws,
        "script.jsonl",
        &[
            json!({"tool_calls": [
                {"id": "r", "name": "read", "arguments": {"path": ".env"}},
                {"id": "l", "name": "read", "arguments": {"path": "other.env"}},
                {"id": "e", "name": "edit", "arguments": {"path": ".env", "edits": [{"oldText": "1", "newText": "2"}]}}
            ]}),
            json!({"text": "done"}),
        ],
    );
    for (started_in, cwd_flag) in [
        (project.clone(), None),
        (ws.clone(), Some("project")),
        (ws.clone(), Some("link")),
        (project.clone(), Some("../project/.")),
    ] {
        let mut command = golato();
        command
            .current_dir(&started_in)
            .env("GOLATO_CONFIG", ws.join("user.toml"))
            .args(["run", "--json", "--sandbox", "off", "--ephemeral"])
            .args([
                "--deny",
                "read(**/.env)",
                "--deny",
                "read(*.env)",
                "--deny",
                "edit(.env)",
            ]);
        if let Some(flag) = cwd_flag {
            command.args(["-C", flag]);
        }
        let output = command
            .arg("--script")
            .arg(&script)
            .arg("go")
            .output()
            .unwrap();
        let results = results(&output);
        for call in ["r", "l", "e"] {
            assert!(
                results
                    .get(call)
                    .is_some_and(|text| text.contains("the rule `deny")),
                "{cwd_flag:?}: {call} {results:?} {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        assert_eq!(
            std::fs::read_to_string(project.join(".env")).unwrap(),
            "SECRET=1\n"
        );
    }
}

/// A hook's `allow` does not outrank a rule that asks: the rule is the person's word, a hook
/// may spare only the questions no rule asks for (it won before). Nobody can answer here, so
/// what is asked is refused.
#[test]
fn a_rule_that_asks_outranks_a_hooks_allow() {
    let (_dir, ws) = workspace(
        "[rules]\nask = [\"bash(touch asked*)\"]\n\n[[hooks.PreToolUse]]\ncommand = \"echo '{\\\"hookSpecificOutput\\\": {\\\"permissionDecision\\\": \\\"allow\\\"}}'\"\n",
    );
    let output = run(
        &ws,
        &[
            bash("asked", "touch asked.txt"),
            bash("spared", "touch spared.txt"),
        ],
        &["--approve", "ask"],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let results = results(&output);
    assert!(!ws.join("asked.txt").exists(), "{results:?}");
    assert!(
        results["asked"].contains("needs approval") || results["asked"].contains("not allow"),
        "{results:?}"
    );
    // Where no rule asks, the hook's allow spares the question.
    assert!(ws.join("spared.txt").exists(), "{results:?} {stderr}");
}

/// Hooks get golato's whole environment, API keys included, as Claude Code's do (the README
/// says so): they are the person's own code, run outside the sandbox.
#[test]
fn hooks_see_the_environment_api_keys_included() {
    let (_dir, ws) = workspace("");
    let seen = ws.join("seen.txt");
    std::fs::write(
        ws.join("user.toml"),
        format!(
            "[[hooks.PreToolUse]]\ncommand = \"printf %s \\\"$GOLATO_TEST_API_KEY\\\" > {}\"\n",
            seen.display()
        ),
    )
    .unwrap();
    let script = script_file(
        &ws,
        "script.jsonl",
        &[
            json!({"tool_calls": [bash("a", "true")]}),
            json!({"text": "done"}),
        ],
    );
    let output = golato()
        .env("GOLATO_CONFIG", ws.join("user.toml"))
        .env("GOLATO_TEST_API_KEY", "sk-visible")
        .args(["run", "--json", "--ephemeral", "--cwd"])
        .arg(&ws)
        .arg("--script")
        .arg(&script)
        .arg("go")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert_eq!(std::fs::read_to_string(&seen).unwrap(), "sk-visible");
}

/// A rule that keeps a path from `read` keeps it from `grep`, `find` and `ls` too, names and
/// contents (issue 41 point 2: grep returned `secret/x`'s content and find and ls listed it).
#[test]
fn read_rules_cover_the_search_tools() {
    let (_dir, ws) = workspace("");
    std::fs::create_dir(ws.join("secret")).unwrap();
    std::fs::write(ws.join("secret/x"), "TOKEN=hunter2\n").unwrap();
    std::fs::write(ws.join("open.txt"), "TOKEN=public\n").unwrap();
    let calls = [
        json!({"id": "g", "name": "grep", "arguments": {"pattern": "TOKEN"}}),
        json!({"id": "f", "name": "find", "arguments": {"pattern": "*"}}),
        json!({"id": "l", "name": "ls", "arguments": {"path": "secret"}}),
    ];
    let output = run(
        &ws,
        &calls,
        &["--tools", "read,grep,find,ls", "--deny", "read(secret/**)"],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let results = results(&output);
    assert!(results["g"].contains("open.txt"), "{results:?}");
    assert!(!results["g"].contains("hunter2"), "{results:?}");
    assert!(!results["f"].contains("secret/x"), "{results:?}");
    assert!(results["f"].contains("left out"), "{results:?}");
    assert!(!results["l"].lines().any(|line| line == "x"), "{results:?}");
    assert!(results["l"].contains("1 entry left out"), "{results:?}");
}

/// Issue 41's cases through the binary: each deleted a file unasked on 1285864. With
/// `--approve ask` and no terminal anything asked is refused, so the file must survive every
/// line an allow rule for git does not really cover; under a deny rule for rm, every wrapper
/// form is refused by the rule itself.
#[test]
fn allow_rules_allow_only_the_allowed_program_and_deny_rules_see_through_wrappers() {
    let (_dir, ws) = workspace("");
    std::fs::create_dir(ws.join("tools")).unwrap();
    for planted in ["git", "tools/git"] {
        let path = ws.join(planted);
        std::fs::write(
            &path,
            "#!/bin/sh\nrm -f \"$(dirname \"$0\")/victim\" victim\n",
        )
        .unwrap();
        let mut permissions = std::fs::metadata(&path).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
        std::fs::set_permissions(&path, permissions).unwrap();
    }
    let allowed_git = [
        "git status $'\\'' ; rm victim #'",
        "git log <<EOF\nit's $(rm victim)\nEOF",
        "exec -a git rm victim",
        "env --unset git rm victim",
        "/usr/bin/time -o git rm victim",
        "./git status",
        "tools/git status",
        "git -c alias.x='!rm victim' x",
    ];
    // Runs `line` with `flags` and a fresh victim: the victim survives, the result says `said`.
    let survives = |line: &str, flags: &[&str], said: &str| {
        std::fs::write(ws.join("victim"), "keep").unwrap();
        let output = run(&ws, &[bash("call", line)], flags);
        assert_eq!(output.status.code(), Some(0), "{line}");
        let results = results(&output);
        assert!(ws.join("victim").exists(), "{line:?} ran: {results:?}");
        assert!(results["call"].contains(said), "{line:?}: {results:?}");
    };
    for line in allowed_git {
        survives(
            line,
            &["--approve", "ask", "--allow", "bash(git *)"],
            "needs approval",
        );
    }
    let denied_rm = [
        "env -S 'rm victim'",
        "env --chdir . rm victim",
        "timeout -s KILL 5 rm victim",
        "nice --adjustment 5 rm victim",
        "stdbuf --output L rm victim",
        "ionice --class 3 rm victim",
        "time -o F rm victim",
        "exec -a x rm victim",
        "bash -lc 'rm victim'",
        "sh -xc 'rm victim'",
        "bash -c -- 'rm victim'",
        "if false; then :; elif rm victim; then :; fi",
        "function g { rm victim; }; g",
        "coproc rm victim",
    ];
    for line in denied_rm {
        survives(
            line,
            &["--approve", "never", "--deny", "bash(rm *)"],
            "the rule `deny bash(rm *)`",
        );
    }
}

/// A user's Claude Code settings work as they are: the project's `.claude/settings.json`
/// (under the folder's trust, as golato's own file) and the user's (`CLAUDE_CONFIG_DIR`); what
/// golato has no counterpart for is named, not an error.
#[test]
fn claude_codes_settings_files_bring_their_rules_and_hooks() {
    let (_dir, ws) = workspace("");
    std::fs::create_dir(ws.join(".claude")).unwrap();
    std::fs::write(
        ws.join(".claude/settings.json"),
        r#"{
  "permissions": {
    "allow": ["Bash"],
    "deny": ["Bash(touch denied:*)", "WebFetch(domain:example.com)", "WebSearch"]
  },
  "hooks": {
    "SessionStart": [{"hooks": [{"type": "command", "command": "touch hooked"}]}],
    "SubagentStop": [{"hooks": [{"type": "command", "command": "notify-send hi"}]}]
  }
}"#,
    )
    .unwrap();
    let claude_home = ws.join("claude-home");
    std::fs::create_dir(&claude_home).unwrap();
    std::fs::write(
        claude_home.join("settings.json"),
        r#"{"permissions": {"deny": ["Bash(touch user-denied:*)"]}}"#,
    )
    .unwrap();
    let script = script_file(
        &ws,
        "script.jsonl",
        &[
            json!({ "tool_calls": [bash("a", "touch denied"), bash("b", "touch user-denied"), bash("c", "touch asked")] }),
            json!({"text": "done"}),
        ],
    );
    let go = |trust: bool| {
        let mut command = golato();
        command
            .env("GOLATO_CONFIG", ws.join("user.toml"))
            .env("CLAUDE_CONFIG_DIR", &claude_home)
            .args([
                "run",
                "--json",
                "--sandbox",
                "off",
                "--ephemeral",
                "--approve",
                "ask",
            ])
            .arg("--cwd")
            .arg(&ws)
            .arg("--script")
            .arg(&script);
        if trust {
            command.arg("--trust");
        }
        command.arg("go").output().unwrap()
    };
    // Untrusted: its denials hold, its allow rule and hook do not.
    let output = go(false);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let results = results(&output);
    assert!(
        results["a"].contains("Bash(touch denied:*)")
            || results["a"].contains("bash(touch denied:*)"),
        "{results:?}"
    );
    assert!(results["a"].contains("settings.json"), "{results:?}");
    assert!(results["b"].contains("touch user-denied"), "{results:?}");
    assert!(!ws.join("asked").exists(), "{stderr}");
    assert!(!ws.join("hooked").exists(), "{stderr}");
    assert!(
        stderr.contains("allow bash, hook SessionStart touch hooked"),
        "{stderr}"
    );
    // WebFetch is golato's web_fetch, a rule of its own even when the tool is off this run.
    assert!(!stderr.contains("WebFetch"), "{stderr}");
    assert!(
        stderr.contains("WebSearch (golato has no WebSearch tool)"),
        "{stderr}"
    );
    assert!(stderr.contains("the SubagentStop hooks"), "{stderr}");
    // Trusted: its allow rule and hook apply too; the denials still hold.
    let output = go(true);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(ws.join("hooked").exists(), "{stderr}");
    assert!(ws.join("asked").exists(), "{stderr}");
    assert!(
        !ws.join("denied").exists() && !ws.join("user-denied").exists(),
        "{stderr}"
    );
}
