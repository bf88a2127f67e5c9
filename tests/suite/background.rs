//! Background commands through the library: `bash` with `"background": true`, `bash_output`,
//! `bash_kill`, the cap, and the hostile ones (floods, fork storms, closed output, SIGTERM
//! ignored, a model starting 10,000), each checked from outside for processes left behind.

use crate::support;

use std::time::Duration;

use golato::builtin::{self, Background};
use golato::message::ToolResultMessage;
use golato::tool::Tool;
use serde_json::json;
use support::*;

fn tools(dir: &std::path::Path, background: &Background) -> Vec<Tool> {
    tools_with(dir, background, None)
}

fn tools_with(dir: &std::path::Path, background: &Background, log_limit: Option<u64>) -> Vec<Tool> {
    builtin::new(builtin::Config {
        working_directory: dir.into(),
        allowed_tool_names: Some(vec![
            "bash".into(),
            "bash_output".into(),
            "bash_kill".into(),
        ]),
        background: Some(background.clone()),
        bash_output_file_limit: log_limit,
        ..Default::default()
    })
    .unwrap()
}

fn run(tools: &[Tool], name: &str, arguments: serde_json::Value) -> ToolResultMessage {
    call_tool(tools, name, &arguments.to_string())
}

/// A marker only this test's processes carry, to find them from outside.
fn marker() -> String {
    format!("GOLATO_BACKGROUND_TEST={}", uuid_like())
}

fn uuid_like() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(
        "{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Waits (bounded) until no live process carries `marker`; panics naming them if some stay.
fn assert_all_gone(marker: &str) {
    for _ in 0..2_000 {
        if processes_with(marker).is_empty() {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    panic!("processes still alive: {:?}", processes_with(marker));
}

fn id_of(result: &ToolResultMessage) -> u64 {
    result.details.as_ref().unwrap()["background"]["id"]
        .as_u64()
        .unwrap_or_else(|| panic!("no ID in {:?}", result.details))
}

#[test]
fn a_background_command_returns_at_once_is_read_later_and_is_killed_with_its_tree() {
    let dir = tempfile::tempdir().unwrap();
    let background = Background::new(4);
    let tools = tools(dir.path(), &background);
    let marker = marker();
    // A server-like command: prints, starts a child that outlives the shell's foreground, and
    // goes on printing when asked to.
    let started = run(
        &tools,
        "bash",
        json!({"command": format!("export {marker}; echo ready; sleep 1000 & touch go; while [ ! -e more ]; do sleep 0.01; done; echo second; wait"), "background": true}),
    );
    assert!(!started.is_error, "{}", started.text());
    let id = id_of(&started);
    assert!(
        started
            .text()
            .starts_with(&format!("Started in the background as {id}: export")),
        "{}",
        started.text()
    );
    assert_eq!(
        started.details.as_ref().unwrap()["background"]["started"],
        true
    );
    wait_for_file(&dir.path().join("go"));
    let listed = background.list();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].ended, None);
    assert!(!processes_with(&marker).is_empty());

    // The next read waits for the pattern the command prints once told to.
    std::fs::write(dir.path().join("more"), "").unwrap();
    let read = run(
        &tools,
        "bash_output",
        json!({"id": id, "pattern": "^second$", "wait": 60}),
    );
    assert!(!read.is_error, "{}", read.text());
    assert!(read.text().contains("second"), "{}", read.text());
    assert!(
        !read.text().contains("ready"),
        "read twice: {}",
        read.text()
    );
    assert!(read.text().contains("is still running"), "{}", read.text());
    assert_eq!(
        read.details.as_ref().unwrap()["background"]["running"],
        true
    );

    // `since` reads from the start again.
    let again = run(&tools, "bash_output", json!({"id": id, "since": 0}));
    assert!(
        again.text().starts_with("ready\nsecond"),
        "{}",
        again.text()
    );

    let killed = run(&tools, "bash_kill", json!({"id": id}));
    assert!(killed.text().contains("was ended"), "{}", killed.text());
    assert_all_gone(&marker);
    assert!(background.list()[0].ended.is_some());
    assert_eq!(background.running(), 0);
}

#[test]
fn its_end_and_exit_code_are_reported_and_a_wait_without_pattern_waits_for_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let background = Background::new(4);
    let tools = tools(dir.path(), &background);
    let started = run(
        &tools,
        "bash",
        json!({"command": "while [ ! -e end ]; do sleep 0.01; done; echo bye; exit 3", "background": true}),
    );
    let id = id_of(&started);
    let early = run(&tools, "bash_output", json!({"id": id}));
    assert!(early.text().contains("(no new output)"), "{}", early.text());
    std::fs::write(dir.path().join("end"), "").unwrap();
    let ended = run(&tools, "bash_output", json!({"id": id, "wait": 60}));
    assert!(ended.text().starts_with("bye"), "{}", ended.text());
    assert!(
        ended.text().contains("exited with code 3"),
        "{}",
        ended.text()
    );
    let details = &ended.details.as_ref().unwrap()["background"];
    assert_eq!(details["exit_code"], 3);
    assert_eq!(details["running"], false);
    // Killing an ended one says so.
    let late = run(&tools, "bash_kill", json!({"id": id}));
    assert!(
        late.text().starts_with(&format!("{id} had already ended")),
        "{}",
        late.text()
    );
}

#[test]
fn unknown_ids_bad_patterns_and_a_set_without_bash_output_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let background = Background::new(4);
    let tools = tools(dir.path(), &background);
    let unknown = run(&tools, "bash_output", json!({"id": 42}));
    assert!(unknown.is_error);
    assert!(
        unknown.text().contains("there is no background command 42"),
        "{}",
        unknown.text()
    );
    let started = run(
        &tools,
        "bash",
        json!({"command": "true", "background": true}),
    );
    let id = id_of(&started);
    let bad = run(&tools, "bash_output", json!({"id": id, "pattern": "("}));
    assert!(bad.is_error);
    assert!(
        bad.text().contains("is not a regular expression"),
        "{}",
        bad.text()
    );
    let unknown = run(&tools, "bash_kill", json!({"id": 7}));
    assert!(
        unknown
            .text()
            .contains(&format!("this session's are: {id} (")),
        "{}",
        unknown.text()
    );

    let plain = builtin::new(builtin::Config {
        working_directory: dir.path().into(),
        allowed_tool_names: Some(vec!["bash".into()]),
        ..Default::default()
    })
    .unwrap();
    let refused = run(
        &plain,
        "bash",
        json!({"command": "true", "background": true}),
    );
    assert!(refused.is_error);
    assert!(
        refused
            .text()
            .contains("background commands are not offered here"),
        "{}",
        refused.text()
    );
}

#[test]
fn past_the_cap_every_start_is_refused_with_a_clear_result_even_ten_thousand_of_them() {
    let dir = tempfile::tempdir().unwrap();
    let background = Background::new(2);
    let tools = tools(dir.path(), &background);
    let marker = marker();
    for _ in 0..2 {
        let started = run(
            &tools,
            "bash",
            json!({"command": format!("export {marker}; sleep 1000"), "background": true}),
        );
        assert!(!started.is_error, "{}", started.text());
    }
    // One batch of 10,000 starts, as a model in a loop would send them.
    let calls: Vec<_> = (0..10_000)
        .map(|index| {
            call(
                &format!("start-{index}"),
                "bash",
                &json!({"command": format!("export {marker}; echo should-not-run"), "background": true}).to_string(),
            )
        })
        .collect();
    let agent = agent_with(script(calls), tools.clone());
    let result = agent.start(prompt("go")).wait().unwrap();
    let results = transcript_results(&result.messages);
    assert_eq!(results.len(), 10_000);
    for result in &results {
        assert!(result.is_error);
        assert!(
            result
                .text()
                .contains("not started: at most 2 background commands run at once in this session, and 2 do (IDs: 1, 2)"),
            "{}",
            result.text()
        );
    }
    assert_eq!(background.running(), 2);
    assert_eq!(background.list().len(), 2);
    drop((tools, agent, background));
    assert_all_gone(&marker);
}

#[test]
fn dropping_the_tool_set_kills_every_background_command() {
    let dir = tempfile::tempdir().unwrap();
    let background = Background::new(4);
    let tools = tools(dir.path(), &background);
    let marker = marker();
    for _ in 0..3 {
        run(
            &tools,
            "bash",
            json!({"command": format!("export {marker}; setsid sleep 1000 & sleep 1000"), "background": true}),
        );
    }
    assert!(
        processes_with(&marker).len() >= 6,
        "{:?}",
        processes_with(&marker)
    );
    drop(tools);
    // The application's handle still holds them.
    assert!(!processes_with(&marker).is_empty());
    drop(background);
    assert_all_gone(&marker);
}

#[test]
fn a_flood_keeps_memory_bounded_and_the_log_stops_at_its_limit() {
    let dir = tempfile::tempdir().unwrap();
    let background = Background::new(4);
    let limit = 4 * 1024 * 1024;
    let tools = tools_with(dir.path(), &background, Some(limit));
    // 64 MiB of output, far past the ring and the log's limit.
    let started = run(
        &tools,
        "bash",
        json!({"command": "head -c 67108864 /dev/zero | tr '\\0' x; echo; echo flood-over", "background": true}),
    );
    let id = id_of(&started);
    let read = run(
        &tools,
        "bash_output",
        json!({"id": id, "since": 0, "wait": 120}),
    );
    let text = read.text();
    assert!(
        text.contains("flood-over"),
        "{}",
        &text[text.len().saturating_sub(300)..]
    );
    assert!(
        text.contains("are no longer kept in memory (the last 256 KiB are)"),
        "{}",
        &text[text.len().saturating_sub(600)..]
    );
    assert!(text.contains("exited with code 0"));
    // A read shows at most 50 KiB and the notes.
    assert!(text.len() < 52 * 1024, "{}", text.len());
    let log = background.list()[0].log.clone().unwrap();
    assert_eq!(std::fs::metadata(&log).unwrap().len(), limit);
    assert!(
        text.contains("stopped at its limit of 4194304 bytes"),
        "{}",
        &text[text.len().saturating_sub(600)..]
    );
    std::fs::remove_file(log).unwrap();
}

#[test]
fn a_command_that_ignores_sigterm_is_killed_after_the_grace_with_its_thousand_children() {
    let dir = tempfile::tempdir().unwrap();
    let background = Background::new(4);
    let tools = tools(dir.path(), &background);
    let marker = marker();
    // SIGTERM ignored (and inherited as ignored by every child), a thousand children, and its
    // output closed: nothing it prints tells that it still runs.
    let started = run(
        &tools,
        "bash",
        json!({"command": format!("export {marker}; trap '' TERM; for i in $(seq 1000); do sleep 1000 & done; echo forked; exec >&- 2>&-; wait"), "background": true}),
    );
    let id = id_of(&started);
    let read = run(
        &tools,
        "bash_output",
        json!({"id": id, "since": 0, "pattern": "forked", "wait": 120}),
    );
    assert!(read.text().contains("forked"), "{}", read.text());
    // Output closed, still running.
    let quiet = run(&tools, "bash_output", json!({"id": id}));
    assert!(
        quiet.text().contains("is still running"),
        "{}",
        quiet.text()
    );
    let alive = processes_with(&marker).len();
    assert!(alive >= 1000, "{alive}");
    let killed = run(&tools, "bash_kill", json!({"id": id}));
    assert!(
        killed
            .text()
            .contains("was ended: SIGTERM, then SIGKILL after 3 s (1001 processes"),
        "{}",
        killed.text()
    );
    assert_all_gone(&marker);
}

/// A journal naming its run, as a durable run's does.
#[derive(Debug)]
struct Durable(golato::journal::MemoryJournal);

impl golato::journal::Journal for Durable {
    fn step(
        &self,
        key: golato::journal::StepKey,
        work: golato::journal::StepWork,
    ) -> futures::future::BoxFuture<'static, Result<serde_json::Value, golato::journal::StepError>>
    {
        self.0.step(key, work)
    }

    fn run_key(&self) -> Option<&str> {
        Some("durable-run")
    }
}

#[test]
fn a_durable_run_refuses_background_commands_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let background = Background::new(4);
    let tools = tools(dir.path(), &background);
    let agent = agent_with(
        script(vec![call(
            "c",
            "bash",
            &json!({"command": "touch started", "background": true}).to_string(),
        )]),
        tools,
    );
    let journal = std::sync::Arc::new(Durable(golato::journal::MemoryJournal::new()));
    let (_, outcome) = collect(agent.start_journaled(prompt("go"), journal));
    let result = transcript_results(&outcome.unwrap().messages).remove(0);
    assert!(result.is_error);
    assert!(
        result
            .text()
            .contains("background commands are not available in a durable run: a process cannot outlive the worker"),
        "{}",
        result.text()
    );
    assert!(!dir.path().join("started").exists());
    assert!(background.list().is_empty());
}

#[test]
fn a_pattern_that_does_not_come_is_said_after_the_wait() {
    let dir = tempfile::tempdir().unwrap();
    let background = Background::new(4);
    let tools = tools(dir.path(), &background);
    let started = run(
        &tools,
        "bash",
        json!({"command": "echo one; sleep 1000", "background": true}),
    );
    let id = id_of(&started);
    let read = run(
        &tools,
        "bash_output",
        json!({"id": id, "pattern": "never", "wait": 0.2}),
    );
    assert!(!read.is_error);
    assert!(
        read.text()
            .contains("\"never\" did not appear within 0.2 s"),
        "{}",
        read.text()
    );
    assert!(read.text().contains("is still running"), "{}", read.text());
    run(&tools, "bash_kill", json!({"id": id}));
}

#[test]
fn a_pattern_after_a_flood_is_found_in_what_the_ring_still_holds() {
    let dir = tempfile::tempdir().unwrap();
    let background = Background::new(4);
    let tools = tools_with(dir.path(), &background, Some(1024 * 1024));
    let started = run(
        &tools,
        "bash",
        json!({"command": "sleep 0.5; head -c 200000000 /dev/zero | tr '\\0' x; echo; echo FOUND-IT; sleep 1000", "background": true}),
    );
    let id = id_of(&started);
    let read = run(
        &tools,
        "bash_output",
        json!({"id": id, "pattern": "^FOUND-IT$", "wait": 120}),
    );
    let text = read.text();
    assert!(
        text.contains("FOUND-IT"),
        "{}",
        &text[text.len().saturating_sub(400)..]
    );
    assert!(
        !text.contains("did not appear"),
        "{}",
        &text[text.len().saturating_sub(400)..]
    );
    assert!(text.contains("is still running"));
    let log = background.list()[0].log.clone().unwrap();
    run(&tools, "bash_kill", json!({"id": id}));
    std::fs::remove_file(log).unwrap();
}
