//! `--web-search` through the binary against a loopback model server replaying the providers'
//! own recorded web-search streams (vercel/ai's fixtures): the request offers the search with
//! the allowed domains, and the queries and cited pages are shown by `golato run`, carried by
//! `--json`, shown by the front end (80x24 and 120x40) and sent to an ACP client; a provider
//! without a search of its own is refused with what would work.

use crate::support;

use serde_json::{json, Value};
use support::provider::{FakeProvider, Reply, Script};

/// The recorded JSON lines as the server-sent events the provider sends.
fn replay(path: &str) -> Reply {
    let lines = String::from_utf8(support::fixture(path)).unwrap();
    let body: String = lines
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| format!("data: {line}\n\n"))
        .collect();
    Reply::sse(body)
}

fn anthropic_server() -> (
    tokio::runtime::Runtime,
    String,
    std::sync::Arc<FakeProvider>,
) {
    FakeProvider::start_blocking(Script::Repeat(replay("anthropic/web-search.jsonl")))
}

/// `golato SUBCOMMAND` (none: the front end) against the model server at `url`.
fn golato_against(subcommand: Option<&str>, url: &str, provider: &str) -> std::process::Command {
    let mut command = support::cli::golato();
    command
        .env("ANTHROPIC_API_KEY", "test-key")
        .env("OPENAI_API_KEY", "test-key")
        .args(subcommand)
        .args(["--provider", provider, "--base-url", url, "--model", "m"]);
    command
}

#[test]
fn golato_run_offers_the_providers_search_and_shows_and_keeps_what_it_did() {
    let (_runtime, url, server) = anthropic_server();
    let dir = tempfile::tempdir().unwrap();
    let output = golato_against(Some("run"), &url, "anthropic")
        .args([
            "--ephemeral",
            "--web-search",
            "--allow-domain",
            "*.forem.com",
            "--allow-domain",
            "9to5mac.com:443",
        ])
        .arg("--cwd")
        .arg(dir.path())
        .arg("what happened in tech today?")
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(output.status.code(), Some(0), "{said}");
    let (_, _, body) = server.sent().pop().unwrap();
    assert_eq!(
        body["tools"][0],
        json!({"type": "web_search_20250305", "name": "web_search", "allowed_domains": ["forem.com", "9to5mac.com"]})
    );
    assert!(
        said.contains("searched the web: \"tech news today September 26 2025\""),
        "{said}"
    );
    assert!(said.contains("sources:"), "{said}");
    assert!(
        said.contains("Apple releases first iOS 26.1 developer beta for iPhone - 9to5Mac — https://9to5mac.com/2025/09/22/ios-26-1-beta-1/"),
        "{said}"
    );
    // --json carries them in the message.
    let output = golato_against(Some("run"), &url, "anthropic")
        .args(["--json", "--ephemeral", "--web-search"])
        .arg("--cwd")
        .arg(dir.path())
        .arg("what happened in tech today?")
        .output()
        .unwrap();
    let ended: Vec<Value> = support::cli::json_lines(&output)
        .into_iter()
        .filter(|line| line["type"] == "message_end")
        .collect();
    let search = &ended[0]["message"]["web_search"];
    assert_eq!(
        search["queries"],
        json!(["tech news today September 26 2025"])
    );
    assert!(
        search["citations"].as_array().is_some_and(|c| c.len() >= 3),
        "{search}"
    );
}

#[test]
fn a_provider_without_a_search_of_its_own_is_refused_with_what_would_work() {
    let dir = tempfile::tempdir().unwrap();
    let output = golato_against(Some("run"), "http://127.0.0.1:9/v1", "openai")
        .args(["--ephemeral", "--web-search"])
        .arg("--cwd")
        .arg(dir.path())
        .arg("search")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("has no web search of its own")
            && stderr.contains("--provider openai-responses"),
        "{stderr}"
    );
}

#[test]
fn the_front_end_shows_the_searches_and_sources_of_the_responses_api() {
    use super::front::{in_terminal, leave, ready, wait_until, SIZES};
    for size in SIZES {
        let (_runtime, url, _server) = FakeProvider::start_blocking(Script::Repeat(replay(
            "openai-responses/web-search.jsonl",
        )));
        let dir = tempfile::tempdir().unwrap();
        let base = format!("{url}/v1");
        let mut command = golato_against(None, &base, "openai-responses");
        command
            .args(["--web-search", "--ephemeral", "-C"])
            .arg(dir.path());
        let mut terminal = ready(in_terminal(command, size), size);
        terminal.type_raw("what happened in tech today?\r");
        let shown = wait_until(&mut terminal, size, "the sources", |shown| {
            shown.contains("sources:") && shown.contains("done: ")
        });
        assert!(
            shown.contains("searched the web: \"tech news today December 5 2025\""),
            "{shown}"
        );
        assert!(shown.contains("[1] "), "{shown}");
        leave(terminal, size);
    }
}

/// An ACP client gets the searches and the sources after the answer, as Markdown.
#[test]
fn an_acp_client_gets_the_sources_after_the_answer() {
    use super::acp::{updates, Acp};
    let (_runtime, url, _server) = anthropic_server();
    let dir = tempfile::tempdir().unwrap();
    let mut command = golato_against(Some("acp"), &url, "anthropic");
    command.args(["--ephemeral", "--web-search"]);
    let mut acp = Acp::from_command(command, json!({}));
    let session = acp.new_session(dir.path());
    let id = acp.prompt(&session, "what happened in tech today?");
    let (done, before) = acp.response(id);
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    let said: String = updates(&before, "agent_message_chunk")
        .iter()
        .filter_map(|update| update["content"]["text"].as_str())
        .collect();
    assert!(
        said.contains("*Searched the web: \"tech news today September 26 2025\"*"),
        "{said}"
    );
    assert!(
        said.contains("- [Apple releases first iOS 26.1 developer beta for iPhone - 9to5Mac](https://9to5mac.com/2025/09/22/ios-26-1-beta-1/)"),
        "{said}"
    );
}
