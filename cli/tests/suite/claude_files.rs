//! Claude Code's files read as Claude Code reads them (issue 56, point 0), through the binary:
//! a file that starts with a byte-order mark, command rules whose brackets and braces are
//! characters, hooks with fields golato has no counterpart for, listings that say what they
//! left out, and the `--json` outcome after a prompt a hook blocked.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::json;
use support::cli::{golato, json_lines, script_file};

/// A project with `settings` as its `.claude/settings.json`, and an empty user configuration.
fn project(settings: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap();
    std::fs::create_dir(ws.join(".claude")).unwrap();
    std::fs::write(ws.join(".claude/settings.json"), settings).unwrap();
    std::fs::write(ws.join("user.toml"), "").unwrap();
    (dir, ws)
}

/// `golato ARGS` in `ws` with its (empty) user configuration and no user Claude settings.
fn golato_in(ws: &Path, args: &[&str]) -> Output {
    golato()
        .env("GOLATO_CONFIG", ws.join("user.toml"))
        .env("CLAUDE_CONFIG_DIR", ws.join("no-claude-home"))
        .args(args)
        .arg("--cwd")
        .arg(ws)
        .output()
        .unwrap()
}

#[test]
fn a_settings_file_with_a_byte_order_mark_and_bracketed_rules_is_read_as_claude_code_reads_it() {
    let (_dir, ws) = project(
        "\u{feff}{\"permissions\": {\"allow\": [\"Bash([:*)\", \"Bash\"], \"deny\": [\"Bash(echo [x]:*)\", \"Bash(echo {a,b}:*)\"]}}",
    );
    let script = script_file(
        &ws,
        "script.jsonl",
        &[
            json!({"tool_calls": [
                {"id": "bracket", "name": "bash", "arguments": {"command": "echo [x]"}},
                {"id": "plain", "name": "bash", "arguments": {"command": "echo x"}},
                {"id": "brace", "name": "bash", "arguments": {"command": "echo {a,b} c"}},
                {"id": "a", "name": "bash", "arguments": {"command": "echo a"}}
            ]}),
            json!({"text": "done"}),
        ],
    );
    let output = golato_in(
        &ws,
        &[
            "run",
            "--json",
            "--sandbox",
            "off",
            "--ephemeral",
            "--trust",
            "--script",
            script.to_str().unwrap(),
            "go",
        ],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let ends: Vec<(String, bool)> = json_lines(&output)
        .into_iter()
        .filter(|line| line["type"] == "tool_end")
        .map(|line| {
            (
                line["call"]["id"].as_str().unwrap_or_default().to_owned(),
                line["result"]["is_error"].as_bool().unwrap_or(false),
            )
        })
        .collect();
    let refused = |id: &str| ends.iter().any(|(call, error)| call == id && *error);
    // `[x]` and `{a,b}` are the characters: `echo x` and `echo a` are not denied.
    assert!(refused("bracket"), "{ends:?}\n{stderr}");
    assert!(refused("brace"), "{ends:?}\n{stderr}");
    assert!(!refused("plain"), "{ends:?}\n{stderr}");
    assert!(!refused("a"), "{ends:?}\n{stderr}");
}

#[test]
fn hooks_with_extra_fields_run_and_every_listing_names_what_it_left_out() {
    let (_dir, ws) = project(
        r#"{
  "permissions": {"defaultMode": "acceptEdits"},
  "hooks": {
    "SessionStart": [{"description": "mark", "hooks": [
      {"type": "command", "command": "touch first-hook", "async": true, "statusMessage": "marking"},
      {"type": "command", "command": "touch second-hook", "shell": "bash"}
    ]}]
  }
}"#,
    );
    let script = script_file(&ws, "script.jsonl", &[json!({"text": "done"})]);
    let output = golato_in(
        &ws,
        &[
            "run",
            "--sandbox",
            "off",
            "--ephemeral",
            "--trust",
            "--script",
            script.to_str().unwrap(),
            "go",
        ],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    // Both hooks of the entry ran: an extra field drops no hook.
    assert!(ws.join("first-hook").exists(), "{stderr}");
    assert!(ws.join("second-hook").exists(), "{stderr}");
    assert!(stderr.contains("async (1 hook)"), "{stderr}");
    assert!(stderr.contains("defaultMode \"acceptEdits\""), "{stderr}");
    // `golato hooks` lists both and says what it left out; so does `golato config`.
    let hooks = golato_in(&ws, &["hooks", "--trust"]);
    let listed = String::from_utf8_lossy(&hooks.stdout);
    let said = String::from_utf8_lossy(&hooks.stderr);
    assert!(
        listed.contains("touch first-hook") && listed.contains("touch second-hook"),
        "{listed}\n{said}"
    );
    assert!(said.contains("statusMessage (1 hook)"), "{said}");
    let config = golato_in(&ws, &["config", "--trust"]);
    let shown = String::from_utf8_lossy(&config.stdout);
    assert!(shown.contains("shell (1 hook)"), "{shown}");
    assert!(shown.contains("defaultMode"), "{shown}");
}

#[test]
fn a_prompt_a_hook_blocks_still_ends_the_json_stream_with_its_outcome() {
    let (_dir, ws) = project("{}");
    std::fs::write(
        ws.join("user.toml"),
        "[[hooks.UserPromptSubmit]]\ncommand = \"echo 'not this prompt' >&2; exit 2\"\n",
    )
    .unwrap();
    let script = script_file(&ws, "script.jsonl", &[json!({"text": "never"})]);
    let output = golato_in(
        &ws,
        &[
            "run",
            "--json",
            "--sandbox",
            "off",
            "--ephemeral",
            "--script",
            script.to_str().unwrap(),
            "go",
        ],
    );
    let lines = json_lines(&output);
    let last = lines.last().expect("an outcome line");
    assert_eq!(last["type"], "outcome", "{lines:?}");
    assert_eq!(last["status"], "failed", "{lines:?}");
    assert_eq!(
        last["exit_code"],
        output.status.code().unwrap(),
        "{lines:?}"
    );
    assert!(
        last["error"].as_str().unwrap().contains("not this prompt"),
        "{last}"
    );
}
