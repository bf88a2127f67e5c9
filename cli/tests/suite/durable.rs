//! Durable runs on a real Restate server (issue 17), through real processes: `golato serve`
//! workers behind a TCP load balancer, killed with SIGKILL mid-batch.
//!
//! Needs the Restate server binary in `GOLATO_RESTATE_SERVER`; `.ci/run` installs it from npm
//! and runs these with `cargo test --test durable -- --ignored`.

use crate::support;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use golato::agent::event::Delivery;
use golato::agent::Event;
use golato::message::Message;
use golato_restate::{Client, Outcome};
use support::restate::{balancer, Server, Worker};

/// The longest any of these tests may take before it is declared hung (a guard, not a timing).
pub(crate) const HANG_GUARD: Duration = Duration::from_secs(600);

/// A file lock the test holds while the gated calls wait for it (a handshake, not a sleep).
pub(crate) struct Gate {
    pub(crate) path: PathBuf,
    file: Option<std::fs::File>,
}

impl Gate {
    pub(crate) fn closed(dir: &Path) -> Gate {
        let path = dir.join("gate");
        let file = std::fs::File::create(&path).unwrap();
        rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive).unwrap();
        Gate {
            path,
            file: Some(file),
        }
    }

    pub(crate) fn open(&mut self) {
        self.file = None;
    }
}

/// The PID of the worker running a command, in bash: its parent is the guard that ends it
/// with the worker, whose parent is the worker.
pub(crate) const WORKER_PID: &str = "$(ps -o ppid= -p $PPID | tr -d ' ')";

/// The script every worker replays for every run: turn 1 runs `a` and `b` at once (they finish
/// at once), turn 2 runs `c` and `d` at once (they wait at the gate), turn 3 answers. Each
/// execution appends `RUN CALL ATTEMPT WORKER_PID` to the ledger. The gated calls run the
/// script `gated` (`DIR/gated c`: one simple command, which a `[durable] safe` rule can name);
/// the workers' configuration (`worker.toml`) makes every bash call safe to run again, as bash
/// was before replay classes; a test that wants otherwise writes its own.
fn write_script(dir: &Path, gate: &Path) -> PathBuf {
    let ledger = dir.join("ledger");
    let fast = |id: &str| {
        serde_json::json!({"id": id, "name": "bash", "arguments": {"command": format!(
            "echo \"$GOLATO_RUN_KEY {id} $GOLATO_TOOL_ATTEMPT {WORKER_PID}\" >> {}; echo ran {id}",
            ledger.display()
        )}})
    };
    let finished = dir.join("finished");
    // Run as the single command of `bash -c`, which execs it: its parent is bash's guard, as
    // the shell's is for the fast calls.
    let gated_script = dir.join("gated");
    std::fs::write(
        &gated_script,
        format!(
            "#!/bin/bash\necho \"$GOLATO_RUN_KEY $1 $GOLATO_TOOL_ATTEMPT {WORKER_PID}\" >> {}\nflock -s {} true\necho \"$GOLATO_RUN_KEY $1 $GOLATO_TOOL_ATTEMPT\" >> {}\necho ran $1\n",
            ledger.display(),
            gate.display(),
            finished.display()
        ),
    )
    .unwrap();
    let mut permissions = std::fs::metadata(&gated_script).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
    std::fs::set_permissions(&gated_script, permissions).unwrap();
    std::fs::write(dir.join("worker.toml"), "[durable]\nsafe = [\"bash\"]\n").unwrap();
    let gated = |id: &str| {
        serde_json::json!({"id": id, "name": "bash", "arguments": {"command": format!(
            "{} {id}",
            gated_script.display()
        )}})
    };
    let script = [
        serde_json::json!({"tool_calls": [fast("a"), fast("b")]}),
        serde_json::json!({"tool_calls": [gated("c"), gated("d")]}),
        serde_json::json!({"text": "done"}),
    ];
    let path = dir.join("script.jsonl");
    let lines: Vec<String> = script.iter().map(ToString::to_string).collect();
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Execution {
    pub(crate) run: String,
    pub(crate) call: String,
    pub(crate) attempt: u32,
    pub(crate) worker: u32,
}

pub(crate) fn ledger(dir: &Path) -> Vec<Execution> {
    std::fs::read_to_string(dir.join("ledger"))
        .unwrap_or_default()
        .lines()
        .map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            assert_eq!(fields.len(), 4, "ledger line {line:?}");
            Execution {
                run: fields[0].to_owned(),
                call: fields[1].to_owned(),
                attempt: fields[2].parse().unwrap(),
                worker: fields[3].parse().unwrap(),
            }
        })
        .collect()
}

/// Waits until `done` holds for the ledger, polling the file (a file-system handshake).
pub(crate) fn wait_for_ledger(dir: &Path, what: &str, done: impl Fn(&[Execution]) -> bool) {
    let started = std::time::Instant::now();
    while started.elapsed() < HANG_GUARD {
        if done(&ledger(dir)) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!(
        "gave up waiting for {what}: {} ledger lines",
        ledger(dir).len()
    );
}

/// How many times each worker's log says it asked the model for (run, step).
fn model_requests(logs: &[PathBuf]) -> HashMap<(String, String), usize> {
    let mut asked = HashMap::new();
    for log in logs {
        for line in std::fs::read_to_string(log).unwrap_or_default().lines() {
            if !line.contains("asking the model") {
                continue;
            }
            let field = |name: &str| {
                let start = line.find(name).unwrap() + name.len();
                line[start..]
                    .split(['}', ' ', ':'])
                    .next()
                    .unwrap()
                    .to_owned()
            };
            *asked.entry((field("run="), field("step="))).or_default() += 1;
        }
    }
    asked
}

/// The run went through both batches of the script of [`write_script`], results in source
/// order.
fn assert_two_batches_in_order(outcome: &Outcome) {
    assert_eq!(
        shape(outcome),
        [
            "user",
            "assistant",
            "a",
            "b",
            "assistant",
            "c",
            "d",
            "assistant"
        ],
        "{}",
        outcome.run_id
    );
}

/// The transcript's shape: roles and call IDs in order.
fn shape(outcome: &Outcome) -> Vec<String> {
    outcome
        .messages
        .iter()
        .map(|message| match message {
            Message::User(_) => "user".to_owned(),
            Message::Assistant(_) => "assistant".to_owned(),
            Message::ToolResult(result) => result.tool_call_id.clone(),
        })
        .collect()
}

fn submit_all(ingress: &str, runs: &[String]) -> Vec<Outcome> {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let client = Client::new(ingress).unwrap().with_reconnect_for(HANG_GUARD);
    runtime.block_on(async {
        let tasks: Vec<_> = runs
            .iter()
            .map(|run| {
                let (client, run) = (client.clone(), run.clone());
                tokio::spawn(async move { client.submit(&run, "go").await })
            })
            .collect();
        let mut outcomes = Vec::new();
        for task in tasks {
            outcomes.push(
                tokio::time::timeout(HANG_GUARD, task)
                    .await
                    .expect("a run did not finish")
                    .unwrap()
                    .unwrap(),
            );
        }
        outcomes
    })
}

pub(crate) fn results(outcome: &Outcome) -> HashMap<String, golato::message::ToolResultMessage> {
    outcome
        .messages
        .iter()
        .filter_map(|message| match message {
            Message::ToolResult(result) => Some((result.tool_call_id.clone(), result.clone())),
            _ => None,
        })
        .collect()
}

/// Every event of run `run` its workers published, read page by page.
fn events_of(ingress: &str, run: &str) -> Vec<golato_restate::RunEvent> {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let client = Client::new(ingress).unwrap();
    let mut events = Vec::new();
    loop {
        let page = runtime
            .block_on(client.events(run, events.len() as u64))
            .unwrap();
        assert_eq!(page.first_kept, 0);
        let done = page.ended || page.events.is_empty();
        events.extend(page.events);
        if done {
            return events;
        }
    }
}

/// A run's events as the server keeps them, each with its number.
pub(crate) fn numbered_events_of(ingress: &str, run: &str) -> Vec<(u64, Event)> {
    events_of(ingress, run)
        .into_iter()
        .map(|event| (event.seq, event.event))
        .collect()
}

/// The events of a run of the script (three turns, calls a and b, then c and d) are whole:
/// numbered 0, 1, 2... without a gap, every settled event exactly once (however many workers
/// ran the run, and whatever they replayed), each call's end carrying the result the outcome
/// holds, and the run's end last.
fn assert_events_whole(run: &str, events: &[(u64, Event)], outcome: &Outcome) {
    let numbers: Vec<u64> = events.iter().map(|(seq, _)| *seq).collect();
    assert_eq!(
        numbers,
        (0..events.len() as u64).collect::<Vec<_>>(),
        "{run}"
    );
    let mut settled: HashMap<String, usize> = HashMap::new();
    let results = results(outcome);
    for (_, event) in events {
        let name = match event {
            Event::RunStart(_) => "run_start".to_owned(),
            Event::RunEnd(_) => "run_end".to_owned(),
            Event::TurnStart(start) => format!("turn_start {}", start.turn),
            Event::MessageEnd(end) => format!("message_end {}", end.turn),
            Event::TurnEnd(end) => format!("turn_end {}", end.turn),
            Event::ToolExecutionStart(start) => format!("tool_start {}", start.call.id),
            Event::ToolExecutionEnd(end) => {
                assert_eq!(end.result, results[&end.call.id], "{run}");
                format!("tool_end {}", end.call.id)
            }
            _ => continue,
        };
        *settled.entry(name).or_default() += 1;
    }
    let mut expected: Vec<String> = vec!["run_start".into(), "run_end".into()];
    for turn in 1..=3 {
        for kind in ["turn_start", "message_end", "turn_end"] {
            expected.push(format!("{kind} {turn}"));
        }
    }
    for call in ["a", "b", "c", "d"] {
        expected.push(format!("tool_start {call}"));
        expected.push(format!("tool_end {call}"));
    }
    for name in &expected {
        assert_eq!(settled.get(name), Some(&1), "{run}: {name} in {settled:?}");
    }
    assert_eq!(settled.len(), expected.len(), "{run}: {settled:?}");
    assert!(
        matches!(events.last(), Some((_, Event::RunEnd(_)))),
        "{run}: the run's end is not last"
    );
}

/// The events among `golato submit --json`'s lines, read back.
fn event_lines(stdout: &[u8]) -> Vec<(u64, Event)> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .filter(|line| line.get("seq").is_some())
        .map(|line| {
            let seq = line["seq"].as_u64().unwrap();
            (seq, serde_json::from_value(line).unwrap())
        })
        .collect()
}

#[test]
#[ignore = "needs a Restate server: GOLATO_RESTATE_SERVER (.ci/run)"]
fn a_worker_killed_mid_batch_loses_nothing_and_reruns_only_the_calls_it_was_running() {
    const RUNS: usize = 300;
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start();
    let mut gate = Gate::closed(dir.path());
    let script = write_script(dir.path(), &gate.path);
    // c is safe to run again (a rule names its command); d, like any bash call, runs at most
    // once.
    std::fs::write(
        dir.path().join("worker.toml"),
        "[durable]\nsafe = [\"bash(*/gated c)\"]\n",
    )
    .unwrap();
    let flags = [
        "--script",
        script.to_str().unwrap(),
        "--cwd",
        dir.path().to_str().unwrap(),
        "--restate",
        &server.ingress,
    ];
    let mut workers = three_workers(dir.path(), &server.admin, &flags);

    let runs: Vec<String> = (0..RUNS).map(|n| format!("run-{n}")).collect();
    let submitting = {
        let (ingress, runs) = (server.ingress.clone(), runs.clone());
        std::thread::spawn(move || submit_all(&ingress, &runs))
    };
    // Every run is in its second batch, both calls waiting at the gate: turns 1 and 2 and the
    // results of a and b are recorded, c and d are running.
    wait_for_ledger(dir.path(), "every gated call to start", |ledger| {
        ledger
            .iter()
            .filter(|e| e.call == "c" || e.call == "d")
            .count()
            == 2 * RUNS
    });
    // A watcher attaches to a run before the kill and follows it to its end.
    let watcher = Command::new(crate::support::golato_binary())
        .args([
            "submit",
            "--restate",
            &server.ingress,
            "--id",
            "run-0",
            "--json",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let before = ledger(dir.path());
    let mut per_worker: HashMap<u32, usize> = HashMap::new();
    for execution in &before {
        *per_worker.entry(execution.worker).or_default() += 1;
    }
    let victim = workers
        .iter()
        .position(|worker| per_worker.get(&worker.pid()).copied().unwrap_or(0) > 0)
        .expect("no worker ran anything");
    let victim_pid = workers[victim].pid();
    let marker = workers[victim].marker();
    assert!(!support::processes_with(&marker).is_empty());
    workers[victim].kill();
    // None of the victim's commands outlives it (they would run on beside their retries). How
    // fast they go is a figure, printed below (issue 33 measured about 50 ms for 200 commands;
    // a loaded 2-core machine took over a second): the deadline only tells "gone" from "left".
    let killed = std::time::Instant::now();
    loop {
        let left = support::processes_with(&marker);
        if left.is_empty() {
            break;
        }
        assert!(
            killed.elapsed() < Duration::from_secs(30),
            "the killed worker's commands still run 30 s after it: {left:?}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let all_gone = killed.elapsed();
    gate.open();
    let outcomes = submitting.join().unwrap();

    // Every run completed once, its transcript in source order.
    assert_all_done(&outcomes, RUNS);
    // The calls that were running on the victim (and only those) are attempt 2 elsewhere,
    // and their results say so; nothing recorded ran again. c (safe by rule) ran again; d
    // (bash, once) did not: its result tells the model it was interrupted.
    let executions = executions_by_call(dir.path());
    let (mut retried, mut refused) = (0, 0);
    for outcome in &outcomes {
        let results = results(outcome);
        for call in ["a", "b", "c", "d"] {
            let ran = &executions[&(outcome.run_id.clone(), call.to_owned())];
            let first = &ran[0];
            let interrupted = (call == "c" || call == "d") && first.worker == victim_pid;
            let result = &results[call];
            match (interrupted, call) {
                (true, "c") => {
                    assert_eq!(ran.len(), 2, "{} {call}: {ran:?}", outcome.run_id);
                    assert_eq!((ran[0].attempt, ran[1].attempt), (1, 2));
                    assert_ne!(ran[1].worker, victim_pid);
                    assert_eq!(result.attempt, Some(2), "{} {call}", outcome.run_id);
                    assert!(result.text().contains("ran c"), "{}", result.text());
                    retried += 1;
                }
                (true, _) => {
                    assert_eq!(ran.len(), 1, "{} {call} ran again: {ran:?}", outcome.run_id);
                    assert_eq!(result.attempt, Some(2), "{} {call}", outcome.run_id);
                    assert!(result.is_error);
                    assert!(
                        result.text().contains("interrupted")
                            && result.text().contains("check what it did"),
                        "{}",
                        result.text()
                    );
                    refused += 1;
                }
                (false, _) => {
                    assert_eq!(ran.len(), 1, "{} {call} ran again: {ran:?}", outcome.run_id);
                    assert_eq!(result.attempt, None, "{} {call}", outcome.run_id);
                    assert!(
                        result.text().contains(&format!("ran {call}")),
                        "{} {call}: {}",
                        outcome.run_id,
                        result.text()
                    );
                }
            }
        }
    }
    assert!(
        retried > 0 && refused > 0,
        "the victim was running none of the gated calls"
    );
    // Every run's events are whole, also where the victim published some and another worker
    // the rest (replaying what the victim had published); and so is what the watcher showed.
    for outcome in &outcomes {
        let events = numbered_events_of(&server.ingress, &outcome.run_id);
        assert_events_whole(&outcome.run_id, &events, outcome);
    }
    let watched = watcher.wait_with_output().unwrap();
    assert!(
        watched.status.success(),
        "{}",
        String::from_utf8_lossy(&watched.stderr)
    );
    assert_events_whole(
        "run-0 (watched)",
        &event_lines(&watched.stdout),
        &outcomes[0],
    );
    // Each call's end line says at its top level which attempt produced the result, as the
    // transcript does (a rerun: 2).
    let run_0 = results(&outcomes[0]);
    for line in String::from_utf8_lossy(&watched.stdout).lines() {
        let line: serde_json::Value = serde_json::from_str(line).unwrap();
        if line["type"] == "tool_end" {
            let call = line["call_id"].as_str().unwrap();
            assert_eq!(
                line["attempt"].as_u64(),
                Some(u64::from(run_0[call].attempt.unwrap_or(1))),
                "{line}"
            );
        }
    }
    // No recorded turn was asked of the model twice; every turn was asked once.
    let logs: Vec<PathBuf> = workers.iter().map(|worker| worker.log.clone()).collect();
    let asked = model_requests(&logs);
    for run in &runs {
        for step in ["turn-1", "turn-2", "turn-3"] {
            assert_eq!(
                asked.get(&(run.clone(), step.to_owned())).copied(),
                Some(1),
                "{run} {step}"
            );
        }
    }
    eprintln!(
        "{RUNS} runs, victim pid {victim_pid} was running {retried} of them; {retried} safe calls ran again, {refused} once calls were not; its commands were gone {all_gone:?} after the kill"
    );
    drop(server);
}

#[test]
#[ignore = "needs a Restate server: GOLATO_RESTATE_SERVER (.ci/run)"]
fn a_restate_node_killed_mid_batch_on_a_three_node_cluster_loses_no_run() {
    const RUNS: usize = 60;
    let dir = tempfile::tempdir().unwrap();
    let mut cluster = support::restate::Cluster::start();
    let mut gate = Gate::closed(dir.path());
    let script = write_script(dir.path(), &gate.path);
    let flags = [
        "--script",
        script.to_str().unwrap(),
        "--cwd",
        dir.path().to_str().unwrap(),
    ];
    let workers = three_workers(dir.path(), &cluster.admin[0], &flags);
    let runs: Vec<String> = (0..RUNS).map(|n| format!("cluster-run-{n}")).collect();
    let submitting = {
        let (ingress, runs) = (cluster.ingress[0].clone(), runs.clone());
        std::thread::spawn(move || submit_all(&ingress, &runs))
    };
    // Every run's gated calls started (some may have started twice already: an invocation
    // retried while the cluster's partitions settled).
    wait_for_ledger(dir.path(), "every gated call to start", |ledger| {
        let started: std::collections::HashSet<(&str, &str)> = ledger
            .iter()
            .filter(|e| e.call == "c" || e.call == "d")
            .map(|e| (e.run.as_str(), e.call.as_str()))
            .collect();
        started.len() == 2 * RUNS
    });
    // A node other than the one the client and the registration talk to: partitions led
    // there move to the other two.
    cluster.kill(2);
    gate.open();
    let outcomes = submitting.join().unwrap();
    assert_all_done(&outcomes, RUNS);
    // Calls ran once, or (running when the node died) again as a later attempt; turns were
    // asked of the model once, or again when their answer was not yet recorded.
    let executions: HashMap<(String, String), Vec<u32>> = executions_by_call(dir.path())
        .into_iter()
        .map(|(call, ran)| {
            (
                call,
                ran.iter().map(|execution| execution.attempt).collect(),
            )
        })
        .collect();
    let again = executions.values().filter(|ran| ran.len() > 1).count();
    let logs: Vec<PathBuf> = workers.iter().map(|worker| worker.log.clone()).collect();
    let asked = model_requests(&logs);
    let asked_again = asked.values().filter(|count| **count > 1).count();
    for run in &runs {
        for call in ["a", "b", "c", "d"] {
            let ran = executions.get(&(run.clone(), call.to_owned()));
            // Once; or again, each time as a later attempt (the journal knew it had started).
            // The first may be past attempt 1 when the invocation was retried before the call
            // began, as a partition's leadership settled.
            assert!(
                ran.is_some_and(
                    |ran| !ran.is_empty() && ran.windows(2).all(|pair| pair[1] > pair[0])
                ),
                "{run} {call}: {ran:?}"
            );
        }
    }
    // Gated calls that went past their gate twice: the gate opens at once after the kill, so
    // a first attempt whose invocation moved to another node finishes beside its retry when
    // its worker has not yet learnt of the move (reported, not asserted: see the README).
    let finished = std::fs::read_to_string(dir.path().join("finished")).unwrap_or_default();
    let mut past_the_gate: HashMap<(String, String), usize> = HashMap::new();
    for line in finished.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        *past_the_gate
            .entry((fields[0].to_owned(), fields[1].to_owned()))
            .or_default() += 1;
    }
    let twice: Vec<_> = past_the_gate
        .iter()
        .filter(|(_, count)| **count > 1)
        .collect();
    eprintln!(
        "{RUNS} runs on a 3-node cluster, node 3 killed mid-batch: all completed; {again} calls ran twice, {asked_again} turns were asked twice; {} gated calls finished twice (their first attempt ran on until its worker learnt the invocation had moved)",
        twice.len()
    );
}

#[test]
#[ignore = "needs a Restate server: GOLATO_RESTATE_SERVER (.ci/run)"]
fn golato_submit_prints_the_outcome_and_the_same_id_gives_the_same_run() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start();
    let mut gate = Gate::closed(dir.path());
    gate.open();
    let script = write_script(dir.path(), &gate.path);
    let worker = registered_worker(dir.path(), &server, &script, &[]);
    let submit = |id: &str, json: bool| {
        let mut command = Command::new(crate::support::golato_binary());
        command.args(["submit", "--restate", &server.ingress, "--id", id]);
        if json {
            command.arg("--json");
        }
        command.arg("go").output().unwrap()
    };
    let first = submit("one", true);
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let lines: Vec<serde_json::Value> = String::from_utf8(first.stdout.clone())
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    // The run's events as `golato run --json` prints them, numbered, between the run's ID
    // and its outcome.
    assert_eq!(lines[0]["type"], "durable_run");
    assert_eq!(lines[0]["run_id"], "one");
    let outcome = lines.last().unwrap();
    assert_eq!(outcome["type"], "outcome");
    assert_eq!(outcome["final_text"], "done");
    assert_eq!(outcome["tool_calls"], 4);
    let events = event_lines(&first.stdout);
    assert_eq!(events.len() + 2, lines.len());
    assert_eq!(outcome["events"], events.len());
    let whole = Client::new(&server.ingress).unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let kept = runtime.block_on(whole.outcome("one")).unwrap().unwrap();
    assert_events_whole("one", &events, &kept);
    let tool_end = lines
        .iter()
        .find(|line| line["type"] == "tool_end")
        .unwrap();
    assert_eq!(tool_end["turn"], 1);
    assert_eq!(tool_end["tool_name"], "bash");
    // Attached with the ID alone: the same events from the start, or from --from on.
    let attach = |from: Option<&str>| {
        let mut command = Command::new(crate::support::golato_binary());
        command.args([
            "submit",
            "--restate",
            &server.ingress,
            "--id",
            "one",
            "--json",
        ]);
        if let Some(from) = from {
            command.args(["--from", from]);
        }
        command.output().unwrap()
    };
    let attached = attach(None);
    assert!(
        attached.status.success(),
        "{}",
        String::from_utf8_lossy(&attached.stderr)
    );
    assert_eq!(event_lines(&attached.stdout), events);
    let later = attach(Some("10"));
    assert_eq!(event_lines(&later.stdout), events[10..]);
    // Something that is not an event, appended through the ingress: left out and said so,
    // the events after it shown.
    let bogus = serde_json::json!([
        {"key": {"kind": "settled", "turn": 9, "name": "x"}, "event": {"type": "from_the_future"}},
        {"key": {"kind": "settled", "turn": 9, "name": "y"}, "event": {"type": "turn_start", "turn": 9}},
    ]);
    let appended = runtime.block_on(async {
        reqwest::Client::new()
            .post(format!("{}/GolatoEvents/one/append", server.ingress))
            .json(&bogus)
            .send()
            .await
            .unwrap()
            .status()
    });
    assert!(appended.is_success(), "{appended}");
    let with_bogus = attach(Some(&events.len().to_string()));
    assert!(with_bogus.status.success());
    let shown = event_lines(&with_bogus.stdout);
    assert_eq!(shown.len(), 1, "{shown:?}");
    assert_eq!(shown[0].0, events.len() as u64 + 1);
    let stderr = String::from_utf8_lossy(&with_bogus.stderr);
    assert!(
        stderr.contains(&format!(
            "event {} of the run could not be shown",
            events.len()
        )),
        "{stderr}"
    );
    // An ID nothing ran under: said so, nothing started.
    let unknown = Command::new(crate::support::golato_binary())
        .args([
            "submit",
            "--restate",
            &server.ingress,
            "--id",
            "never-submitted",
        ])
        .output()
        .unwrap();
    assert_eq!(unknown.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("no run never-submitted is known"));
    assert_eq!(ledger(dir.path()).len(), 4);

    // Again with the same ID: the same outcome, nothing runs again.
    let again = submit("one", false);
    assert!(again.status.success());
    assert_eq!(String::from_utf8(again.stdout).unwrap(), "done\n");
    assert_eq!(ledger(dir.path()).len(), 4);
    let asked = model_requests(std::slice::from_ref(&worker.log));
    assert_eq!(asked.len(), 3, "{asked:?}");
    // The same ID with another prompt (read from a file, as `golato run` takes @FILE): the
    // first run's outcome, said to be so.
    let other = dir.path().join("other-prompt.txt");
    std::fs::write(&other, "something else entirely").unwrap();
    let different = Command::new(crate::support::golato_binary())
        .args(["submit", "--restate", &server.ingress, "--id", "one"])
        .arg(format!("@{}", other.display()))
        .output()
        .unwrap();
    assert!(different.status.success());
    assert_eq!(String::from_utf8(different.stdout).unwrap(), "done\n");
    assert!(String::from_utf8_lossy(&different.stderr)
        .contains("run one was submitted before with another prompt"));
    assert_eq!(ledger(dir.path()).len(), 4);

    // The worker registered again (a restart of `golato serve --restate-admin`): accepted,
    // and runs go on as before.
    runtime
        .block_on(golato_restate::register(
            &server.admin,
            &format!("http://127.0.0.1:{}", worker.port),
        ))
        .unwrap();
    assert!(submit("two", false).status.success());

    // A server that is not there: a clear error, exit 1.
    let nowhere = Command::new(crate::support::golato_binary())
        .args([
            "submit",
            "--restate",
            &format!("http://127.0.0.1:{}", support::restate::free_port()),
            "--id",
            "x",
            "--reconnect-for",
            "1",
            "go",
        ])
        .output()
        .unwrap();
    assert_eq!(nowhere.status.code(), Some(1));
    let stderr = String::from_utf8(nowhere.stderr).unwrap();
    assert!(
        stderr.contains("could not reach the Restate server"),
        "{stderr}"
    );
}

/// `count` runs all completed with the script's answer, each transcript in source order.
fn assert_all_done(outcomes: &[Outcome], count: usize) {
    assert_eq!(outcomes.len(), count);
    for outcome in outcomes {
        assert_eq!(outcome.error, None, "{}", outcome.run_id);
        assert_eq!(outcome.final_text().as_deref(), Some("done"));
        assert_two_batches_in_order(outcome);
    }
}

/// The ledger's executions, by (run, call), in the order they started.
fn executions_by_call(dir: &Path) -> HashMap<(String, String), Vec<Execution>> {
    let mut executions: HashMap<(String, String), Vec<Execution>> = HashMap::new();
    for execution in ledger(dir) {
        executions
            .entry((execution.run.clone(), execution.call.clone()))
            .or_default()
            .push(execution);
    }
    executions
}

/// Three workers with `flags` behind a balancer, its address registered at `admin`.
fn three_workers(dir: &Path, admin: &str, flags: &[&str]) -> Vec<Worker> {
    let workers: Vec<Worker> = (0..3)
        .map(|n| Worker::start(dir, &format!("worker{n}"), flags))
        .collect();
    let front = balancer(workers.iter().map(|worker| worker.port).collect());
    tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(golato_restate::register(admin, &format!("http://{front}")))
        .unwrap();
    workers
}

/// A worker replaying `script` with `dir` as its working directory, registered with
/// `server` and publishing its runs' events there; `more` are further flags.
fn registered_worker(dir: &Path, server: &Server, script: &Path, more: &[&str]) -> Worker {
    let mut flags = vec![
        "--script",
        script.to_str().unwrap(),
        "--cwd",
        dir.to_str().unwrap(),
        "--restate-admin",
        &server.admin,
        "--restate",
        &server.ingress,
    ];
    flags.extend_from_slice(more);
    Worker::start(dir, "worker", &flags)
}

/// Starts a server and one worker registered with it (publishing its runs' events), the
/// script's gate closed.
fn one_worker(dir: &Path) -> (Server, Gate, Worker) {
    let server = Server::start();
    let gate = Gate::closed(dir);
    let script = write_script(dir, &gate.path);
    let worker = registered_worker(dir, &server, &script, &[]);
    (server, gate, worker)
}

/// `golato submit` on a terminal of 80x24 and 120x40 shows the run as `golato run` does while
/// it goes on: the first batch's results, the second batch's calls running (they wait at the
/// gate), then everything and the answer once.
#[test]
#[ignore = "needs a Restate server: GOLATO_RESTATE_SERVER (.ci/run)"]
fn golato_submit_shows_a_durable_run_live_on_a_terminal() {
    use crate::suite::front::{in_terminal, wait_until, SIZES};
    let dir = tempfile::tempdir().unwrap();
    let (server, gate, _worker) = one_worker(dir.path());
    let mut gate = Some(gate);
    for size in SIZES {
        let gate = gate.get_or_insert_with(|| Gate::closed(dir.path()));
        let mut command = Command::new(crate::support::golato_binary());
        command.args(["submit", "--restate", &server.ingress, "--id"]);
        command.arg(format!("on-a-terminal-{}", size.1)).arg("go");
        let mut terminal = in_terminal(command, size);
        let running = wait_until(&mut terminal, size, "the second batch running", |shown| {
            ["│ ran a", "│ ran b", "gated c", "gated d"]
                .iter()
                .all(|seen| shown.contains(seen))
        });
        assert!(!running.contains("ran c"), "{running}");
        gate.open();
        let done = wait_until(&mut terminal, size, "the end", |shown| {
            shown.contains("3 turns, 4 tool calls")
        });
        assert!(
            done.contains("│ ran c") && done.contains("│ ran d"),
            "{done}"
        );
        assert_eq!(
            done.matches("done").count(),
            2,
            "the answer once, then the summary: {done}"
        );
        let (code, drawn) = terminal.finish();
        assert_eq!(code, Some(0), "{drawn}");
        *gate = Gate::closed(dir.path());
    }
}

#[test]
#[ignore = "needs a Restate server: GOLATO_RESTATE_SERVER (.ci/run)"]
fn cancelling_a_durable_run_reaches_its_running_tools() {
    let dir = tempfile::tempdir().unwrap();
    let (server, _gate, _worker) = one_worker(dir.path());
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let client = Client::new(&server.ingress)
        .unwrap()
        .with_admin(&server.admin)
        .unwrap();
    let running = {
        let client = client.clone();
        runtime.spawn(async move { client.submit("to-cancel", "go").await })
    };
    // Both gated calls are running (and would wait for the gate forever).
    wait_for_ledger(dir.path(), "the gated calls to start", |ledger| {
        ledger.len() == 4
    });
    let cancelled = Command::new(crate::support::golato_binary())
        .args([
            "cancel",
            "--restate",
            &server.ingress,
            "--restate-admin",
            &server.admin,
        ])
        .arg("to-cancel")
        .output()
        .unwrap();
    assert!(cancelled.status.success(), "{cancelled:?}");
    assert!(String::from_utf8_lossy(&cancelled.stderr).contains("run to-cancel cancelled"));
    let outcome = runtime
        .block_on(async { tokio::time::timeout(HANG_GUARD, running).await })
        .expect("the cancelled run did not end")
        .unwrap()
        .unwrap();
    let error = outcome.error.clone().expect("the run was not cancelled");
    assert!(error.contains("cancel"), "{error}");
    // The gated calls ended as cancelled (their bash processes killed), in the transcript.
    let results = results(&outcome);
    for call in ["c", "d"] {
        let text = results[call].text();
        assert!(results[call].is_error, "{call}: {text}");
        assert!(
            text.contains("cancel") || text.contains("abort"),
            "{call}: {text}"
        );
    }
    // Nothing still waits at the gate.
    let waiting = Command::new("pgrep")
        .args([
            "-f",
            &format!("flock -s {}", dir.path().join("gate").display()),
        ])
        .output()
        .unwrap();
    assert!(
        waiting.stdout.is_empty(),
        "still running: {}",
        String::from_utf8_lossy(&waiting.stdout)
    );
    // Cancelling a run that is not going on finds nothing.
    assert!(!runtime.block_on(client.cancel("to-cancel")).unwrap());
}

#[test]
#[ignore = "needs a Restate server: GOLATO_RESTATE_SERVER (.ci/run)"]
fn runs_go_on_when_the_restate_server_restarts_mid_run() {
    const RUNS: usize = 20;
    let dir = tempfile::tempdir().unwrap();
    let (mut server, mut gate, worker) = one_worker(dir.path());
    let runs: Vec<String> = (0..RUNS).map(|n| format!("restart-{n}")).collect();
    let submitting = {
        let (ingress, runs) = (server.ingress.clone(), runs.clone());
        std::thread::spawn(move || submit_all(&ingress, &runs))
    };
    wait_for_ledger(dir.path(), "every gated call to start", |ledger| {
        ledger.len() == 4 * RUNS
    });
    // SIGKILL the server and start it again on the same data: the clients reconnect, the
    // worker is asked again, the runs go on from their journals.
    server.restart();
    gate.open();
    let outcomes = submitting.join();
    if outcomes.is_err() {
        eprintln!(
            "worker log: {}",
            std::fs::read_to_string(&worker.log).unwrap_or_default()
        );
    }
    let outcomes = outcomes.unwrap();
    for outcome in &outcomes {
        assert_eq!(outcome.error, None, "{}", outcome.run_id);
        assert_two_batches_in_order(outcome);
    }
    // Recorded calls did not run again; no turn was asked twice.
    let ran = ledger(dir.path());
    for run in &runs {
        for call in ["a", "b"] {
            assert_eq!(
                ran.iter()
                    .filter(|e| &e.run == run && e.call == call)
                    .count(),
                1,
                "{run} {call}"
            );
        }
    }
    let asked = model_requests(std::slice::from_ref(&worker.log));
    assert!(asked.values().all(|times| *times == 1), "{asked:?}");
    assert_eq!(asked.len(), 3 * RUNS);
    // The events too went on where they stopped: each once, the run's end last, and no end
    // of an attempt the restart cut short among them.
    for outcome in &outcomes {
        let events = numbered_events_of(&server.ingress, &outcome.run_id);
        assert_events_whole(&outcome.run_id, &events, outcome);
        assert!(
            matches!(events.last(), Some((_, Event::RunEnd(end))) if end.error.is_none()),
            "{}: {:?}",
            outcome.run_id,
            events.last()
        );
    }
}

/// How many lines `x` the file holds.
fn marks(path: &Path) -> usize {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|line| *line == "x")
        .count()
}

/// Runs `RUNS` editors, each editing all five shared files (one `x` line added before `END`),
/// on three workers; one worker is killed once a third of the edits are in. With `shared` the
/// workers lock each file through Restate.
fn editors(shared: bool) -> (usize, Vec<usize>, Vec<Outcome>) {
    const RUNS: usize = 100;
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start();
    let files: Vec<PathBuf> = (0..5)
        .map(|n| dir.path().join(format!("shared-{n}.txt")))
        .collect();
    for file in &files {
        std::fs::write(file, "END\n").unwrap();
    }
    let edit = |n: usize, file: &Path| {
        serde_json::json!({"id": format!("e{n}"), "name": "edit", "arguments": {
            "path": file, "edits": [{"oldText": "END", "newText": "x\nEND"}]}})
    };
    let script = dir.path().join("script.jsonl");
    let calls: Vec<_> = files
        .iter()
        .enumerate()
        .map(|(n, file)| edit(n, file))
        .collect();
    std::fs::write(
        &script,
        format!(
            "{}\n{}\n",
            serde_json::json!({ "tool_calls": calls }),
            serde_json::json!({"text": "done"})
        ),
    )
    .unwrap();
    let mut flags = vec![
        "--script".to_owned(),
        script.to_str().unwrap().to_owned(),
        "--cwd".to_owned(),
        dir.path().to_str().unwrap().to_owned(),
    ];
    if shared {
        flags.extend([
            "--restate".to_owned(),
            server.ingress.clone(),
            "--lock-ttl".to_owned(),
            "3".to_owned(),
        ]);
    }
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let mut workers = three_workers(dir.path(), &server.admin, &flags);
    let runs: Vec<String> = (0..RUNS).map(|n| format!("editor-{n}")).collect();
    let submitting = {
        let ingress = server.ingress.clone();
        std::thread::spawn(move || submit_all(&ingress, &runs))
    };
    // A third of the edits are in: kill a worker in the middle of the rest.
    let started = std::time::Instant::now();
    while files.iter().map(|file| marks(file)).sum::<usize>() < RUNS * 5 / 3 {
        assert!(started.elapsed() < HANG_GUARD, "the edits did not start");
        assert!(
            !submitting.is_finished(),
            "every run ended before a third of the edits were in: {:?}",
            submitting.join().map(|outcomes| outcomes.first().cloned())
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    workers[1].kill();
    let outcomes = submitting.join().unwrap();
    let counts = files.iter().map(|file| marks(file)).collect();
    (RUNS, counts, outcomes)
}

#[test]
#[ignore = "needs a Restate server: GOLATO_RESTATE_SERVER (.ci/run)"]
fn editors_on_three_workers_apply_no_edit_twice_when_one_worker_is_killed() {
    let (runs, counts, outcomes) = editors(true);
    assert_eq!(outcomes.len(), runs);
    // Each file: every run's edit is there once, but for an edit interrupted by the kill:
    // edit runs a call at most once, so that one is there or not (it may have been written
    // before the worker died), and its result tells the model to check; never twice.
    for (n, count) in counts.iter().enumerate() {
        let call = format!("e{n}");
        let interrupted = outcomes
            .iter()
            .filter(|outcome| results(outcome)[&call].attempt.is_some())
            .count();
        assert!(
            *count <= runs && *count + interrupted >= runs,
            "shared-{n}.txt has {count} edits for {runs} runs ({interrupted} interrupted)"
        );
    }
    for outcome in &outcomes {
        assert_eq!(outcome.error, None, "{}", outcome.run_id);
        for (call, result) in results(outcome) {
            match result.attempt {
                None => assert!(
                    !result.is_error,
                    "{} {call}: {}",
                    outcome.run_id,
                    result.text()
                ),
                Some(_) => assert!(
                    result.is_error && result.text().contains("interrupted"),
                    "{} {call}: {}",
                    outcome.run_id,
                    result.text()
                ),
            }
        }
    }
}

#[test]
#[ignore = "needs a Restate server: GOLATO_RESTATE_SERVER (.ci/run)"]
fn steering_and_follow_ups_reach_a_durable_run_and_are_refused_after_it_ended() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start();
    let mut gate = Gate::closed(dir.path());
    let ledger = dir.path().join("ledger");
    let script = dir.path().join("script.jsonl");
    let gated = serde_json::json!({"id": "c", "name": "bash", "arguments": {"command": format!(
        "echo \"$GOLATO_RUN_KEY c $GOLATO_TOOL_ATTEMPT {WORKER_PID}\" >> {}; flock -s {} true; echo ran c",
        ledger.display(), gate.path.display()
    )}});
    std::fs::write(
        &script,
        format!(
            "{}\n{}\n{}\n",
            serde_json::json!({"tool_calls": [gated]}),
            serde_json::json!({"text": "first"}),
            serde_json::json!({"text": "second"})
        ),
    )
    .unwrap();
    let _worker = registered_worker(dir.path(), &server, &script, &[]);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let client = Client::new(&server.ingress).unwrap();
    let running = {
        let client = client.clone();
        runtime.spawn(async move { client.submit("steered", "go").await })
    };
    wait_for_ledger(dir.path(), "the gated call to start", |ledger| {
        ledger.len() == 1
    });
    // Through the command line, as a person or a script would.
    for (command, text) in [("steer", "mind the tests"), ("follow-up", "now the docs")] {
        let told = Command::new(crate::support::golato_binary())
            .args([command, "--restate", &server.ingress, "steered", text])
            .output()
            .unwrap();
        assert!(told.status.success(), "{told:?}");
        assert!(String::from_utf8_lossy(&told.stderr).contains("delivered to run steered"));
    }
    gate.open();
    let outcome = runtime.block_on(running).unwrap().unwrap();
    assert_eq!(outcome.error, None);
    let texts: Vec<String> = outcome
        .messages
        .iter()
        .map(|message| match message {
            Message::User(user) => format!("user: {}", user.text()),
            Message::Assistant(assistant) => format!("assistant: {}", assistant.text()),
            Message::ToolResult(result) => format!("result: {}", result.tool_call_id),
        })
        .collect();
    assert_eq!(
        texts,
        [
            "user: go",
            "assistant: ",
            "result: c",
            "user: mind the tests",
            "assistant: first",
            "user: now the docs",
            "assistant: second"
        ]
    );
    // Its events say where each message joined: steering after the batch, the follow-up where
    // the run would have ended.
    let delivered: Vec<(usize, String, Delivery)> = events_of(&server.ingress, "steered")
        .into_iter()
        .filter_map(|event| match event.event {
            Event::UserMessage(message) => {
                Some((message.turn, message.message.text(), message.delivery))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        delivered,
        [
            (1, "mind the tests".to_owned(), Delivery::Steer),
            (2, "now the docs".to_owned(), Delivery::FollowUp)
        ]
    );
    // The run has ended: a message now is refused, saying so.
    let error = runtime
        .block_on(client.steer("steered", "too late"))
        .unwrap_err();
    assert!(error.to_string().contains("the run has ended"), "{error}");
    // A slot cannot be taken past the inbox: the run's `deliver` is not open to the ingress.
    let direct = runtime.block_on(async {
        reqwest::Client::new()
            .post(format!("{}/GolatoRun/steered/deliver", server.ingress))
            .json(&serde_json::json!({"slot": 7, "post": {"text": "x", "follow_up": false}}))
            .send()
            .await
            .unwrap()
            .status()
    });
    assert!(direct.is_client_error(), "{direct}");
}

/// Messages posted while a run keeps ending race its inbox's closing: each one is either read
/// by the run (its transcript has it; a sender's steering in the order sent, and its follow-ups)
/// or refused, saying the run has ended; none is accepted and left unread.
#[test]
#[ignore = "needs a Restate server: GOLATO_RESTATE_SERVER (.ci/run)"]
fn messages_racing_a_runs_end_are_read_or_refused_never_dropped() {
    const POSTERS: usize = 4;
    const EACH: usize = 40;
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start();
    // Every turn answers at once: the run would end after each one, unless a message came.
    let answers: Vec<String> = (0..=POSTERS * EACH)
        .map(|n| serde_json::json!({"text": format!("answer {n}")}).to_string())
        .collect();
    let script = dir.path().join("script.jsonl");
    std::fs::write(&script, answers.join("\n") + "\n").unwrap();
    let _worker = registered_worker(dir.path(), &server, &script, &["--max-turns", "1000"]);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let client = Client::new(&server.ingress).unwrap();
    let (outcome, posted) = runtime.block_on(async {
        let running = {
            let client = client.clone();
            tokio::spawn(async move { client.submit("racing", "go").await })
        };
        let posters: Vec<_> = (0..POSTERS)
            .map(|poster| {
                let client = client.clone();
                tokio::spawn(async move {
                    let (mut accepted, mut refused) = (Vec::new(), 0);
                    for n in 0..EACH {
                        let text = format!("m-{poster}-{n}");
                        let sent = match n % 2 {
                            0 => client.steer("racing", &text).await,
                            _ => client.follow_up("racing", &text).await,
                        };
                        match sent {
                            Ok(()) => accepted.push(text),
                            Err(error) => {
                                assert!(error.to_string().contains("the run has ended"), "{error}");
                                refused += 1;
                            }
                        }
                    }
                    (accepted, refused)
                })
            })
            .collect();
        let mut posted = Vec::new();
        for poster in posters {
            posted.push(poster.await.unwrap());
        }
        (running.await.unwrap().unwrap(), posted)
    });
    assert_eq!(outcome.error, None);
    let read: Vec<String> = outcome
        .messages
        .iter()
        .skip(1)
        .filter_map(|message| match message {
            Message::User(user) => Some(user.text()),
            _ => None,
        })
        .collect();
    let accepted: usize = posted.iter().map(|(accepted, _)| accepted.len()).sum();
    let refused: usize = posted.iter().map(|(_, refused)| refused).sum();
    assert_eq!(read.len(), accepted, "read {read:?}, posted {posted:?}");
    // Steering goes ahead of follow-ups held for the run's end: in order within each kind.
    let steering = |text: &&String| {
        text.rsplit('-')
            .next()
            .and_then(|n| n.parse::<usize>().ok())
            .is_some_and(|n| n % 2 == 0)
    };
    for (poster, (accepted, _)) in posted.iter().enumerate() {
        let theirs: Vec<&String> = read
            .iter()
            .filter(|text| text.starts_with(&format!("m-{poster}-")))
            .collect();
        let mine: Vec<&String> = accepted.iter().collect();
        for kind in [true, false] {
            let of_kind = |texts: &[&String]| -> Vec<String> {
                texts
                    .iter()
                    .filter(|text| steering(text) == kind)
                    .map(|text| (*text).clone())
                    .collect()
            };
            assert_eq!(of_kind(&theirs), of_kind(&mine), "poster {poster}");
        }
    }
    eprintln!(
        "{accepted} messages read, {refused} refused after the run ended ({} turns)",
        outcome.turns
    );
}

#[test]
#[ignore = "needs a Restate server: GOLATO_RESTATE_SERVER (.ci/run)"]
fn ctrl_c_detaches_golato_submit_and_the_same_id_attaches_again() {
    let dir = tempfile::tempdir().unwrap();
    let (server, mut gate, _worker) = one_worker(dir.path());
    let submit = || {
        let mut command = Command::new(crate::support::golato_binary());
        command.args([
            "submit",
            "--restate",
            &server.ingress,
            "--id",
            "detached",
            "go",
        ]);
        command
    };
    let child = submit()
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The run waits at the gate: the client is waiting for it.
    wait_for_ledger(dir.path(), "the gated calls to start", |ledger| {
        ledger.len() == 4
    });
    let pid = rustix::process::Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
    let detached = child.wait_with_output().unwrap();
    assert_eq!(detached.status.code(), Some(130));
    let stderr = String::from_utf8(detached.stderr).unwrap();
    assert!(stderr.contains("detached from run detached"), "{stderr}");
    // The run went on; the same ID attaches to it and prints its answer.
    gate.open();
    let attached = submit().output().unwrap();
    assert!(
        attached.status.success(),
        "{}",
        String::from_utf8_lossy(&attached.stderr)
    );
    assert_eq!(String::from_utf8(attached.stdout).unwrap(), "done\n");
    assert_eq!(ledger(dir.path()).len(), 4, "nothing ran twice");
}

/// A durable run past its compaction threshold: the summary is a step of the run's Restate
/// journal (`compaction-4-1`), so the run's outcome is whole and the same ID gives it again
/// without asking the model or the summarizer.
#[test]
#[ignore = "needs a Restate server: GOLATO_RESTATE_SERVER (.ci/run)"]
fn a_durable_run_compacts_with_its_summary_in_the_journal() {
    use std::sync::Arc;

    use golato::agent::compaction::Compaction;
    use golato::agent::{self, Agent};
    use golato::generator::{Model, Scripted};
    use golato::message::AssistantMessage;
    use support::compaction::{fetch_tool, fetching_script, recording, PerMessage};

    let server = Server::start();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (model, requests) = recording(Scripted::new(fetching_script(6, false)));
    let (summaries, summary_requests) = recording(Scripted::new([AssistantMessage::with_text(
        "Pages were fetched.",
    )]));
    let agent = Agent::new(agent::Config {
        generator: Some(Arc::new(model)),
        tools: vec![fetch_tool(10)],
        context_window: Some(1_000),
        compaction: Compaction::default()
            .with_counter(Arc::new(PerMessage))
            .with_summarizer(Arc::new(summaries), Model::new("cheap")),
        ..Default::default()
    })
    .unwrap();
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let address = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let worker = runtime.spawn(golato_restate::Worker::new(agent).serve(listener, stopped));
    runtime
        .block_on(golato_restate::register(
            &server.admin,
            &format!("http://{address}"),
        ))
        .unwrap();
    let client = Client::new(&server.ingress)
        .unwrap()
        .with_reconnect_for(HANG_GUARD);
    let outcome = runtime
        .block_on(async {
            tokio::time::timeout(HANG_GUARD, client.submit("compacting", "go")).await
        })
        .expect("the run did not finish")
        .unwrap();
    assert_eq!(outcome.error, None, "{outcome:#?}");
    assert_eq!(outcome.final_text().as_deref(), Some("all fetched"));
    // The transcript keeps everything: the prompt, 7 answers, 6 results.
    assert_eq!(outcome.messages.len(), 14);
    let summaries_asked = summary_requests.lock().unwrap().len();
    assert!(summaries_asked > 0, "the run never compacted");
    let asked = requests.lock().unwrap().len();
    // A request after the compaction began with the summary.
    let last = requests.lock().unwrap().last().cloned().unwrap();
    assert!(last.compacted_turns > 0, "{last:#?}");

    let again = runtime.block_on(client.submit("compacting", "go")).unwrap();
    assert_eq!(again, outcome);
    assert_eq!(requests.lock().unwrap().len(), asked);
    assert_eq!(summary_requests.lock().unwrap().len(), summaries_asked);
    let _ = stop.send(());
    runtime.block_on(worker).unwrap();
}

#[test]
fn a_run_id_that_cannot_name_one_run_is_refused_at_once() {
    let long = "x".repeat(120 * 1024);
    for (id, said) in [
        ("tab\tid", "\"tab\\tid\" is not a run ID: it holds '\\t'"),
        (
            "line\nbreak",
            "\"line\\nbreak\" is not a run ID: it holds '\\n'",
        ),
        ("café", "\"café\" is not a run ID: it holds 'é'"),
        (long.as_str(), "is not a run ID: it is 122880 bytes long"),
    ] {
        // Nothing listens there: a refusal that came from the server would take a minute.
        let output = support::cli::golato()
            .args([
                "submit",
                "--restate",
                "http://127.0.0.1:9",
                "--id",
                id,
                "hello",
            ])
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{output:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(said), "{stderr}");
        let steer = support::cli::golato()
            .args([
                "steer",
                "--restate",
                "http://127.0.0.1:9",
                id,
                "mind the tests",
            ])
            .output()
            .unwrap();
        assert_eq!(steer.status.code(), Some(2), "{steer:?}");
    }
    // Cancelling needs the admin API, and says so.
    let cancel = support::cli::golato()
        .args(["cancel", "--restate", "http://127.0.0.1:9", "run-1"])
        .output()
        .unwrap();
    assert_eq!(cancel.status.code(), Some(2), "{cancel:?}");
    assert!(String::from_utf8_lossy(&cancel.stderr).contains("give --restate-admin URL"));
}

#[test]
fn registering_with_a_server_that_never_answers_ends_with_the_deadline_said() {
    // It takes the connection, and never says a word.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let admin = format!("http://{}", silent.local_addr().unwrap());
    let held = std::thread::spawn(move || {
        let mut held = Vec::new();
        for connection in silent.incoming().take(4).flatten() {
            held.push(connection);
        }
        held
    });
    let dir = tempfile::tempdir().unwrap();
    let script =
        support::cli::script_file(dir.path(), "s.jsonl", &[serde_json::json!({"text": "x"})]);
    let output = support::cli::golato()
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--restate-admin",
            &admin,
        ])
        .arg("--script")
        .arg(&script)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("--restate-admin: could not reach the Restate server"),
        "{stderr}"
    );
    assert!(stderr.contains("tried for 10s"), "{stderr}");
    assert!(!stderr.contains("serving durable runs"), "{stderr}");
    drop(held);
}
