//! Load: 1,000 concurrent runs on one agent with mixed tools (bash, read, write, a custom tool),
//! 100 of them editing the same 5 files. No edit is lost, nothing deadlocks, every run ends;
//! afterwards no run is left on the host, no lease is held, no child process and no temporary
//! file remains, and memory is back near where it started.
//!
//! One test in its own binary: the child-process and memory checks see only this test.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use futures::future::join_all;
use golato::agent::{self, Agent};
use golato::builtin;
use golato::generator::{EventStream, Generator, Request, Scripted};
use golato::message::{AssistantMessage, Message, ToolCall};
use golato::{Host, HostConfig};
use serde_json::json;
use support::*;

const RUNS: usize = 1_000;
const FILES: usize = 5;
/// Every tenth run edits: 100 editors, 20 per file, each with its own slot.
const EDITORS_PER_FILE: usize = RUNS / 10 / FILES;

/// The runs of the load (run numbers pick their kind; the warm-up uses a few below 10).
fn load() -> std::ops::Range<usize> {
    10..RUNS + 10
}

/// Run `n` (named in its prompt) gets calls by its kind, then ends with "done".
struct Mixed;

fn calls_of(run: usize) -> Vec<ToolCall> {
    let id = |k: usize| format!("r{run}-c{k}");
    match run % 10 {
        0 => {
            let file = (run / 10) % FILES;
            vec![ToolCall::new(
                id(0),
                "edit",
                json!({"path": format!("shared-{file}.txt"), "edits": [
                    {"oldText": format!("slot {run}: open"), "newText": format!("slot {run}: edited")}
                ]})
                .to_string(),
            )]
        }
        1 => vec![ToolCall::new(
            id(0),
            "bash",
            json!({"command": format!("echo run {run}")}).to_string(),
        )],
        2 => vec![ToolCall::new(
            id(0),
            "read",
            json!({"path": "shared-0.txt", "limit": 3}).to_string(),
        )],
        3 => vec![ToolCall::new(
            id(0),
            "write",
            json!({"path": format!("out/run-{run}.txt"), "content": format!("run {run}\n")})
                .to_string(),
        )],
        _ => (0..4)
            .map(|k| {
                ToolCall::new(
                    id(k),
                    "echo",
                    json!({"text": format!("{run}.{k}")}).to_string(),
                )
            })
            .collect(),
    }
}

fn run_number(request: &Request) -> usize {
    request
        .messages
        .iter()
        .find_map(|message| match message {
            Message::User(user) => user.text().strip_prefix("run ")?.parse().ok(),
            _ => None,
        })
        .expect("every prompt names its run")
}

impl Generator for Mixed {
    fn stream(&self, request: Request) -> EventStream {
        let run = run_number(&request);
        Scripted::new([
            AssistantMessage::with_tool_calls(calls_of(run)),
            AssistantMessage::with_text("done"),
        ])
        .stream(request)
    }
}

/// Processes this test process started that still exist (zombies included).
fn children() -> Vec<String> {
    let mut found = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        if let Ok(list) = std::fs::read_to_string(task.path().join("children")) {
            found.extend(list.split_whitespace().map(str::to_owned));
        }
    }
    found
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

fn temporaries_in(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with(".golato-write-") {
            found.push(name);
        }
        if entry.file_type().unwrap().is_dir() {
            found.extend(temporaries_in(&entry.path()));
        }
    }
    found
}

async fn run_all(agent: &Agent, runs: impl Iterator<Item = usize>) -> Vec<(usize, String)> {
    let handles: Vec<_> = runs
        .map(|run| (run, agent.start(prompt(&format!("run {run}")))))
        .collect();
    let outcomes = join_all(handles.into_iter().map(|(run, handle)| async move {
        (
            run,
            tokio::time::timeout(HANG_GUARD * 4, handle.finish()).await,
        )
    }))
    .await;
    let mut failures = Vec::new();
    for (run, outcome) in outcomes {
        let verdict = match outcome {
            Err(_) => Err("did not end (deadlock?)".to_owned()),
            Ok(Err(error)) => Err(error.to_string()),
            Ok(Ok(result)) => {
                let results = transcript_results(&result.messages);
                let expected = calls_of(run);
                if results.len() != expected.len() {
                    Err(format!(
                        "{} results for {} calls",
                        results.len(),
                        expected.len()
                    ))
                } else if let Some((call, result)) = expected
                    .iter()
                    .zip(&results)
                    .find(|(call, result)| result.tool_call_id != call.id || result.is_error)
                {
                    Err(format!("call {} got {:?}", call.id, result.text()))
                } else if result.final_message.text() != "done" {
                    Err(format!("ended with {:?}", result.final_message.text()))
                } else {
                    Ok(())
                }
            }
        };
        if let Err(why) = verdict {
            failures.push((run, why));
        }
    }
    failures
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_mixed_runs_lose_no_edit_and_leave_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    for file in 0..FILES {
        let slots: String = load()
            .filter(|run| run % 10 == 0 && (run / 10) % FILES == file)
            .map(|run| format!("slot {run}: open\n"))
            .collect();
        assert_eq!(slots.lines().count(), EDITORS_PER_FILE);
        std::fs::write(dir.path().join(format!("shared-{file}.txt")), slots).unwrap();
    }
    let host = Host::new(HostConfig::default()).unwrap();
    let mut tools = builtin::new(builtin::Config {
        working_directory: dir.path().into(),
        host: Some(host.clone()),
        ..Default::default()
    })
    .unwrap();
    tools.push(echo_tool());
    let agent = Agent::new(agent::Config {
        generator: Some(Arc::new(Mixed)),
        tools,
        host: Some(host.clone()),
        ..Default::default()
    })
    .unwrap();

    // Warm up (threads, pools, the first schemas), then read memory.
    let warm_up = run_all(&agent, [1, 2, 4].into_iter()).await;
    assert!(warm_up.is_empty(), "{warm_up:?}");
    let before = rss_kib();

    let failures = run_all(&agent, load()).await;
    assert!(
        failures.is_empty(),
        "{} runs failed: {:?}",
        failures.len(),
        &failures[..failures.len().min(5)]
    );

    // No lost edit: every slot of every file was edited, each once.
    for file in 0..FILES {
        let text = std::fs::read_to_string(dir.path().join(format!("shared-{file}.txt"))).unwrap();
        let open: Vec<&str> = text
            .lines()
            .filter(|line| line.ends_with(": open"))
            .collect();
        assert!(open.is_empty(), "shared-{file}.txt lost edits: {open:?}");
        assert_eq!(text.lines().count(), EDITORS_PER_FILE, "{text}");
    }
    // The load has each kind a hundred times.
    let written = std::fs::read_dir(dir.path().join("out")).unwrap().count();
    assert_eq!(written, RUNS / 10, "one file per writer");

    // No lease held: one more edit of every file goes through at once.
    let more = run_all(&agent, (0..FILES).map(|file| 10_000 + file * 10)).await;
    assert_eq!(
        more.len(),
        FILES,
        "the extra editors' slots do not exist, so each must fail validation-free, with an edit error"
    );
    assert!(
        more.iter().all(|(_, why)| why.contains("was not found")),
        "{more:?}"
    );

    // No child process, no temporary file.
    assert!(children().is_empty(), "processes left: {:?}", children());
    assert!(
        temporaries_in(dir.path()).is_empty(),
        "{:?}",
        temporaries_in(dir.path())
    );

    // No run left on the host, no message waiting in any mailbox.
    let stats = host.stats();
    assert!(
        stats.actors.iter().all(|actor| actor.mailbox_depth == 0),
        "{stats:?}"
    );
    let report = host.shutdown(Duration::from_secs(5)).await;
    assert_eq!(
        report.unfinished, 0,
        "runs still going after every run ended"
    );

    drop(agent);
    let after = rss_kib();
    eprintln!("RSS before the load {before} KiB, after {after} KiB");
    assert!(
        after < before + 32 * 1024,
        "memory did not come back: {before} KiB before, {after} KiB after"
    );
}
