//! Faults from outside, injected for real: a provider dropping the connection mid-stream, a
//! read-only directory, a full disk (a small tmpfs, where this machine lets the tests mount
//! one), and a writer killed with SIGKILL mid-write.
//!
//! Covered elsewhere: a tool that ignores cancellation (tests/timeouts.rs, tests/embedding.rs),
//! a shell whose leader exits early leaving children (tests/bash.rs), a provider answering 500,
//! 429 or garbage or going silent (tests/providers.rs).

use crate::support;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

use golato::agent::{self, Agent};
use golato::generator::{Model, OpenAiChat, RetryPolicy};
use serde_json::json;
use support::*;
use tokio::io::AsyncWriteExt;

fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_dropping_the_connection_mid_stream_ends_the_run_with_its_transcript() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let connections = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let server = {
        let connections = Arc::clone(&connections);
        tokio::spawn(async move {
            loop {
                let (mut socket, _) = listener.accept().await.unwrap();
                connections.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                read_request(&mut socket).await;
                // Headers, then one chunk holding half a stream, then the connection is gone:
                // no terminating chunk, no [DONE].
                let event = r#"data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"},"finish_reason":null}]}"#;
                let chunk = format!("{event}\n\n");
                let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
                let body = format!("{:x}\r\n{chunk}\r\n", chunk.len());
                socket.write_all(head.as_bytes()).await.unwrap();
                socket.write_all(body.as_bytes()).await.unwrap();
                socket.flush().await.unwrap();
                drop(socket);
            }
        })
    };
    let client = OpenAiChat::new(format!("http://{address}/v1"), None)
        .unwrap()
        .with_retry(RetryPolicy {
            max_retries: 2,
            initial_backoff: std::time::Duration::from_millis(1),
            max_backoff: std::time::Duration::from_millis(5),
        });
    let agent = Agent::new(agent::Config {
        generator: Some(Arc::new(client)),
        model: Model::new("m"),
        ..Default::default()
    })
    .unwrap();
    let error = agent
        .start(prompt("go"))
        .finish()
        .await
        .expect_err("the stream broke");
    let text = error.to_string();
    assert!(text.contains("stream broke"), "{text}");
    // The transcript so far comes back: the prompt, and the text that had streamed in.
    let messages = error.messages().expect("a transcript");
    assert!(!messages.is_empty(), "{messages:?}");
    // A stream that already delivered data is not retried (its deltas were shown).
    assert_eq!(connections.load(std::sync::atomic::Ordering::SeqCst), 1);
    server.abort();
}

#[test]
fn a_read_only_directory_refuses_new_files_and_still_lets_a_writable_file_change() {
    let dir = tempfile::tempdir().unwrap();
    let writable = dir.path().join("open.txt");
    std::fs::write(&writable, "old\n").unwrap();
    chmod(&writable, 0o666);
    chmod(dir.path(), 0o555);
    let write_new = json!({"path": "new.txt", "content": "x"}).to_string();
    let edit_open =
        json!({"path": "open.txt", "edits": [{"oldText": "old", "newText": "new"}]}).to_string();
    // Root may write anywhere: as root, act as an unprivileged user through the binary.
    let (write_result, edit_result) = if is_root() {
        let (code, text) = golato_as_nobody("write", &write_new, dir.path());
        let write = (code == Some(1), text);
        let (code, text) = golato_as_nobody("edit", &edit_open, dir.path());
        (write, (code == Some(1), text))
    } else {
        let tools = tools_in(dir.path());
        let write = call_tool(&tools, "write", &write_new);
        let edit = call_tool(&tools, "edit", &edit_open);
        ((write.is_error, write.text()), (edit.is_error, edit.text()))
    };
    chmod(dir.path(), 0o755);
    assert!(write_result.0, "{}", write_result.1);
    assert!(
        write_result.1.contains("Permission denied") && write_result.1.contains("new.txt"),
        "{}",
        write_result.1
    );
    // The file itself is writable: it is rewritten in place, as a plain write would.
    assert!(!edit_result.0, "{}", edit_result.1);
    assert_eq!(std::fs::read_to_string(&writable).unwrap(), "new\n");
    assert_eq!(names_in(dir.path()), ["open.txt"], "nothing else appeared");
}

/// A small tmpfs mounted for one test, unmounted when dropped.
struct SmallDisk {
    mount: tempfile::TempDir,
}

impl SmallDisk {
    /// Mounts it; fails the test where this machine does not let it mount.
    fn mount(size: &str) -> SmallDisk {
        let mount = tempfile::tempdir().unwrap();
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(mount.path())
            .stderr(Stdio::piped())
            .output();
        match status {
            Ok(output) if output.status.success() => SmallDisk { mount },
            Ok(output) => panic!(
                "could not mount a small tmpfs: {}",
                String::from_utf8_lossy(&output.stderr).trim()
            ),
            Err(error) => panic!("could not run mount: {error}"),
        }
    }

    fn path(&self) -> PathBuf {
        self.mount.path().to_owned()
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount")
            .arg("-l")
            .arg(self.mount.path())
            .status();
    }
}

#[test]
fn a_writer_killed_mid_write_leaves_the_old_or_the_new_file_and_no_temporary_for_long() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("data.txt");
    let old = "old content\n".to_owned();
    std::fs::write(&target, &old).unwrap();
    // Large enough that the write is still going when the temporary file shows up.
    let new = "n".repeat(64 * 1024 * 1024);
    let mut child = Command::new(crate::support::golato_binary())
        .args(["tool", "write", "-", "--cwd"])
        .arg(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let arguments = json!({"path": "data.txt", "content": new}).to_string();
    {
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(arguments.as_bytes()).unwrap();
    }
    // The handshake: the writer's temporary file exists, so it is inside the write.
    let started = std::time::Instant::now();
    while !names_in(dir.path())
        .iter()
        .any(|name| name.starts_with(".golato-write-"))
    {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        assert!(started.elapsed() < HANG_GUARD, "the write never started");
        std::thread::yield_now();
    }
    child.kill().unwrap();
    child.wait().unwrap();

    let after = std::fs::read_to_string(&target).unwrap();
    assert!(
        after == old || after == new,
        "a partial file: {} bytes",
        after.len()
    );
    // The next write into the directory removes what the killed writer left.
    let result = call_tool(
        &tools_in(dir.path()),
        "write",
        &json!({"path": "other.txt", "content": "x"}).to_string(),
    );
    assert!(!result.is_error, "{}", result.text());
    assert_eq!(names_in(dir.path()), ["data.txt", "other.txt"]);
}

/// Runs `golato tool TOOL ARGUMENTS` in `dir` with files limited to `blocks` KiB (`ulimit -f`)
/// and SIGXFSZ ignored, so a write past the limit fails with EFBIG midway.
fn golato_tool_with_file_size_limit(
    dir: &Path,
    blocks: u32,
    tool: &str,
    arguments: &serde_json::Value,
) -> String {
    let output = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "trap '' XFSZ; ulimit -f {blocks} && exec \"$0\" tool \"$1\" \"$2\" --cwd \"$3\""
        ))
        .arg(crate::support::golato_binary())
        .arg(tool)
        .arg(arguments.to_string())
        .arg(dir)
        .output()
        .unwrap();
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn an_in_place_rewrite_failing_midway_puts_the_old_content_back() {
    // Issue 21 item 2: a hard-linked file is rewritten in place; the write failed at the
    // file-size limit, leaving 1 KiB of new content, and the result said nothing changed.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("linked.txt");
    let old = "old line\n".repeat(50);
    std::fs::write(&file, &old).unwrap();
    std::fs::hard_link(&file, dir.path().join("other-link.txt")).unwrap();
    let big = "new line\n".repeat(1000);

    let text = golato_tool_with_file_size_limit(
        dir.path(),
        1,
        "write",
        &json!({"path": "linked.txt", "content": big}),
    );
    assert!(
        text.contains("File too large") && text.contains("nothing was changed"),
        "{text}"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), old);

    let text = golato_tool_with_file_size_limit(
        dir.path(),
        1,
        "edit",
        &json!({"path": "linked.txt", "edits": [{"oldText": old, "newText": big}]}),
    );
    assert!(
        text.contains("File too large") && text.contains("nothing was changed"),
        "{text}"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), old);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("other-link.txt")).unwrap(),
        old
    );
}

/// Tests that need root (to give files away, set file capabilities, mount): ignored in an
/// ordinary `cargo test`; `.ci/run` runs them as root (`-- --ignored needs_root`), where they
/// fail, never skip, when the machine cannot do what they need.
mod needs_root {
    use super::*;

    #[test]
    #[ignore = "needs root (mounts a small tmpfs)"]
    fn a_full_disk_fails_write_and_edit_and_keeps_the_old_file() {
        let disk = SmallDisk::mount("64k");
        let dir = disk.path();
        std::fs::write(dir.join("keep.txt"), "old\n").unwrap();
        let tools = tools_in(&dir);
        let big = "x".repeat(256 * 1024);

        let result = call_tool(
            &tools,
            "write",
            &json!({"path": "keep.txt", "content": big}).to_string(),
        );
        assert!(result.is_error, "{}", result.text());
        let text = result.text();
        assert!(
            text.contains("keep.txt") && text.contains("free some space"),
            "{text}"
        );
        let edit = json!({"path": "keep.txt", "edits": [{"oldText": "old", "newText": big}]});
        let result = call_tool(&tools, "edit", &edit.to_string());
        assert!(result.is_error, "{}", result.text());
        assert!(
            result.text().contains("free some space"),
            "{}",
            result.text()
        );

        assert_eq!(
            std::fs::read_to_string(dir.join("keep.txt")).unwrap(),
            "old\n"
        );
        assert_eq!(names_in(&dir), ["keep.txt"], "no temporary file left");
    }
}
