//! bash's capture of a sandboxed command's changes (`builtin::Config::bash_checkpoints`):
//! every kind of change reaches the real tree, with what each file was before and became;
//! git's files and build output change in place; a file something else changed meanwhile is
//! never overwritten; a killed command's changes are applied too; where it cannot capture, the
//! result says why.

use crate::support;

use std::collections::HashMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use golato::builtin::{self, Checkpoints};
use golato::message::ToolResultMessage;
use golato::sandbox::Policy;
use golato::Tool;
use serde_json::{json, Value};

/// Keeps copies in memory, named by number; stages in its own folder.
#[derive(Debug)]
struct Keeper {
    area: PathBuf,
    kept: Mutex<HashMap<String, Vec<u8>>>,
}

impl Checkpoints for Keeper {
    fn staging_area(&self) -> Option<PathBuf> {
        Some(self.area.clone())
    }

    fn keep(&self, bytes: &[u8]) -> std::io::Result<String> {
        let mut kept = self.kept.lock().unwrap();
        let name = format!("copy-{}", kept.len());
        kept.insert(name.clone(), bytes.to_vec());
        Ok(name)
    }
}

impl Keeper {
    fn content(&self, state: &Value) -> Option<String> {
        let name = state.get("kept")?.as_str()?;
        let kept = self.kept.lock().unwrap();
        Some(String::from_utf8_lossy(kept.get(name)?).into_owned())
    }
}

struct Setup {
    _dirs: (tempfile::TempDir, tempfile::TempDir),
    workspace: PathBuf,
    keeper: Arc<Keeper>,
    tools: Vec<Tool>,
}

/// A workspace and a staging area outside it, and bash capturing under `policy`.
fn setup(policy: Policy) -> Setup {
    setup_in(Path::new(env!("CARGO_TARGET_TMPDIR")), policy)
}

/// The same with the staging area in `parent` (another file system than the workspace's, say).
fn setup_in(parent: &Path, policy: Policy) -> Setup {
    let workspace_dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let area_dir = tempfile::tempdir_in(parent).unwrap();
    let workspace = workspace_dir.path().canonicalize().unwrap();
    let keeper = Arc::new(Keeper {
        area: area_dir.path().join("staging"),
        kept: Mutex::default(),
    });
    let tools = builtin::new(builtin::Config {
        working_directory: workspace.clone(),
        allowed_tool_names: Some(vec!["bash".into()]),
        sandbox: policy.with_helper(support::golato_binary()),
        bash_checkpoints: Some(Arc::clone(&keeper) as Arc<dyn Checkpoints>),
        ..Default::default()
    })
    .expect("the sandbox is available on the test machine");
    Setup {
        _dirs: (workspace_dir, area_dir),
        workspace,
        keeper,
        tools,
    }
}

fn bash(tools: &[Tool], command: &str) -> ToolResultMessage {
    support::call_tool(tools, "bash", &json!({ "command": command }).to_string())
}

fn write(path: &Path, content: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

/// The changes listed, by path relative to the workspace, each state in its stable JSON form
/// (`"absent"`, `{"kept": NAME}`, `{"link": TARGET}`, `"unkept"`).
fn changes(result: &ToolResultMessage, workspace: &Path) -> HashMap<String, (Value, Value)> {
    golato::builtin::captured_changes(result.details.as_ref())
        .expect("a captured call's changes")
        .into_iter()
        .map(|change| {
            (
                change
                    .path
                    .strip_prefix(workspace)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned(),
                (
                    serde_json::to_value(&change.before).unwrap(),
                    serde_json::to_value(&change.after).unwrap(),
                ),
            )
        })
        .collect()
}

/// The staging areas holding something: an emptied one is kept for the next call (`idle-…`),
/// and has nothing left in it.
fn staged(keeper: &Keeper) -> Vec<PathBuf> {
    std::fs::read_dir(&keeper.area)
        .map(|entries| {
            entries
                .map(|entry| entry.unwrap().path())
                .collect::<Vec<PathBuf>>()
        })
        .unwrap_or_default()
        .into_iter()
        .filter(|stage: &PathBuf| {
            let idle = stage
                .file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("idle-");
            !idle
                || std::fs::read_dir(stage.join("upper"))
                    .unwrap()
                    .next()
                    .is_some()
        })
        .collect()
}

#[test]
fn every_kind_of_change_reaches_the_tree_with_what_each_file_was_and_became() {
    let s = setup(Policy::workspace_write());
    let w = &s.workspace;
    write(&w.join("a.txt"), "a");
    write(&w.join("d/x"), "x");
    write(&w.join("d/sub/y"), "y");
    write(&w.join("gone.txt"), "bye");
    write(&w.join("same.txt"), "same");
    write(&w.join(".git/HEAD"), "ref: main");
    write(&w.join("target/old"), "built");
    std::os::unix::fs::symlink("a.txt", w.join("l")).unwrap();
    let result = bash(
        &s.tools,
        "echo A > a.txt && rm -r d && mkdir d && echo z > d/z && echo n > new.txt \
         && rm gone.txt && touch same.txt && ln -sfn new.txt l && mkdir -p e/f && echo deep > e/f/g \
         && echo 'ref: other' > .git/HEAD && echo out > target/new \
         && mkdir -p node_modules/pkg && echo m > node_modules/pkg/index.js",
    );
    assert!(!result.is_error, "{}", result.text());
    let details = result.details.clone().unwrap();
    assert_eq!(details["capture"], "captured", "{details}");
    // The real tree is as the command left it.
    assert_eq!(read(&w.join("a.txt")), "A\n");
    assert_eq!(read(&w.join("d/z")), "z\n");
    assert!(!w.join("d/x").exists() && !w.join("d/sub").exists());
    assert_eq!(read(&w.join("new.txt")), "n\n");
    assert!(!w.join("gone.txt").exists());
    assert_eq!(
        std::fs::read_link(w.join("l")).unwrap(),
        Path::new("new.txt")
    );
    assert_eq!(read(&w.join("e/f/g")), "deep\n");
    assert_eq!(read(&w.join(".git/HEAD")), "ref: other\n");
    assert_eq!(read(&w.join("target/new")), "out\n");
    // A build folder the command made is moved in whole, not captured.
    assert_eq!(read(&w.join("node_modules/pkg/index.js")), "m\n");
    // Each change with what the file was and became; git's files and build output are not
    // captured, and a file touched without a new content is no change.
    let changes = changes(&result, w);
    let mut paths: Vec<&str> = changes.keys().map(String::as_str).collect();
    paths.sort_unstable();
    assert_eq!(
        paths,
        ["a.txt", "d/sub/y", "d/x", "d/z", "e/f/g", "gone.txt", "l", "new.txt"]
    );
    let k = &s.keeper;
    let (before, after) = &changes["a.txt"];
    assert_eq!(
        (k.content(before).as_deref(), k.content(after).as_deref()),
        (Some("a"), Some("A\n"))
    );
    for (path, was) in [("d/x", "x"), ("d/sub/y", "y"), ("gone.txt", "bye")] {
        let (before, after) = &changes[path];
        assert_eq!(k.content(before).as_deref(), Some(was), "{path}");
        assert_eq!(after, "absent", "{path}");
    }
    for (path, now) in [("d/z", "z\n"), ("new.txt", "n\n"), ("e/f/g", "deep\n")] {
        let (before, after) = &changes[path];
        assert_eq!(before, "absent", "{path}");
        assert_eq!(k.content(after).as_deref(), Some(now), "{path}");
    }
    assert_eq!(
        changes["l"],
        (json!({"link": "a.txt"}), json!({"link": "new.txt"}))
    );
    assert!(
        staged(k).is_empty(),
        "the staging area is cleared: {:?}",
        staged(k)
    );
}

#[test]
fn a_file_something_else_changed_while_the_command_ran_is_never_overwritten() {
    let s = setup(Policy::workspace_write());
    let w = &s.workspace;
    write(&w.join("f"), "before");
    write(&w.join("doomed"), "before");
    write(&w.join("folder/inner"), "before");
    write(&w.join("folder/other"), "before");
    // Outside the workspace (and the overlay): the command waits here until told to end.
    let gate_dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let gate = gate_dir.path().join("gate");
    nix_mkfifo(&gate);
    let tools = s.tools.clone();
    let command = format!(
        "echo command > f && rm doomed && rm -r folder && cat {} > /dev/null",
        gate.display()
    );
    let running = std::thread::spawn(move || bash(&tools, &command));
    // Opening the gate for writing waits until the command reads it: by then it has written
    // both files.
    let mut opened = std::fs::OpenOptions::new().write(true).open(&gate).unwrap();
    write(&w.join("f"), "someone else");
    write(&w.join("doomed"), "someone else");
    write(&w.join("folder/inner"), "someone else");
    opened.write_all(b"go\n").unwrap();
    drop(opened);
    let result = running.join().unwrap();
    assert!(!result.is_error, "{}", result.text());
    assert_eq!(read(&w.join("f")), "someone else");
    assert_eq!(read(&w.join("doomed")), "someone else");
    // The folder the command deleted keeps what was changed in it meanwhile, and only that.
    assert_eq!(read(&w.join("folder/inner")), "someone else");
    assert!(!w.join("folder/other").exists());
    assert!(staged(&s.keeper).is_empty(), "{:?}", staged(&s.keeper));
    let conflicts = &result.details.as_ref().unwrap()["conflicts"];
    let besides: Vec<PathBuf> = std::fs::read_dir(w)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.to_string_lossy().contains("f.golato-bash-"))
        .collect();
    assert_eq!(besides.len(), 1, "{conflicts}");
    assert_eq!(read(&besides[0]), "command\n");
    let text = result.text();
    assert!(
        text.contains("also changed by something else")
            && text.contains(&besides[0].display().to_string()),
        "{text}"
    );
    assert!(text.contains("the command deleted"), "{text}");
    let changes = changes(&result, w);
    assert_eq!(changes.keys().collect::<Vec<_>>(), ["folder/other"]);
}

#[test]
fn a_killed_commands_changes_are_applied_too() {
    let s = setup(Policy::workspace_write());
    let w = &s.workspace;
    let result = support::call_tool(
        &s.tools,
        "bash",
        &json!({ "command": "echo partial > half && exec sleep 600", "timeout": 1 }).to_string(),
    );
    assert!(
        result.is_error && result.text().contains("timed out"),
        "{}",
        result.text()
    );
    assert_eq!(read(&w.join("half")), "partial\n");
    assert_eq!(changes(&result, w).len(), 1);
}

#[test]
fn where_it_cannot_capture_the_command_runs_and_the_details_say_why() {
    // No sandbox: nothing to capture in.
    let s = setup(Policy::off());
    let result = bash(&s.tools, "echo x > plain");
    assert_eq!(read(&s.workspace.join("plain")), "x\n");
    let reason = result.details.unwrap()["capture"]["uncaptured"].clone();
    assert!(reason.as_str().unwrap().contains("no sandbox"), "{reason}");

    // A staging area inside the working directory would be inside the overlay.
    let workspace = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let keeper = Arc::new(Keeper {
        area: workspace.path().join(".stage"),
        kept: Mutex::default(),
    });
    let tools = builtin::new(builtin::Config {
        working_directory: workspace.path().into(),
        allowed_tool_names: Some(vec!["bash".into()]),
        sandbox: Policy::workspace_write().with_helper(support::golato_binary()),
        bash_checkpoints: Some(keeper),
        ..Default::default()
    })
    .unwrap();
    let result = bash(&tools, "echo x > f");
    assert_eq!(read(&workspace.path().join("f")), "x\n");
    let reason = result.details.unwrap()["capture"]["uncaptured"].clone();
    assert!(
        reason
            .as_str()
            .unwrap()
            .contains("inside the working directory"),
        "{reason}"
    );

    // Read-only: nothing can change, so nothing is said.
    let s = setup(Policy::read_only());
    let result = bash(&s.tools, "true");
    assert_eq!(result.details.unwrap().get("capture"), None);
}

fn nix_mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn what_a_command_plants_is_applied_without_following_it() {
    let s = setup(Policy::workspace_write());
    let w = &s.workspace;
    let outside = support::cli::outside_dir();
    let outside_path = outside.path().canonicalize().unwrap();
    // A link to a folder outside, which the command replaces with a folder of its own: the
    // apply must make a folder here, never write through the link.
    std::os::unix::fs::symlink(&outside_path, w.join("escape")).unwrap();
    let result = bash(
        &s.tools,
        "rm escape && mkdir escape && echo x > escape/f && mkfifo pipe \
         && truncate -s 65M big && printf 'a\\nb' > 'odd name, with: commas'",
    );
    assert!(!result.is_error, "{}", result.text());
    assert!(!outside_path.join("f").exists(), "written through the link");
    let escape = std::fs::symlink_metadata(w.join("escape")).unwrap();
    assert!(escape.is_dir(), "{escape:?}");
    assert_eq!(read(&w.join("escape/f")), "x\n");
    assert_eq!(read(&w.join("odd name, with: commas")), "a\nb");
    // A pipe is not copied, and the result says so.
    assert!(!w.join("pipe").exists());
    assert!(
        result.text().contains("pipes and sockets are not copied"),
        "{}",
        result.text()
    );
    // Too large to keep: applied, not kept.
    assert_eq!(
        std::fs::metadata(w.join("big")).unwrap().len(),
        65 * 1024 * 1024
    );
    let changes = changes(&result, w);
    assert_eq!(changes["big"], (json!("absent"), json!("unkept")));
    assert_eq!(changes["escape"].0, json!({"link": outside_path}));
    assert!(staged(&s.keeper).is_empty());
}

/// Tests that need root (to act as an unprivileged user): ignored in an ordinary `cargo test`;
/// `.ci/run` runs them as root (`-- --ignored needs_root`).
mod needs_root {
    use super::*;
    use std::os::unix::process::CommandExt as _;

    /// `golato ARGS -C workspace [go]` as nobody, with `data` as its data folder and home.
    fn as_nobody(
        args: &[&str],
        workspace: &Path,
        data: &Path,
        prompt: bool,
    ) -> std::process::Output {
        let mut command = std::process::Command::new(support::reachable_golato());
        command.args(args).arg("-C").arg(workspace);
        if prompt {
            command.arg("go");
        }
        command
            .env("GOLATO_DATA_DIR", data)
            .env("HOME", data)
            .uid(support::NOBODY)
            .gid(support::NOBODY)
            .output()
            .unwrap()
    }

    /// As a user other than root, commands are captured one after another and their staging
    /// areas are not left behind: the overlay leaves its work directory without permissions,
    /// which only root could remove as it is (a leak of one folder a command, found by hand).
    #[test]
    #[ignore = "needs root (runs golato as nobody)"]
    fn an_unprivileged_users_commands_are_captured_and_leave_no_staging_area_behind() {
        let top = tempfile::tempdir().unwrap();
        support::chmod(top.path(), 0o755);
        let (workspace, data) = (top.path().join("ws"), top.path().join("data"));
        for dir in [&workspace, &data] {
            std::fs::create_dir(dir).unwrap();
            std::os::unix::fs::chown(dir, Some(support::NOBODY), Some(support::NOBODY)).unwrap();
        }
        let script = top.path().join("script.jsonl");
        let calls: Vec<String> = (0..4)
            .map(|n| {
                json!({"tool_calls": [{"id": format!("b{n}"), "name": "bash", "arguments": {
                    "command": format!("mkdir -p d{n}/e && echo {n} > d{n}/e/f && echo {n} > top.txt")
                }}]})
                .to_string()
            })
            .chain([json!({"text": "done"}).to_string()])
            .collect();
        std::fs::write(&script, calls.join("\n")).unwrap();
        support::chmod(&script, 0o644);
        let output = as_nobody(
            &["run", "-q", "--script", script.to_str().unwrap()],
            &workspace,
            &data,
            true,
        );
        assert!(output.status.success(), "{output:?}");
        for n in 0..4 {
            assert_eq!(read(&workspace.join(format!("d{n}/e/f"))), format!("{n}\n"));
        }
        let sessions = data.join("sessions");
        let session = std::fs::read_dir(&sessions)
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .find(|path| path.extension().is_some_and(|ext| ext == "jsonl"))
            .unwrap();
        let saved = std::fs::read_to_string(session).unwrap();
        assert_eq!(
            saved.matches("\"capture\":\"captured\"").count(),
            4,
            "{saved}"
        );
        // At most the one kept for a next call, empty.
        let left: Vec<String> = std::fs::read_dir(data.join("staging"))
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(
            left.len() <= 1 && left.iter().all(|name| name.starts_with("idle-")),
            "{left:?}"
        );
        // Undo, as the same user, takes back what the commands made.
        let undone = as_nobody(&["undo"], &workspace, &data, false);
        assert!(undone.status.success(), "{undone:?}");
        for n in 0..4 {
            assert!(!workspace.join(format!("d{n}/e/f")).exists());
        }
        assert!(!workspace.join("top.txt").exists());

        // A folder a command made unreadable (`chmod 000`) is applied, its bits last, and
        // nothing is left in staging (its files stayed there for good, and every later golato
        // said the command "was cut off").
        let script = top.path().join("locked.jsonl");
        std::fs::write(
            &script,
            [
                json!({"tool_calls": [{"id": "l", "name": "bash", "arguments": {"command": "mkdir -p locked/in && echo x > locked/in/f && chmod 000 locked/in"}}]}).to_string(),
                json!({"text": "done"}).to_string(),
            ]
            .join("\n"),
        )
        .unwrap();
        support::chmod(&script, 0o644);
        let output = as_nobody(
            &["run", "-q", "--script", script.to_str().unwrap()],
            &workspace,
            &data,
            true,
        );
        assert!(output.status.success(), "{output:?}");
        assert!(
            !String::from_utf8_lossy(&output.stderr).contains("cut off"),
            "{output:?}"
        );
        let locked = workspace.join("locked/in");
        let mode = std::fs::metadata(&locked).unwrap().permissions();
        assert_eq!(std::os::unix::fs::PermissionsExt::mode(&mode) & 0o777, 0);
        assert_eq!(read(&locked.join("f")), "x\n");
        let left: Vec<String> = std::fs::read_dir(data.join("staging"))
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(
            left.iter().all(|name| name.starts_with("idle-")),
            "{left:?}"
        );
    }
}

/// What a hostile command or repository plants to make the apply write or delete somewhere
/// else (issue 42 points 2 and 3): each of these wrote outside the workspace, aborted golato,
/// or lost a file before.
mod attacks {
    use super::*;
    use std::os::unix::ffi::OsStrExt as _;
    use std::os::unix::fs::PermissionsExt as _;

    /// Every file beneath `folder`, with its bytes: what must not change.
    fn snapshot(folder: &Path) -> Vec<(PathBuf, Vec<u8>)> {
        let mut files = Vec::new();
        let mut stack = vec![folder.to_owned()];
        while let Some(next) = stack.pop() {
            for entry in std::fs::read_dir(&next).unwrap() {
                let path = entry.unwrap().path();
                let metadata = std::fs::symlink_metadata(&path).unwrap();
                if metadata.is_dir() {
                    stack.push(path.clone());
                }
                let bytes = if metadata.is_file() {
                    std::fs::read(&path).unwrap()
                } else {
                    Vec::new()
                };
                files.push((path, bytes));
            }
        }
        files.sort();
        files
    }

    /// Across file systems the apply copies through a temporary file: names planted where it
    /// could go (links to a folder outside, the old predictable `NAME.golato-apply-PID`) never
    /// take the write, and no temporary is left behind.
    #[test]
    fn planted_temporary_names_across_file_systems_take_no_write() {
        // The staging area on tmpfs, the workspace on the build directory's file system.
        let s = setup_in(Path::new("/dev/shm"), Policy::workspace_write());
        let w = &s.workspace;
        let outside = support::cli::outside_dir();
        std::fs::write(outside.path().join("victim"), "kept").unwrap();
        let before = snapshot(outside.path());
        write(&w.join("f"), "old");
        let pid = std::process::id();
        for name in [
            format!("f.golato-apply-{pid}"),
            format!(".golato-{pid}-0-0"),
        ] {
            std::os::unix::fs::symlink(outside.path().join("victim"), w.join(name)).unwrap();
        }
        let result = bash(&s.tools, "echo PAYLOAD > f && mkdir -p d && echo two > d/g");
        assert!(!result.is_error, "{}", result.text());
        assert_eq!(
            snapshot(outside.path()),
            before,
            "something outside changed"
        );
        assert_eq!(read(&w.join("f")), "PAYLOAD\n");
        assert!(std::fs::symlink_metadata(w.join("f")).unwrap().is_file());
        assert_eq!(read(&w.join("d/g")), "two\n");
        let left: Vec<String> = std::fs::read_dir(w)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| {
                name.starts_with(".golato-") && !name.starts_with(&format!(".golato-{pid}-0-0"))
            })
            .collect();
        assert!(left.is_empty(), "temporaries left: {left:?}");
        assert!(staged(&s.keeper).is_empty());
    }

    /// 3,000 nested folders made by one command are applied without recursion (the worker's
    /// stack overflowed at level 1,811), and the next command in the folder runs.
    #[test]
    fn a_tree_deeper_than_any_stack_is_applied() {
        let s = setup(Policy::workspace_write());
        let w = &s.workspace;
        let result = bash(
            &s.tools,
            // bash's `cd` checks the whole path each time (quadratic); Python's is one step.
            "python3 -c 'import os\nfor _ in range(3000): os.mkdir(\"d\"); os.chdir(\"d\")\nopen(\"f\", \"w\").write(\"deep\\n\")'",
        );
        assert!(!result.is_error, "{}", result.text());
        let check = std::process::Command::new("bash")
            .arg("-c")
            .arg("python3 -c 'import os\nfor _ in range(3000): os.chdir(\"d\")\nprint(open(\"f\").read(), end=\"\")'")
            .current_dir(w)
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&check.stdout),
            "deep\n",
            "{check:?}"
        );
        assert!(staged(&s.keeper).is_empty());
        // Deleted again, file by file, also without recursion.
        let result = bash(&s.tools, "rm -rf d && echo next > n");
        assert!(!result.is_error, "{}", result.text());
        assert!(!w.join("d").exists());
        assert_eq!(read(&w.join("n")), "next\n");
    }

    /// A name that is not UTF-8 is applied and recorded (raw bytes), not a panic of the tool.
    #[test]
    fn a_name_in_another_encoding_is_applied_and_recorded() {
        let s = setup(Policy::workspace_write());
        let w = &s.workspace;
        let result = bash(&s.tools, "echo x > $'caf\\xe9'");
        assert!(!result.is_error, "{}", result.text());
        let name = std::ffi::OsStr::from_bytes(b"caf\xe9");
        assert_eq!(std::fs::read(w.join(name)).unwrap(), b"x\n");
        // In the details, compact: [path, before, after], the path as its bytes.
        let recorded = &result.details.as_ref().unwrap()["changes"][0][0]["bytes"];
        let mut expected = w.as_os_str().as_bytes().to_vec();
        expected.extend_from_slice(b"/caf\xe9");
        assert_eq!(recorded, &json!(expected));
        let changes = golato::builtin::captured_changes(result.details.as_ref()).unwrap();
        assert_eq!(changes[0].path, w.join(name));
    }

    /// A command cannot create a protected path that did not exist (a `.golato/config.toml`
    /// in a trusted folder that had none would run its hooks outside the sandbox on the next
    /// run, issue 41): what it made there is not applied, and the result says so.
    #[test]
    fn protected_paths_a_command_makes_are_not_applied() {
        let s = setup(Policy::workspace_write());
        let w = &s.workspace;
        let result = bash(
            &s.tools,
            "mkdir -p .golato && echo '[[hooks.SessionStart]]' > .golato/config.toml \
             && echo evil > AGENTS.md && echo fine > fine.txt",
        );
        assert!(!result.is_error, "{}", result.text());
        assert!(!w.join(".golato").exists());
        assert!(!w.join("AGENTS.md").exists());
        assert_eq!(read(&w.join("fine.txt")), "fine\n");
        assert!(result.text().contains("not applied"), "{}", result.text());
        assert!(result.text().contains(".golato"), "{}", result.text());
        assert!(staged(&s.keeper).is_empty());
    }

    /// A set-user-ID program a command leaves is applied without the bit (root-owned when
    /// golato runs as root).
    #[test]
    fn set_user_id_bits_are_cleared() {
        let s = setup(Policy::workspace_write());
        let w = &s.workspace;
        let result = bash(&s.tools, "cp /bin/true t && chmod 6755 t && echo ok");
        assert!(!result.is_error, "{}", result.text());
        let mode = std::fs::metadata(w.join("t")).unwrap().permissions().mode();
        assert_eq!(mode & 0o7777, 0o755, "{mode:o}");
    }
}
