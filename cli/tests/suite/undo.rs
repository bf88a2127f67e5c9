//! Checkpoints through the binary: `golato diff` shows what each prompt's edits, writes and
//! sandboxed commands changed, `golato undo` puts the files back and cuts the session, refusing
//! (and changing nothing) when a file changed since; `/undo` in the front end.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use std::path::Path;

use serde_json::{json, Value};
use support::cli::*;

/// Two prompts: the first writes a.txt and edits b.txt, the second rewrites a.txt and makes
/// c.txt with bash.
fn script(dir: &Path) -> std::path::PathBuf {
    script_file(
        dir,
        "script.jsonl",
        &[
            json!({"tool_calls": [
                {"id": "w1", "name": "write", "arguments": {"path": "a.txt", "content": "one\n"}},
                {"id": "e1", "name": "edit", "arguments": {"path": "b.txt", "edits": [{"oldText": "old", "newText": "new"}]}}
            ]}),
            json!({"text": "First done."}),
            json!({"tool_calls": [
                {"id": "w2", "name": "write", "arguments": {"path": "a.txt", "content": "two\n"}},
                {"id": "b2", "name": "bash", "arguments": {"command": "echo made > c.txt"}}
            ]}),
            json!({"text": "Second done."}),
        ],
    )
}

fn in_dir(dir: &Path, args: &[&str]) -> std::process::Output {
    golato().args(args).arg("-C").arg(dir).output().unwrap()
}

fn read(dir: &Path, name: &str) -> Option<String> {
    std::fs::read_to_string(dir.join(name)).ok()
}

/// A project in `work` (b.txt holding "old") after the script's two prompts, saved.
fn two_prompts(work: &Path) -> std::path::PathBuf {
    let dir = work.join("project");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("b.txt"), "old\n").unwrap();
    let script = script(work);
    let script = script.to_str().unwrap();
    for (prompt, flags) in [("first", vec![]), ("second", vec!["-c"])] {
        let mut args = vec!["run", "--script", script];
        args.extend(flags);
        args.push(prompt);
        let output = in_dir(&dir, &args);
        assert_eq!(output.status.code(), Some(0), "{output:?}");
    }
    dir
}

#[test]
fn undo_puts_back_what_each_prompt_changed_and_stops_at_a_file_changed_since() {
    let work = tempfile::tempdir().unwrap();
    let dir = two_prompts(work.path());
    assert_eq!(read(&dir, "a.txt").as_deref(), Some("two\n"));
    assert_eq!(read(&dir, "c.txt").as_deref(), Some("made\n"));

    // What each prompt changed.
    let diff = in_dir(&dir, &["diff"]);
    assert!(diff.status.success(), "{diff:?}");
    let diff = String::from_utf8_lossy(&diff.stdout).into_owned();
    let first = diff.find("prompt 1: first").expect(&diff);
    let second = diff.find("prompt 2: second").expect(&diff);
    assert!(first < second, "{diff}");
    assert!(diff[first..second].contains("+one"), "{diff}");
    assert!(diff[first..second].contains("-old\n+new"), "{diff}");
    assert!(diff[second..].contains("-one\n+two"), "{diff}");

    // The last prompt taken back: a.txt as the first left it, and the sandboxed command's
    // file gone (it was captured).
    let undone = in_dir(&dir, &["undo"]);
    assert!(undone.status.success(), "{undone:?}");
    let said = String::from_utf8_lossy(&undone.stdout).into_owned();
    assert!(said.contains("back to before prompt 2"), "{said}");
    assert!(!said.contains("bash command"), "{said}");
    assert_eq!(read(&dir, "a.txt").as_deref(), Some("one\n"));
    assert_eq!(read(&dir, "c.txt"), None);

    // A file changed since by someone else: nothing is undone, and it is named.
    std::fs::write(dir.join("b.txt"), "mine\n").unwrap();
    let refused = in_dir(&dir, &["undo"]);
    assert_eq!(refused.status.code(), Some(1), "{refused:?}");
    let error = String::from_utf8_lossy(&refused.stderr).into_owned();
    assert!(error.contains("nothing was undone"), "{error}");
    assert!(error.contains("b.txt (changed since)"), "{error}");
    assert_eq!(read(&dir, "a.txt").as_deref(), Some("one\n"));
    assert_eq!(read(&dir, "b.txt").as_deref(), Some("mine\n"));

    // Put back as the session left it, the first prompt goes too: a.txt did not exist.
    std::fs::write(dir.join("b.txt"), "new\n").unwrap();
    let undone = in_dir(&dir, &["undo"]);
    assert!(undone.status.success(), "{undone:?}");
    assert_eq!(read(&dir, "a.txt"), None);
    assert_eq!(read(&dir, "b.txt").as_deref(), Some("old\n"));
    // Nothing is left to undo; the session still reads (its notes are not steps).
    let empty = in_dir(&dir, &["undo"]);
    assert_eq!(empty.status.code(), Some(2), "{empty:?}");
    let listed = in_dir(&dir, &["sessions"]);
    assert!(listed.status.success(), "{listed:?}");
}

#[test]
fn undo_to_a_prompt_takes_back_every_prompt_from_it() {
    let work = tempfile::tempdir().unwrap();
    let dir = two_prompts(work.path());
    let out_of_range = in_dir(&dir, &["undo", "--to", "3"]);
    assert_eq!(out_of_range.status.code(), Some(2), "{out_of_range:?}");
    assert!(String::from_utf8_lossy(&out_of_range.stderr).contains("--to takes 1 to 2"));
    let undone = in_dir(&dir, &["undo", "--to", "1"]);
    assert!(undone.status.success(), "{undone:?}");
    assert_eq!(read(&dir, "a.txt"), None);
    assert_eq!(read(&dir, "b.txt").as_deref(), Some("old\n"));
    // The session file ends with the note of what was undone.
    let session = session_file(&dir).unwrap();
    let text = std::fs::read_to_string(&session).unwrap();
    let last: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(last["undo"]["to_prompt"], 1, "{text}");
    assert_eq!(text.lines().count(), 2, "{text}");
    // Removing the session removes its checkpoints.
    let checkpoints = session.with_extension("checkpoints");
    assert!(checkpoints.is_dir());
    let id = session.file_stem().unwrap().to_str().unwrap();
    assert!(golato()
        .args(["sessions", "rm", id])
        .output()
        .unwrap()
        .status
        .success());
    assert!(!checkpoints.exists());
}

#[test]
fn a_missing_copy_a_torn_log_or_a_file_too_large_to_keep_stops_undo_before_any_change() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("project");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("b.txt"), "old\n").unwrap();
    // Over 64 MiB (sparse): too large to keep a copy of.
    std::fs::File::create(dir.join("huge.bin"))
        .unwrap()
        .set_len(65 * 1024 * 1024)
        .unwrap();
    let script = script_file(
        work.path(),
        "script.jsonl",
        &[
            json!({"tool_calls": [
                {"id": "e", "name": "edit", "arguments": {"path": "b.txt", "edits": [{"oldText": "old", "newText": "new"}]}},
                {"id": "h", "name": "write", "arguments": {"path": "huge.bin", "content": "small now\n"}}
            ]}),
            json!({"text": "Done."}),
        ],
    );
    let run = in_dir(&dir, &["run", "--script", script.to_str().unwrap(), "go"]);
    assert!(run.status.success(), "{run:?}");
    let checkpoints = session_file(&dir).unwrap().with_extension("checkpoints");
    // A torn last line of the log (a crash while it was written) is passed over.
    let log = checkpoints.join("log.jsonl");
    let mut text = std::fs::read_to_string(&log).unwrap();
    text.push_str("{\"call\": \"torn");
    std::fs::write(&log, text).unwrap();

    let refused = in_dir(&dir, &["undo"]);
    assert_eq!(refused.status.code(), Some(1), "{refused:?}");
    let error = String::from_utf8_lossy(&refused.stderr).into_owned();
    assert!(
        error.contains("huge.bin (it was too large or unreadable to keep)"),
        "{error}"
    );
    assert_eq!(
        read(&dir, "b.txt").as_deref(),
        Some("new\n"),
        "nothing changed"
    );

    // With the huge file's record gone, a missing copy of b.txt's old content also stops it.
    let kept: Vec<String> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter(|line| line.contains("b.txt"))
        .map(str::to_owned)
        .collect();
    std::fs::write(&log, kept.join("\n") + "\n").unwrap();
    for object in std::fs::read_dir(checkpoints.join("objects")).unwrap() {
        std::fs::remove_file(object.unwrap().path()).unwrap();
    }
    let refused = in_dir(&dir, &["undo"]);
    assert_eq!(refused.status.code(), Some(1), "{refused:?}");
    let error = String::from_utf8_lossy(&refused.stderr).into_owned();
    assert!(error.contains("is missing or damaged"), "{error}");
    assert_eq!(read(&dir, "b.txt").as_deref(), Some("new\n"));
    assert_eq!(read(&dir, "huge.bin").as_deref(), Some("small now\n"));
}

#[test]
fn undo_takes_back_what_sandboxed_commands_changed_and_names_commands_that_ran_unsandboxed() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("project");
    std::fs::create_dir_all(dir.join("tree/deep")).unwrap();
    std::fs::write(dir.join("keep.txt"), "old\n").unwrap();
    std::fs::write(dir.join("tree/deep/x"), "x\n").unwrap();
    std::os::unix::fs::symlink("keep.txt", dir.join("link")).unwrap();
    let script = script_file(
        work.path(),
        "script.jsonl",
        &[
            json!({"tool_calls": [
                {"id": "b", "name": "bash", "arguments": {"command":
                    "echo new > keep.txt && rm -r tree && echo made > made.txt && ln -sfn made.txt link"}}
            ]}),
            json!({"text": "Done."}),
        ],
    );
    let run = in_dir(&dir, &["run", "--script", script.to_str().unwrap(), "go"]);
    assert!(run.status.success(), "{run:?}");
    assert_eq!(read(&dir, "keep.txt").as_deref(), Some("new\n"));
    assert!(!dir.join("tree").exists());

    let diff = in_dir(&dir, &["diff"]);
    let diff = String::from_utf8_lossy(&diff.stdout).into_owned();
    assert!(diff.contains("-old\n+new"), "{diff}");
    assert!(diff.contains("-x\n"), "{diff}");
    assert!(diff.contains("+made"), "{diff}");

    let undone = in_dir(&dir, &["undo"]);
    assert!(undone.status.success(), "{undone:?}");
    assert_eq!(read(&dir, "keep.txt").as_deref(), Some("old\n"));
    assert_eq!(read(&dir, "tree/deep/x").as_deref(), Some("x\n"));
    assert_eq!(read(&dir, "made.txt"), None);
    assert_eq!(
        std::fs::read_link(dir.join("link")).unwrap(),
        Path::new("keep.txt")
    );

    // Outside the sandbox nothing captures a command: undo says it ran and left its changes.
    let run = in_dir(
        &dir,
        &[
            "run",
            "--sandbox",
            "off",
            "--script",
            script.to_str().unwrap(),
            "go",
        ],
    );
    assert!(run.status.success(), "{run:?}");
    let undone = in_dir(&dir, &["undo"]);
    assert!(undone.status.success(), "{undone:?}");
    let said = String::from_utf8_lossy(&undone.stdout).into_owned();
    assert!(
        said.contains("1 bash command ran outside the sandbox in what was undone"),
        "{said}"
    );
    assert_eq!(read(&dir, "keep.txt").as_deref(), Some("new\n"));
}

#[test]
fn what_a_command_cut_off_by_a_killed_golato_changed_is_applied_by_the_next_one_there() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("project");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("notes.txt"), "old\n").unwrap();
    let signals = support::signals();
    let started = signals.path().join("started");
    let script = script_file(
        work.path(),
        "script.jsonl",
        &[json!({"tool_calls": [
            {"id": "cut", "name": "bash", "arguments": {"command":
                format!("echo partial > made.txt && echo new > notes.txt && touch {} && exec sleep 1000", started.display())}}
        ]})],
    );
    let mut first = golato()
        .args(["run", "-q", "--script", script.to_str().unwrap(), "-C"])
        .arg(&dir)
        .arg("go")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    support::wait_for_file(&started);
    // Killed mid-command: its changes are still in the staging area.
    first.kill().unwrap();
    first.wait().unwrap();
    assert_eq!(read(&dir, "made.txt"), None);
    assert_eq!(read(&dir, "notes.txt").as_deref(), Some("old\n"));

    let quiet = script_file(work.path(), "quiet.jsonl", &[json!({"text": "Hello."})]);
    let next = in_dir(&dir, &["run", "--script", quiet.to_str().unwrap(), "hi"]);
    assert!(next.status.success(), "{next:?}");
    let said = String::from_utf8_lossy(&next.stderr).into_owned();
    assert!(
        said.contains("a command cut off when golato ended (call cut) left changes, applied now")
            && said.contains("made.txt")
            && said.contains("notes.txt"),
        "{said}"
    );
    assert_eq!(read(&dir, "made.txt").as_deref(), Some("partial\n"));
    assert_eq!(read(&dir, "notes.txt").as_deref(), Some("new\n"));
    // Applied once: the next golato finds nothing left.
    let again = in_dir(&dir, &["run", "--script", quiet.to_str().unwrap(), "hi"]);
    assert!(!String::from_utf8_lossy(&again.stderr).contains("cut off"));
}
