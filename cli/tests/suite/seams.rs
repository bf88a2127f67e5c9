//! Round 3 at the seams (issue 54), through the binary: each a case that once got through or
//! failed a person, kept as a test.

use crate::support;

use serde_json::json;
use support::cli::golato;

/// `golato tool bash ARGS` in `cwd` with more flags: the result as JSON, and standard error.
fn tool_bash(
    cwd: &std::path::Path,
    command: &str,
    flags: &[&str],
    env: &[(&str, &std::path::Path)],
) -> (serde_json::Value, String) {
    let mut golato = golato();
    for (name, value) in env {
        golato.env(name, value);
    }
    let output = golato
        .args(["tool", "bash", &json!({ "command": command }).to_string()])
        .args(flags)
        .arg("--cwd")
        .arg(cwd)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let result =
        serde_json::from_slice(&output.stdout).unwrap_or_else(|_| panic!("no result: {stderr}"));
    (result, stderr)
}

fn text(result: &serde_json::Value) -> String {
    result["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|part| part["text"].as_str())
        .collect()
}

/// A `TMPDIR` above the workspace: sandboxed calls run (they get `/tmp` as their `TMPDIR`:
/// an empty one mounted there would hide the workspace).
#[test]
fn a_tmpdir_above_the_workspace_does_not_hide_it() {
    // Not under /tmp, which is writable and so would be used as it is.
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    std::fs::write(ws.join("here.txt"), "here\n").unwrap();
    let (result, stderr) = tool_bash(
        &ws,
        "cat here.txt; echo \"tmp=$TMPDIR\"; mktemp > /dev/null && echo made",
        &["--sandbox", "workspace-write"],
        &[("TMPDIR", dir.path())],
    );
    let said = text(&result);
    assert_eq!(result["is_error"], false, "{said} {stderr}");
    assert!(said.contains("here\ntmp=/tmp\nmade"), "{said}");
}

/// A deny rule sees what bash runs through a line continuation inside a word and through a
/// here-document fed to a shell: each call refused, the file still there.
#[test]
fn a_deny_rule_sees_a_line_continuation_and_a_here_document_fed_to_a_shell() {
    use support::cli::{json_lines, of_type, script_file};
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("f"), "keep\n").unwrap();
    let lines = [
        "r\\\nm f",
        "bash <<EOF\nrm f\nEOF",
        "sh <<'EOF'\nrm f\nEOF",
        "sh <<< 'rm f'",
    ];
    let mut script: Vec<serde_json::Value> = lines
        .iter()
        .enumerate()
        .map(|(at, line)| json!({"tool_calls": [{"id": format!("c{at}"), "name": "bash", "arguments": {"command": line}}]}))
        .collect();
    script.push(json!({"text": "done"}));
    let script = script_file(ws.path(), "script.jsonl", &script);
    let output = golato()
        .args([
            "run",
            "--json",
            "--ephemeral",
            "--approve",
            "never",
            "--deny",
            "bash(rm *)",
            "--cwd",
        ])
        .arg(ws.path())
        .arg("--script")
        .arg(&script)
        .arg("go")
        .output()
        .unwrap();
    let ends = of_type(&json_lines(&output), "tool_end")
        .into_iter()
        .cloned()
        .collect::<Vec<_>>();
    assert_eq!(
        ends.len(),
        lines.len(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    for end in &ends {
        assert_eq!(end["result"]["is_error"], true, "{end}");
        let said = text(&end["result"]);
        assert!(said.contains("bash(rm *)"), "{said}");
    }
    assert_eq!(
        std::fs::read_to_string(ws.path().join("f")).unwrap(),
        "keep\n"
    );
}

/// One prompt whose sandboxed `bash` runs `command` in `dir`, saved as a session there.
fn one_saved_prompt(dir: &std::path::Path, command: &str) {
    let script = support::cli::script_file(
        dir.parent().unwrap(),
        "script.jsonl",
        &[
            json!({"tool_calls": [{"id": "b", "name": "bash", "arguments": {"command": command}}]}),
            json!({"text": "done"}),
        ],
    );
    let output = golato()
        .args(["run", "--sandbox", "workspace-write", "--script"])
        .arg(&script)
        .arg("go")
        .arg("-C")
        .arg(dir)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
}

/// `golato undo` in `dir`: what it printed, and whether it succeeded.
fn undo(dir: &std::path::Path) -> (bool, String) {
    let output = golato().arg("undo").arg("-C").arg(dir).output().unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), said)
}

/// Files whose names are not UTF-8, made and changed by a sandboxed command, are undone like
/// any other (no panic anywhere: capture, the checkpoint log, the session file).
#[test]
fn undo_takes_back_files_whose_names_are_not_utf8() {
    use std::os::unix::ffi::OsStrExt as _;
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("project");
    std::fs::create_dir(&dir).unwrap();
    let old = dir.join(std::ffi::OsStr::from_bytes(b"old-caf\xe9.txt"));
    let new = dir.join(std::ffi::OsStr::from_bytes(b"new-caf\xe9.txt"));
    std::fs::write(&old, "before\n").unwrap();
    one_saved_prompt(
        &dir,
        "printf 'after\\n' > old-caf$'\\351'.txt; printf 'made\\n' > new-caf$'\\351'.txt",
    );
    assert_eq!(std::fs::read_to_string(&old).unwrap(), "after\n");
    assert_eq!(std::fs::read_to_string(&new).unwrap(), "made\n");
    let (undone, said) = undo(&dir);
    assert!(undone, "{said}");
    assert!(!said.contains("panicked"), "{said}");
    assert_eq!(std::fs::read_to_string(&old).unwrap(), "before\n");
    assert!(!new.exists(), "{said}");
}

/// A command that replaced a folder by a symbolic link: undo takes the link away (never
/// following it) and brings the folder back.
#[test]
fn undo_brings_back_a_folder_a_command_replaced_by_a_link() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("project");
    let elsewhere = work.path().join("elsewhere");
    std::fs::create_dir_all(dir.join("d")).unwrap();
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::write(dir.join("d/f.txt"), "kept\n").unwrap();
    std::fs::write(elsewhere.join("other.txt"), "not ours\n").unwrap();
    one_saved_prompt(
        &dir,
        &format!("rm -rf d && ln -s {} d", elsewhere.display()),
    );
    assert!(dir
        .join("d")
        .symlink_metadata()
        .unwrap()
        .file_type()
        .is_symlink());
    let (undone, said) = undo(&dir);
    assert!(undone, "{said}");
    let d = dir.join("d").symlink_metadata().unwrap();
    assert!(d.is_dir(), "{said}");
    assert_eq!(
        std::fs::read_to_string(dir.join("d/f.txt")).unwrap(),
        "kept\n"
    );
    // The link's target was never touched.
    assert_eq!(
        std::fs::read_to_string(elsewhere.join("other.txt")).unwrap(),
        "not ours\n"
    );
    assert!(!elsewhere.join("f.txt").exists());
}

/// `find` and `ls` leave out what the sandbox hides from bash (`~/.ssh`, a `--deny-read`
/// path), however the path is spelled: through `..`, through a link the workspace holds.
#[test]
fn find_and_ls_list_nothing_inside_hidden_folders_however_they_are_reached() {
    let home = tempfile::tempdir().unwrap();
    let ws = home.path().join("ws");
    for folder in [".ssh", "secret", "ws"] {
        std::fs::create_dir_all(home.path().join(folder)).unwrap();
    }
    std::fs::write(home.path().join(".ssh/id_key"), "k\n").unwrap();
    std::fs::write(home.path().join("secret/plans.txt"), "p\n").unwrap();
    std::os::unix::fs::symlink(home.path().join(".ssh"), ws.join("ssh")).unwrap();
    std::os::unix::fs::symlink(home.path().join("secret"), ws.join("plans")).unwrap();
    let secret = home.path().join("secret");
    for (tool, arguments) in [
        ("ls", json!({"path": "../.ssh"})),
        ("ls", json!({"path": "ssh"})),
        ("ls", json!({"path": "ssh/"})),
        ("ls", json!({"path": "../secret"})),
        ("ls", json!({"path": "plans"})),
        ("ls", json!({"path": format!("{}/../secret", ws.display())})),
        ("find", json!({"pattern": "**", "path": "ssh"})),
        ("find", json!({"pattern": "**", "path": "plans"})),
        ("find", json!({"pattern": "*.txt", "path": ".."})),
    ] {
        let output = golato()
            .env("HOME", home.path())
            .args([
                "tool",
                tool,
                &arguments.to_string(),
                "--sandbox",
                "workspace-write",
                "--deny-read",
            ])
            .arg(&secret)
            .arg("--cwd")
            .arg(&ws)
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&output.stdout);
        assert!(
            !said.contains("id_key") && !said.contains("plans.txt"),
            "{tool} {arguments}: {said}"
        );
    }
}

/// A prompt carrying a 100 MB image is answered with an error under its own ID (the client
/// waited forever before), golato acp's memory stays bounded, and the session goes on.
#[test]
fn an_acp_prompt_too_large_to_read_is_answered_and_the_session_goes_on() {
    use super::acp::Acp;
    let dir = tempfile::tempdir().unwrap();
    let script =
        support::cli::script_file(dir.path(), "script.jsonl", &[json!({"text": "Hello."})]);
    let mut acp = Acp::start(dir.path(), &script, &[]);
    let session = acp.new_session(dir.path());
    let data = "A".repeat(100 * 1024 * 1024);
    acp.send_raw(&format!(
        r#"{{"jsonrpc":"2.0","id":4242,"method":"session/prompt","params":{{"sessionId":"{session}","prompt":[{{"type":"image","mimeType":"image/png","data":"{data}"}}]}}}}"#
    ));
    drop(data);
    let (answer, _) = acp.until("the refusal", |message| message["id"] == 4242);
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    let said = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(
        said.contains("at most 64 MiB") && said.contains("100.0 MiB"),
        "{said}"
    );
    // Never more than the one line's bound held at once (64 MiB), whatever the message's size.
    let status = std::fs::read_to_string(format!("/proc/{}/status", acp.pid())).unwrap();
    let peak_kib: u64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    assert!(peak_kib < 192 * 1024, "golato acp peaked at {peak_kib} KiB");
    let id = acp.prompt(&session, "hi");
    let (done, _) = acp.response(id);
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
}
