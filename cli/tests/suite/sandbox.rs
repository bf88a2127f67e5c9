//! The sandbox, tried from the inside: commands and file-tool calls that try to get out, each
//! checked on the file system, a loopback listener or a process (not only the tool's word);
//! what must still work; and what happens where the kernel cannot enforce a policy.
//!
//! "Outside" is a directory under none of the places a workspace-write sandbox leaves writable
//! ([`outside_base`]).

use crate::support;

use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use golato::builtin;
use golato::message::ToolResultMessage;
use golato::sandbox::{self, Policy};
use golato::Tool;
use serde_json::json;
use support::call_tool;
use support::sandboxed_tools as tools;

fn bash(tools: &[Tool], command: &str) -> ToolResultMessage {
    call_tool(tools, "bash", &json!({ "command": command }).to_string())
}

/// A directory under none of workspace-write's own writable places (`/tmp`, `TMPDIR`): the
/// build's temporary directory unless the checkout itself is under one of them (a clone in
/// `/tmp`), else `/var/tmp`, else the home directory.
fn outside_base() -> PathBuf {
    let writable: Vec<PathBuf> = [PathBuf::from("/tmp"), std::env::temp_dir()]
        .iter()
        .filter_map(|path| path.canonicalize().ok())
        .collect();
    [
        PathBuf::from(env!("CARGO_TARGET_TMPDIR")),
        PathBuf::from("/var/tmp"),
        PathBuf::from(std::env::var_os("HOME").unwrap_or_default()),
    ]
    .into_iter()
    .filter_map(|candidate| candidate.canonicalize().ok())
    .find(|candidate| !writable.iter().any(|root| candidate.starts_with(root)))
    .expect("a directory outside /tmp and TMPDIR to try escapes into")
}

/// A file's content, mode and modification time (seconds, nanoseconds).
type FileState = (String, u32, i64, i64);

/// A directory outside every writable root, with a file `f` in it.
struct Outside {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

impl Outside {
    fn new() -> Outside {
        let dir = tempfile::tempdir_in(outside_base()).unwrap();
        let path = dir.path().canonicalize().unwrap();
        std::fs::write(path.join("f"), "original").unwrap();
        support::chmod(&path.join("f"), 0o644);
        Outside { _dir: dir, path }
    }

    fn file(&self) -> PathBuf {
        self.path.join("f")
    }

    /// What a change would show: the entries, and the file's content, mode and times (none
    /// when it is gone).
    fn state(&self) -> (Vec<String>, Option<FileState>) {
        let mut entries: Vec<String> = std::fs::read_dir(&self.path)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        entries.sort();
        let file = std::fs::symlink_metadata(self.file()).ok().map(|metadata| {
            (
                std::fs::read_to_string(self.file()).unwrap_or_default(),
                metadata.mode(),
                metadata.mtime(),
                metadata.mtime_nsec(),
            )
        });
        (entries, file)
    }
}

fn workspace() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().canonicalize().unwrap();
    (dir, path)
}

/// Every route out of the writable roots a command might take, as shell lines aimed at
/// `outside`, from a workspace at `workspace`.
fn escape_routes(outside: &Path, workspace: &Path) -> Vec<(&'static str, String)> {
    let f = outside.join("f");
    let f = f.display();
    let o = outside.display();
    let up = std::iter::repeat_n("..", workspace.components().count() - 1)
        .collect::<Vec<_>>()
        .join("/");
    vec![
        ("absolute path", format!("echo escaped > {f}")),
        ("..", format!("echo escaped > {up}{f}")),
        ("append", format!("echo escaped >> {f}")),
        ("truncate", format!("truncate -s 0 {f}")),
        (
            "symlink made before",
            "echo escaped > before-link".to_owned(),
        ),
        (
            "symlink made during",
            format!("ln -s {f} during-link; echo escaped > during-link"),
        ),
        (
            "hard link",
            format!("ln {f} hard-link && echo escaped >> hard-link"),
        ),
        ("rename out", format!("mv {f} moved-here")),
        ("rename in", format!("echo escaped > new && mv new {f}")),
        ("remove", format!("rm -f {f}")),
        ("new file", format!("touch {o}/new")),
        ("new directory", format!("mkdir {o}/dir")),
        (
            "/proc/self/root",
            format!("echo escaped > /proc/self/root{f}"),
        ),
        (
            "/proc/PPID/root",
            format!("echo escaped > /proc/$PPID/root{f}"),
        ),
        ("chmod", format!("chmod 777 {f}")),
        ("utime", format!("touch -d 2001-01-01 {f}")),
        (
            "setsid",
            format!("setsid --wait sh -c 'echo escaped > {f}'"),
        ),
        ("background", format!("(echo escaped > {f}) & wait")),
        (
            "python",
            format!("python3 -c \"open('{f}', 'w').write('escaped')\""),
        ),
    ]
}

/// Tries every route under `policy`, each against an outside of its own; returns, per route,
/// whether the outside changed and what the command printed.
fn try_every_route(policy: &Policy) -> Vec<(&'static str, bool, String)> {
    let (_dir, workspace) = workspace();
    let tools = tools(&workspace, policy.clone());
    let routes = escape_routes(&Outside::new().path, &workspace).len();
    (0..routes)
        .map(|index| {
            let outside = Outside::new();
            let link = workspace.join("before-link");
            let _ = std::fs::remove_file(&link);
            std::os::unix::fs::symlink(outside.file(), &link).unwrap();
            let (route, command) = escape_routes(&outside.path, &workspace).remove(index);
            let before = outside.state();
            let result = bash(&tools, &command);
            (
                route,
                outside.state() != before,
                format!("{command}: {}", result.text()),
            )
        })
        .collect()
}

#[test]
fn workspace_write_keeps_every_route_out_of_the_writable_roots_closed() {
    for (route, changed, said) in try_every_route(&Policy::workspace_write()) {
        assert!(!changed, "the route {route:?} changed the outside: {said}");
    }
}

#[test]
fn without_a_sandbox_every_route_does_get_out() {
    // The routes are real: unconfined, each one changes the outside.
    for (route, changed, said) in try_every_route(&Policy::off()) {
        assert!(
            changed,
            "unconfined, the route {route:?} changed nothing: {said}"
        );
    }
}

#[test]
fn read_only_leaves_nothing_writable_not_even_the_workspace_or_tmp() {
    for (route, changed, said) in try_every_route(&Policy::read_only()) {
        assert!(!changed, "the route {route:?} changed the outside: {said}");
    }
    let (_dir, workspace) = workspace();
    let tools = tools(&workspace, Policy::read_only());
    let tmp_name = format!("/tmp/golato-read-only-{}", std::process::id());
    let result = bash(
        &tools,
        &format!(
            "echo x > in-workspace; echo x > {tmp_name}; echo x > /dev/null && echo devices-ok"
        ),
    );
    assert!(
        !workspace.join("in-workspace").exists(),
        "{}",
        result.text()
    );
    assert!(!Path::new(&tmp_name).exists(), "{}", result.text());
    assert!(result.text().contains("devices-ok"), "{}", result.text());
}

#[test]
fn what_a_coding_agent_needs_still_works_in_workspace_write() {
    let (_dir, workspace) = workspace();
    let extra = tempfile::tempdir_in(outside_base()).unwrap();
    let extra = extra.path().canonicalize().unwrap();
    let tools = tools(
        &workspace,
        Policy::workspace_write().with_writable_root(&extra),
    );
    let tmp_name = format!("/tmp/golato-sandbox-ok-{}", std::process::id());
    let result = bash(
        &tools,
        &format!(
            "set -e
             printf '#include <stdio.h>\\nint main(void){{puts(\"built and ran\");return 0;}}\\n' > main.c
             cc -o main main.c && ./main
             echo tmp > {tmp_name}
             echo extra > {extra}/file
             mkdir -p src/deep && echo nested > src/deep/file && mv src/deep/file src/moved
             head -c 5 /etc/passwd > /dev/null && echo read-anywhere
             echo piped | tr a-z A-Z
             python3 -c 'import multiprocessing as m; print(\"pool\", sum(m.Pool(2).map(abs, [-1, -2])))'
             echo shared > /dev/shm/golato-test && cat /dev/shm/golato-test
             (sleep 0.1; echo background) & wait",
            extra = extra.display()
        ),
    );
    let text = result.text();
    assert!(!result.is_error, "{text}");
    for expected in [
        "built and ran",
        "read-anywhere",
        "PIPED",
        "background",
        "pool 3",
        "shared",
    ] {
        assert!(text.contains(expected), "{expected:?} missing from {text}");
    }
    assert_eq!(std::fs::read_to_string(&tmp_name).unwrap(), "tmp\n");
    // /dev/shm was the sandbox's own.
    assert!(!Path::new("/dev/shm/golato-test").exists());
    std::fs::remove_file(&tmp_name).unwrap();
    assert_eq!(
        std::fs::read_to_string(extra.join("file")).unwrap(),
        "extra\n"
    );
    assert_eq!(
        std::fs::read_to_string(workspace.join("src/moved")).unwrap(),
        "nested\n"
    );
    // Files made inside belong to the user outside.
    assert_eq!(
        std::fs::metadata(workspace.join("main")).unwrap().uid(),
        rustix::process::getuid().as_raw()
    );
}

/// Whether anything reached `listener` (accepting without blocking).
fn reached(listener: &std::net::TcpListener) -> bool {
    listener.set_nonblocking(true).unwrap();
    listener.accept().is_ok()
}

#[test]
fn the_network_is_denied_unless_allowed() {
    let (_dir, workspace) = workspace();
    let v4 = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let v6 = std::net::TcpListener::bind("[::1]:0").ok();
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.set_nonblocking(true).unwrap();
    let unix_path = workspace.join("daemon.sock");
    let unix = std::os::unix::net::UnixListener::bind(&unix_path).unwrap();
    unix.set_nonblocking(true).unwrap();
    let commands = |allowed: bool| {
        let mut command = format!(
            "echo hi > /dev/tcp/127.0.0.1/{}; echo hi > /dev/udp/127.0.0.1/{}; python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect('{}')\"",
            v4.local_addr().unwrap().port(),
            udp.local_addr().unwrap().port(),
            unix_path.display(),
        );
        if let Some(v6) = &v6 {
            command.push_str(&format!(
                "; echo hi > /dev/tcp/::1/{}",
                v6.local_addr().unwrap().port()
            ));
        }
        let _ = allowed;
        command
    };
    let denied = tools(&workspace, Policy::workspace_write());
    let result = bash(&denied, &commands(false));
    let mut datagram = [0u8; 16];
    assert!(
        !reached(&v4),
        "TCP over IPv4 got through: {}",
        result.text()
    );
    assert!(
        v6.as_ref().is_none_or(|v6| !reached(v6)),
        "TCP over IPv6 got through: {}",
        result.text()
    );
    assert!(
        udp.recv(&mut datagram).is_err(),
        "UDP got through: {}",
        result.text()
    );
    assert!(
        unix.accept().is_err(),
        "a Unix socket got through: {}",
        result.text()
    );

    let allowed = tools(&workspace, Policy::workspace_write().with_network(true));
    let result = bash(&allowed, &commands(true));
    assert!(
        reached(&v4),
        "allowed, TCP did not get through: {}",
        result.text()
    );
    assert!(
        udp.recv(&mut datagram).is_ok(),
        "allowed, UDP did not: {}",
        result.text()
    );
    assert!(
        unix.accept().is_ok(),
        "allowed, the Unix socket did not: {}",
        result.text()
    );
}

#[test]
fn signals_reach_no_process_outside_the_sandbox() {
    let (_dir, workspace) = workspace();
    let mut outsider = std::process::Command::new("sleep")
        .arg("600")
        .spawn()
        .unwrap();
    let tools = tools(&workspace, Policy::workspace_write());
    let result = bash(
        &tools,
        &format!("kill -KILL {}; kill -TERM {}", outsider.id(), outsider.id()),
    );
    assert!(
        outsider.try_wait().unwrap().is_none(),
        "the process outside was killed: {}",
        result.text()
    );
    // Inside, signals work as ever.
    let inside = bash(&tools, "sleep 600 & kill $! && wait $!; echo status=$?");
    assert!(inside.text().contains("status=143"), "{}", inside.text());
    outsider.kill().unwrap();
    outsider.wait().unwrap();
}

#[test]
fn denied_paths_are_unreadable_by_commands_and_by_read() {
    let outside = Outside::new();
    let secrets = outside.path.join("secrets");
    std::fs::create_dir(&secrets).unwrap();
    std::fs::write(secrets.join("key"), "SECRET-KEY").unwrap();
    let (_dir, workspace) = workspace();
    std::os::unix::fs::symlink(secrets.join("key"), workspace.join("link-to-key")).unwrap();
    let tools = tools(
        &workspace,
        Policy::workspace_write().with_denied_path(&secrets),
    );
    let result = bash(
        &tools,
        &format!(
            "cat {}/key link-to-key; ls -A {}",
            secrets.display(),
            secrets.display()
        ),
    );
    assert!(!result.text().contains("SECRET-KEY"), "{}", result.text());
    assert!(!result.text().contains("key\n"), "{}", result.text());
    for path in [
        secrets.join("key").display().to_string(),
        "link-to-key".to_owned(),
    ] {
        let read = call_tool(&tools, "read", &json!({ "path": path }).to_string());
        assert!(read.is_error, "{}", read.text());
        assert!(read.text().contains("denies"), "{}", read.text());
        assert!(!read.text().contains("SECRET-KEY"));
    }
    // Everything else reads as ever.
    let read = call_tool(
        &tools,
        "read",
        &json!({ "path": outside.file() }).to_string(),
    );
    assert_eq!(read.text(), "original");
}

/// find and ls leave out what the sandbox denies, as bash sees nothing there, and say how
/// many entries they left out; a denied folder cannot be listed at all (issue 42 point 6:
/// they listed `id_rsa…` and `credentials` before).
#[test]
fn find_and_ls_leave_out_what_the_sandbox_denies() {
    let (_dir, workspace) = workspace();
    let secrets = workspace.join("secrets");
    std::fs::create_dir(&secrets).unwrap();
    std::fs::write(secrets.join("id_rsa"), "KEY").unwrap();
    std::fs::write(workspace.join("visible.txt"), "hello").unwrap();
    let tools = golato::builtin::new(golato::builtin::Config {
        working_directory: workspace,
        allowed_tool_names: Some(["read", "grep", "find", "ls"].map(String::from).to_vec()),
        sandbox: Policy::workspace_write()
            .with_denied_path(&secrets)
            .with_helper(support::golato_binary()),
        ..Default::default()
    })
    .unwrap();
    let call =
        |tool: &str, arguments: serde_json::Value| call_tool(&tools, tool, &arguments.to_string());
    let found = call("find", json!({"pattern": "*"}));
    assert!(!found.text().contains("id_rsa"), "{}", found.text());
    assert!(found.text().contains("visible.txt"), "{}", found.text());
    assert!(
        found
            .text()
            .contains("1 entry left out: denied by the sandbox"),
        "{}",
        found.text()
    );
    let listed = call("ls", json!({}));
    assert!(!listed.text().contains("secrets"), "{}", listed.text());
    assert!(listed.text().contains("visible.txt"), "{}", listed.text());
    assert!(listed.text().contains("left out"), "{}", listed.text());
    for (tool, arguments) in [
        ("ls", json!({"path": "secrets"})),
        ("find", json!({"pattern": "*", "path": "secrets"})),
    ] {
        let refused = call(tool, arguments);
        assert!(refused.is_error, "{tool}: {}", refused.text());
        assert!(
            !refused.text().contains("id_rsa"),
            "{tool}: {}",
            refused.text()
        );
        assert!(
            refused.text().contains("denied by the sandbox"),
            "{tool}: {}",
            refused.text()
        );
    }
    let grepped = call("grep", json!({"pattern": "KEY"}));
    assert!(!grepped.text().contains("KEY\n"), "{}", grepped.text());
}

#[test]
fn write_and_edit_stay_inside_the_writable_roots() {
    let outside = Outside::new();
    let (_dir, workspace) = workspace();
    std::os::unix::fs::symlink(outside.file(), workspace.join("link")).unwrap();
    std::os::unix::fs::symlink(&outside.path, workspace.join("dir-link")).unwrap();
    let tools = tools(&workspace, Policy::workspace_write());
    let before = outside.state();
    let up = format!(
        "{}{}",
        "../".repeat(workspace.components().count() - 1),
        outside.file().display()
    );
    for path in [
        outside.file().display().to_string(),
        up,
        "link".into(),
        "dir-link/f".into(),
        "dir-link/new".into(),
    ] {
        let write = call_tool(
            &tools,
            "write",
            &json!({"path": path, "content": "escaped"}).to_string(),
        );
        assert!(write.is_error, "write {path}: {}", write.text());
        let edit = call_tool(
            &tools,
            "edit",
            &json!({"path": path, "edits": [{"oldText": "original", "newText": "escaped"}]})
                .to_string(),
        );
        assert!(edit.is_error, "edit {path}: {}", edit.text());
        assert_eq!(outside.state(), before, "{path}");
    }
    let refused = call_tool(
        &tools,
        "write",
        &json!({"path": outside.file(), "content": "x"}).to_string(),
    );
    assert!(
        refused
            .text()
            .contains("outside the sandbox's writable places"),
        "{}",
        refused.text()
    );
    // Inside, they work.
    let write = call_tool(
        &tools,
        "write",
        &json!({"path": "a/b/new.txt", "content": "one"}).to_string(),
    );
    assert!(!write.is_error, "{}", write.text());
    let edit = call_tool(
        &tools,
        "edit",
        &json!({"path": "a/b/new.txt", "edits": [{"oldText": "one", "newText": "two"}]})
            .to_string(),
    );
    assert!(!edit.is_error, "{}", edit.text());
    assert_eq!(
        std::fs::read_to_string(workspace.join("a/b/new.txt")).unwrap(),
        "two"
    );
}

#[test]
fn read_only_refuses_every_write_and_edit() {
    let (_dir, workspace) = workspace();
    std::fs::write(workspace.join("file"), "one").unwrap();
    let tools = tools(&workspace, Policy::read_only());
    let write = call_tool(
        &tools,
        "write",
        &json!({"path": "file", "content": "x"}).to_string(),
    );
    assert!(write.text().contains("read-only"), "{}", write.text());
    let edit = call_tool(
        &tools,
        "edit",
        &json!({"path": "file", "edits": [{"oldText": "one", "newText": "two"}]}).to_string(),
    );
    assert!(edit.is_error, "{}", edit.text());
    assert_eq!(
        std::fs::read_to_string(workspace.join("file")).unwrap(),
        "one"
    );
    let read = call_tool(&tools, "read", &json!({"path": "file"}).to_string());
    assert_eq!(read.text(), "one");
}

/// Runs `write` of `path` in a run of its own on another thread, held by `pause` after its
/// checks; `swap` runs while it is held; returns the write's result.
fn write_with_a_swap(
    tools: Vec<Tool>,
    pause_at: &Path,
    path: &str,
    swap: impl FnOnce(),
) -> ToolResultMessage {
    let pause = golato::builtin::fault::Pause::before_replacing(pause_at);
    let arguments = json!({"path": path, "content": "new content"}).to_string();
    let writer = std::thread::spawn(move || call_tool(&tools, "write", &arguments));
    pause.wait_arrived();
    swap();
    pause.release();
    pause.wait_done();
    writer.join().unwrap()
}

#[test]
fn a_directory_swapped_for_a_link_mid_write_cannot_redirect_it() {
    let outside = Outside::new();
    let (_dir, workspace) = workspace();
    std::fs::create_dir(workspace.join("sub")).unwrap();
    std::fs::write(workspace.join("sub/f"), "old").unwrap();
    let tools = tools(&workspace, Policy::workspace_write());
    let before = outside.state();
    let result = write_with_a_swap(tools, &workspace.join("sub/f"), "sub/f", || {
        std::fs::rename(workspace.join("sub"), workspace.join("sub.moved")).unwrap();
        std::os::unix::fs::symlink(&outside.path, workspace.join("sub")).unwrap();
    });
    assert_eq!(outside.state(), before, "{}", result.text());
    // The write went to the directory it had checked, wherever that is now.
    assert_eq!(
        std::fs::read_to_string(workspace.join("sub.moved/f")).unwrap(),
        "new content",
        "{}",
        result.text()
    );
}

#[test]
fn a_file_swapped_for_a_link_mid_write_is_replaced_not_followed() {
    let outside = Outside::new();
    let (_dir, workspace) = workspace();
    let tools = tools(&workspace, Policy::workspace_write());
    let before = outside.state();
    let result = write_with_a_swap(tools, &workspace.join("new"), "new", || {
        std::os::unix::fs::symlink(outside.file(), workspace.join("new")).unwrap();
    });
    assert_eq!(outside.state(), before, "{}", result.text());
    let new = std::fs::symlink_metadata(workspace.join("new")).unwrap();
    assert!(new.is_file(), "{}", result.text());
    assert_eq!(
        std::fs::read_to_string(workspace.join("new")).unwrap(),
        "new content"
    );
}

#[test]
fn a_helper_that_is_not_one_is_an_error_not_an_unconfined_run() {
    let (_dir, workspace) = workspace();
    let error = builtin::new(builtin::Config {
        working_directory: workspace.clone(),
        sandbox: Policy::workspace_write().with_helper("/bin/true"),
        ..Default::default()
    })
    .unwrap_err();
    let text = error.to_string();
    assert!(
        matches!(
            error,
            builtin::Error::Sandbox(sandbox::Error::Helper { .. })
        ),
        "{text}"
    );
    assert!(text.contains("run_helper_if_asked"), "{text}");

    let error = builtin::new(builtin::Config {
        working_directory: workspace.clone(),
        sandbox: Policy::workspace_write()
            .with_writable_root(workspace.join("missing"))
            .with_helper(crate::support::golato_binary()),
        ..Default::default()
    })
    .unwrap_err();
    assert!(error.to_string().contains("writable root"), "{error}");
}

// Through the binary, as a person runs it.

use support::cli::{golato, json_lines, of_type, run_script, script_file};

fn bash_script(dir: &Path, command: &str) -> PathBuf {
    script_file(
        dir,
        "script.jsonl",
        &[
            json!({"tool_calls": [{"id": "b", "name": "bash", "arguments": {"command": command}}]}),
            json!({"text": "done"}),
        ],
    )
}

#[test]
fn golato_run_confines_bash_to_the_workspace_by_default_and_says_so() {
    let outside = Outside::new();
    let (_dir, workspace) = workspace();
    let script = bash_script(
        &workspace,
        &format!(
            "echo escaped > {}; echo inside > inside",
            outside.file().display()
        ),
    );
    let before = outside.state();
    let output = run_script(&workspace, &script, &[]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert_eq!(outside.state(), before);
    assert_eq!(
        std::fs::read_to_string(workspace.join("inside")).unwrap(),
        "inside\n"
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(" · sandbox workspace-write, no network"),
        "{stderr}"
    );

    let lines = json_lines(&run_script(&workspace, &script, &["--json"]));
    let start = of_type(&lines, "run_start")[0];
    assert_eq!(start["sandbox"], "workspace-write");
    assert_eq!(start["network"], false);

    // --writable widens it; --sandbox off lifts it.
    let output = run_script(
        &workspace,
        &script,
        &["--writable", outside.path.to_str().unwrap()],
    );
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert_eq!(
        std::fs::read_to_string(outside.file()).unwrap(),
        "escaped\n"
    );
    std::fs::write(outside.file(), "original").unwrap();
    let output = run_script(&workspace, &script, &["--sandbox", "off"]);
    assert!(String::from_utf8_lossy(&output.stderr).contains(" · sandbox off"));
    assert_eq!(
        std::fs::read_to_string(outside.file()).unwrap(),
        "escaped\n"
    );
}

#[test]
fn golato_tool_takes_the_same_flags() {
    let outside = Outside::new();
    let (_dir, workspace) = workspace();
    let arguments =
        json!({"command": format!("echo escaped > {}", outside.file().display())}).to_string();
    let before = outside.state();
    let output = golato()
        .args([
            "tool",
            "bash",
            &arguments,
            "--sandbox",
            "read-only",
            "--cwd",
        ])
        .arg(&workspace)
        .output()
        .unwrap();
    // The call's result is an error (the command failed): exit status 1.
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    assert!(String::from_utf8_lossy(&output.stdout).contains("Read-only file system"));
    assert_eq!(outside.state(), before);
}

#[test]
fn an_unknown_sandbox_mode_is_a_usage_error() {
    let output = golato()
        .args(["run", "--sandbox", "strict", "hi"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("read-only, workspace-write or off"),
        "{stderr}"
    );
}

#[test]
fn where_user_namespaces_are_missing_asking_for_a_sandbox_fails_and_says_what_to_do() {
    // A user namespace of the test's own, in which no further one may be made: what a kernel
    // with user namespaces turned off looks like to golato. (Needs unshare(1) and user
    // namespaces on the test machine itself, as the sandbox does.)
    let (_dir, workspace) = workspace();
    let output = std::process::Command::new("unshare")
        .args(["--user", "--map-root-user", "sh", "-c"])
        .arg(r#"echo 0 > /proc/sys/user/max_user_namespaces && exec "$0" tool bash '{"command":"echo ran"}' --sandbox workspace-write --cwd "$1""#)
        .arg(crate::support::golato_binary())
        .arg(&workspace)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(!String::from_utf8_lossy(&output.stdout).contains("ran"));
    assert!(
        stderr.contains("user namespaces are not available"),
        "{stderr}"
    );
    assert!(stderr.contains("--sandbox off"), "{stderr}");
}
