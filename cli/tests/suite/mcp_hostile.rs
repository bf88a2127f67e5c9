//! MCP servers that misbehave on purpose (issue 21, items 5 and 16): a server that never
//! finishes the handshake, one that writes garbage, one that answers with 20 MB, one that never
//! answers. Every connect and call ends with a clear error within its deadline, and a server's
//! whole process group ends when golato is done with it. The server is a small Python script
//! (tests/support/hostile_mcp_server.py) that writes its pids: handshakes, not sleeps.

use crate::support;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use golato::agent::{self, Agent};
use golato::mcp::{McpServer, McpServerConfig};
use serde_json::json;
use support::*;

fn server_config(mode: &str, dir: &Path) -> McpServerConfig {
    let script = support::repository().join("tests/support/hostile_mcp_server.py");
    McpServerConfig::stdio(
        "python3",
        [script.to_str().unwrap(), mode, dir.to_str().unwrap()],
    )
    .with_connect_timeout(Duration::from_secs(5))
    .with_request_timeout(Duration::from_millis(500))
}

fn pid_in(dir: &Path, name: &str) -> i32 {
    let started = std::time::Instant::now();
    loop {
        if let Ok(text) = std::fs::read_to_string(dir.join(name)) {
            return text.trim().parse().unwrap();
        }
        assert!(started.elapsed() < HANG_GUARD, "{name} never appeared");
        std::thread::yield_now();
    }
}

fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => false,
        Ok(stat) => !stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

fn assert_gone_soon(pid: i32, what: &str) {
    let started = std::time::Instant::now();
    while alive(pid) {
        assert!(
            started.elapsed() < HANG_GUARD,
            "{what} {pid} is still running"
        );
        std::thread::yield_now();
    }
}

/// Connects to the server `config` describes and calls its one tool through an agent; the
/// call's result text, which must be an error.
async fn poke_error(config: McpServerConfig) -> String {
    let server = McpServer::connect(config).await.unwrap();
    let tools = server.tools().await.unwrap();
    let result = tokio::task::spawn_blocking(move || {
        let agent = Agent::new(agent::Config {
            generator: Some(Arc::new(script(vec![call("p", "hostile_poke", "{}")]))),
            tools,
            ..Default::default()
        })
        .unwrap();
        let result = agent.start(prompt("poke")).wait().unwrap();
        transcript_results(&result.messages).remove(0)
    })
    .await
    .unwrap();
    assert!(result.is_error);
    result.text()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_answers_initialize_fails_to_connect_and_is_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let config =
        server_config("silent", dir.path()).with_connect_timeout(Duration::from_millis(800));
    let error = McpServer::connect(config).await.unwrap_err();
    let text = error.to_string();
    assert!(text.contains("did not complete MCP's handshake"), "{text}");
    assert_gone_soon(pid_in(dir.path(), "server.pid"), "the server");
    assert_gone_soon(pid_in(dir.path(), "child.pid"), "the server's child");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_on_stdout_fails_the_call_at_its_deadline_and_says_what_it_saw() {
    let dir = tempfile::tempdir().unwrap();
    let text = poke_error(server_config("garbage", dir.path())).await;
    assert!(
        text.contains("did not answer the call of poke within 0.5 s"),
        "{text}"
    );
    assert!(text.contains("Starting poke... done!"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_the_server_marks_read_only_is_safe_to_run_again_and_the_others_run_once() {
    let dir = tempfile::tempdir().unwrap();
    let server = McpServer::connect(server_config("busy", dir.path()))
        .await
        .unwrap();
    let replay: Vec<(String, golato::tool::Replay)> = server
        .tools()
        .await
        .unwrap()
        .iter()
        .map(|tool| (tool.name().to_owned(), tool.replay()))
        .collect();
    assert_eq!(
        replay,
        [
            ("hostile_poke".to_owned(), golato::tool::Replay::Once),
            ("hostile_peek".to_owned(), golato::tool::Replay::Safe)
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_too_big_to_read_fails_its_call() {
    let dir = tempfile::tempdir().unwrap();
    // The request timeout is ten minutes: the call must fail because of the size, at once.
    let config = server_config("huge", dir.path()).with_request_timeout(Duration::from_secs(600));
    let text = poke_error(config).await;
    assert!(text.contains("more than 16 MiB"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_server_ends_its_whole_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let server = McpServer::connect(server_config("busy", dir.path()))
        .await
        .unwrap();
    let (pid, child) = (
        pid_in(dir.path(), "server.pid"),
        pid_in(dir.path(), "child.pid"),
    );
    assert!(alive(pid) && alive(child));
    drop(server);
    assert_gone_soon(pid, "the server");
    assert_gone_soon(child, "the server's child");
}

#[test]
fn golato_run_leaves_no_server_behind_after_a_call_it_gave_up_on() {
    // Issue 21 item 16: after a normal exit, a server whose call had timed out was still
    // running. The call's tool times out (the agent abandons it), the run ends, golato exits.
    let dir = tempfile::tempdir().unwrap();
    let script_path = dir.path().join("script.jsonl");
    std::fs::write(
        &script_path,
        format!(
            "{}\n{}\n",
            json!({"tool_calls": [{"id": "p", "name": "hostile_poke", "arguments": {}}]}),
            json!({"text": "done"})
        ),
    )
    .unwrap();
    let server = support::repository().join("tests/support/hostile_mcp_server.py");
    let output = support::cli::golato()
        .args([
            "run",
            "--json",
            "--tool-timeout",
            "0.3",
            "--script",
            script_path.to_str().unwrap(),
            "--mcp",
            &format!("python3 {} busy {}", server.display(), dir.path().display()),
            "poke",
        ])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("timed out"), "{stdout}");
    let (pid, child) = (
        pid_in(dir.path(), "server.pid"),
        pid_in(dir.path(), "child.pid"),
    );
    assert_gone_soon(pid, "the server");
    assert_gone_soon(child, "the server's child");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_line_with_quotes_and_an_environment_reaches_the_server_whole() {
    // A directory with a space in its name, passed quoted; a variable set before the program.
    let parent = tempfile::tempdir().unwrap();
    let dir = parent.path().join("with space");
    std::fs::create_dir(&dir).unwrap();
    let script = support::repository().join("tests/support/hostile_mcp_server.py");
    let line = format!(
        r#"HOSTILE_NOTE="set by the command line" python3 '{}' normal "{}""#,
        script.display(),
        dir.display()
    );
    let config = McpServerConfig::command_line(&line)
        .unwrap()
        .with_connect_timeout(Duration::from_secs(5));
    let server = McpServer::connect(config).await.unwrap();
    let tools = server.tools().await.unwrap();
    assert_eq!(tools[0].description(), "set by the command line");
    // The quoted directory arrived as one argument: the server wrote its pid file there.
    pid_in(&dir, "server.pid");
}
