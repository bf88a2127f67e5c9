//! The built-in `bash` tool through the whole pipeline.

use crate::support;

use std::time::Duration;

use golato::agent::Event;
use golato::builtin;
use golato::tool::Tool;
use pretty_assertions::assert_eq;
use serde_json::json;
use support::*;

fn tools_in(dir: &std::path::Path) -> Vec<Tool> {
    builtin::new(builtin::Config {
        working_directory: dir.into(),
        allowed_tool_names: Some(vec!["bash".into()]),
        ..Default::default()
    })
    .unwrap()
}

fn bash(dir: &std::path::Path, arguments: serde_json::Value) -> golato::message::ToolResultMessage {
    call_tool(&tools_in(dir), "bash", &arguments.to_string())
}

#[test]
fn combines_stdout_and_stderr_in_order_in_the_working_directory() {
    let dir = tempfile::tempdir().unwrap();
    let result = bash(
        dir.path(),
        json!({"command": "echo out; echo err >&2; echo out2; pwd; cat"}),
    );
    assert!(!result.is_error, "{}", result.text());
    let canonical = dir.path().canonicalize().unwrap();
    assert_eq!(
        result.text(),
        format!("out\nerr\nout2\n{}", canonical.display())
    );
    assert_eq!(result.details.unwrap()["exit_code"], 0);
}

#[test]
fn a_non_zero_exit_is_an_error_result_with_the_code() {
    let dir = tempfile::tempdir().unwrap();
    let result = bash(dir.path(), json!({"command": "echo failing; exit 3"}));
    assert!(result.is_error);
    assert_eq!(result.text(), "failing\n\nCommand exited with code 3");
    let quiet = bash(dir.path(), json!({"command": "true"}));
    assert_eq!(quiet.text(), "(no output)");
}

#[test]
fn long_output_keeps_the_tail_and_saves_the_whole() {
    let dir = tempfile::tempdir().unwrap();
    let result = bash(dir.path(), json!({"command": "seq 1 5000"}));
    let text = result.text();
    assert!(text.starts_with("3001\n3002\n"), "{}", &text[..40]);
    let notice = text.rsplit("\n\n").next().unwrap();
    assert!(
        notice.starts_with("[Showing lines 3001-5000 of 5000. Full output: "),
        "{notice}"
    );
    let path = notice
        .trim_start_matches("[Showing lines 3001-5000 of 5000. Full output: ")
        .trim_end_matches(']');
    let full = std::fs::read_to_string(path).unwrap();
    let expected: String = (1..=5000).map(|i| format!("{i}\n")).collect();
    assert_eq!(full, expected);
    // Output may hold secrets: only the owner may read the file.
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(path).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600);
    std::fs::remove_file(path).unwrap();
}

#[test]
fn a_cut_always_says_so_even_when_the_last_line_has_no_newline() {
    let dir = tempfile::tempdir().unwrap();
    // 2,001 lines, the last without a newline: one line over the limit, few bytes.
    let result = bash(dir.path(), json!({"command": "seq 2001 | head -c -1"}));
    let text = result.text();
    let notice = text.rsplit("\n\n").next().unwrap();
    let prefix = "[Showing lines 2-2001 of 2001. Full output: ";
    assert!(notice.starts_with(prefix), "{notice}");
    let path = notice.trim_start_matches(prefix).trim_end_matches(']');
    let full = std::fs::read_to_string(path).unwrap();
    let expected: Vec<String> = (1..=2001).map(|i| i.to_string()).collect();
    assert_eq!(full, expected.join("\n"));
    std::fs::remove_file(path).unwrap();
}

fn process_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // A zombie is dead; only its exit status waits to be collected.
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

fn wait_until_gone(pid: u32) -> bool {
    let started = std::time::Instant::now();
    while started.elapsed() < HANG_GUARD {
        if process_gone(pid) {
            return true;
        }
        std::thread::yield_now();
    }
    false
}

#[test]
fn a_timeout_kills_the_whole_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let result = bash(
        dir.path(),
        json!({"command": "sleep 300 & echo $! > grandchild.pid; sleep 300", "timeout": 0.5}),
    );
    assert!(result.is_error);
    assert!(
        result
            .text()
            .ends_with("Command timed out after 0.5 seconds"),
        "{}",
        result.text()
    );
    let pid: u32 = std::fs::read_to_string(dir.path().join("grandchild.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        wait_until_gone(pid),
        "the grandchild {pid} survived the timeout"
    );
}

#[test]
fn cancelling_the_run_aborts_the_command_and_kills_its_group() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("grandchild.pid");
    let command = "sleep 300 & echo $! > grandchild.pid; echo started; sleep 300";
    let agent = agent_with(
        script(vec![call(
            "b",
            "bash",
            &json!({"command": command}).to_string(),
        )]),
        tools_in(dir.path()),
    );
    let run = agent.start(prompt("go"));
    // Cancel once the command has printed (an update carries its output).
    for event in run.events() {
        if let Event::ToolExecutionUpdate(update) = &event {
            if update.partial_result.text_content().contains("started") {
                run.cancel();
            }
        }
        if let Event::ToolExecutionEnd(end) = &event {
            assert!(
                end.result.text().ends_with("Command aborted"),
                "{}",
                end.result.text()
            );
        }
    }
    assert!(run.wait().is_err());
    let pid: u32 = std::fs::read_to_string(pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        wait_until_gone(pid),
        "the grandchild {pid} survived the cancellation"
    );
}

#[test]
fn a_background_child_holding_the_pipe_does_not_hang_the_tool() {
    let dir = tempfile::tempdir().unwrap();
    // Were the tool to wait for the pipe, this would take 100 s, past the hang guard.
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let path = dir.path().to_owned();
    std::thread::spawn(move || {
        let result = bash(&path, json!({"command": "sleep 100 & echo done"}));
        let _ = done_tx.send(result);
    });
    let result = done_rx
        .recv_timeout(HANG_GUARD)
        .expect("bash returned after the shell exited");
    assert_eq!(result.text(), "done");
}

#[test]
fn invalid_timeouts_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let zero = bash(dir.path(), json!({"command": "true", "timeout": 0}));
    assert!(
        zero.is_error && zero.text().contains("timeout must be a positive number"),
        "{}",
        zero.text()
    );
    let negative = bash(dir.path(), json!({"command": "true", "timeout": -1}));
    assert!(
        negative.is_error && negative.text().contains("/timeout"),
        "{}",
        negative.text()
    );
    let text = bash(dir.path(), json!({"command": "true", "timeout": "soon"}));
    assert!(
        text.is_error && text.text().contains("/timeout"),
        "{}",
        text.text()
    );
    // Too long to be represented: refused before anything starts.
    for huge in [1e300, 9.3e18] {
        let result = bash(
            dir.path(),
            json!({"command": "touch started", "timeout": huge}),
        );
        assert!(
            result.is_error && result.text().contains("too long"),
            "{huge}: {}",
            result.text()
        );
        assert!(!dir.path().join("started").exists(), "{huge}: bash ran");
    }
}

#[test]
fn progress_updates_carry_the_tail_and_are_throttled() {
    let dir = tempfile::tempdir().unwrap();
    // The command prints 200 lines as fast as it can, then a line every ~0.25 s.
    let command = "seq 1 200; for i in 1 2 3; do sleep 0.25; echo tick $i; done";
    let agent = agent_with(
        script(vec![call(
            "b",
            "bash",
            &json!({"command": command}).to_string(),
        )]),
        tools_in(dir.path()),
    );
    let (events, outcome) = collect(agent.start(prompt("go")));
    outcome.unwrap();
    let updates = update_texts(&events);
    assert!(!updates.is_empty(), "no progress update");
    assert!(
        updates.len() <= 8,
        "{} updates for about 0.75 s of output",
        updates.len()
    );
    assert!(
        updates.iter().any(|update| update.contains("tick")),
        "{updates:?}"
    );
    let _ = Duration::ZERO;
}

/// The names of the variables a command sees.
fn variable_names(tools: &[Tool]) -> Vec<String> {
    let result = call_tool(tools, "bash", &json!({"command": "env -0"}).to_string());
    assert!(!result.is_error, "{}", result.text());
    let mut names: Vec<String> = result
        .text()
        .split('\0')
        .filter_map(|entry| entry.split_once('=').map(|(name, _)| name.to_owned()))
        .collect();
    names.sort();
    names
}

#[test]
fn commands_inherit_the_environment_unless_given_one() {
    let dir = tempfile::tempdir().unwrap();
    // Cargo sets it for every test process.
    assert!(std::env::var_os("CARGO_PKG_NAME").is_some());
    let inherited = variable_names(&tools_in(dir.path()));
    assert!(
        inherited.contains(&"CARGO_PKG_NAME".to_owned()),
        "{inherited:?}"
    );

    let explicit = builtin::new(builtin::Config {
        working_directory: dir.path().into(),
        allowed_tool_names: Some(vec!["bash".into()]),
        bash_environment: Some(vec![
            ("PATH".into(), std::env::var("PATH").unwrap()),
            ("GOLATO_ONLY".into(), "yes".into()),
        ]),
        ..Default::default()
    })
    .unwrap();
    // What was given, what bash itself sets (PWD, SHLVL, _) and the call's mark (which finds
    // its processes again at a timeout) and who is asking (the call and its attempt), nothing
    // inherited.
    assert_eq!(
        variable_names(&explicit),
        [
            "GOLATO_BASH_CALL",
            "GOLATO_ONLY",
            "GOLATO_TOOL_ATTEMPT",
            "GOLATO_TOOL_CALL_ID",
            "PATH",
            "PWD",
            "SHLVL",
            "_"
        ]
    );
}

/// Starts `command` through an agent, cancels the run once the command printed `ready`, and
/// returns the call's result.
fn cancel_when_ready(dir: &std::path::Path, command: &str) -> golato::message::ToolResultMessage {
    let agent = agent_with(
        script(vec![call(
            "b",
            "bash",
            &json!({"command": command}).to_string(),
        )]),
        tools_in(dir),
    );
    let run = agent.start(prompt("go"));
    let mut result = None;
    for event in run.events() {
        if let Event::ToolExecutionUpdate(update) = &event {
            if update.partial_result.text_content().contains("ready") {
                run.cancel();
            }
        }
        if let Event::ToolExecutionEnd(end) = event {
            result = Some(end.result);
        }
    }
    assert!(run.wait().is_err());
    result.unwrap()
}

fn pid_in(dir: &std::path::Path, name: &str) -> u32 {
    std::fs::read_to_string(dir.join(name))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn a_cancellation_kills_jobs_and_daemons_that_left_the_process_group() {
    // Issue 21 item 14: a job started under `set -m` (its own group) and a `setsid` daemon (its
    // own session) both outlived the call. Each writes its pid, renamed into place, before the
    // command says it is ready.
    let dir = tempfile::tempdir().unwrap();
    let command = "set -m; \
        bash -c 'echo $$ > job.tmp; mv job.tmp job.pid; exec sleep 1000' & \
        setsid bash -c 'echo $$ > daemon.tmp; mv daemon.tmp daemon.pid; exec sleep 1000' & \
        while [ ! -e job.pid ] || [ ! -e daemon.pid ]; do sleep 0.01; done; \
        echo ready; wait";
    let result = cancel_when_ready(dir.path(), command);
    let text = result.text();
    assert!(text.ends_with("Command aborted"), "{text}");
    let (job, daemon) = (
        pid_in(dir.path(), "job.pid"),
        pid_in(dir.path(), "daemon.pid"),
    );
    assert!(wait_until_gone(job), "the set -m job {job} survived");
    assert!(
        wait_until_gone(daemon),
        "the setsid daemon {daemon} survived"
    );
    // The result names what was killed.
    assert!(text.contains("Killed everything it had started"), "{text}");
    for pid in [job, daemon] {
        assert!(text.contains(&format!("sleep ({pid})")), "{text}");
    }
    let killed = result.details.as_ref().unwrap()["killed"]
        .as_array()
        .unwrap();
    assert!(killed.len() >= 3, "{killed:?}");
}

#[test]
fn a_timeout_kills_a_daemon_too() {
    let dir = tempfile::tempdir().unwrap();
    let result = bash(
        dir.path(),
        json!({"command": "setsid bash -c 'echo $$ > d.tmp; mv d.tmp d.pid; exec sleep 1000' & sleep 1000", "timeout": 1}),
    );
    assert!(
        result.text().ends_with("Command timed out after 1 seconds"),
        "{}",
        result.text()
    );
    let daemon = pid_in(dir.path(), "d.pid");
    assert!(wait_until_gone(daemon), "the daemon {daemon} survived");
}

#[test]
fn the_full_output_file_stops_at_its_limit_and_says_so() {
    // Issue 21 item 9: a flood without newlines filled TMPDIR (1.67 GiB in 5 s).
    let dir = tempfile::tempdir().unwrap();
    let tools = builtin::new(builtin::Config {
        working_directory: dir.path().into(),
        allowed_tool_names: Some(vec!["bash".into()]),
        bash_output_file_limit: Some(100_000),
        ..Default::default()
    })
    .unwrap();
    let result = call_tool(
        &tools,
        "bash",
        &json!({"command": "head -c 1000000 /dev/zero | tr '\\0' x"}).to_string(),
    );
    let details = result.details.clone().unwrap();
    assert_eq!(details["total_bytes"], 1_000_000);
    assert_eq!(details["full_output_cut"], true);
    let path = details["full_output_path"].as_str().unwrap();
    assert_eq!(std::fs::metadata(path).unwrap().len(), 100_000);
    assert!(
        result.text().contains("its first 100000 of 1000000 bytes"),
        "{}",
        result.text()
    );
    std::fs::remove_file(path).unwrap();
    assert_eq!(builtin::DEFAULT_BASH_OUTPUT_FILE_LIMIT, 64 * 1024 * 1024);
}

#[test]
fn commands_know_their_call_and_attempt() {
    let dir = tempfile::tempdir().unwrap();
    let result = bash(
        dir.path(),
        serde_json::json!({"command": "echo \"$GOLATO_TOOL_CALL_ID $GOLATO_TOOL_ATTEMPT ${GOLATO_RUN_KEY-none}\""}),
    );
    // A run without a journal: the first attempt, no run key.
    assert!(result.text().ends_with(" 1 none"), "{}", result.text());
}
