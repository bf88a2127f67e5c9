//! The journal seam (issue 17, point 1): every turn and every call's result of a journaled run
//! goes through its journal; a run started again on the same journal asks the model for no
//! recorded turn and runs no recorded call, and a call whose result was not recorded runs again.

use crate::support;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use futures::FutureExt;
use golato::agent::{self, Agent};
use golato::generator::{EventStream, Generator, Request, Scripted};
use golato::journal::{
    Error as JournalError, Journal, MemoryJournal, StepError, StepKey, StepWork,
};
use golato::message::{AssistantMessage, Message, ToolCall};
use golato::tool::{Replay, Tool, ToolResult};
use serde_json::{json, Value};
use support::*;

/// A generator that counts the requests for each turn (by how many answers the request holds).
#[derive(Default)]
struct Counting {
    inner: Option<Scripted>,
    asked: Mutex<HashMap<usize, usize>>,
}

impl Counting {
    fn new(script: Scripted) -> Arc<Counting> {
        Arc::new(Counting {
            inner: Some(script),
            asked: Mutex::default(),
        })
    }

    fn asked(&self, turn: usize) -> usize {
        self.asked.lock().unwrap().get(&turn).copied().unwrap_or(0)
    }
}

impl Generator for Counting {
    fn stream(&self, request: Request) -> EventStream {
        let turn = 1 + request
            .messages
            .iter()
            .filter(|message| matches!(message, Message::Assistant(_)))
            .count();
        *self.asked.lock().unwrap().entry(turn).or_default() += 1;
        self.inner.as_ref().unwrap().stream(request)
    }
}

/// A tool that counts its executions per call ID and echoes its call's ID.
fn ledger_tool(ledger: Arc<Mutex<HashMap<String, usize>>>) -> Tool {
    Tool::new(
        "work",
        "Does some work.",
        json!({"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}),
        move |_, arguments: Value| {
            let ledger = Arc::clone(&ledger);
            async move {
                let id = arguments["id"].as_str().unwrap_or_default().to_owned();
                *ledger.lock().unwrap().entry(id.clone()).or_default() += 1;
                Ok(ToolResult::text(format!("did {id}")))
            }
        },
    )
}

fn work_call(id: &str) -> ToolCall {
    call(id, "work", &json!({"id": id}).to_string())
}

/// Turn 1: four parallel calls; turn 2: the answer.
fn script() -> Scripted {
    Scripted::new([
        AssistantMessage::with_tool_calls(["a", "b", "c", "d"].map(work_call)),
        AssistantMessage::with_text("all done"),
    ])
}

fn agent(generator: Arc<Counting>, ledger: Arc<Mutex<HashMap<String, usize>>>) -> Agent {
    Agent::new(agent::Config {
        generator: Some(generator),
        tools: vec![ledger_tool(ledger)],
        ..Default::default()
    })
    .unwrap()
}

fn result_ids(messages: &[Message]) -> Vec<String> {
    messages
        .iter()
        .filter_map(|message| match message {
            Message::ToolResult(result) => Some(result.tool_call_id.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_journaled_run_records_every_step_and_replays_them_without_asking_or_running_again() {
    let generator = Counting::new(script());
    let ledger = Arc::new(Mutex::new(HashMap::new()));
    let agent = agent(Arc::clone(&generator), Arc::clone(&ledger));
    let journal = Arc::new(MemoryJournal::new());

    let first = agent.start_journaled(prompt("go"), journal.clone());
    let (events, first) = collect(first);
    let first = first.unwrap();
    let mut keys = journal.keys();
    keys.sort();
    assert_eq!(
        keys,
        [
            "input",
            "turn-1",
            "turn-1/call-a",
            "turn-1/call-b",
            "turn-1/call-c",
            "turn-1/call-d",
            "turn-1/inbox",
            "turn-2",
            "turn-2/inbox-end"
        ]
    );
    assert_eq!(result_ids(&first.messages), ["a", "b", "c", "d"]);
    // One start and one end event per call, as without a journal.
    assert_eq!(tool_trace(&events).len(), 8);

    // The same input on the same journal: nothing is asked or run again, the same transcript.
    let again = agent.start_journaled(prompt("go"), journal).wait().unwrap();
    assert_eq!(again.messages, first.messages);
    assert_eq!((generator.asked(1), generator.asked(2)), (1, 1));
    assert!(ledger.lock().unwrap().values().all(|runs| *runs == 1));

    // Without a journal the run is the same.
    let plain = agent.start(prompt("go")).wait().unwrap();
    assert_eq!(plain.messages, first.messages);
}

/// A journal that fails to record the steps named in `failing`, once each, and otherwise is a
/// [`MemoryJournal`]: what a journal whose store went away mid-run looks like to the run.
#[derive(Debug)]
struct Flaky {
    inner: Arc<MemoryJournal>,
    failing: Mutex<Vec<String>>,
}

impl Journal for Flaky {
    fn step(&self, key: StepKey, work: StepWork) -> BoxFuture<'static, Result<Value, StepError>> {
        let name = key.to_string();
        let fails = {
            let mut failing = self.failing.lock().unwrap();
            let found = failing.iter().position(|step| *step == name);
            found.map(|at| failing.remove(at)).is_some()
        };
        if !fails {
            return self.inner.step(key, work);
        }
        async move {
            // The work is done (the call ran), but its record is lost.
            let _ = work.run().await;
            Err(StepError::Journal(JournalError {
                step: name,
                reason: "the store is gone".to_owned(),
            }))
        }
        .boxed()
    }
}

#[test]
fn a_run_picked_up_after_its_journal_failed_reruns_only_what_was_not_recorded() {
    let generator = Counting::new(script());
    let ledger = Arc::new(Mutex::new(HashMap::new()));
    let agent = agent(Arc::clone(&generator), Arc::clone(&ledger));
    let memory = Arc::new(MemoryJournal::new());
    let flaky = Arc::new(Flaky {
        inner: Arc::clone(&memory),
        failing: Mutex::new(vec!["turn-1/call-c".to_owned()]),
    });

    let error = agent
        .start_journaled(prompt("go"), flaky.clone())
        .wait()
        .unwrap_err();
    assert!(matches!(error, agent::Error::Journal { .. }), "{error}");
    assert!(error.to_string().contains("turn-1/call-c"), "{error}");
    // The transcript so far: the call whose record failed says so.
    let messages = error.messages().unwrap();
    let failed = messages
        .iter()
        .find_map(|message| match message {
            Message::ToolResult(result) if result.tool_call_id == "c" => Some(result.clone()),
            _ => None,
        })
        .unwrap();
    assert!(failed.is_error && failed.text().contains("the store is gone"));

    // Picked up on the journal (which works again): turn 1 is not asked again, a, b and d
    // do not run again, c does (its result was never recorded), the run ends.
    let picked_up = agent.start_journaled(prompt("go"), flaky).wait().unwrap();
    assert_eq!(picked_up.final_message.text(), "all done");
    assert_eq!(result_ids(&picked_up.messages), ["a", "b", "c", "d"]);
    assert_eq!(generator.asked(1), 1);
    assert_eq!(generator.asked(2), 1);
    let ledger = ledger.lock().unwrap();
    assert_eq!(
        (ledger["a"], ledger["b"], ledger["c"], ledger["d"]),
        (1, 1, 2, 1)
    );
}

#[test]
fn a_failed_turn_is_not_recorded_and_is_asked_again() {
    // The script has one entry: turn 2 fails (script exhausted), which is not recorded.
    let generator = Counting::new(Scripted::new([AssistantMessage::with_tool_calls([
        work_call("a"),
    ])]));
    let ledger = Arc::new(Mutex::new(HashMap::new()));
    let agent = agent(Arc::clone(&generator), Arc::clone(&ledger));
    let journal = Arc::new(MemoryJournal::new());
    for _ in 0..2 {
        let error = agent
            .start_journaled(prompt("go"), journal.clone())
            .wait()
            .unwrap_err();
        assert!(matches!(error, agent::Error::Generator { .. }), "{error}");
    }
    assert_eq!((generator.asked(1), generator.asked(2)), (1, 2));
    assert_eq!(ledger.lock().unwrap()["a"], 1);
    // The inbox after the batch is a step too (nothing was queued: it records none).
    assert_eq!(
        journal.keys(),
        ["input", "turn-1", "turn-1/call-a", "turn-1/inbox"]
    );
}

#[test]
fn a_journal_belongs_to_one_input() {
    let generator = Counting::new(script());
    let agent = agent(Arc::clone(&generator), Arc::default());
    let journal = Arc::new(MemoryJournal::new());
    agent
        .start_journaled(prompt("go"), journal.clone())
        .wait()
        .unwrap();
    let error = agent
        .start_journaled(prompt("something else"), journal)
        .wait()
        .unwrap_err();
    assert!(matches!(error, agent::Error::Journal { .. }), "{error}");
    assert!(error.to_string().contains("another input"), "{error}");
    assert_eq!(
        generator.asked(1),
        1,
        "the other input was not run on this journal"
    );
}

#[test]
fn a_journal_holding_something_else_is_a_clear_error() {
    #[derive(Debug)]
    struct Garbage;
    impl Journal for Garbage {
        fn step(&self, _: StepKey, _: StepWork) -> BoxFuture<'static, Result<Value, StepError>> {
            futures::future::ready(Ok(json!({"not": "a message"}))).boxed()
        }
    }
    let generator = Counting::new(script());
    let agent = agent(Arc::clone(&generator), Arc::default());
    let error = agent
        .start_journaled(prompt("go"), Arc::new(Garbage))
        .wait()
        .unwrap_err();
    assert!(matches!(error, agent::Error::Journal { .. }), "{error}");
    assert!(
        error.to_string().contains("another version of golato"),
        "{error}"
    );
    assert_eq!(generator.asked(1), 0);

    // A record of a newer format is named as such.
    #[derive(Debug)]
    struct Newer;
    impl Journal for Newer {
        fn step(&self, _: StepKey, _: StepWork) -> BoxFuture<'static, Result<Value, StepError>> {
            futures::future::ready(Ok(json!({"golato_journal": 99, "step": {}}))).boxed()
        }
    }
    let error = agent
        .start_journaled(prompt("go"), Arc::new(Newer))
        .wait()
        .unwrap_err();
    assert!(error.to_string().contains("format 99"), "{error}");
}

#[test]
fn sequential_calls_go_through_the_journal_one_after_another() {
    let generator = Counting::new(script());
    let ledger = Arc::new(Mutex::new(HashMap::new()));
    let agent = Agent::new(agent::Config {
        generator: Some(Arc::clone(&generator) as Arc<dyn Generator>),
        tools: vec![
            ledger_tool(Arc::clone(&ledger)).with_execution(golato::tool::Execution::Sequential)
        ],
        ..Default::default()
    })
    .unwrap();
    let journal = Arc::new(MemoryJournal::new());
    let (events, first) = collect(agent.start_journaled(prompt("go"), journal.clone()));
    let first = first.unwrap();
    // In a sequential batch each call starts after the one before it ended.
    assert_eq!(
        tool_trace(&events),
        ["start:0", "end:0", "start:1", "end:1", "start:2", "end:2", "start:3", "end:3"]
    );
    let again = agent.start_journaled(prompt("go"), journal).wait().unwrap();
    assert_eq!(again.messages, first.messages);
    assert!(ledger.lock().unwrap().values().all(|runs| *runs == 1));
}

#[test]
fn a_journal_made_from_a_transcript_picks_the_run_up_as_resuming_the_transcript_does() {
    let generator = Counting::new(script());
    let ledger = Arc::new(Mutex::new(HashMap::new()));
    let agent = agent(Arc::clone(&generator), Arc::clone(&ledger));
    let whole = agent.start(prompt("go")).wait().unwrap().messages;
    // Cut after the results of a and b: the run stopped while c and d were running.
    let cut: Vec<Message> = whole[..4].to_vec();
    assert_eq!(result_ids(&cut), ["a", "b"]);

    let resumed = agent
        .start(agent::Input {
            prompts: Vec::new(),
            transcript: cut.clone(),
            summary: None,
        })
        .wait()
        .unwrap();
    let journal = Arc::new(MemoryJournal::from_transcript(&cut));
    let picked_up = agent.start_journaled(prompt("go"), journal).wait().unwrap();
    assert_eq!(picked_up.messages, resumed.messages);
    assert_eq!(picked_up.messages, whole);
    let ledger = ledger.lock().unwrap();
    // The whole run, then c and d once for each way of picking it up.
    assert_eq!(
        (ledger["a"], ledger["b"], ledger["c"], ledger["d"]),
        (1, 1, 3, 3)
    );
}

#[test]
fn a_file_journal_survives_its_process_and_ignores_a_line_cut_by_a_crash() {
    use golato::journal::FileJournal;
    use std::io::Write as _;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.journal");
    let generator = Counting::new(script());
    let ledger = Arc::new(Mutex::new(HashMap::new()));
    // Safe to run again: the call whose record is lost runs again, as attempt 2.
    let agent = Agent::new(agent::Config {
        generator: Some(generator.clone()),
        tools: vec![ledger_tool(Arc::clone(&ledger)).with_replay(Replay::Safe)],
        ..Default::default()
    })
    .unwrap();
    let first = agent
        .start_journaled(prompt("go"), Arc::new(FileJournal::open(&path).unwrap()))
        .wait()
        .unwrap();
    // Drop everything from the last call's record on (that record and the answer), leaving
    // half of that record's line, as a crash mid-write would.
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines.len(),
        13,
        "the input, two turns, four calls' starts and records, and two inbox steps"
    );
    assert_eq!(
        lines
            .iter()
            .filter(|line| line.contains("\"started\""))
            .count(),
        4
    );
    let last_call = lines
        .iter()
        .rposition(|line| line.contains("\"step\":\"turn-1/call-"))
        .unwrap();
    let lost: serde_json::Value = serde_json::from_str(lines[last_call]).unwrap();
    let lost_id = lost["step"]
        .as_str()
        .unwrap()
        .trim_start_matches("turn-1/call-");
    let kept = lines[..last_call].join("\n") + "\n";
    let mut file = std::fs::File::create(&path).unwrap();
    file.write_all(kept.as_bytes()).unwrap();
    file.write_all(&lines[last_call].as_bytes()[..10]).unwrap();
    drop(file);
    let reopened = FileJournal::open(&path).unwrap();
    assert_eq!(reopened.keys().len(), 5, "{:?}", reopened.keys());
    let again = agent
        .start_journaled(prompt("go"), Arc::new(reopened))
        .wait()
        .unwrap();
    // The same transcript, but for the lost call's result: produced by its second attempt.
    let mut expected = first.messages;
    for message in &mut expected {
        if let Message::ToolResult(result) = message {
            if result.tool_call_id == lost_id {
                result.attempt = Some(2);
            }
        }
    }
    assert_eq!(again.messages, expected);
    // Only the call whose record was lost ran again, and the answer was asked again.
    assert_eq!(ledger.lock().unwrap().values().sum::<usize>(), 5);
    assert_eq!(ledger.lock().unwrap()[lost_id], 2);
    assert_eq!((generator.asked(1), generator.asked(2)), (1, 2));
}

/// A journal that runs the call `retried` as its third attempt (as a durable journal does for a
/// call that was running when two earlier processes died), under the run key `run-7`.
#[derive(Debug)]
struct Retrying {
    inner: MemoryJournal,
    retried: &'static str,
}

impl Journal for Retrying {
    fn step(&self, key: StepKey, work: StepWork) -> BoxFuture<'static, Result<Value, StepError>> {
        match &key {
            StepKey::Call { call_id, .. } if call_id == self.retried => {
                let work = StepWork::new(work.run_attempt(3));
                self.inner.step(key, work)
            }
            _ => self.inner.step(key, work),
        }
    }

    fn run_key(&self) -> Option<&str> {
        Some("run-7")
    }
}

#[test]
fn a_retried_call_sees_its_attempt_and_its_result_says_so() {
    let seen = Arc::new(Mutex::new(HashMap::new()));
    let tool = {
        let seen = Arc::clone(&seen);
        Tool::new(
            "work",
            "Does some work.",
            json!({"type": "object", "properties": {"id": {"type": "string"}}}),
            move |context, _: Value| {
                let seen = Arc::clone(&seen);
                async move {
                    seen.lock().unwrap().insert(
                        context.call().id.clone(),
                        (context.attempt(), context.run_key().map(str::to_owned)),
                    );
                    Ok(ToolResult::text("done"))
                }
            },
        )
        .with_replay(Replay::Safe)
    };
    let agent = Agent::new(agent::Config {
        generator: Some(Arc::new(script())),
        tools: vec![tool],
        ..Default::default()
    })
    .unwrap();
    let journal = Arc::new(Retrying {
        inner: MemoryJournal::new(),
        retried: "c",
    });
    let (events, outcome) = collect(agent.start_journaled(prompt("go"), journal));
    let outcome = outcome.unwrap();

    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen["c"], (3, Some("run-7".to_owned())));
    assert_eq!(seen["a"], (1, Some("run-7".to_owned())));
    let attempts: Vec<_> = outcome
        .messages
        .iter()
        .filter_map(|message| match message {
            Message::ToolResult(result) => Some((result.tool_call_id.as_str(), result.attempt)),
            _ => None,
        })
        .collect();
    assert_eq!(
        attempts,
        [("a", None), ("b", None), ("c", Some(3)), ("d", None)]
    );
    // The end event carries the same result.
    let ended = events.iter().find_map(|event| match event {
        agent::Event::ToolExecutionEnd(end) if end.call.id == "c" => Some(end.result.attempt),
        _ => None,
    });
    assert_eq!(ended, Some(Some(3)));
    // A run without a journal: first attempt, no key.
    let plain = agent.start(prompt("go")).wait().unwrap();
    assert!(plain.messages.iter().all(
        |message| !matches!(message, Message::ToolResult(result) if result.attempt.is_some())
    ));
}

/// A tool that counts its runs by call, of the replay class `replay`.
fn counted(replay: Replay, seen: &Arc<Mutex<HashMap<String, u32>>>) -> Tool {
    let seen = Arc::clone(seen);
    Tool::new(
        "work",
        "Does some work.",
        json!({"type": "object", "properties": {"id": {"type": "string"}}}),
        move |context, _: Value| {
            let seen = Arc::clone(&seen);
            async move {
                seen.lock()
                    .unwrap()
                    .insert(context.call().id.clone(), context.attempt());
                Ok(ToolResult::text("done"))
            }
        },
    )
    .with_replay(replay)
}

fn result_of<'a>(messages: &'a [Message], id: &str) -> &'a golato::message::ToolResultMessage {
    messages
        .iter()
        .find_map(|message| match message {
            Message::ToolResult(result) if result.tool_call_id == id => Some(result),
            _ => None,
        })
        .unwrap()
}

#[test]
fn an_interrupted_call_of_a_once_tool_is_not_run_again_and_its_result_says_so() {
    let seen = Arc::new(Mutex::new(HashMap::new()));
    // A tool's class is `once` unless it says otherwise.
    let tool = counted(Replay::Once, &seen);
    assert_eq!(
        Tool::new("x", "x", json!({"type": "object"}), |_, _: Value| async {
            Ok(ToolResult::text(""))
        })
        .replay(),
        Replay::Once
    );
    let agent = Agent::new(agent::Config {
        generator: Some(Arc::new(script())),
        tools: vec![tool],
        ..Default::default()
    })
    .unwrap();
    let journal = Arc::new(Retrying {
        inner: MemoryJournal::new(),
        retried: "c",
    });
    let (events, outcome) = collect(agent.start_journaled(prompt("go"), journal.clone()));
    let outcome = outcome.unwrap();
    // c never ran; the others ran once, and the run went on to its answer.
    let seen = seen.lock().unwrap().clone();
    assert!(!seen.contains_key("c"), "{seen:?}");
    assert_eq!(seen.len(), 3);
    assert_eq!(outcome.final_message.text(), "all done");
    let c = result_of(&outcome.messages, "c");
    assert!(c.is_error);
    assert_eq!(c.attempt, Some(3));
    let text = c.text();
    assert!(text.contains("interrupted"), "{text}");
    assert!(text.contains("attempt 3"), "{text}");
    assert!(
        text.contains("check what it did before repeating it"),
        "{text}"
    );
    let details = c.details.as_ref().unwrap();
    assert_eq!(
        details["interrupted"],
        json!({"attempt": 3, "replay": "once"})
    );
    // The result was recorded: a replay on the same journal gives it without a fourth attempt.
    let ended = events.iter().find_map(|event| match event {
        agent::Event::ToolExecutionEnd(end) if end.call.id == "c" => Some(end.result.clone()),
        _ => None,
    });
    assert_eq!(ended.as_ref(), Some(c));
    let again = agent.start_journaled(prompt("go"), journal).wait().unwrap();
    assert_eq!(result_of(&again.messages, "c"), c);
}

#[test]
fn a_rule_makes_single_calls_of_a_once_tool_safe_to_run_again() {
    for (rule, runs_again) in [(Some("work"), true), (Some("read"), false), (None, false)] {
        let seen = Arc::new(Mutex::new(HashMap::new()));
        let mut safe = golato::journal::SafeToReplay::new(std::env::temp_dir());
        if let Some(rule) = rule {
            safe.add(rule, golato::policy::Source::flag("test"))
                .unwrap();
        }
        let agent = Agent::new(agent::Config {
            generator: Some(Arc::new(script())),
            tools: vec![counted(Replay::Once, &seen)],
            safe_to_replay: safe,
            ..Default::default()
        })
        .unwrap();
        let journal = Arc::new(Retrying {
            inner: MemoryJournal::new(),
            retried: "c",
        });
        let outcome = agent.start_journaled(prompt("go"), journal).wait().unwrap();
        let c = result_of(&outcome.messages, "c");
        assert_eq!(c.attempt, Some(3));
        match runs_again {
            true => {
                assert_eq!(seen.lock().unwrap().get("c"), Some(&3), "{rule:?}");
                assert!(!c.is_error && c.text() == "done", "{rule:?}");
            }
            false => {
                assert_eq!(seen.lock().unwrap().get("c"), None, "{rule:?}");
                assert!(c.is_error, "{rule:?}");
            }
        }
    }
}

#[test]
fn a_journal_records_the_steering_a_run_took_and_a_replay_takes_the_same() {
    let (started, is_started) = std::sync::mpsc::channel();
    let release = Arc::new(tokio::sync::Notify::new());
    let tool = {
        let release = Arc::clone(&release);
        let started = Mutex::new(started);
        Tool::new(
            "work",
            "Does some work.",
            json!({"type": "object", "properties": {"id": {"type": "string"}}}),
            move |_, _: Value| {
                let release = Arc::clone(&release);
                let _ = started.lock().unwrap().send(());
                async move {
                    release.notified().await;
                    Ok(ToolResult::text("done"))
                }
            },
        )
    };
    let generator = Counting::new(Scripted::new([
        AssistantMessage::with_tool_calls([work_call("a")]),
        AssistantMessage::with_text("steered"),
    ]));
    let agent = Agent::new(agent::Config {
        generator: Some(Arc::clone(&generator) as Arc<dyn Generator>),
        tools: vec![tool],
        ..Default::default()
    })
    .unwrap();
    let journal = Arc::new(MemoryJournal::new());
    let run = agent.start_journaled(prompt("go"), journal.clone());
    is_started.recv().unwrap();
    run.steer(golato::message::UserMessage::new("look at b too"))
        .unwrap();
    release.notify_one();
    let first = run.wait().unwrap();
    let user_texts = |messages: &[Message]| -> Vec<String> {
        messages
            .iter()
            .filter_map(|message| match message {
                Message::User(user) => Some(user.text()),
                _ => None,
            })
            .collect()
    };
    assert_eq!(user_texts(&first.messages), ["go", "look at b too"]);
    assert!(journal.keys().contains(&"turn-1/inbox".to_owned()));

    // Picked up again on the journal, nobody steering: the recorded steering joins at the same
    // place, and nothing is asked or run again.
    let again = agent.start_journaled(prompt("go"), journal).wait().unwrap();
    assert_eq!(again.messages, first.messages);
    assert_eq!((generator.asked(1), generator.asked(2)), (1, 1));

    // The same from the transcript alone.
    let from_transcript = Arc::new(MemoryJournal::from_transcript(&first.messages));
    let resumed = agent
        .start_journaled(prompt("go"), from_transcript)
        .wait()
        .unwrap();
    assert_eq!(resumed.messages, first.messages);
    assert_eq!((generator.asked(1), generator.asked(2)), (1, 1));
}

/// What a call spends for its run (a subagent's tokens) is recorded with its result: a run
/// picked up from the journal counts it once more without running the call, so its usage and
/// cost are the same as the first time (and its budget sees them).
#[test]
fn what_a_call_spent_is_counted_again_when_its_result_is_replayed() {
    use golato::message::Usage;
    let runs = Arc::new(Mutex::new(0));
    let counted = Arc::clone(&runs);
    let spender = Tool::new(
        "spend",
        "Spends for the run.",
        json!({"type": "object"}),
        move |ctx: golato::tool::ToolContext, _: Value| {
            let counted = Arc::clone(&counted);
            async move {
                *counted.lock().unwrap() += 1;
                let usage = Usage {
                    input_tokens: 1_000,
                    output_tokens: 200,
                    ..Default::default()
                };
                ctx.spend(&usage, Some(0.25));
                Ok(ToolResult::text("spent"))
            }
        },
    );
    let agent = Agent::new(agent::Config {
        generator: Some(Arc::new(Scripted::new([
            AssistantMessage::with_tool_calls([call("s", "spend", "{}")]),
            AssistantMessage::with_text("done"),
        ]))),
        // Priced, so the run's cost is known (the script's answers use no tokens).
        model: golato::generator::Model::new("priced").with_price(
            golato::generator::Price::known(golato::generator::known_models().next().unwrap())
                .unwrap(),
        ),
        tools: vec![spender],
        ..Default::default()
    })
    .unwrap();
    let journal = Arc::new(MemoryJournal::new());
    let spent_of = |events: &[agent::Event]| {
        events.iter().find_map(|event| match event {
            agent::Event::RunEnd(end) => Some((end.usage.total_tokens(), end.cost)),
            _ => None,
        })
    };
    let (events, first) = collect(agent.start_journaled(prompt("go"), journal.clone()));
    first.unwrap();
    assert_eq!(spent_of(&events), Some((1_200, Some(0.25))));
    let record = journal
        .recorded(&StepKey::Call {
            turn: 1,
            call_id: "s".into(),
        })
        .unwrap();
    assert_eq!(record["step"]["spent"]["usage"]["input_tokens"], 1_000);

    let (events, again) = collect(agent.start_journaled(prompt("go"), journal));
    again.unwrap();
    assert_eq!(*runs.lock().unwrap(), 1, "the call ran again");
    assert_eq!(spent_of(&events), Some((1_200, Some(0.25))));
}

/// Asks nobody: counts the questions and refuses each, saying why.
struct Refusing(std::sync::atomic::AtomicUsize);

impl golato::policy::Approver for Refusing {
    fn default_decision(&self, _: &golato::hook::HookContext) -> golato::policy::Decision {
        golato::policy::Decision::Ask
    }

    fn ask(
        &self,
        _: golato::hook::HookContext,
        _: String,
    ) -> BoxFuture<'static, Result<golato::policy::Approval, String>> {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        futures::future::ready(Ok(golato::policy::Approval::Refuse {
            reason: Some("not today".to_owned()),
        }))
        .boxed()
    }
}

#[test]
fn a_journaled_runs_answers_are_recorded_and_never_asked_again() {
    let approver = Arc::new(Refusing(Default::default()));
    let (_session, watched) = tokio::sync::watch::channel(golato::policy::HookSession::default());
    let policy = Arc::new(golato::policy::CallPolicy::new());
    let ledger = Arc::new(Mutex::new(HashMap::new()));
    let agent = Agent::new(agent::Config {
        generator: Some(Arc::new(script())),
        tools: vec![ledger_tool(Arc::clone(&ledger))],
        hooks: vec![policy.hook(Some(approver.clone()), watched)],
        ..Default::default()
    })
    .unwrap();
    let journal = Arc::new(MemoryJournal::new());
    let first = agent
        .start_journaled(prompt("go"), journal.clone())
        .wait()
        .unwrap();
    let asked = || approver.0.load(std::sync::atomic::Ordering::SeqCst);
    assert_eq!(asked(), 4);
    assert!(ledger.lock().unwrap().is_empty(), "a refused call ran");
    let text = result_of(&first.messages, "c").text();
    assert!(text.contains("not today"), "{text}");
    assert!(journal.keys().contains(&"turn-1/approval-c".to_owned()));
    // Picked up again on the same journal: the same answers, nobody asked.
    let again = agent.start_journaled(prompt("go"), journal).wait().unwrap();
    assert_eq!(again.messages, first.messages);
    assert_eq!(asked(), 4);
}

/// A journal over `inner` that runs every call again (as a run picked up after its process
/// died before the calls' results were recorded), and starts hooks' steps it has no record of
/// as attempt `hook_attempt` (as after a process died during one).
#[derive(Debug)]
struct CallsLost {
    inner: Arc<MemoryJournal>,
    hook_attempt: u32,
}

impl Journal for CallsLost {
    fn step(&self, key: StepKey, work: StepWork) -> BoxFuture<'static, Result<Value, StepError>> {
        match &key {
            StepKey::Call { .. } => work
                .run()
                .map(|done| done.map_err(|_| StepError::NotRecorded))
                .boxed(),
            StepKey::Hook { .. } => {
                let attempt = self.hook_attempt;
                self.inner
                    .step(key, StepWork::new(work.run_attempt(attempt)))
            }
            _ => self.inner.step(key, work),
        }
    }
}

#[test]
fn a_hooks_step_is_done_once_replayed_after_and_knows_when_it_was_cut_short() {
    // The hook's step: a costly decision (counted), told which attempt it is.
    let decided = Arc::new(Mutex::new(Vec::new()));
    let hook = {
        let decided = Arc::clone(&decided);
        golato::hook::before(move |ctx| {
            let decided = Arc::clone(&decided);
            async move {
                let work = StepWork::with_attempt(move |attempt| async move {
                    decided.lock().unwrap().push(attempt);
                    Ok(json!({ "attempt": attempt }))
                });
                let value = ctx.step("verdict", work).await?;
                match value["attempt"].as_u64() {
                    Some(1) => Ok(golato::hook::BeforeToolCall::Run),
                    _ => Ok(golato::hook::BeforeToolCall::Block(
                        "cut short: not decided twice".into(),
                    )),
                }
            }
        })
    };
    let ledger = Arc::new(Mutex::new(HashMap::new()));
    let agent = Agent::new(agent::Config {
        generator: Some(Arc::new(Scripted::new([
            AssistantMessage::with_tool_calls([work_call("a")]),
            AssistantMessage::with_text("all done"),
        ]))),
        tools: vec![ledger_tool(Arc::clone(&ledger))],
        hooks: vec![hook],
        ..Default::default()
    })
    .unwrap();

    // Recorded once, under the call's turn and ID.
    let memory = Arc::new(MemoryJournal::new());
    let journal = Arc::clone(&memory) as Arc<dyn Journal>;
    let (_, first) = collect(agent.start_journaled(prompt("go"), journal));
    assert!(!result_of(&first.unwrap().messages, "a").is_error);
    let key = StepKey::Hook {
        turn: 1,
        call_id: "a".into(),
        name: "verdict".into(),
    };
    assert_eq!(key.to_string(), "turn-1/hook-verdict-a");
    assert!(memory.recorded(&key).is_some());
    assert_eq!(*decided.lock().unwrap(), [1]);

    // Picked up with the call lost: the call runs again, its hook's decision is replayed.
    let again = Arc::new(CallsLost {
        inner: Arc::clone(&memory),
        hook_attempt: 2,
    });
    let (_, second) = collect(agent.start_journaled(prompt("go"), again));
    assert!(!result_of(&second.unwrap().messages, "a").is_error);
    assert_eq!(*decided.lock().unwrap(), [1], "not decided again");
    assert_eq!(ledger.lock().unwrap()["a"], 2);

    // With no record of the step, started again after it was cut short: it knows.
    let cut = Arc::new(CallsLost {
        inner: Arc::new(MemoryJournal::new()),
        hook_attempt: 2,
    });
    let (_, third) = collect(agent.start_journaled(prompt("go"), cut));
    let third = third.unwrap();
    let refused = result_of(&third.messages, "a");
    assert!(refused.is_error && refused.text().contains("not decided twice"));
    assert_eq!(*decided.lock().unwrap(), [1, 2]);

    // Without a journal it simply runs, as the first attempt.
    let plain = agent.start(prompt("go")).wait().unwrap();
    assert!(!result_of(&plain.messages, "a").is_error);
    assert_eq!(*decided.lock().unwrap(), [1, 2, 1]);
}
