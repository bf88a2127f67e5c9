//! MCP tools against a real server no one here wrote: `@modelcontextprotocol/server-everything`
//! (npm), over stdio and over streamable HTTP on a loopback port. `.ci/run` installs it
//! (pinned) and runs these with `--ignored`; by hand:
//!
//! ```text
//! npm install --prefix /tmp/mcp-everything @modelcontextprotocol/server-everything@2026.8.31
//! GOLATO_MCP_EVERYTHING=/tmp/mcp-everything/node_modules/@modelcontextprotocol/server-everything/dist/index.js \
//!     cargo test --test mcp -- --ignored
//! ```

use crate::support;

use std::sync::Arc;

use golato::agent::{self, Agent, Event};
use golato::generator::Scripted;
use golato::mcp::{McpServer, McpServerConfig};
use golato::message::{AssistantMessage, Content, ToolCall};
use golato::tool::Tool;
use serde_json::json;
use support::*;

fn server_script() -> String {
    std::env::var("GOLATO_MCP_EVERYTHING").expect(
        "GOLATO_MCP_EVERYTHING must name server-everything's dist/index.js (see this file's header)",
    )
}

async fn stdio_server() -> McpServer {
    McpServer::connect(McpServerConfig::stdio("node", [server_script()]))
        .await
        .unwrap()
}

fn agent(calls: Vec<ToolCall>, tools: Vec<Tool>) -> Agent {
    Agent::new(agent::Config {
        generator: Some(Arc::new(Scripted::new([
            AssistantMessage::with_tool_calls(calls),
            AssistantMessage::with_text("done"),
        ]))),
        tools,
        ..Default::default()
    })
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs server-everything: .ci/run installs it and runs this with --ignored"]
async fn stdio_tools_are_listed_prefixed_and_called_through_an_agent() {
    let server = stdio_server().await;
    let tools = server.tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(Tool::name).collect();
    for expected in [
        "everything_echo",
        "everything_get-sum",
        "everything_get-tiny-image",
    ] {
        assert!(names.contains(&expected), "{names:?}");
    }
    let result = agent(
        vec![
            call("1", "everything_echo", r#"{"message": "hi there"}"#),
            call("2", "everything_get-sum", r#"{"a": 2, "b": 40}"#),
            call("3", "everything_get-tiny-image", "{}"),
            // Refused by golato's own validation of the server's schema: never sent.
            call("4", "everything_get-sum", r#"{"a": "two"}"#),
        ],
        tools,
    )
    .run(prompt("go"))
    .await
    .unwrap();
    let results = transcript_results(&result.messages);
    assert_eq!(results[0].text(), "Echo: hi there");
    assert!(!results[0].is_error);
    assert!(results[1].text().contains("42"), "{}", results[1].text());
    assert!(
        results[2].content.iter().any(
            |part| matches!(part, Content::Image { mime_type, .. } if mime_type == "image/png")
        ),
        "{:?}",
        results[2].content
    );
    assert!(results[3].is_error);
    let refusal = results[3].text();
    assert!(
        refusal.contains("/a") || refusal.contains("\"a\""),
        "{refusal}"
    );
    assert!(refusal.contains("everything_get-sum"), "{refusal}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs server-everything: .ci/run installs it and runs this with --ignored"]
async fn progress_notifications_become_updates_and_cancelling_tells_the_server() {
    let server = stdio_server().await;
    let tools = server.tools().await.unwrap();
    // Three steps of a short operation: each reports progress.
    let short = agent(
        vec![call(
            "1",
            "everything_trigger-long-running-operation",
            r#"{"duration": 0.6, "steps": 3}"#,
        )],
        tools.clone(),
    );
    let (events, outcome) = collect(short.start(prompt("go")));
    outcome.unwrap();
    let updates = update_texts(&events);
    assert!(
        updates.iter().any(|text| text.starts_with("progress")),
        "{updates:?}"
    );

    // A long one, cancelled at its first progress notification.
    let long = agent(
        vec![call(
            "1",
            "everything_trigger-long-running-operation",
            r#"{"duration": 300, "steps": 300}"#,
        )],
        tools,
    );
    let run = long.start(prompt("go"));
    let mut ended = None;
    while let Some(event) = run.next_event().await {
        match event {
            Event::ToolExecutionUpdate(_) => run.cancel(),
            Event::ToolExecutionEnd(end) => ended = Some(end.result),
            _ => {}
        }
    }
    let error = run.finish().await.unwrap_err();
    assert!(error.to_string().contains("cancel"), "{error}");
    let result = ended.expect("the call ended");
    assert!(result.is_error);
    assert!(result.text().contains("was cancelled"), "{}", result.text());
    // The server is still there for the next call.
    let again = agent(
        vec![call("1", "everything_echo", r#"{"message": "still here"}"#)],
        server.tools().await.unwrap(),
    );
    let result = again.run(prompt("go")).await.unwrap();
    assert_eq!(
        transcript_results(&result.messages)[0].text(),
        "Echo: still here"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs server-everything: .ci/run installs it and runs this with --ignored"]
async fn a_server_killed_mid_call_fails_that_call_and_the_next_call_starts_it_again() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("server.pid");
    // The server writes its PID where the test can find it, then becomes the server.
    let server = McpServer::connect(McpServerConfig::stdio(
        "bash",
        [
            "-c".to_owned(),
            format!(
                "echo $$ > {}; exec node {}",
                pid_file.display(),
                server_script()
            ),
        ],
    ))
    .await
    .unwrap();
    let tools = server.tools().await.unwrap();
    let long = agent(
        vec![call(
            "1",
            "everything_trigger-long-running-operation",
            r#"{"duration": 300, "steps": 300}"#,
        )],
        tools.clone(),
    );
    let run = long.start(prompt("go"));
    let mut killed = false;
    let mut ended = None;
    while let Some(event) = run.next_event().await {
        match event {
            // Running: kill the server under the call.
            Event::ToolExecutionUpdate(_) if !killed => {
                let pid: i32 = std::fs::read_to_string(&pid_file)
                    .unwrap()
                    .trim()
                    .parse()
                    .unwrap();
                let pid = rustix::process::Pid::from_raw(pid).unwrap();
                rustix::process::kill_process(pid, rustix::process::Signal::KILL).unwrap();
                killed = true;
            }
            Event::ToolExecutionEnd(end) => ended = Some(end.result),
            _ => {}
        }
    }
    run.finish().await.unwrap();
    let result = ended.expect("the call ended");
    assert!(result.is_error, "{}", result.text());
    assert!(
        result.text().contains("the next call starts it again"),
        "{}",
        result.text()
    );
    // The next call starts the server again.
    let again = agent(
        vec![call("1", "everything_echo", r#"{"message": "back"}"#)],
        tools,
    );
    let result = again.run(prompt("go")).await.unwrap();
    let results = transcript_results(&result.messages);
    assert_eq!(results[0].text(), "Echo: back", "{:?}", results[0]);
}

/// A free loopback port.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs server-everything: .ci/run installs it and runs this with --ignored"]
async fn streamable_http_tools_work_the_same() {
    let port = free_port();
    let mut child = tokio::process::Command::new("node")
        .arg(server_script())
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    // Ready once it accepts connections.
    let started = std::time::Instant::now();
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(
            started.elapsed() < HANG_GUARD,
            "the HTTP server did not start"
        );
        tokio::task::yield_now().await;
    }
    let server = McpServer::connect(
        McpServerConfig::http(format!("http://127.0.0.1:{port}/mcp")).with_prefix("web"),
    )
    .await
    .unwrap();
    let tools = server.tools().await.unwrap();
    let result = agent(
        vec![
            call("1", "web_echo", r#"{"message": "over http"}"#),
            call("2", "web_get-sum", r#"{"a": 1.5, "b": 2}"#),
        ],
        tools,
    )
    .run(prompt("go"))
    .await
    .unwrap();
    let results = transcript_results(&result.messages);
    assert_eq!(results[0].text(), "Echo: over http");
    assert!(results[1].text().contains("3.5"), "{}", results[1].text());
    drop(server);
    child.kill().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs server-everything: .ci/run installs it and runs this with --ignored"]
async fn two_servers_under_one_prefix_collide_at_agent_new_and_a_prefix_of_their_own_fixes_it() {
    let first = stdio_server().await;
    let second = stdio_server().await;
    let mut tools = first.tools().await.unwrap();
    tools.extend(second.tools().await.unwrap());
    let error = Agent::new(agent::Config {
        generator: Some(Arc::new(Scripted::new([AssistantMessage::with_text("x")]))),
        tools,
        ..Default::default()
    })
    .expect_err("two tools named alike must be refused");
    let text = error.to_string();
    assert!(text.contains("everything_"), "{text}");

    let renamed =
        McpServer::connect(McpServerConfig::stdio("node", [server_script()]).with_prefix("other"))
            .await
            .unwrap();
    let mut tools = first.tools().await.unwrap();
    tools.extend(renamed.tools().await.unwrap());
    assert!(tools.iter().any(|tool| tool.name() == "other_echo"));
    // Prefixed names hold an underscore, so they never meet a built-in's.
    tools.extend(golato::builtin::new(Default::default()).unwrap());
    agent(vec![call("1", "other_echo", r#"{"message": "m"}"#)], tools);
}

#[tokio::test]
async fn a_server_that_cannot_start_says_what_to_check() {
    let error = McpServer::connect(McpServerConfig::stdio("/nonexistent/mcp-server", ["--x"]))
        .await
        .unwrap_err();
    let text = error.to_string();
    assert!(text.contains("/nonexistent/mcp-server --x"), "{text}");
    assert!(text.contains("check the command"), "{text}");
    assert!(McpServerConfig::command_line("   ").is_err());
}

#[test]
#[ignore = "needs server-everything: .ci/run installs it and runs this with --ignored"]
fn golato_run_takes_tools_from_an_mcp_server() {
    use support::cli::*;
    let dir = tempfile::tempdir().unwrap();
    let script = script_file(
        dir.path(),
        "script.jsonl",
        &[
            json!({"tool_calls": [{"id": "m1", "name": "everything_echo", "arguments": {"message": "from the cli"}}]}),
            json!({"text": "Echoed."}),
        ],
    );
    let command = format!("node {}", server_script());
    let output = run_script(dir.path(), &script, &["--json", "--mcp", &command]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let lines = json_lines(&output);
    let ends = of_type(&lines, "tool_end");
    assert_eq!(ends.len(), 1, "{lines:?}");
    assert!(
        ends[0].to_string().contains("Echo: from the cli"),
        "{}",
        ends[0]
    );
    // A server that cannot start is exit 1 with a line saying what to check.
    let output = run_script(dir.path(), &script, &["--mcp", "/nonexistent/server"]);
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    assert!(String::from_utf8_lossy(&output.stderr).contains("check the command"));
}

#[test]
#[ignore = "needs server-everything: .ci/run installs it and runs this with --ignored"]
fn golato_acp_starts_the_mcp_servers_a_client_names_for_its_session() {
    use super::acp::{updates, Acp};
    use support::cli::script_file;
    let dir = tempfile::tempdir().unwrap();
    let script = script_file(
        dir.path(),
        "script.jsonl",
        &[
            json!({"tool_calls": [{"id": "m1", "name": "everything_echo", "arguments": {"message": "from the editor"}}]}),
            json!({"text": "Echoed."}),
        ],
    );
    let mut acp = Acp::start(dir.path(), &script, &[]);
    let created = acp.request(
        "session/new",
        json!({"cwd": dir.path(), "mcpServers": [{"name": "everything", "command": "node", "args": [server_script()], "env": []}]}),
    );
    let session = created["result"]["sessionId"].as_str().unwrap().to_owned();
    let id = acp.prompt(&session, "echo");
    let (done, before) = acp.response(id);
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    let ended = updates(&before, "tool_call_update")
        .into_iter()
        .find(|update| update["status"] == "completed")
        .unwrap_or_else(|| panic!("{before:#?}"));
    assert!(
        ended.to_string().contains("Echo: from the editor"),
        "{ended}"
    );
}
