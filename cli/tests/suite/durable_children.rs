//! Subagents of durable runs (issue 32, point 4): in `golato serve` a `task` call's child is a
//! durable run of its own, `PARENT.TURN.CALL`, on a real Restate server. A worker killed while
//! the child runs takes neither the child nor its recorded steps with it: the call's next
//! attempt attaches to the same child, which goes on from its journal.
//!
//! Needs the Restate server binary in `GOLATO_RESTATE_SERVER` (`.ci/run`).

use crate::support;

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};

use golato::agent::Event;
use golato_restate::{Client, Outcome};
use serde_json::{json, Value};
use support::compaction::{answers, first_prompt, sse, wire_call};
use support::provider::{FakeProvider, Reply, Script};
use support::restate::{free_port, Server, Worker};

use super::durable::{
    ledger, numbered_events_of, results, wait_for_ledger, Gate, HANG_GUARD, WORKER_PID,
};

/// Tokens each answer of the model reports using.
const PROMPT_TOKENS: u64 = 100;

/// How many times the model was asked for each (run's first prompt, answers so far).
type Asked = Arc<Mutex<HashMap<(String, usize), usize>>>;

/// The model: the parent ("main") hands one task to a subagent and then answers; the child runs
/// one command that writes the ledger and waits at the gate, then answers (with `nested`, the
/// child hands that to a grandchild instead). Every answer reports [`PROMPT_TOKENS`] of input.
fn model(dir: &Path, gate: &Path, nested: bool) -> (tokio::runtime::Runtime, String, Asked) {
    let asked: Asked = Arc::default();
    let counted = Arc::clone(&asked);
    let command = format!(
        "echo \"$GOLATO_RUN_KEY b $GOLATO_TOOL_ATTEMPT {WORKER_PID}\" >> {}; flock -s {} true; echo ran b",
        dir.join("ledger").display(),
        gate.display()
    );
    let respond = move |request: &Value, _size: usize| {
        let (first, answered) = (first_prompt(request), answers(request));
        *counted
            .lock()
            .unwrap()
            .entry((first.clone(), answered))
            .or_default() += 1;
        let answer = match (first.as_str(), answered) {
            ("main", 0) => json!({"tool_calls": [wire_call(
                "t1",
                "task",
                json!({"description": "count", "prompt": "child"}),
            )]}),
            ("main", _) => json!({"text": "parent done"}),
            ("child", 0) if nested => json!({"tool_calls": [wire_call(
                "t2",
                "task",
                json!({"description": "deeper", "prompt": "grandchild"}),
            )]}),
            ("child" | "grandchild", 0) => {
                json!({"tool_calls": [wire_call("b", "bash", json!({"command": command}))]})
            }
            (_, _) => json!({"text": "child finished"}),
        };
        let usage = json!({"choices": [], "usage": {
            "prompt_tokens": PROMPT_TOKENS, "completion_tokens": 0, "total_tokens": PROMPT_TOKENS
        }});
        let stream =
            sse(&answer).replace("data: [DONE]", &format!("data: {usage}\n\ndata: [DONE]"));
        Reply::sse(stream)
    };
    let (runtime, url, _provider) =
        FakeProvider::start_blocking(Script::Respond(Box::new(respond)));
    (runtime, format!("{url}/v1"), asked)
}

/// A worker on `port` with the `task` tool, its children durable runs on `server`; bash calls
/// are safe to run again (`[durable] safe`), so that a child's interrupted command shows its
/// attempts (the `once` default has tests of its own).
fn worker(dir: &Path, server: &Server, model: &str, port: u16, name: &str) -> Worker {
    std::fs::write(dir.join("worker.toml"), "[durable]\nsafe = [\"bash\"]\n").unwrap();
    let flags = [
        "--base-url",
        model,
        "--model",
        "m",
        "--tools",
        "bash,task",
        "--cwd",
        dir.to_str().unwrap(),
        "--restate",
        &server.ingress,
        "--restate-admin",
        &server.admin,
    ];
    Worker::start_on(dir, name, port, &flags)
}

fn submit(client: &Client, id: &str) -> std::thread::JoinHandle<Outcome> {
    let (client, id) = (client.clone(), id.to_owned());
    std::thread::spawn(move || {
        tokio::runtime::Runtime::new()
            .unwrap()
            .block_on(async { tokio::time::timeout(HANG_GUARD, client.submit(&id, "main")).await })
            .expect("the run did not end")
            .unwrap()
    })
}

fn attach(client: &Client, id: &str) -> Outcome {
    tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(client.attach(id))
        .unwrap()
}

/// The parent's events forwarded from its subagent (path `t1`) of `kind`.
fn forwarded<'a>(events: &'a [(u64, Event)], kind: &str) -> Vec<&'a Event> {
    events
        .iter()
        .filter_map(|(_, event)| match event {
            Event::Subagent(nested) if nested.path == ["t1"] => Some(&*nested.event),
            _ => None,
        })
        .filter(|event| serde_json::to_value(event).unwrap()["type"] == kind)
        .collect()
}

#[test]
#[ignore = "needs a Restate server: GOLATO_RESTATE_SERVER (.ci/run)"]
fn a_worker_killed_mid_subagent_leaves_the_subagent_running_once() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start();
    let mut gate = Gate::closed(dir.path());
    let (_provider, url, asked) = model(dir.path(), &gate.path, false);
    let port = free_port();
    let mut first = worker(dir.path(), &server, &url, port, "worker");
    let client = Client::new(&server.ingress).unwrap();
    let running = submit(&client, "parent");

    // The child's command runs (and waits at the gate): the parent's task call is running
    // too, on the same worker.
    wait_for_ledger(dir.path(), "the subagent's command to start", |ledger| {
        !ledger.is_empty()
    });
    assert_eq!(ledger(dir.path())[0].run, "parent.1.t1");
    let marker = first.marker();
    first.kill();
    let killed = std::time::Instant::now();
    while !support::processes_with(&marker).is_empty() {
        assert!(
            killed.elapsed() < HANG_GUARD,
            "the killed worker's commands still run"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    // The worker comes back where it was (Restate sees the same deployment).
    let second = worker(dir.path(), &server, &url, port, "worker-again");
    gate.open();
    let outcome = running.join().unwrap();

    assert_eq!(outcome.error, None);
    assert_eq!(outcome.final_text().as_deref(), Some("parent done"));
    let task = &results(&outcome)["t1"];
    assert!(!task.is_error, "{}", task.text());
    assert!(task.text().starts_with("child finished"), "{}", task.text());
    // The task call was running when its worker died: it ran again, and attached to its
    // child instead of starting another.
    assert_eq!(task.attempt, Some(2));
    // The child's command was running too: it ran again as its attempt 2, on the new worker.
    let ran: Vec<(String, u32, u32)> = ledger(dir.path())
        .into_iter()
        .map(|execution| (execution.run, execution.attempt, execution.worker))
        .collect();
    assert_eq!(ran.len(), 2, "{ran:?}");
    assert_eq!((ran[0].1, ran[1].1), (1, 2), "{ran:?}");
    assert_eq!(ran[1].0, "parent.1.t1");
    assert_eq!(ran[1].2, second.pid());
    // Every turn of both runs was asked once: the child's first turn, recorded in its own
    // journal, was not asked again (an in-process child would have started over).
    let asked = asked.lock().unwrap().clone();
    for step in [("main", 0), ("main", 1), ("child", 0), ("child", 1)] {
        assert_eq!(
            asked.get(&(step.0.to_owned(), step.1)),
            Some(&1),
            "{step:?}: {asked:?}"
        );
    }
    // The child is a durable run of its own, ended once.
    let child = attach(&client, "parent.1.t1");
    assert_eq!(child.final_text().as_deref(), Some("child finished"));
    assert_eq!(child.usage.input_tokens, 2 * PROMPT_TOKENS);
    // The parent counts its child's tokens once, also across its worker's death.
    assert_eq!(outcome.usage.input_tokens, 4 * PROMPT_TOKENS);
    // The child's events reached the parent's, each settled one once: the call's second
    // attempt forwarded them again from the first, and the copies were dropped.
    let events = numbered_events_of(&server.ingress, "parent");
    assert_eq!(forwarded(&events, "tool_start").len(), 1, "{events:?}");
    assert_eq!(forwarded(&events, "tool_end").len(), 1, "{events:?}");
    assert_eq!(forwarded(&events, "run_end").len(), 1, "{events:?}");
    let end = events
        .iter()
        .position(|(_, event)| matches!(event, Event::ToolExecutionEnd(end) if end.call.id == "t1"))
        .unwrap();
    let child_end = events
        .iter()
        .position(|(_, event)| matches!(event, Event::Subagent(nested) if matches!(*nested.event, Event::RunEnd(_))))
        .unwrap();
    assert!(child_end < end, "the child's end comes before its call's");
}

/// The parent's cancel reaches its child, and the child's own child: each a durable run of its
/// own, each cancelled through its `task` call.
#[test]
#[ignore = "needs a Restate server: GOLATO_RESTATE_SERVER (.ci/run)"]
fn cancelling_a_durable_run_cancels_its_subagent_and_the_subagents_own() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start();
    let gate = Gate::closed(dir.path());
    let (_provider, url, _asked) = model(dir.path(), &gate.path, true);
    let _worker = worker(dir.path(), &server, &url, free_port(), "worker");
    let client = Client::new(&server.ingress)
        .unwrap()
        .with_admin(&server.admin)
        .unwrap();
    let running = submit(&client, "to-cancel");
    wait_for_ledger(dir.path(), "the grandchild's command to start", |ledger| {
        !ledger.is_empty()
    });
    assert_eq!(ledger(dir.path())[0].run, "to-cancel.1.t1.1.t2");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    assert!(runtime.block_on(client.cancel("to-cancel")).unwrap());
    let outcome = running.join().unwrap();
    let error = outcome.error.clone().expect("the run was not cancelled");
    assert!(error.contains("cancel"), "{error}");
    // The task call ended as cancelled, and so did its child, its command killed.
    let task = &results(&outcome)["t1"];
    assert!(task.is_error, "{}", task.text());
    for id in ["to-cancel.1.t1", "to-cancel.1.t1.1.t2"] {
        let error = attach(&client, id)
            .error
            .expect("a subagent was not cancelled");
        assert!(error.contains("cancel"), "{id}: {error}");
    }
    let waiting = Command::new("pgrep")
        .args(["-f", &format!("flock -s {}", gate.path.display())])
        .output()
        .unwrap();
    assert!(
        waiting.stdout.is_empty(),
        "still running: {}",
        String::from_utf8_lossy(&waiting.stdout)
    );
}

/// A worker with the `task` tool needs the ingress and the admin API: said at once.
#[test]
fn a_worker_with_subagents_needs_the_ingress_and_the_admin_api() {
    let output = Command::new(support::golato_binary())
        .args(["serve", "--listen", "127.0.0.1:0", "--tools", "bash,task"])
        .args(["--restate", "http://127.0.0.1:9"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("--restate-admin") && stderr.contains("durable run of its own"),
        "{stderr}"
    );
}
