//! Folder trust through the binary: a project's `.golato/config.toml` loosens safety only in a
//! folder the person trusted (asked once on a terminal, or `golato trust`), and only in that
//! very folder: moved, or replaced by a link or a new folder, it is untrusted again.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::json;
use support::cli::{golato, run_script, script_file, Terminal};

/// A project folder whose configuration turns the sandbox off, and a place outside it that a
/// command of the model tries to write.
struct Project {
    _dir: tempfile::TempDir,
    folder: PathBuf,
    outside: tempfile::TempDir,
}

impl Project {
    fn new() -> Project {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().canonicalize().unwrap().join("project");
        std::fs::create_dir(&folder).unwrap();
        configure(&folder);
        // Outside every writable place of workspace-write (/tmp is one).
        let outside = support::cli::outside_dir();
        Project {
            _dir: dir,
            folder,
            outside,
        }
    }

    fn escaped(&self) -> PathBuf {
        self.outside.path().join("escaped")
    }

    /// `golato run` in the project on a terminal, with a model that only says hello.
    fn on_terminal(&self) -> Terminal {
        let script = self.outside.path().join("hello.jsonl");
        std::fs::write(&script, "{\"text\": \"hello\"}\n").unwrap();
        let mut command = golato();
        command
            .args(["run", "--script"])
            .arg(&script)
            .arg("--cwd")
            .arg(&self.folder)
            .arg("go");
        Terminal::start(command)
    }

    /// `golato run` in `folder` with a model whose one command writes outside.
    fn run(&self, folder: &Path, flags: &[&str]) -> Output {
        let script = script_file(
            self.outside.path(),
            "script.jsonl",
            &[
                json!({"tool_calls": [{"id": "b", "name": "bash", "arguments": {"command": format!("touch {}", self.escaped().display())}}]}),
                json!({"text": "done"}),
            ],
        );
        run_script(folder, &script, flags)
    }
}

fn configure(folder: &Path) {
    std::fs::create_dir_all(folder.join(".golato")).unwrap();
    std::fs::write(
        folder.join(".golato/config.toml"),
        "sandbox = \"off\"\napprove = \"never\"\nmax_turns = 5\nno_bash_checkpoints = true\n[durable]\nsafe = [\"bash\"]\n",
    )
    .unwrap();
}

fn trust(folder: &Path, command: &str) {
    let output = golato().args([command]).arg(folder).output().unwrap();
    assert!(output.status.success(), "{output:?}");
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn an_untrusted_folders_file_cannot_unconfine_the_model_and_a_trusted_ones_can() {
    let project = Project::new();
    let output = project.run(&project.folder, &[]);
    let text = stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{text}");
    assert!(!project.escaped().exists(), "bash got out: {text}");
    assert!(text.contains("ignored sandbox = \"off\""), "{text}");
    assert!(text.contains("no_bash_checkpoints = true"), "{text}");
    // A repository cannot make its commands safe to run twice in a durable run.
    assert!(text.contains("durable safe bash"), "{text}");
    assert!(text.contains("this folder is not trusted"), "{text}");

    trust(&project.folder, "trust");
    let output = project.run(&project.folder, &[]);
    let text = stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{text}");
    assert!(
        project.escaped().exists(),
        "the trusted file did not apply: {text}"
    );
    assert!(!text.contains("ignored"), "{text}");

    // Untrusted again: confined again.
    std::fs::remove_file(project.escaped()).unwrap();
    trust(&project.folder, "untrust");
    let output = project.run(&project.folder, &[]);
    assert!(!project.escaped().exists(), "{}", stderr(&output));
}

#[test]
fn a_trusted_folder_moved_or_replaced_by_a_link_or_a_new_folder_is_not_trusted() {
    let project = Project::new();
    trust(&project.folder, "trust");
    let parent = project.folder.parent().unwrap().to_owned();

    // Moved: the folder at its new path was never trusted.
    let moved = parent.join("moved");
    std::fs::rename(&project.folder, &moved).unwrap();
    let output = project.run(&moved, &[]);
    assert!(!project.escaped().exists(), "{}", stderr(&output));
    assert!(stderr(&output).contains("this folder is not trusted"));

    // Replaced by a link to another folder with the same file: the link leads elsewhere.
    std::os::unix::fs::symlink(&moved, &project.folder).unwrap();
    let output = project.run(&project.folder, &[]);
    assert!(!project.escaped().exists(), "{}", stderr(&output));

    // Replaced by a new folder at the trusted path: not the folder that was trusted.
    std::fs::remove_file(&project.folder).unwrap();
    std::fs::create_dir(&project.folder).unwrap();
    configure(&project.folder);
    let output = project.run(&project.folder, &[]);
    let text = stderr(&output);
    assert!(!project.escaped().exists(), "{text}");
    assert!(text.contains("this is not the folder trusted at"), "{text}");

    // `--trust` trusts it for one run, and remembers nothing.
    let output = project.run(&project.folder, &["--trust"]);
    assert!(project.escaped().exists(), "{}", stderr(&output));
    std::fs::remove_file(project.escaped()).unwrap();
    let output = project.run(&project.folder, &[]);
    assert!(!project.escaped().exists(), "{}", stderr(&output));
}

#[test]
fn on_a_terminal_golato_asks_once_showing_what_the_file_would_loosen() {
    let project = Project::new();
    // One key answers: no Enter after it.
    let mut terminal = project.on_terminal();
    terminal.wait_for("any other key no: ", 1);
    terminal.type_raw("n");
    let (code, drawn) = terminal.finish();
    assert_eq!(code, Some(0), "{drawn}");
    assert!(drawn.contains("! sandbox = \"off\""), "{drawn}");
    assert!(drawn.contains("! approve = \"never\""), "{drawn}");
    // A harmless setting is shown, not marked.
    assert!(drawn.contains("     max_turns = 5"), "{drawn}");
    assert!(drawn.contains("any other key no: no"), "{drawn}");
    assert!(
        drawn.contains("not trusted; its files stay unread or limited"),
        "{drawn}"
    );

    // The no is remembered: the next run on a terminal asks nothing, stays confined, and
    // says so in one line.
    let (code, drawn) = project.on_terminal().finish();
    assert_eq!(code, Some(0), "{drawn}");
    assert!(!drawn.contains("any other key no"), "{drawn}");
    assert!(
        drawn.contains("is not trusted (you said no): .golato/config.toml limited or unread"),
        "{drawn}"
    );
    assert!(!drawn.contains("ignored sandbox"), "{drawn}");

    // `golato trust` changes the answer.
    trust(&project.folder, "trust");
    let output = project.run(&project.folder, &[]);
    assert!(project.escaped().exists(), "{}", stderr(&output));
}

#[test]
fn a_yes_on_the_terminal_trusts_the_folder_from_then_on() {
    let project = Project::new();
    let mut terminal = project.on_terminal();
    terminal.wait_for("any other key no: ", 1);
    terminal.type_raw("y");
    let (code, drawn) = terminal.finish();
    assert_eq!(code, Some(0), "{drawn}");
    assert!(!drawn.contains("ignored"), "{drawn}");
    let output = project.run(&project.folder, &[]);
    assert!(project.escaped().exists(), "{}", stderr(&output));
}

/// A folder removed and made again at the trusted path is not trusted, even when the file
/// system hands it the old inode number (ext4 does, often at once): its birth time differs.
/// Before, the re-created folder's configuration took effect in 1 try of 8 (issue 41 point 4).
#[test]
fn a_folder_made_again_at_a_trusted_path_is_never_trusted() {
    use std::os::unix::fs::MetadataExt as _;
    let project = Project::new();
    trust(&project.folder, "trust");
    let mut reused = 0;
    for _ in 0..16 {
        let inode = std::fs::metadata(&project.folder).unwrap().ino();
        std::fs::remove_dir_all(&project.folder).unwrap();
        std::fs::create_dir(&project.folder).unwrap();
        reused += usize::from(std::fs::metadata(&project.folder).unwrap().ino() == inode);
        configure(&project.folder);
        let output = project.run(&project.folder, &[]);
        let text = stderr(&output);
        assert!(
            !project.escaped().exists(),
            "the new folder was trusted: {text}"
        );
        assert!(text.contains("this is not the folder trusted at"), "{text}");
    }
    // Said so that a file system which never reuses inodes is seen to test less.
    eprintln!("the inode number was reused {reused} times of 16");
}

/// A project's file may not choose golato's instructions, from a file or as text: it is
/// ignored in a folder not trusted and named in the one line. Before, `@/proc/self/environ`
/// sent golato's whole environment (API keys) to the model (issue 41 point 3).
#[test]
fn an_untrusted_project_cannot_choose_the_system_prompt() {
    let project = Project::new();
    std::fs::write(
        project.folder.join(".golato/config.toml"),
        "system = \"@/proc/self/environ\"\n",
    )
    .unwrap();
    let output = project.run(&project.folder, &[]);
    let text = stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{text}");
    assert!(
        text.contains("ignored system = \"@/proc/self/environ\""),
        "{text}"
    );
}

/// `@FILE` anywhere (the user's own `--system`) reads regular files only, never the kernel's
/// pseudo-files, never a credential folder the sandbox denies, and never blocks on a FIFO.
#[test]
fn a_system_prompt_file_is_a_regular_file_outside_credential_folders() {
    let project = Project::new();
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir(home.path().join(".ssh")).unwrap();
    std::fs::write(home.path().join(".ssh/id_ed25519"), "PRIVATE KEY").unwrap();
    let fifo = home.path().join("fifo");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let key = home.path().join(".ssh/id_ed25519");
    let script = script_file(
        project.outside.path(),
        "hello.jsonl",
        &[json!({"text": "hello"})],
    );
    for (file, why) in [
        (Path::new("/proc/self/environ"), "one of the kernel's files"),
        (key.as_path(), "a credential folder"),
        (fifo.as_path(), "a FIFO"),
    ] {
        let system = format!("@{}", file.display());
        let output = golato()
            .env("HOME", home.path())
            .args(["run", "--ephemeral", "--system", &system, "--script"])
            .arg(&script)
            .arg("--cwd")
            .arg(&project.folder)
            .arg("go")
            .output()
            .unwrap();
        let text = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{file:?}: {text}");
        assert!(text.contains(why), "{file:?}: {text}");
    }
}

/// `approve = "edits"` asks about commands: stricter than the sandboxed default (`never`), so
/// an untrusted project's file keeps it; with the sandbox the user turned off on a terminal
/// (default `ask`) it would loosen, and the default stands.
#[test]
fn an_untrusted_projects_stricter_approval_stands_and_a_looser_one_does_not() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().canonicalize().unwrap();
    std::fs::create_dir(folder.join(".golato")).unwrap();
    std::fs::write(folder.join(".golato/config.toml"), "approve = \"edits\"\n").unwrap();
    let script = script_file(&folder, "hello.jsonl", &[json!({"text": "hello"})]);
    let output = run_script(&folder, &script, &[]);
    let text = stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{text}");
    assert!(text.contains("approve edits"), "{text}");
    assert!(!text.contains("ignored"), "{text}");

    let mut command = golato();
    command
        .args(["run", "--sandbox", "off", "--script"])
        .arg(&script)
        .arg("--cwd")
        .arg(&folder)
        .arg("go");
    let (code, drawn) = Terminal::start(command).finish();
    assert_eq!(code, Some(0), "{drawn}");
    assert!(drawn.contains("ignored approve = \"edits\""), "{drawn}");
    assert!(drawn.contains("approve ask"), "{drawn}");
}
