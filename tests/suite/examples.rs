//! The examples, run by the tests: each is included as a module and its output checked.

// Each example brings its own copy of examples/support, as it does when built alone.
#![allow(clippy::duplicate_mod)]

#[path = "../../examples/registering_a_tool.rs"]
#[allow(dead_code)]
mod registering_a_tool;

#[path = "../../examples/using_builtin_tools.rs"]
#[allow(dead_code)]
mod using_builtin_tools;

#[path = "../../examples/selecting_tools.rs"]
#[allow(dead_code)]
mod selecting_tools;

#[test]
fn registering_a_tool_prints_the_lifecycle_and_the_answer() {
    let mut out = Vec::new();
    registering_a_tool::run(&mut out).unwrap();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        concat!(
            "[start] lookup_customer {\"customer_id\":\"C-100\"}\n",
            "[update] lookup_customer parts=1\n",
            "[end] lookup_customer error=false result=\"Customer C-100 (Acme Corp) is on the Pro plan.\"\n",
            "C-100 uses the Pro plan.\n",
        )
    );
}

#[tokio::test]
async fn using_builtin_tools_lists_the_project() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("Cargo.toml"), "").unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    let mut out = Vec::new();
    using_builtin_tools::run(dir.path(), &mut out)
        .await
        .unwrap();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "bash:\nCargo.toml\nsrc\nThose are the files at the top of the project.\n"
    );
}

#[test]
fn selecting_tools_keeps_read_and_the_custom_tool() {
    let mut out = Vec::new();
    selecting_tools::run(std::path::Path::new("."), &mut out).unwrap();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "selected: read, lookup_customer\n"
    );
}

#[path = "../../examples/approval.rs"]
#[allow(dead_code)]
mod approval;

#[tokio::test]
async fn approval_blocks_by_pattern_and_asks_for_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    // The first asked command is approved, the second declined.
    let input = std::io::Cursor::new(b"y\nn\n".to_vec());
    let terminal = std::sync::Arc::new(std::sync::Mutex::new((input, Vec::<u8>::new())));
    approval::run(dir.path(), std::sync::Arc::clone(&terminal))
        .await
        .unwrap();
    let output = String::from_utf8(terminal.lock().unwrap().1.clone()).unwrap();
    // The hook asks while the run goes on, so its questions may interleave with the event lines
    // printed by the reader of events; each kind keeps its own order.
    let (questions, events): (Vec<&str>, Vec<&str>) = output
        .lines()
        .filter(|line| !line.is_empty())
        .partition(|line| line.starts_with("Allow bash"));
    assert_eq!(
        questions,
        [
            "Allow bash `echo hello from the workspace`? [y/N] ",
            "Allow bash `echo a second command`? [y/N] ",
        ]
    );
    assert_eq!(
        events,
        [
            "[end] bash error=false result=\"hello from the workspace\"",
            "[blocked] Commands containing \"rm -rf\" are not allowed here; find another way.",
            "[end] bash error=true result=\"Commands containing \\\"rm -rf\\\" are not allowed here; find another way.\"",
            "[blocked] The user did not approve this command.",
            "[end] bash error=true result=\"The user did not approve this command.\"",
            "Done: one command ran, two were refused.",
        ]
    );
}

#[path = "../../examples/embedded_tokio.rs"]
#[allow(dead_code)]
mod embedded_tokio;

#[path = "../../examples/embedded_actix.rs"]
#[allow(dead_code)]
mod embedded_actix;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_tokio_runs_on_the_applications_runtime_and_shuts_down() {
    let mut out = Vec::new();
    embedded_tokio::run(&mut out).await.unwrap();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        concat!(
            "[end] lookup_customer Customer C-100 (Acme Corp) is on the Pro plan.\n",
            "C-100 uses the Pro plan.\n",
            "host stopped, 0 run(s) unfinished\n",
        )
    );
}

#[actix::test]
async fn embedded_actix_runs_under_the_applications_supervisor() {
    let mut out = Vec::new();
    embedded_actix::run(&mut out).await.unwrap();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        concat!(
            "first: C-100 uses the Pro plan.\n",
            "second: C-100 uses the Pro plan.\n",
            "service restarts: 0\n",
            "host stopped, 0 run(s) unfinished\n",
        )
    );
}

#[path = "../../examples/tracing.rs"]
#[allow(dead_code)]
mod tracing_example;

#[test]
fn tracing_runs_its_two_calls() {
    assert_eq!(
        tracing_example::run().unwrap(),
        "C-100 is on Pro; C-200 is not a customer."
    );
}

#[path = "../../examples/stress.rs"]
#[allow(dead_code)]
mod stress;

#[test]
fn stress_runs_every_call_and_reports_parked_memory() {
    let report = stress::stress(&stress::Options {
        runs: 200,
        calls: 3,
        parked: true,
        arbiters: Some(1),
        workers: None,
        tool_tasks: golato::ToolTasks::default(),
        // A viewer that stops reading: every call still runs.
        console: stress::Console::Stalled,
    })
    .unwrap();
    assert_eq!(report["console"], "stalled");
    assert_eq!(report["runs"], 200);
    assert_eq!(report["calls_per_run"], 3);
    assert!(report["calls_per_s"].as_f64().unwrap() > 0.0, "{report}");
    assert!(report["peak_rss_mib"].as_f64().unwrap() > 0.0, "{report}");
    assert!(report["rss_per_parked_run_kib"].is_number(), "{report}");
    assert_eq!(report["arbiters"], 1);
    let latency = &report["run_latency_ms"];
    assert!(
        latency["p99"].as_f64().unwrap() >= latency["p50"].as_f64().unwrap(),
        "{report}"
    );
}

#[test]
fn stress_refuses_a_transcript_out_of_order() {
    use golato::agent::{self, Agent};
    use golato::message::{Message, UserMessage};

    let agent = Agent::new(agent::Config {
        generator: Some(std::sync::Arc::new(stress::script(2))),
        tools: vec![stress::echo_tool(None)],
        ..Default::default()
    })
    .unwrap();
    let mut result = agent.start(UserMessage::new("echo")).wait().unwrap();
    assert_eq!(stress::check(&result, 2), Ok(()));
    result.messages.swap(2, 3);
    let why = stress::check(&result, 2).unwrap_err();
    assert!(why.contains("result 0") && why.contains("call-0"), "{why}");
    result.messages.truncate(3);
    assert!(matches!(result.messages[2], Message::ToolResult(_)));
    assert_eq!(
        stress::check(&result, 2).unwrap_err(),
        "3 messages instead of 5"
    );
}

#[test]
fn stress_options_say_what_is_wrong() {
    let args = |list: &[&str]| list.iter().map(|arg| arg.to_string()).collect::<Vec<_>>();
    let options = stress::options(args(&["--runs", "5", "--calls", "2", "--parked"])).unwrap();
    assert_eq!((options.runs, options.calls, options.parked), (5, 2, true));
    let defaults = stress::options(args(&[])).unwrap();
    assert_eq!((defaults.runs, defaults.calls), (10_000, 8));
    assert_eq!((defaults.arbiters, defaults.workers), (None, None));
    let threads = stress::options(args(&["--arbiters", "1", "--workers", "3"])).unwrap();
    assert_eq!((threads.arbiters, threads.workers), (Some(1), Some(3)));
    let error = stress::options(args(&["--workers"])).err().unwrap();
    assert!(error.contains("--workers needs a number"), "{error}");
    let error = stress::options(args(&["--runs", "0"])).err().unwrap();
    assert!(
        error.contains("--runs") && error.contains("\"0\""),
        "{error}"
    );
    let error = stress::options(args(&["--fast"])).err().unwrap();
    assert!(
        error.contains("--fast") && error.contains("usage"),
        "{error}"
    );
}
