//! `golato run` against real provider APIs, played by a loopback server that replays recorded
//! streams from `tests/fixtures/llm/` and keeps what it was sent.

use crate::support;

use std::sync::Arc;

use pretty_assertions::assert_eq;
use serde_json::Value;
use support::cli::*;
use support::fixture;
use support::provider::{FakeProvider, Reply, Script};

/// The fake provider answering every request with `body` (an SSE stream).
async fn serve(body: Vec<u8>) -> (String, Arc<FakeProvider>) {
    FakeProvider::start(Script::Repeat(Reply::ok(body, 1))).await
}

/// Runs the binary without blocking the server's runtime.
async fn run(command: std::process::Command) -> std::process::Output {
    let mut command = command;
    tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openai_compatible_flags_reach_the_server_and_the_answer_streams() {
    let (url, requests) = serve(fixture("openai-chat/text-stop.sse")).await;
    let dir = tempfile::tempdir().unwrap();
    let system = dir.path().join("system.txt");
    std::fs::write(&system, "Answer in one word.").unwrap();
    let mut command = golato();
    command.args([
        "run",
        "--provider",
        "openai",
        "--base-url",
        &format!("{url}/v1"),
        "--model",
        "local-model",
        "--system",
        &format!("@{}", system.display()),
        "--tools",
        "read,bash",
        "--cwd",
        dir.path().to_str().unwrap(),
        "What is up?",
    ]);
    let output = run(command).await;
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let requests = requests.sent();
    assert_eq!(requests.len(), 1);
    let (path, auth, body) = &requests[0];
    assert_eq!(path, "/v1/chat/completions");
    // A local server needs no key, and none is sent.
    assert_eq!(auth, &None);
    assert_eq!(body["model"], "local-model");
    assert_eq!(body["messages"][0]["role"], "system");
    // The system prompt is --system's text, then where the agent works.
    let system = body["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.starts_with("Answer in one word.\n\n# Environment"),
        "{system}"
    );
    assert_eq!(body["messages"][1]["content"], "What is up?");
    let tools: Vec<&str> = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["read", "bash"]);
    // Piped, standard output carries the answer alone; the story and the summary, with the
    // tokens the provider reported, go to standard error.
    let answer = stdout(&output);
    assert!(!answer.trim().is_empty(), "{output:?}");
    assert!(!answer.contains("done:"), "{answer}");
    let story = String::from_utf8(output.stderr).unwrap();
    assert!(story.contains(answer.trim()), "{story}");
    let summary = story.lines().last().unwrap();
    assert!(summary.starts_with("done: 1 turn, 0 tool calls"), "{story}");
    assert!(summary.ends_with("14 in / 47 out tokens"), "{story}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_anthropic_key_in_the_environment_picks_anthropic_with_its_variables() {
    let (url, requests) = serve(fixture("anthropic/basic-text.sse")).await;
    let dir = tempfile::tempdir().unwrap();
    let mut command = golato();
    command
        .args(["run", "--json", "--cwd", dir.path().to_str().unwrap(), "Hi"])
        .env("ANTHROPIC_API_KEY", "test-key")
        .env("ANTHROPIC_BASE_URL", &url)
        .env("ANTHROPIC_MODEL", "claude-test");
    let output = run(command).await;
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let requests = requests.sent();
    let (path, auth, body) = &requests[0];
    assert_eq!(path, "/v1/messages");
    assert_eq!(auth.as_deref(), Some("test-key"));
    assert_eq!(body["model"], "claude-test");
    // Without --system a real model gets the default instructions.
    assert!(body["system"][0]["text"]
        .as_str()
        .unwrap()
        .contains("coding agent"));
    let lines = json_lines(&output);
    // run_start says what the run uses.
    let start = &lines[0];
    assert_eq!(start["type"], "run_start");
    assert_eq!(start["provider"], "anthropic");
    assert_eq!(start["model"], "claude-test");
    assert_eq!(
        start["endpoint"].as_str().unwrap(),
        url.trim_start_matches("http://").trim_end_matches('/')
    );
    assert_eq!(
        start["tools"],
        serde_json::json!(["read", "bash", "edit", "write", "bash_output", "bash_kill"])
    );
    let outcome = lines.last().unwrap();
    assert_eq!(outcome["final_text"], "Hello there!");
    assert_eq!(outcome["usage"]["output_tokens"], 6);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_provider_is_exit_1_with_one_line_saying_what_to_check() {
    // A port that was just free: nothing listens there.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    drop(listener);
    let dir = tempfile::tempdir().unwrap();
    let mut command = golato();
    command.args([
        "run",
        "--base-url",
        &url,
        "--cwd",
        dir.path().to_str().unwrap(),
        "Hi",
    ]);
    let output = run(command).await;
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    // No answer on standard output; on standard error the error, then the summary counting it.
    assert_eq!(stdout(&output), "");
    let stderr = String::from_utf8(output.stderr).unwrap();
    // Each retry is said (3 by default), then the error and the summary.
    let retries: Vec<&str> = stderr
        .lines()
        .filter(|line| line.contains("trying again ("))
        .collect();
    assert_eq!(retries.len(), 3, "{stderr}");
    assert!(retries[2].contains("(3 of 3) in 2.0 s"), "{stderr}");
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|line| !is_header(line) && !line.contains("trying again ("))
        .collect();
    assert_eq!(lines.len(), 2, "{stderr}");
    assert!(lines[0].starts_with("golato: "), "{stderr}");
    assert!(lines[0].contains("check the base URL"), "{stderr}");
    assert!(lines[1].starts_with("failed: 1 turn"), "{stderr}");
    // The run never reached a model: no session was saved.
    let listed = golato()
        .args(["sessions", "-C", dir.path().to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        stdout(&listed).starts_with("no sessions saved in"),
        "{listed:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_responses_api_is_one_flag_away() {
    // The recorded stream only calls a tool; --max-turns 1 ends the run after that turn.
    let lines: String = String::from_utf8(fixture(
        "openai-responses/lmstudio-reasoning-tool-call.jsonl",
    ))
    .unwrap()
    .lines()
    .map(|line| format!("data: {line}\n\n"))
    .collect();
    let (url, requests) = serve(lines.into_bytes()).await;
    let dir = tempfile::tempdir().unwrap();
    let mut command = golato();
    command
        .args([
            "run",
            "--provider",
            "openai-responses",
            "--base-url",
            &format!("{url}/v1"),
            "--model",
            "glm",
            "--max-turns",
            "1",
            "--json",
            "--cwd",
            dir.path().to_str().unwrap(),
            "Weather?",
        ])
        .env("OPENAI_API_KEY", "sk-responses-test");
    let output = run(command).await;
    let requests = requests.sent();
    let (path, auth, body) = &requests[0];
    assert_eq!(path, "/v1/responses");
    assert_eq!(auth.as_deref(), Some("Bearer sk-responses-test"));
    assert_eq!(body["model"], "glm");
    assert_eq!(body["input"][0]["content"][0]["text"], "Weather?");
    let lines = json_lines(&output);
    let streamed = lines
        .iter()
        .any(|line| line.to_string().contains("I'll get the current weather"));
    assert!(streamed, "{output:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_base_url_means_openai_compatible_even_with_an_anthropic_key_exported() {
    // The README's "local server, no key needed" command, run by someone who has
    // ANTHROPIC_API_KEY in their environment: it spoke Anthropic's protocol to the server.
    let (url, requests) = serve(fixture("openai-chat/text-stop.sse")).await;
    let dir = tempfile::tempdir().unwrap();
    let mut command = golato();
    command
        .args([
            "run",
            "--base-url",
            &format!("{url}/v1"),
            "--model",
            "local-model",
            "--cwd",
            dir.path().to_str().unwrap(),
            "Hi",
        ])
        .env("ANTHROPIC_API_KEY", "an-anthropic-key")
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("ANTHROPIC_BASE_URL");
    let output = run(command).await;
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let requests = requests.sent();
    let (path, auth, body) = &requests[0];
    assert_eq!(path, "/v1/chat/completions");
    // Anthropic's key is not sent to another server.
    assert_eq!(auth, &None);
    assert_eq!(body["model"], "local-model");
    // The header on stderr says so before the run.
    let stderr = String::from_utf8(output.stderr).unwrap();
    let host = url.trim_start_matches("http://").trim_end_matches('/');
    assert!(
        stderr.starts_with(&format!("golato: openai local-model at {host} · cwd ")),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_prompt_comes_from_an_argument_a_file_or_standard_input_and_images_attach() {
    use std::io::Write as _;
    let (url, requests) = serve(fixture("openai-chat/text-stop.sse")).await;
    let dir = tempfile::tempdir().unwrap();
    let prompt_file = dir.path().join("prompt.txt");
    std::fs::write(&prompt_file, "from a file").unwrap();
    let png = dir.path().join("dot.png");
    image::RgbImage::from_pixel(2, 2, image::Rgb([0, 0, 255]))
        .save(&png)
        .unwrap();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (vec!["an argument".into()], ""),
        (vec![format!("@{}", prompt_file.display())], ""),
        (vec!["-".into()], "from a pipe"),
        (vec![], "piped, no argument"),
        (
            vec!["see".into(), "--image".into(), png.display().to_string()],
            "",
        ),
    ];
    for (arguments, stdin) in &cases {
        let mut command = golato();
        command
            .args([
                "run",
                "-q",
                "--base-url",
                &format!("{url}/v1"),
                "-m",
                "m",
                "-C",
            ])
            .arg(dir.path())
            .args(arguments)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let stdin = stdin.to_string();
        let output = tokio::task::spawn_blocking(move || {
            let mut child = command.spawn().unwrap();
            child
                .stdin
                .take()
                .unwrap()
                .write_all(stdin.as_bytes())
                .unwrap();
            child.wait_with_output().unwrap()
        })
        .await
        .unwrap();
        assert_eq!(output.status.code(), Some(0), "{arguments:?}: {output:?}");
    }
    let sent: Vec<Value> = requests
        .sent()
        .iter()
        .map(|(_, _, body)| body["messages"][1]["content"].clone())
        .collect();
    assert_eq!(sent[0], "an argument");
    assert_eq!(sent[1], "from a file");
    assert_eq!(sent[2], "from a pipe");
    assert_eq!(sent[3], "piped, no argument");
    // With an image, the content is a list: the text, then the image as a data URL.
    assert_eq!(sent[4][0]["text"], "see", "{}", sent[4]);
    let image_url = sent[4][1]["image_url"]["url"].as_str().unwrap();
    assert!(
        image_url.starts_with("data:image/png;base64,"),
        "{image_url}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn continue_sends_the_saved_transcript_and_the_new_prompt() {
    let (url, requests) = serve(fixture("openai-chat/text-stop.sse")).await;
    let dir = tempfile::tempdir().unwrap();
    for prompt in ["first question", "second question"] {
        let mut command = golato();
        command.args([
            "run",
            "-q",
            "--base-url",
            &format!("{url}/v1"),
            "-m",
            "m",
            "-C",
        ]);
        command.arg(dir.path());
        if prompt == "second question" {
            command.arg("-c");
        }
        command.arg(prompt);
        let output = run(command).await;
        assert_eq!(output.status.code(), Some(0), "{output:?}");
    }
    let requests = requests.sent();
    let second = requests[1].2["messages"].as_array().unwrap();
    let roles: Vec<&str> = second
        .iter()
        .map(|message| message["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["system", "user", "assistant", "user"], "{second:?}");
    assert_eq!(second[1]["content"], "first question");
    assert_eq!(second[3]["content"], "second question");
    // The first answer, as the provider streamed it.
    assert!(
        second[2]["content"]
            .as_str()
            .is_some_and(|text| !text.is_empty()),
        "{second:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_base_url_without_v1_gets_a_404_and_one_line_suggesting_it() {
    let (url, _) = serve(fixture("openai-chat/text-stop.sse")).await;
    let dir = tempfile::tempdir().unwrap();
    let mut command = golato();
    // The server answers under /v1 only: without it, every path is a 404.
    command.args(["run", "--base-url", &url, "-m", "m", "-C"]);
    command.arg(dir.path()).arg("hi");
    let output = run(command).await;
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let stderr = String::from_utf8(output.stderr).unwrap();
    let lines: Vec<&str> = stderr.lines().filter(|line| !is_header(line)).collect();
    assert_eq!(lines.len(), 2, "{stderr}");
    assert!(
        lines[0].starts_with("golato: the model's API failed"),
        "{stderr}"
    );
    assert!(lines[0].contains("HTTP 404"), "{stderr}");
    assert!(lines[0].contains("/v1"), "{stderr}");
    assert!(lines[1].starts_with("failed: "), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_settings_reach_each_api_in_its_own_terms() {
    let dir = tempfile::tempdir().unwrap();
    let flags = [
        "--temperature",
        "0.3",
        "--max-output-tokens",
        "100",
        "--reasoning-effort",
        "low",
    ];
    let (url, requests) = serve(fixture("openai-chat/text-stop.sse")).await;
    let mut command = golato();
    command.args(["run", "-q", "--base-url", &format!("{url}/v1"), "-m", "m"]);
    command.args(flags).arg("-C").arg(dir.path()).arg("hi");
    assert_eq!(run(command).await.status.code(), Some(0));
    let body = requests.sent()[0].2.clone();
    assert_eq!(body["temperature"], 0.3);
    assert_eq!(body["max_completion_tokens"], 100, "{body}");
    assert_eq!(body["reasoning_effort"], "low");

    let (url, requests) = serve(fixture("anthropic/basic-text.sse")).await;
    let mut command = golato();
    command.args([
        "run",
        "-q",
        "--provider",
        "anthropic",
        "--base-url",
        &url,
        "-m",
        "c",
    ]);
    command.args(flags).arg("-C").arg(dir.path()).arg("hi");
    command.env("ANTHROPIC_API_KEY", "test-key");
    assert_eq!(run(command).await.status.code(), Some(0));
    let body = requests.sent()[0].2.clone();
    assert_eq!(body["thinking"]["type"], "enabled", "{body}");
    assert_eq!(body["thinking"]["budget_tokens"], 2048);
    // Room for the answer beyond the thinking budget.
    assert_eq!(body["max_tokens"], 2048 + 4096);

    let output = golato_output(&["run", "--temperature", "3", "hi"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(one_error_line(&output).contains("between 0 and 2"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_summary_shows_the_cost_and_max_cost_needs_a_known_price() {
    let (url, _) = serve(fixture("openai-chat/text-stop.sse")).await;
    let dir = tempfile::tempdir().unwrap();
    let mut command = golato();
    command.args([
        "run",
        "--json",
        "--base-url",
        &format!("{url}/v1"),
        "-m",
        "gpt-4o-mini",
        "-C",
    ]);
    command.arg(dir.path()).arg("hi");
    let output = run(command).await;
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let outcome = json_lines(&output).last().unwrap().clone();
    // 14 input and 47 output tokens at $0.15 and $0.60 per million.
    let expected = (14.0 * 0.15 + 47.0 * 0.60) / 1_000_000.0;
    let cost = outcome["cost_usd"].as_f64().unwrap();
    assert!((cost - expected).abs() < 1e-12, "{outcome}");

    let mut command = golato();
    command.args([
        "run",
        "--max-cost",
        "1",
        "--base-url",
        &format!("{url}/v1"),
        "-m",
        "local",
        "-C",
    ]);
    command.arg(dir.path()).arg("hi");
    let output = run(command).await;
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    assert!(one_error_line(&output).contains("--max-tokens"));

    // A token budget ends a run that reaches it, with exit status 1 and what to raise.
    let script_dir = tempfile::tempdir().unwrap();
    let script = script_file(
        script_dir.path(),
        "script.jsonl",
        &[
            serde_json::json!({"tool_calls": [{"id": "a", "name": "bash", "arguments": {"command": "true"}}], "usage": {"input_tokens": 50}}),
            serde_json::json!({"text": "never asked"}),
        ],
    );
    let output = run_script(script_dir.path(), &script, &["--max-tokens", "10"]);
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    assert!(
        story(&output).contains("raise --max-tokens or --max-cost"),
        "{}",
        story(&output)
    );
}

#[test]
fn a_run_that_outgrows_the_context_is_compacted_and_goes_on() {
    use support::compaction;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("page.txt"), "word ".repeat(400)).unwrap();
    let read_page = serde_json::json!({"path": "page.txt"});
    for json in [false, true] {
        let (_runtime, url, provider) =
            compaction::provider(12_000, compaction::tool_turns(6, "read", &read_page));
        let mut command = golato();
        command.args([
            "run",
            "--base-url",
            &url,
            "--model",
            "local-model",
            "--tools",
            "read",
            "--ephemeral",
            "--cwd",
            dir.path().to_str().unwrap(),
            "Read page.txt six times.",
        ]);
        if json {
            command.arg("--json");
        }
        let output = command.output().unwrap();
        assert_eq!(output.status.code(), Some(0), "{output:?}");
        let refused = provider
            .bodies()
            .iter()
            .filter(|(size, _)| *size > 12_000)
            .count();
        assert!(
            refused > 0,
            "the provider never refused: the test proves nothing"
        );
        if json {
            let lines = json_lines(&output);
            let compactions = of_type(&lines, "compaction");
            assert_eq!(compactions.len(), refused, "{lines:#?}");
            assert_eq!(compactions[0]["reason"], "context_too_long");
            assert!(compactions[0]["replaced"].as_u64().unwrap() > 0);
        } else {
            let story = story(&output);
            assert!(
                story.contains("context compacted (the provider refused the request as too long)"),
                "{story}"
            );
            assert!(
                story
                    .lines()
                    .last()
                    .unwrap()
                    .starts_with("done: 7 turns, 6 tool calls"),
                "{story}"
            );
        }
    }
}

#[test]
fn continuing_a_compacted_session_sends_its_summary_without_summarizing_again() {
    use support::compaction;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("page.txt"), "word ".repeat(400)).unwrap();
    let read_page = serde_json::json!({"path": "page.txt"});
    let run = |url: &str, flags: &[&str], prompt: &str| {
        let mut command = golato();
        command
            .args(["run", "--base-url", url, "--model", "local-model"])
            .args(["--tools", "read", "--cwd", dir.path().to_str().unwrap()])
            .args(flags)
            .arg(prompt);
        command.output().unwrap()
    };
    let (_first_runtime, url, first) =
        compaction::provider(12_000, compaction::tool_turns(6, "read", &read_page));
    let output = run(&url, &[], "Read page.txt six times.");
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert!(story(&output).contains("context compacted"), "{output:?}");
    drop(first);

    let (_second_runtime, url, second) = compaction::provider(
        12_000,
        vec![serde_json::json!({"text": "Nothing changed."})],
    );
    let output = run(&url, &["-c"], "Anything new?");
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let bodies = second.bodies();
    // One request: the answer. No summary was asked for: the session kept its summary.
    assert_eq!(bodies.len(), 1, "{bodies:#?}");
    let messages = bodies[0].1["messages"].as_array().unwrap();
    let texts: Vec<&str> = messages.iter().map(compaction::wire_text).collect();
    assert!(
        texts[1].starts_with(golato::agent::compaction::SUMMARY_HEADER),
        "{texts:#?}"
    );
    assert_eq!(texts.last().unwrap(), &"Anything new?");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_summary_says_how_many_prompt_tokens_the_cache_served() {
    // OpenAI's usage: 1,000 prompt tokens, 900 of them read from its cache.
    let chunks = [
        serde_json::json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hi."}}]}),
        serde_json::json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
        serde_json::json!({"choices": [], "usage": {"prompt_tokens": 1000, "completion_tokens": 20,
            "prompt_tokens_details": {"cached_tokens": 900}}}),
    ];
    let mut body: String = chunks
        .iter()
        .map(|chunk| format!("data: {chunk}\n\n"))
        .collect();
    body.push_str("data: [DONE]\n\n");
    let (url, _) = serve(body.into_bytes()).await;
    let dir = tempfile::tempdir().unwrap();
    let mut command = golato();
    command.args([
        "run",
        "--base-url",
        &format!("{url}/v1"),
        "-m",
        "gpt-4o-mini",
        "-C",
    ]);
    command.arg(dir.path()).arg("hi");
    let output = run(command).await;
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let story = String::from_utf8(output.stderr).unwrap();
    let summary = story.lines().last().unwrap();
    assert!(
        summary.contains("1000 in (900 cached) / 20 out tokens"),
        "{story}"
    );
    // 100 input tokens at $0.15, 900 cached at $0.075, 20 output at $0.60 per million.
    let expected = (100.0 * 0.15 + 900.0 * 0.075 + 20.0 * 0.60) / 1_000_000.0;
    assert!(summary.ends_with(&format!("${expected:.4}")), "{story}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_is_told_where_it_works_and_a_trusted_projects_agents_md() {
    let (url, requests) = serve(fixture("openai-chat/text-stop.sse")).await;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join(".git")).unwrap();
    std::fs::create_dir_all(root.join("app")).unwrap();
    std::fs::write(root.join("AGENTS.md"), "Run the tests with make check.").unwrap();
    std::fs::write(root.join("app/CLAUDE.md"), "The app is in Rust.").unwrap();
    std::fs::create_dir_all(root.join(".agents/skills/release")).unwrap();
    std::fs::write(
        root.join(".agents/skills/release/SKILL.md"),
        "---\nname: release\ndescription: Cut a release of the app.\n---\nSecret steps.",
    )
    .unwrap();
    let config_dir = tempfile::tempdir().unwrap();
    std::fs::write(config_dir.path().join("AGENTS.md"), "Answer in French.").unwrap();
    let system_of = |flags: &'static [&'static str]| {
        let (url, root, config) = (
            url.clone(),
            root.clone(),
            config_dir.path().join("config.toml"),
        );
        let requests = Arc::clone(&requests);
        async move {
            let mut command = golato();
            command
                .env("GOLATO_CONFIG", config)
                .args([
                    "run",
                    "--base-url",
                    &format!("{url}/v1"),
                    "--model",
                    "m",
                    "-C",
                ])
                .arg(root.join("app"))
                .args(flags)
                .arg("hi");
            let output = run(command).await;
            assert_eq!(output.status.code(), Some(0), "{output:?}");
            let body = requests.take_bodies().pop().unwrap();
            let system = body["messages"][0]["content"].as_str().unwrap().to_owned();
            (system, String::from_utf8_lossy(&output.stderr).into_owned())
        }
    };
    let (system, _) = system_of(&["--trust"]).await;
    assert!(
        system.contains(&format!(
            "- Working directory: {}",
            root.join("app").display()
        )),
        "{system}"
    );
    assert!(system.contains("- Sandbox: workspace-write"), "{system}");
    assert!(system.contains("- Repository: "), "{system}");
    let order: Vec<usize> = [
        "Answer in French.",
        "Run the tests with make check.",
        "The app is in Rust.",
    ]
    .iter()
    .map(|text| {
        system
            .find(text)
            .unwrap_or_else(|| panic!("{text} missing: {system}"))
    })
    .collect();
    assert!(order.windows(2).all(|pair| pair[0] < pair[1]), "{system}");
    assert!(system.contains(&format!("## {}", root.join("AGENTS.md").display())));
    // Skills: the name, the description and where to read it; the body only when used.
    assert!(
        system.contains(&format!(
            "- release: Cut a release of the app. ({})",
            root.join(".agents/skills/release/SKILL.md").display()
        )),
        "{system}"
    );
    assert!(!system.contains("Secret steps."), "{system}");
    // Not trusted: the user's own file only, and one line saying why the project's were not read.
    let (system, stderr) = system_of(&[]).await;
    assert!(
        system.contains("Answer in French.") && !system.contains("make check"),
        "{system}"
    );
    assert!(
        stderr.contains("not read: this folder is not trusted"),
        "{stderr}"
    );
    // Turned off: nothing of it.
    let (system, _) = system_of(&["--no-project-instructions"]).await;
    assert!(
        !system.contains("# Environment") && !system.contains("French"),
        "{system}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_key_is_one_line_naming_the_variables_to_check() {
    let (url, _) = FakeProvider::start(Script::Repeat(Reply::status(
        401,
        r#"{"error": {"message": "Incorrect API key provided"}}"#,
    )))
    .await;
    let dir = tempfile::tempdir().unwrap();
    let mut command = golato();
    command
        .args(["run", "--ephemeral", "--provider", "openai", "--base-url"])
        .arg(format!("{url}/v1"))
        .arg("-C")
        .arg(dir.path())
        .arg("hi")
        .env("OPENAI_API_KEY", "sk-wrong");
    let output = run(command).await;
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    let error = stderr
        .lines()
        .find(|line| line.contains("API failed"))
        .unwrap_or_else(|| panic!("no error line: {stderr}"));
    assert!(error.contains("401"), "{error}");
    assert!(error.contains("OPENAI_API_KEY"), "{error}");
}

/// A failed request is retried out loud: each retry is a line (and a `retry` event in
/// `--json`) saying why, which of how many, and after how long.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_retry_is_said_with_why_and_when() {
    let (url, _) = FakeProvider::start(Script::Queue(std::collections::VecDeque::from([
        Reply::status(503, "busy"),
        Reply::ok(b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Back.\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n".to_vec(), 1),
    ])))
    .await;
    let dir = tempfile::tempdir().unwrap();
    let mut command = golato();
    command
        .args([
            "run",
            "--json",
            "--ephemeral",
            "--provider",
            "openai",
            "--base-url",
        ])
        .arg(format!("{url}/v1"))
        .arg("-C")
        .arg(dir.path())
        .arg("hi")
        .env("OPENAI_API_KEY", "sk-test");
    let output = run(command).await;
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let lines = support::cli::json_lines(&output);
    let retry = lines
        .iter()
        .find(|line| line["type"] == "retry")
        .unwrap_or_else(|| panic!("no retry event: {lines:#?}"));
    assert_eq!(retry["attempt"], 1);
    assert_eq!(retry["retries"], 3);
    assert_eq!(retry["reason"], "HTTP 503");
    assert_eq!(retry["wait_ms"], 500);
}
