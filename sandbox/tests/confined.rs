//! What golato-sandbox promises on its own: a command started through the helper (this test
//! binary, which calls `run_helper_if_asked` first, as a program that sandboxes must) writes
//! only where its policy says, reads nothing denied, reaches no network unless allowed, sees no
//! other process, and a captured command's changes reach the real tree only when applied.
//!
//! The helper must be this binary, so the tests cannot run under libtest's harness (it would
//! start them all again in the helper role): `main` runs them, in order, and takes the harness's
//! arguments that matter here (a name filter; `--ignored`, which runs none: nothing here is
//! ignored).

// A test binary: a failed check panics, as libtest's tests do.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use golato_sandbox::capture::Stage;
use golato_sandbox::{Mode, Policy, Prepared};

fn main() {
    golato_sandbox::run_helper_if_asked();
    let tests: [(&str, fn()); 8] = [
        (
            "read_only_reads_and_writes_nothing",
            read_only_reads_and_writes_nothing,
        ),
        (
            "workspace_write_writes_the_workspace_and_nothing_outside",
            workspace_write_writes_the_workspace_and_nothing_outside,
        ),
        (
            "protected_names_stay_read_only_inside_the_workspace",
            protected_names_stay_read_only_inside_the_workspace,
        ),
        (
            "a_denied_path_is_unreadable_even_inside_the_workspace",
            a_denied_path_is_unreadable_even_inside_the_workspace,
        ),
        (
            "no_network_unless_the_policy_allows_it",
            no_network_unless_the_policy_allows_it,
        ),
        (
            "the_network_by_domain_reaches_the_proxys_address_and_nothing_else",
            the_network_by_domain_reaches_the_proxys_address_and_nothing_else,
        ),
        (
            "other_processes_are_out_of_sight",
            other_processes_are_out_of_sight,
        ),
        (
            "a_captured_commands_changes_reach_the_tree_only_when_applied",
            a_captured_commands_changes_reach_the_tree_only_when_applied,
        ),
    ];
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|arg| arg == "--ignored") {
        println!("running 0 tests (none here is ignored)");
        return;
    }
    // Name filters: the words that are not flags nor the values of libtest's flags.
    let mut filters: Vec<&String> = Vec::new();
    let mut words = args.iter();
    while let Some(arg) = words.next() {
        match arg.as_str() {
            "--test-threads" | "--skip" | "--format" | "--color" | "--logfile" | "-Z" => {
                words.next();
            }
            flag if flag.starts_with('-') => {}
            _ => filters.push(arg),
        }
    }
    let chosen: Vec<_> = tests
        .iter()
        .filter(|(name, _)| filters.is_empty() || filters.iter().any(|f| name.contains(f.as_str())))
        .collect();
    println!("running {} tests", chosen.len());
    let mut failed = Vec::new();
    for (name, test) in chosen {
        match std::panic::catch_unwind(test) {
            Ok(()) => println!("test {name} ... ok"),
            Err(_) => {
                println!("test {name} ... FAILED");
                failed.push(*name);
            }
        }
    }
    if !failed.is_empty() {
        println!("failures: {failed:?}");
        std::process::exit(101);
    }
    println!("test result: ok");
}

/// A folder under none of workspace-write's own writable places (`/tmp`): the build's
/// temporary directory, or `/var/tmp` when that is under `/tmp`.
fn scratch() -> tempfile::TempDir {
    let base = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let base = match base.canonicalize().unwrap().starts_with("/tmp") {
        true => PathBuf::from("/var/tmp"),
        false => base,
    };
    tempfile::tempdir_in(base).unwrap()
}

fn helper() -> PathBuf {
    std::env::current_exe().unwrap()
}

/// `script` run by `sh` under `policy` in `cwd`, optionally with a capture stage.
fn confined(policy: &Policy, cwd: &Path, script: &str, stage: Option<&Stage>) -> Output {
    let prepared = Prepared::new(&policy.clone().with_helper(helper()), cwd)
        .unwrap()
        .expect("a confining mode is prepared");
    let mut command = Command::new(prepared.helper());
    match stage {
        Some(stage) => command.args(prepared.capturing_args(stage)),
        None => command.args(prepared.helper_args()),
    };
    command
        .args(["sh", "-c", script])
        .current_dir(cwd)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn said(output: &Output) -> String {
    format!(
        "status {:?}\nstdout: {}\nstderr: {}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn read_only_reads_and_writes_nothing() {
    let ws = scratch();
    std::fs::write(ws.path().join("f"), "old").unwrap();
    let output = confined(
        &Policy::read_only(),
        ws.path(),
        "cat f; echo new > f; echo made > g",
        None,
    );
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("old"),
        "{}",
        said(&output)
    );
    assert!(!output.status.success(), "{}", said(&output));
    assert_eq!(std::fs::read_to_string(ws.path().join("f")).unwrap(), "old");
    assert!(!ws.path().join("g").exists());
}

fn workspace_write_writes_the_workspace_and_nothing_outside() {
    let ws = scratch();
    let outside = scratch();
    std::fs::write(outside.path().join("o"), "untouched").unwrap();
    let script = format!(
        "echo in > made && echo tmp > /tmp/golato-sandbox-suite-$$ && rm /tmp/golato-sandbox-suite-$$ && echo out > {o}; echo more > {new}",
        o = outside.path().join("o").display(),
        new = outside.path().join("new").display()
    );
    let output = confined(&Policy::workspace_write(), ws.path(), &script, None);
    assert_eq!(
        std::fs::read_to_string(ws.path().join("made")).unwrap(),
        "in\n",
        "{}",
        said(&output)
    );
    assert_eq!(
        std::fs::read_to_string(outside.path().join("o")).unwrap(),
        "untouched"
    );
    assert!(!outside.path().join("new").exists(), "{}", said(&output));

    // A writable root the policy names is writable too.
    let output = confined(
        &Policy::workspace_write().with_writable_root(outside.path()),
        ws.path(),
        &format!("echo more > {}", outside.path().join("new").display()),
        None,
    );
    assert!(output.status.success(), "{}", said(&output));
    assert!(outside.path().join("new").exists());
}

fn protected_names_stay_read_only_inside_the_workspace() {
    let ws = scratch();
    std::fs::create_dir_all(ws.path().join(".git/hooks")).unwrap();
    std::fs::create_dir(ws.path().join(".golato")).unwrap();
    std::fs::write(ws.path().join("AGENTS.md"), "be kind").unwrap();
    let output = confined(
        &Policy::workspace_write(),
        ws.path(),
        "echo evil > .git/hooks/pre-commit; echo evil > AGENTS.md; echo '[[hooks.Stop]]' > .golato/config.toml; echo ok > free",
        None,
    );
    assert!(
        !ws.path().join(".git/hooks/pre-commit").exists(),
        "{}",
        said(&output)
    );
    assert_eq!(
        std::fs::read_to_string(ws.path().join("AGENTS.md")).unwrap(),
        "be kind"
    );
    assert!(
        !ws.path().join(".golato/config.toml").exists(),
        "{}",
        said(&output)
    );
    assert!(ws.path().join("free").exists(), "{}", said(&output));

    // `.git` without `hooks` (passed through capture, so the folder made below would be the
    // real one): the sandbox makes an empty `hooks` and shows it read-only.
    let ws = scratch();
    std::fs::create_dir(ws.path().join(".git")).unwrap();
    for stage in [false, true] {
        let area = scratch();
        let stage =
            stage.then(|| Stage::new(area.path(), ws.path(), serde_json::json!({})).unwrap());
        let output = confined(
            &Policy::workspace_write(),
            ws.path(),
            "mkdir -p .git/hooks; echo evil > .git/hooks/pre-commit; echo ok > .git/free",
            stage.as_ref(),
        );
        assert!(
            !ws.path().join(".git/hooks/pre-commit").exists(),
            "{}",
            said(&output)
        );
        assert!(ws.path().join(".git/free").exists(), "{}", said(&output));
        std::fs::remove_dir(ws.path().join(".git/hooks")).unwrap();
    }

    // One that does not exist yet: a captured command may make it in its overlay, and it is
    // not applied (an uncaptured command is not covered: README, "Capture").
    let ws = scratch();
    let area = scratch();
    let mut stage = Stage::new(area.path(), ws.path(), serde_json::json!({})).unwrap();
    let prepared = Prepared::new(&Policy::workspace_write().with_helper(helper()), ws.path())
        .unwrap()
        .expect("prepared");
    stage.protect(prepared.protected_paths()).unwrap();
    let output = confined(
        &Policy::workspace_write(),
        ws.path(),
        "mkdir .golato && echo '[[hooks.Stop]]' > .golato/config.toml && echo ok > free",
        Some(&stage),
    );
    assert!(output.status.success(), "{}", said(&output));
    let applied = stage.apply(&mut |_: &[u8]| Ok(String::new()));
    assert!(!ws.path().join(".golato").exists(), "{applied:?}");
    assert!(ws.path().join("free").exists(), "{applied:?}");
    assert!(
        applied.refused.iter().any(|path| path.ends_with(".golato")),
        "{applied:?}"
    );
}

fn a_denied_path_is_unreadable_even_inside_the_workspace() {
    let ws = scratch();
    std::fs::create_dir(ws.path().join("secret")).unwrap();
    std::fs::write(ws.path().join("secret/key"), "hunter2").unwrap();
    std::fs::write(ws.path().join("token"), "s3cr3t").unwrap();
    let policy = Policy::workspace_write()
        .with_denied_path(ws.path().join("secret"))
        .with_denied_path(ws.path().join("token"));
    let output = confined(&policy, ws.path(), "cat secret/key token; ls secret", None);
    let seen = String::from_utf8_lossy(&output.stdout);
    assert!(!seen.contains("hunter2"), "{}", said(&output));
    assert!(!seen.contains("s3cr3t"), "{}", said(&output));
    assert!(!seen.contains("key"), "{}", said(&output));
    // And a denied path that does not exist yet is denied by name once it does.
    let later = ws.path().join("later");
    let policy = Policy::workspace_write().with_denied_path(&later);
    std::fs::write(&later, "appeared").unwrap();
    let output = confined(&policy, ws.path(), "cat later", None);
    assert!(
        !String::from_utf8_lossy(&output.stdout).contains("appeared"),
        "{}",
        said(&output)
    );
}

/// The listening socket the helper sends over the first connection `socket` accepts.
fn received_listener(socket: std::os::unix::net::UnixListener) -> std::net::TcpListener {
    let (stream, _) = socket.accept().unwrap();
    let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut ancillary = rustix::net::RecvAncillaryBuffer::new(&mut space);
    let mut buffer = [0u8; 16];
    rustix::net::recvmsg(
        &stream,
        &mut [std::io::IoSliceMut::new(&mut buffer)],
        &mut ancillary,
        rustix::net::RecvFlags::CMSG_CLOEXEC,
    )
    .unwrap();
    let fd = ancillary
        .drain()
        .find_map(|message| match message {
            rustix::net::RecvAncillaryMessage::ScmRights(mut fds) => fds.next(),
            _ => None,
        })
        .expect("a descriptor was sent");
    std::net::TcpListener::from(fd)
}

fn the_network_by_domain_reaches_the_proxys_address_and_nothing_else() {
    use std::io::{BufRead as _, Write as _};
    // The test's own server, outside: the command must not reach it directly.
    let outside = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = outside.local_addr().unwrap().port();
    let outside_v6 = std::net::TcpListener::bind("[::1]:0").ok();
    let port_v6 = outside_v6
        .as_ref()
        .map_or(port, |listener| listener.local_addr().unwrap().port());
    let ws = scratch();
    let place = scratch();
    let socket_path = place.path().join("proxy.sock");
    let socket = std::os::unix::net::UnixListener::bind(&socket_path).unwrap();
    let proxy = std::thread::spawn(move || {
        let listener = received_listener(socket);
        let (stream, _) = listener.accept().unwrap();
        let mut line = String::new();
        std::io::BufReader::new(&stream)
            .read_line(&mut line)
            .unwrap();
        (&stream)
            .write_all(format!("proxy heard {line}").as_bytes())
            .unwrap();
    });
    let policy = Policy::workspace_write()
        .with_domains(golato_sandbox::network::NetworkPolicy::default())
        .with_helper(helper());
    let prepared = Prepared::new(&policy, ws.path()).unwrap().unwrap();
    assert!(prepared.domains().is_some());
    let script = format!(
        "echo \"proxy=$HTTPS_PROXY cargo=$CARGO_HTTP_PROXY\"
         exec 3<>/dev/tcp/127.0.0.1/3128 && echo hello >&3 && head -1 <&3
         (exec 4<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo escaped-v4
         (exec 4<>/dev/tcp/::1/{port_v6}) 2>/dev/null && echo escaped-v6
         true"
    );
    let output = Command::new(prepared.helper())
        .args(prepared.proxied_args(None, &socket_path))
        .args(["bash", "-c", &script])
        .current_dir(ws.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    proxy.join().unwrap();
    let seen = String::from_utf8_lossy(&output.stdout);
    assert!(
        seen.contains("proxy=http://127.0.0.1:3128 cargo=http://127.0.0.1:3128"),
        "{}",
        said(&output)
    );
    assert!(seen.contains("proxy heard hello"), "{}", said(&output));
    assert!(!seen.contains("escaped"), "{}", said(&output));
    drop(outside);
}

fn no_network_unless_the_policy_allows_it() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let ws = scratch();
    // bash's /dev/tcp connects without any other program.
    let script = format!("exec bash -c 'exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected'");
    let output = confined(&Policy::workspace_write(), ws.path(), &script, None);
    assert!(
        !String::from_utf8_lossy(&output.stdout).contains("connected"),
        "{}",
        said(&output)
    );
    let output = confined(
        &Policy::workspace_write().with_network(true),
        ws.path(),
        &script,
        None,
    );
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("connected"),
        "{}",
        said(&output)
    );
}

fn other_processes_are_out_of_sight() {
    let ws = scratch();
    let me = std::process::id();
    let output = confined(
        &Policy::workspace_write(),
        ws.path(),
        &format!("kill -0 {me} && echo seen || echo unseen"),
        None,
    );
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("unseen"),
        "{}",
        said(&output)
    );
}

fn a_captured_commands_changes_reach_the_tree_only_when_applied() {
    let ws = scratch();
    let area = scratch();
    std::fs::write(ws.path().join("f"), "old\n").unwrap();
    let policy = Policy::workspace_write();
    assert_eq!(policy.mode, Mode::WorkspaceWrite);
    let mut stage = Stage::new(area.path(), ws.path(), serde_json::json!({"call": "t"})).unwrap();
    let output = confined(
        &policy,
        ws.path(),
        "echo new > f && echo made > g && cat f",
        Some(&stage),
    );
    assert!(output.status.success(), "{}", said(&output));
    // The command saw its own writes; the tree has none of them yet.
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("new"),
        "{}",
        said(&output)
    );
    assert_eq!(
        std::fs::read_to_string(ws.path().join("f")).unwrap(),
        "old\n"
    );
    assert!(!ws.path().join("g").exists());
    let mut kept = Vec::new();
    let applied = stage.apply(&mut |bytes: &[u8]| {
        kept.push(bytes.to_vec());
        Ok(format!("#{}", kept.len()))
    });
    assert!(applied.failures.is_empty(), "{applied:?}");
    assert!(applied.uncaptured.is_none(), "{applied:?}");
    let paths: Vec<_> = applied
        .changes
        .iter()
        .map(|change| change.path.clone())
        .collect();
    assert_eq!(
        paths,
        [ws.path().join("f"), ws.path().join("g")],
        "{applied:?}"
    );
    assert_eq!(
        std::fs::read_to_string(ws.path().join("f")).unwrap(),
        "new\n"
    );
    assert_eq!(
        std::fs::read_to_string(ws.path().join("g")).unwrap(),
        "made\n"
    );
    assert!(
        kept.iter().any(|bytes| bytes == b"old\n"),
        "the old content was kept"
    );
}
