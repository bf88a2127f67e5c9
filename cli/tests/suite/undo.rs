//! Checkpoints through the binary: `golato diff` shows what each prompt's edits, writes and
//! sandboxed commands changed, `golato undo` puts the files back and cuts the session, refusing
//! (and changing nothing) when a file changed since; `/undo` in the front end.

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
    assert!(
        error.contains("b.txt (changed since: its content)"),
        "{error}"
    );
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

/// A missing or damaged copy stops undo before any change; a file too large to have been kept
/// is left as it is and named, without blocking the others (it blocked them all, named
/// untruly as "changed since"); a damaged line of the log is named, not passed over in silence.
#[test]
fn a_missing_copy_stops_undo_and_a_file_too_large_to_keep_or_a_damaged_log_line_is_named() {
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

    // b.txt's old content missing from the store: nothing changes.
    let objects = checkpoints.join("objects");
    let saved: Vec<(std::path::PathBuf, Vec<u8>)> = std::fs::read_dir(&objects)
        .unwrap()
        .map(|object| {
            let path = object.unwrap().path();
            let bytes = std::fs::read(&path).unwrap();
            (path, bytes)
        })
        .collect();
    for (path, _) in &saved {
        std::fs::remove_file(path).unwrap();
    }
    let refused = in_dir(&dir, &["undo"]);
    assert_eq!(refused.status.code(), Some(1), "{refused:?}");
    let error = String::from_utf8_lossy(&refused.stderr).into_owned();
    assert!(error.contains("is missing or damaged"), "{error}");
    assert_eq!(read(&dir, "b.txt").as_deref(), Some("new\n"));
    assert_eq!(read(&dir, "huge.bin").as_deref(), Some("small now\n"));
    for (path, bytes) in &saved {
        std::fs::write(path, bytes).unwrap();
    }

    // A torn last line of the log (a crash while it was written): named in what undo says.
    let log = checkpoints.join("log.jsonl");
    let mut text = std::fs::read_to_string(&log).unwrap();
    text.push_str("{\"call\": \"torn");
    std::fs::write(&log, text).unwrap();
    let undone = in_dir(&dir, &["undo"]);
    assert!(undone.status.success(), "{undone:?}");
    let said = String::from_utf8_lossy(&undone.stdout).into_owned();
    assert!(said.contains("restored"), "{said}");
    assert!(
        said.contains("huge.bin as it is (it was too large or unreadable to keep"),
        "{said}"
    );
    assert!(
        said.contains("1 damaged line of the checkpoint log"),
        "{said}"
    );
    assert_eq!(read(&dir, "b.txt").as_deref(), Some("old\n"));
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

/// What a hostile model plants between a session's writes and its undo (issue 42 point 1):
/// undo changes only what the session wrote, through the folders it opened, never through a
/// link and never blocking.
mod attacks {
    use super::*;

    fn outside_files(dir: &Path) -> Vec<(String, Vec<u8>)> {
        let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
            .unwrap()
            .map(|entry| {
                let path = entry.unwrap().path();
                let bytes = std::fs::read(&path).unwrap_or_default();
                (
                    path.file_name().unwrap().to_string_lossy().into_owned(),
                    bytes,
                )
            })
            .collect();
        files.sort();
        files
    }

    /// A folder of the written file's path replaced by a link to a folder outside (`.venv` is
    /// changed in place, uncaptured), holding a file with the same content: undo deleted the
    /// outside file before.
    #[test]
    fn a_link_planted_in_a_written_files_path_is_not_followed() {
        let work = tempfile::tempdir().unwrap();
        let dir = work.path().join("project");
        std::fs::create_dir(&dir).unwrap();
        let outside = support::cli::outside_dir();
        std::fs::write(outside.path().join("rc"), "session\n").unwrap();
        let before = outside_files(outside.path());
        let script = script_file(
            work.path(),
            "script.jsonl",
            &[
                json!({"tool_calls": [
                    {"id": "w", "name": "write", "arguments": {"path": ".venv/d/rc", "content": "session\n"}}
                ]}),
                json!({"tool_calls": [
                    {"id": "b", "name": "bash", "arguments": {"command":
                        format!("rm -rf .venv/d && ln -s {} .venv/d", outside.path().display())}}
                ]}),
                json!({"text": "Done."}),
            ],
        );
        let run = in_dir(&dir, &["run", "--script", script.to_str().unwrap(), "go"]);
        assert!(run.status.success(), "{run:?}");
        assert!(std::fs::symlink_metadata(dir.join(".venv/d"))
            .unwrap()
            .is_symlink());
        let refused = in_dir(&dir, &["undo"]);
        assert_eq!(refused.status.code(), Some(1), "{refused:?}");
        let error = String::from_utf8_lossy(&refused.stderr).into_owned();
        assert!(error.contains("symbolic link is on the way"), "{error}");
        assert_eq!(outside_files(outside.path()), before, "outside changed");
    }

    /// Undo's temporary file gets a fresh name made with O_EXCL: links planted at the names an
    /// older golato used (`.golato-undo-PID-NAME`) take nothing.
    #[test]
    fn planted_temporary_names_take_no_write() {
        let work = tempfile::tempdir().unwrap();
        let dir = work.path().join("project");
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("a.txt"), "old\n").unwrap();
        let outside = support::cli::outside_dir();
        let script = script_file(
            work.path(),
            "script.jsonl",
            &[
                json!({"tool_calls": [
                    {"id": "w", "name": "write", "arguments": {"path": "a.txt", "content": "new\n"}}
                ]}),
                json!({"text": "Done."}),
            ],
        );
        let run = in_dir(&dir, &["run", "--script", script.to_str().unwrap(), "go"]);
        assert!(run.status.success(), "{run:?}");
        // The process IDs the undo below is likely to get.
        let first = std::process::id();
        for pid in first..first + 3000 {
            std::os::unix::fs::symlink(
                outside.path().join(format!("t{pid}")),
                dir.join(format!(".golato-undo-{pid}-a.txt")),
            )
            .unwrap();
        }
        let undone = in_dir(&dir, &["undo"]);
        assert!(undone.status.success(), "{undone:?}");
        assert!(outside_files(outside.path()).is_empty(), "written outside");
        let a = std::fs::symlink_metadata(dir.join("a.txt")).unwrap();
        assert!(a.is_file(), "{a:?}");
        assert_eq!(read(&dir, "a.txt").as_deref(), Some("old\n"));
    }

    /// A FIFO put where a kept file was is named, not read (undo hung forever before).
    #[test]
    fn a_fifo_where_a_file_was_is_refused_without_blocking() {
        let work = tempfile::tempdir().unwrap();
        let dir = work.path().join("project");
        std::fs::create_dir(&dir).unwrap();
        let script = script_file(
            work.path(),
            "script.jsonl",
            &[
                json!({"tool_calls": [
                    {"id": "w", "name": "write", "arguments": {"path": "a.txt", "content": "new\n"}}
                ]}),
                json!({"text": "Done."}),
            ],
        );
        let run = in_dir(&dir, &["run", "--script", script.to_str().unwrap(), "go"]);
        assert!(run.status.success(), "{run:?}");
        std::fs::remove_file(dir.join("a.txt")).unwrap();
        let made = std::process::Command::new("mkfifo")
            .arg(dir.join("a.txt"))
            .status()
            .unwrap();
        assert!(made.success());
        let mut undo = golato()
            .args(["undo", "-C"])
            .arg(&dir)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Bounded only so that a regression fails instead of hanging the suite.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while undo.try_wait().unwrap().is_none() {
            if std::time::Instant::now() > deadline {
                undo.kill().unwrap();
                panic!("undo blocked on the FIFO");
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let refused = undo.wait_with_output().unwrap();
        assert_eq!(refused.status.code(), Some(1), "{refused:?}");
        let error = String::from_utf8_lossy(&refused.stderr).into_owned();
        assert!(
            error.contains("a.txt (changed since: now a FIFO"),
            "{error}"
        );
    }
}

/// `golato diff` writes paths relative to the session's folder, so `git apply` takes its output,
/// and a diff of a large rewrite is searched for a bounded time (200,000 changed lines took
/// over a minute before).
#[test]
fn diff_applies_with_git_and_a_huge_rewrite_is_diffed() {
    let work = tempfile::tempdir().unwrap();
    let dir = two_prompts(work.path());
    let diff = in_dir(&dir, &["diff"]);
    assert!(diff.status.success(), "{diff:?}");
    let text = String::from_utf8_lossy(&diff.stdout).into_owned();
    assert!(text.contains("--- a/b.txt\n+++ b/b.txt\n"), "{text}");
    assert!(!text.contains(&dir.display().to_string()), "{text}");
    let patch = work.path().join("patch.diff");
    std::fs::write(&patch, &text).unwrap();
    // What both prompts did, taken back by git from the diff alone (the second prompt's
    // a.txt change first: git applies the file's hunks in order).
    let check = std::process::Command::new("git")
        .args(["apply", "--check", "-R", "--include=b.txt"])
        .arg(&patch)
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(check.status.success(), "{check:?}\n{text}");

    let big = work.path().join("big");
    std::fs::create_dir(&big).unwrap();
    let lines = |tag: &str| {
        (0..200_000)
            .map(|n| format!("{tag} {n}\n"))
            .collect::<String>()
    };
    std::fs::write(big.join("f.txt"), lines("old")).unwrap();
    let script = script_file(
        work.path(),
        "big.jsonl",
        &[
            json!({"tool_calls": [
                {"id": "w", "name": "write", "arguments": {"path": "f.txt", "content": lines("new")}}
            ]}),
            json!({"text": "Done."}),
        ],
    );
    let run = in_dir(&big, &["run", "--script", script.to_str().unwrap(), "go"]);
    assert!(run.status.success(), "{run:?}");
    let mut diff = golato()
        .args(["diff", "-C"])
        .arg(&big)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = String::new();
    std::io::Read::read_to_string(diff.stdout.as_mut().unwrap(), &mut out).unwrap();
    assert!(diff.wait().unwrap().success());
    assert!(
        out.contains("-old 199999\n") && out.contains("+new 199999\n"),
        "{}",
        out.len()
    );
}

/// A command golato ended (here at the call's timeout) keeps what capture applied in its
/// result, so undo takes it back (issue 42 point 4: the file stayed, and undo said the command
/// ran outside the sandbox).
#[test]
fn a_timed_out_commands_changes_are_undone() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("project");
    std::fs::create_dir(&dir).unwrap();
    let script = script_file(
        work.path(),
        "script.jsonl",
        &[
            json!({"tool_calls": [
                {"id": "b", "name": "bash", "arguments": {"command": "echo a > f1; sleep 30"}}
            ]}),
            json!({"text": "Done."}),
        ],
    );
    let run = in_dir(
        &dir,
        &[
            "run",
            "--tool-timeout",
            "1",
            "--script",
            script.to_str().unwrap(),
            "go",
        ],
    );
    assert!(run.status.success(), "{run:?}");
    assert_eq!(read(&dir, "f1").as_deref(), Some("a\n"));
    let undone = in_dir(&dir, &["undo"]);
    assert!(undone.status.success(), "{undone:?}");
    let said = String::from_utf8_lossy(&undone.stdout).into_owned();
    assert!(said.contains("removed") && said.contains("f1"), "{said}");
    assert!(!said.contains("outside the sandbox"), "{said}");
    assert_eq!(read(&dir, "f1"), None);
}

/// Links to a folder outside the workspace planted at random places between a session's
/// prompts (by a repository or the model's uncaptured commands), then capture, diff, undo and
/// a second undo: nothing outside ever changes (its files hashed before and after).
mod planted_links {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    /// Every file beneath `folder` and its bytes, links as where they lead.
    fn contents(folder: &Path) -> BTreeMap<String, Vec<u8>> {
        let mut found = BTreeMap::new();
        let mut stack = vec![folder.to_owned()];
        while let Some(next) = stack.pop() {
            for entry in std::fs::read_dir(&next).unwrap() {
                let path = entry.unwrap().path();
                let name = path.strip_prefix(folder).unwrap().display().to_string();
                let metadata = std::fs::symlink_metadata(&path).unwrap();
                if metadata.is_dir() {
                    stack.push(path);
                    found.insert(name, b"/".to_vec());
                } else if metadata.is_symlink() {
                    found.insert(
                        name,
                        std::fs::read_link(&path)
                            .unwrap()
                            .into_os_string()
                            .into_encoded_bytes(),
                    );
                } else {
                    found.insert(name, std::fs::read(&path).unwrap());
                }
            }
        }
        found
    }

    /// A path of one to three folders or files named from a few letters.
    fn path() -> impl Strategy<Value = String> {
        proptest::collection::vec(proptest::sample::select(vec!["a", "b", ".venv"]), 1..4)
            .prop_map(|parts| parts.join("/"))
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
        #[test]
        fn nothing_outside_changes(
            written in proptest::collection::vec(path(), 1..4),
            planted in proptest::collection::vec(path(), 1..4),
            rewritten in proptest::collection::vec(path(), 0..3),
        ) {
            let work = tempfile::tempdir().unwrap();
            let dir = work.path().join("project");
            std::fs::create_dir(&dir).unwrap();
            let outside = support::cli::outside_dir();
            // Outside holds the same names with the session's content, so that a check that
            // followed a link would find "what the session left" there.
            for path in written.iter().chain(&planted).chain(&rewritten) {
                let target = outside.path().join(path);
                let _ = std::fs::create_dir_all(target.parent().unwrap());
                let _ = std::fs::write(&target, format!("{path}\n"));
            }
            let before = contents(outside.path());
            let calls: Vec<Value> = written
                .iter()
                .enumerate()
                .map(|(n, path)| json!({"id": format!("w{n}"), "name": "write", "arguments": {"path": path, "content": format!("{path}\n")}}))
                .collect();
            let commands: Vec<String> = rewritten
                .iter()
                .map(|path| format!("mkdir -p \"$(dirname {path})\" 2>/dev/null; echo changed > {path} 2>/dev/null"))
                .collect();
            let script = script_file(
                work.path(),
                "script.jsonl",
                &[
                    json!({"tool_calls": calls}),
                    json!({"text": "First done."}),
                    json!({"tool_calls": [{"id": "b", "name": "bash", "arguments": {"command": format!("{}; true", commands.join("; "))}}]}),
                    json!({"text": "Second done."}),
                ],
            );
            let script = script.to_str().unwrap();
            let first = in_dir(&dir, &["run", "--script", script, "first"]);
            prop_assert!(first.status.success(), "{:?}", first);
            // Planted between the prompts, where the session wrote: each place (or a folder on
            // its way) becomes a link to the same place outside.
            for path in &planted {
                let place = dir.join(path);
                // Never through a link planted before (that would be the test writing outside).
                let through_link = Path::new(path).ancestors().skip(1).any(|folder| {
                    !folder.as_os_str().is_empty()
                        && std::fs::symlink_metadata(dir.join(folder)).is_ok_and(|m| m.is_symlink())
                });
                if through_link {
                    continue;
                }
                if std::fs::symlink_metadata(&place).is_ok() {
                    let _ = std::fs::remove_dir_all(&place).or_else(|_| std::fs::remove_file(&place));
                }
                if std::fs::create_dir_all(place.parent().unwrap()).is_ok() {
                    let _ = std::os::unix::fs::symlink(outside.path().join(path), &place);
                }
            }
            let second = in_dir(&dir, &["run", "-c", "--script", script, "second"]);
            prop_assert!(second.status.success(), "{:?}", second);
            for command in [&["diff"][..], &["undo"], &["undo"]] {
                let _ = in_dir(&dir, command);
                prop_assert_eq!(&contents(outside.path()), &before, "after {:?}", command);
            }
        }
    }
}
