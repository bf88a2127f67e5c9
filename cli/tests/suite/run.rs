//! `golato run`, driven through the built binary: its flags, `--json`, record and replay, usage
//! errors and real-provider settings against a loopback server.

use crate::support;

use std::collections::HashMap;

use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use support::cli::*;

fn bash_call(id: &str, command: &str) -> Value {
    json!({"id": id, "name": "bash", "arguments": {"command": command}})
}

/// Two bash calls in one batch, then an answer.
fn two_calls_script(dir: &std::path::Path) -> std::path::PathBuf {
    script_file(
        dir,
        "script.jsonl",
        &[
            json!({"text": "Looking.", "tool_calls": [bash_call("a", "echo one"), bash_call("b", "echo two")]}),
            json!({"text": "Both ran."}),
        ],
    )
}

fn run_json(dir: &std::path::Path, script: &std::path::Path, extra: &[&str]) -> Vec<Value> {
    let mut flags = vec!["--json"];
    flags.extend_from_slice(extra);
    let output = run_script(dir, script, &flags);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    json_lines(&output)
}

/// The `(type, call id)` of each tool line, in order.
fn tool_order(lines: &[Value]) -> Vec<(String, String)> {
    lines
        .iter()
        .filter(|line| line["type"] == "tool_start" || line["type"] == "tool_end")
        .map(|line| {
            let id = if line["type"] == "tool_start" {
                &line["call"]["id"]
            } else {
                &line["call_id"]
            };
            (
                line["type"].as_str().unwrap().to_owned(),
                id.as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[test]
fn an_image_result_is_named_with_its_type_and_size() {
    let dir = tempfile::tempdir().unwrap();
    let pixels = image::RgbImage::from_pixel(4, 4, image::Rgb([200, 10, 10]));
    pixels.save(dir.path().join("dot.png")).unwrap();
    let png_size = std::fs::metadata(dir.path().join("dot.png")).unwrap().len();
    let script = script_file(
        dir.path(),
        "script.jsonl",
        &[
            json!({"tool_calls": [{"id": "r", "name": "read", "arguments": {"path": "dot.png"}}]}),
            json!({"text": "A red square."}),
        ],
    );
    let output = run_script(dir.path(), &script, &[]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let text = story(&output);
    assert!(
        text.contains(&format!("  │ [image: image/png, {png_size} bytes]")),
        "{text}"
    );
}

#[test]
fn piped_stdout_is_the_answer_alone_and_the_story_goes_to_stderr_in_plain_lines() {
    let dir = tempfile::tempdir().unwrap();
    let script = two_calls_script(dir.path());
    let output = run_script(dir.path(), &script, &[]);
    assert_eq!(output.status.code(), Some(0));
    // As `codex exec` does: what a pipeline consumes is the final answer.
    assert_eq!(stdout(&output), "Both ran.\n");
    let text = String::from_utf8(output.stderr).unwrap();
    assert!(
        !text.contains('\x1b'),
        "escape codes in piped output: {text:?}"
    );
    let lines: Vec<&str> = text.lines().collect();
    let canonical = dir.path().canonicalize().unwrap();
    // First the header: what the run uses, and the session it is saved in.
    let expected = format!(
        "golato: script at {} · cwd {} · tools read,bash,edit,write,bash_output,bash_kill · sandbox workspace-write, no network, secrets kept from bash · approve never · session ",
        script.display(),
        canonical.display()
    );
    assert!(lines[0].starts_with(&expected), "{}", lines[0]);
    assert_eq!(lines[1], "Looking.");
    assert_eq!(lines[2], "→ bash $ echo one");
    assert_eq!(lines[3], "→ bash $ echo two");
    assert!(lines
        .iter()
        .any(|line| line.starts_with("✓ bash $ echo one")));
    assert!(lines.contains(&"  │ one"), "{text}");
    assert!(lines.contains(&"Both ran."));
    let summary = lines.last().unwrap();
    assert!(
        summary.starts_with("done: 2 turns, 2 tool calls, "),
        "{summary}"
    );
}

#[test]
fn quiet_prints_the_answer_alone_and_o_writes_it_to_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let script = two_calls_script(dir.path());
    let answer = dir.path().join("answer.txt");
    let output = run_script(dir.path(), &script, &["-q", "-o", answer.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert_eq!(stdout(&output), "Both ran.\n");
    assert_eq!(String::from_utf8_lossy(&output.stderr), "");
    assert_eq!(std::fs::read_to_string(&answer).unwrap(), "Both ran.");
}

#[test]
fn json_lines_parse_pair_up_and_end_with_the_outcome() {
    let dir = tempfile::tempdir().unwrap();
    let script = two_calls_script(dir.path());
    let lines = run_json(dir.path(), &script, &[]);
    assert_eq!(lines[0]["type"], "run_start");
    let outcome = lines.last().unwrap();
    assert_eq!(outcome["type"], "outcome");
    assert_eq!(outcome["status"], "completed");
    assert_eq!(outcome["exit_code"], 0);
    assert_eq!(outcome["final_text"], "Both ran.");
    assert_eq!(outcome["turns"], 2);
    assert_eq!(outcome["tool_calls"], 2);
    assert_eq!(outcome["tool_errors"], 0);
    assert_eq!(lines[lines.len() - 2]["type"], "run_end");
    // Every start has exactly one end, after it, for the same call and turn.
    let mut open: HashMap<String, u64> = HashMap::new();
    let mut ended = 0;
    for line in &lines {
        match line["type"].as_str().unwrap() {
            "tool_start" => {
                let id = line["call"]["id"].as_str().unwrap().to_owned();
                assert!(open.insert(id, line["turn"].as_u64().unwrap()).is_none());
            }
            "tool_end" => {
                let turn = open.remove(line["call_id"].as_str().unwrap()).unwrap();
                assert_eq!(line["turn"].as_u64().unwrap(), turn);
                assert_eq!(line["result"]["tool_call_id"], line["call_id"]);
                ended += 1;
            }
            _ => {}
        }
    }
    assert!(open.is_empty());
    assert_eq!(ended, 2);
    // The streamed text arrives as message_update deltas.
    let streamed: String = of_type(&lines, "message_update")
        .iter()
        .filter(|line| line["turn"] == 1)
        .flat_map(|line| line["deltas"].as_array().unwrap().clone())
        .filter(|delta| delta["kind"] == "text")
        .map(|delta| delta["text"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(streamed, "Looking.");
}

#[test]
fn sequential_runs_each_call_to_its_end_before_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let script = two_calls_script(dir.path());
    let pair = |kind: &str, id: &str| (kind.to_owned(), id.to_owned());
    let parallel = run_json(dir.path(), &script, &[]);
    assert_eq!(
        tool_order(&parallel)[..2],
        [pair("tool_start", "a"), pair("tool_start", "b")]
    );
    let sequential = run_json(dir.path(), &script, &["--sequential"]);
    assert_eq!(
        tool_order(&sequential),
        [
            pair("tool_start", "a"),
            pair("tool_end", "a"),
            pair("tool_start", "b"),
            pair("tool_end", "b")
        ]
    );
}

#[test]
fn max_parallel_and_tool_timeout_reach_the_agent() {
    let dir = tempfile::tempdir().unwrap();
    let script = two_calls_script(dir.path());
    let pair = |kind: &str, id: &str| (kind.to_owned(), id.to_owned());
    // One call at a time: each starts only when the one before ended.
    let capped = run_json(dir.path(), &script, &["--max-parallel", "1"]);
    assert_eq!(
        tool_order(&capped),
        [
            pair("tool_start", "a"),
            pair("tool_end", "a"),
            pair("tool_start", "b"),
            pair("tool_end", "b")
        ]
    );
    let sleepy = script_file(
        dir.path(),
        "sleepy.jsonl",
        &[
            json!({"tool_calls": [bash_call("s", "sleep 30")]}),
            json!({"text": "gave up"}),
        ],
    );
    let lines = run_json(dir.path(), &sleepy, &["--tool-timeout", "0.2"]);
    let end = of_type(&lines, "tool_end")[0];
    assert_eq!(end["result"]["is_error"], true);
    assert_eq!(
        end["result"]["content"][0]["text"],
        "Tool bash timed out after 0.2 s and was cancelled."
    );
    let output = golato_output(&["run", "--tool-timeout", "0", "go"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(one_error_line(&output).contains("not a positive number of seconds"));
    // A device given as a file was read without end; now it is not read at all.
    let output = golato_output(&["run", "--script", "/dev/zero", "go"]);
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    assert!(one_error_line(&output).contains("it is a device, not a regular file"));
    let done = script_file(dir.path(), "done.jsonl", &[json!({"text": "done"})]);
    let output = golato_output(&[
        "run",
        "--script",
        done.to_str().unwrap(),
        "--system",
        "@/dev/zero",
        "go",
    ]);
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    // A device is not a file of text: refused without reading it.
    assert!(one_error_line(&output).contains("it is a device, not a regular file"));
    // Issue 21 item 13: 1e300 seconds panicked (exit 101) instead of a usage error.
    let output = golato_output(&["run", "--tool-timeout", "1e300", "go"]);
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    assert!(one_error_line(&output).contains("longer than golato waits"));
}

#[test]
fn tools_and_exclude_choose_what_the_model_may_call() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "hello\n").unwrap();
    let script = script_file(
        dir.path(),
        "script.jsonl",
        &[
            json!({"tool_calls": [
                {"id": "r", "name": "read", "arguments": {"path": "a.txt"}},
                bash_call("b", "echo hi"),
            ]}),
            json!({"text": "ok"}),
        ],
    );
    // Parallel calls end in completion order: compare them in source order.
    let ends = |lines: &[Value]| -> Vec<(bool, String)> {
        let mut ends = of_type(lines, "tool_end");
        ends.sort_by_key(|end| end["index"].as_u64());
        ends.iter()
            .map(|end| {
                (
                    end["result"]["is_error"].as_bool().unwrap(),
                    end["result"]["content"][0]["text"]
                        .as_str()
                        .unwrap()
                        .to_owned(),
                )
            })
            .collect()
    };
    let not_found = "Tool \"bash\" not found. Available tools: read.".to_owned();
    let excluded = run_json(dir.path(), &script, &["--exclude", "bash"]);
    assert_eq!(
        ends(&excluded),
        [
            (false, "hello".to_owned()),
            (true, not_found.replace("read.", "read, edit, write."))
        ]
    );
    let only_read = run_json(dir.path(), &script, &["--tools", "read"]);
    assert_eq!(
        ends(&only_read),
        [(false, "hello".to_owned()), (true, not_found)]
    );
}

#[test]
fn max_turns_ends_the_run_with_exit_1_and_one_clear_line() {
    let dir = tempfile::tempdir().unwrap();
    let script = two_calls_script(dir.path());
    let output = run_script(dir.path(), &script, &["--max-turns", "1"]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(stdout(&output), "", "no answer");
    // The error, then the summary that counts it, last on stderr.
    let text = story(&output);
    let lines: Vec<&str> = text.lines().collect();
    let (error, summary) = (lines[lines.len() - 2], lines[lines.len() - 1]);
    assert!(error.starts_with("golato: "), "{text}");
    assert!(error.contains("limit of 1 turn"), "{error}");
    assert!(error.contains("--max-turns"), "{error}");
    assert!(summary.starts_with("failed: "), "{text}");
}

#[test]
fn a_script_that_runs_out_is_an_error_outcome_naming_the_script() {
    let dir = tempfile::tempdir().unwrap();
    let script = script_file(
        dir.path(),
        "short.jsonl",
        &[json!({"tool_calls": [bash_call("a", "true")]})],
    );
    let output = run_script(dir.path(), &script, &["--json"]);
    assert_eq!(output.status.code(), Some(1));
    let error = one_error_line(&output);
    assert!(
        error.contains("the script has 1 assistant message(s) but the run asked for message #2"),
        "{error}"
    );
    let lines = json_lines(&output);
    let outcome = lines.last().unwrap();
    assert_eq!(outcome["status"], "failed");
    assert_eq!(outcome["exit_code"], 1);
    assert!(outcome["error"].as_str().unwrap().contains("message #2"));
}

#[test]
fn a_recording_replays_with_the_same_calls_and_results() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "first\n").unwrap();
    let script = script_file(
        dir.path(),
        "hand.jsonl",
        &[
            json!({"text": "Reading.", "tool_calls": [{"id": "r", "name": "read", "arguments": {"path": "notes.txt"}}, bash_call("b", "echo $((6 * 7))")]}),
            json!({"tool_calls": [{"id": "w", "name": "write", "arguments": {"path": "out.txt", "content": "42\n"}}]}),
            json!({"text": "The answer is 42."}),
        ],
    );
    let recorded = dir.path().join("recorded.jsonl");
    let first = run_json(
        dir.path(),
        &script,
        &["--record", recorded.to_str().unwrap()],
    );
    let entries: Vec<Value> = std::fs::read_to_string(&recorded)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(entries.len(), 3);
    assert_eq!(entries[0]["tool_calls"][1]["name"], "bash");
    assert_eq!(entries[0]["tool_results"][1]["content"][0]["text"], "42");
    assert_eq!(entries[2]["content"][0]["text"], "The answer is 42.");
    assert!(entries[2].get("tool_results").is_none());

    // Replayed in a fresh copy of the directory: the same calls, the same results, no mismatch.
    let copy = tempfile::tempdir().unwrap();
    std::fs::write(copy.path().join("notes.txt"), "first\n").unwrap();
    let rerecorded = copy.path().join("again.jsonl");
    let replay = run_json(
        copy.path(),
        &recorded,
        &["--record", rerecorded.to_str().unwrap()],
    );
    assert!(of_type(&replay, "replay_mismatch").is_empty());
    assert_eq!(replay.last().unwrap()["replay_mismatches"], 0);
    let calls = |lines: &[Value]| -> Vec<Value> {
        of_type(lines, "tool_start")
            .iter()
            .map(|start| start["call"].clone())
            .collect()
    };
    assert_eq!(calls(&replay), calls(&first));
    // Parallel calls end in completion order: compare results by call.
    let results = |lines: &[Value]| -> HashMap<String, Value> {
        of_type(lines, "tool_end")
            .iter()
            .map(|end| {
                let id = end["call_id"].as_str().unwrap().to_owned();
                (id, end["result"]["content"].clone())
            })
            .collect()
    };
    assert_eq!(results(&replay), results(&first));
    assert_eq!(
        std::fs::read_to_string(copy.path().join("out.txt")).unwrap(),
        "42\n"
    );
    let again: Vec<Value> = std::fs::read_to_string(&rerecorded)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(again, entries);
}

#[test]
fn a_replay_whose_results_differ_says_where_and_still_finishes() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "first\n").unwrap();
    let script = script_file(
        dir.path(),
        "hand.jsonl",
        &[
            json!({"tool_calls": [bash_call("a", "echo same"), {"id": "r", "name": "read", "arguments": {"path": "notes.txt"}}]}),
            json!({"text": "Done."}),
        ],
    );
    let recorded = dir.path().join("recorded.jsonl");
    run_json(
        dir.path(),
        &script,
        &["--record", recorded.to_str().unwrap()],
    );
    std::fs::write(dir.path().join("notes.txt"), "changed\n").unwrap();

    let replay = run_json(dir.path(), &recorded, &[]);
    let mismatches = of_type(&replay, "replay_mismatch");
    assert_eq!(mismatches.len(), 1);
    assert_eq!(mismatches[0]["turn"], 1);
    assert_eq!(mismatches[0]["index"], 1);
    assert_eq!(mismatches[0]["call_id"], "r");
    assert_eq!(mismatches[0]["tool_name"], "read");
    assert_eq!(
        mismatches[0]["difference"],
        r#"line 1: recorded "first", the replay got "changed""#
    );
    let outcome = replay.last().unwrap();
    assert_eq!(outcome["status"], "completed");
    assert_eq!(outcome["replay_mismatches"], 1);

    let output = run_script(dir.path(), &recorded, &[]);
    assert_eq!(output.status.code(), Some(0));
    let text = story(&output);
    assert!(
        text.contains("! the replay differs from the recording at turn 1, call 2 (read r): line 1: recorded \"first\", the replay got \"changed\""),
        "{text}"
    );
    assert!(text.contains("1 replay difference"), "{text}");
}

#[test]
fn usage_errors_exit_2_with_one_line_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().to_str().unwrap();
    let marker = dir.path().join("ran");
    let script = script_file(
        dir.path(),
        "script.jsonl",
        &[
            json!({"tool_calls": [bash_call("a", &format!("touch {}", marker.display()))]}),
            json!({"text": "ok"}),
        ],
    );
    let script = script.to_str().unwrap();
    let bad_json = dir.path().join("bad.jsonl");
    std::fs::write(&bad_json, "{\"text\": \"fine\"}\n{not json\n").unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--tools", "read,nope"], "nope"),
        (vec!["--exclude", "bash,zap"], "zap"),
        (
            vec!["--script", "/no/such/script.jsonl"],
            "/no/such/script.jsonl",
        ),
        (vec!["--script", bad_json.to_str().unwrap()], "entry 2"),
        (
            vec!["--system", "@/no/such/prompt.txt"],
            "/no/such/prompt.txt",
        ),
        (
            vec!["--record", "/no/such/dir/rec.jsonl"],
            "/no/such/dir/rec.jsonl",
        ),
        (vec!["--cwd", "/no/such/dir"], "/no/such/dir"),
    ];
    for (flags, named) in cases {
        let mut args = vec!["run"];
        if !flags.contains(&"--cwd") {
            args.extend(["--cwd", cwd]);
        }
        if !flags.contains(&"--script") {
            args.extend(["--script", script]);
        }
        args.extend(flags.iter().copied());
        args.push("go");
        let output = golato_output(&args);
        assert_eq!(output.status.code(), Some(2), "{flags:?}: {output:?}");
        let error = one_error_line(&output);
        assert!(error.contains(named), "{flags:?}: {error}");
        assert!(output.stdout.is_empty(), "{flags:?}");
        assert!(!marker.exists(), "{flags:?} ran a tool");
    }
    // No key for the default provider.
    let output = golato_output(&["run", "--cwd", cwd, "go"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(one_error_line(&output).contains("set OPENAI_API_KEY"));
    let output = golato_output(&["run", "--provider", "anthropic", "--cwd", cwd, "go"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(one_error_line(&output).contains("set ANTHROPIC_API_KEY"));
    // The parser's usage errors, one line each too: an unknown flag (with the one meant), a
    // missing prompt, a bad number.
    for (args, named) in [
        (
            vec!["run", "--tool", "read", "go"],
            "a similar argument exists: '--tools'",
        ),
        (vec!["run"], "the prompt is empty"),
        (vec!["run", "--max-turns", "0", "go"], "--max-turns"),
    ] {
        let output = golato_output(&args);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        let error = one_error_line(&output);
        assert!(error.contains(named), "{args:?}: {error}");
    }
}

#[test]
fn trace_shows_each_actor_message_nested_run_turn_batch_call() {
    let dir = tempfile::tempdir().unwrap();
    let script = two_calls_script(dir.path());
    let output = run_script(dir.path(), &script, &["--trace"]);
    assert_eq!(output.status.code(), Some(0));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(!stderr.contains('\x1b'), "colours on a pipe");
    let spans: Vec<&str> = stderr
        .lines()
        .filter(|line| line.contains("mailbox_wait_us=") && line.contains("queue_depth="))
        .collect();
    assert!(!spans.is_empty(), "{stderr}");
    // The batch supervisor's messages are handled in their batch, turn and run spans.
    let nested = |inner: &str, line: &str| {
        let order = ["run{", "turn{", "batch{", inner].map(|name| line.find(name));
        order
            .windows(2)
            .all(|pair| matches!(pair, [Some(a), Some(b)] if a < b))
    };
    assert!(
        spans
            .iter()
            .any(|line| nested("actor=\"BatchSupervisor\"", line)),
        "{stderr}"
    );
    // Each call's tool actor reports its end within the call's span, in its batch.
    for id in ["a", "b"] {
        let call = format!("gen_ai.tool.call.id={id} ");
        assert!(
            stderr.lines().any(|line| nested("call{", line)
                && line.contains(&call)
                && line.contains("}: call finished is_error=false")),
            "{stderr}"
        );
    }
    // RUST_LOG filters it.
    let output = golato()
        .args([
            "run",
            "--trace",
            "--cwd",
            dir.path().to_str().unwrap(),
            "--script",
            script.to_str().unwrap(),
            "go",
        ])
        .env("RUST_LOG", "golato=warn")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    assert!(!String::from_utf8(output.stderr)
        .unwrap()
        .contains("mailbox_wait_us"));
}

#[test]
fn the_live_view_shows_an_edits_diff_and_the_end_of_a_commands_output() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f.txt"), "one\ntwo\nthree\n").unwrap();
    let script = script_file(
        dir.path(),
        "script.jsonl",
        &[
            json!({"tool_calls": [
                {"id": "e", "name": "edit", "arguments": {"path": "f.txt", "edits": [{"oldText": "two", "newText": "TWO"}]}},
                {"id": "b", "name": "bash", "arguments": {"command": "seq 1 10; echo the-error; exit 3"}},
            ]}),
            json!({"text": "Done."}),
        ],
    );
    let text = story(&run_script(dir.path(), &script, &[]));
    let lines: Vec<&str> = text.lines().collect();
    let edit = lines
        .iter()
        .position(|line| line.starts_with("✓ edit f.txt"))
        .unwrap();
    assert_eq!(
        lines[edit + 1..edit + 6],
        [
            "  │ @@ -1,3 +1,3 @@",
            "  │  one",
            "  │ -two",
            "  │ +TWO",
            "  │  three"
        ],
        "{text}"
    );
    let bash = lines
        .iter()
        .position(|line| line.starts_with("✗ bash $ seq 1 10"))
        .unwrap();
    assert_eq!(
        lines[bash + 1..bash + 5],
        [
            "  │ … 10 earlier lines",
            "  │ the-error",
            "  │ ",
            "  │ Command exited with code 3"
        ],
        "{text}"
    );
}

#[test]
fn a_recording_carries_its_prompt_and_strict_replay_fails_on_any_difference() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f.txt"), "first").unwrap();
    let script = script_file(
        dir.path(),
        "script.jsonl",
        &[
            json!({"tool_calls": [{"id": "r", "name": "read", "arguments": {"path": "f.txt"}}]}),
            json!({"text": "Read it."}),
        ],
    );
    let recorded = dir.path().join("recorded.jsonl");
    let output = run_script(
        dir.path(),
        &script,
        &["--record", recorded.to_str().unwrap()],
    );
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let replay = |flags: &[&str], prompt: Option<&str>| {
        let mut command = golato();
        command.args(["run", "-C"]).arg(dir.path());
        command.arg("--script").arg(&recorded).args(flags);
        if let Some(prompt) = prompt {
            command.arg(prompt);
        }
        command.stdin(std::process::Stdio::null()).output().unwrap()
    };
    // No prompt needed: the recording's ("go", run_script's) is used, and all is the same.
    let same = replay(&["--strict-replay"], None);
    assert_eq!(same.status.code(), Some(0), "{same:?}");
    // Another prompt: a warning, and with --strict-replay a failure.
    let other = replay(&[], Some("something else"));
    assert_eq!(other.status.code(), Some(0));
    assert!(
        story(&other).contains("the prompt differs from the one the script was recorded with (go)")
    );
    let strict = replay(&["--strict-replay"], Some("something else"));
    assert_eq!(strict.status.code(), Some(1), "{strict:?}");
    // A tool result that differs fails a strict replay.
    std::fs::write(dir.path().join("f.txt"), "changed").unwrap();
    let changed = replay(&["--strict-replay"], None);
    assert_eq!(changed.status.code(), Some(1), "{changed:?}");
    assert!(story(&changed).contains("--strict-replay makes that a failure"));
    assert_eq!(
        replay(&[], None).status.code(),
        Some(0),
        "without it, a warning only"
    );
}

#[test]
fn output_schema_prints_the_answer_as_valid_json_after_one_correction() {
    let dir = tempfile::tempdir().unwrap();
    let schema = dir.path().join("schema.json");
    std::fs::write(
        &schema,
        r#"{"type": "object", "properties": {"count": {"type": "integer"}}, "required": ["count"]}"#,
    )
    .unwrap();
    let script = script_file(
        dir.path(),
        "script.jsonl",
        &[
            json!({"text": "There are three."}),
            json!({"text": "{\"count\": 3}"}),
        ],
    );
    let output = run_script(
        dir.path(),
        &script,
        &["--output-schema", schema.to_str().unwrap()],
    );
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let answer: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(answer, json!({"count": 3}));

    std::fs::write(&schema, "not json").unwrap();
    let output = run_script(
        dir.path(),
        &script,
        &["--output-schema", schema.to_str().unwrap()],
    );
    assert_eq!(output.status.code(), Some(2));
    assert!(one_error_line(&output).contains("--output-schema"));
}

#[test]
fn plan_mode_offers_looking_tools_and_update_plan_and_the_story_shows_the_plan() {
    let dir = tempfile::tempdir().unwrap();
    let plan = json!({"explanation": "first look", "plan": [
        {"step": "Read main.rs", "status": "in_progress"},
        {"step": "Fix the bug", "status": "pending"}
    ]});
    let script = script_file(
        dir.path(),
        "script.jsonl",
        &[
            json!({"tool_calls": [
                {"id": "p", "name": "update_plan", "arguments": plan},
                {"id": "t", "name": "bash", "arguments": {"command": "touch made-in-plan-mode"}},
                {"id": "w", "name": "edit", "arguments": {"path": "x", "edits": []}}
            ]}),
            json!({"text": "Planned."}),
        ],
    );
    let lines = run_json(dir.path(), &script, &["--plan"]);
    let header = &of_type(&lines, "run_start")[0];
    assert_eq!(
        header["tools"],
        json!(["read", "bash", "grep", "find", "ls", "update_plan"]),
        "{header}"
    );
    assert_eq!(header["sandbox"], "read-only", "{header}");
    let ends = of_type(&lines, "tool_end");
    let end = |id: &str| *ends.iter().find(|end| end["call"]["id"] == id).unwrap();
    assert_eq!(
        end("p")["result"]["details"]["plan"][0]["status"],
        "in_progress"
    );
    assert_eq!(end("p")["result"]["details"]["explanation"], "first look");
    // Nothing changes: bash is read-only, edit is not a tool.
    assert_eq!(end("t")["result"]["is_error"], true, "{}", end("t"));
    assert_eq!(end("w")["result"]["is_error"], true, "{}", end("w"));
    assert!(!dir.path().join("made-in-plan-mode").exists());
    // The plain story shows the plan, step by step.
    let output = run_script(dir.path(), &script, &["--plan"]);
    let story = story(&output);
    assert!(story.contains("✓ update_plan 2 steps"), "{story}");
    assert!(story.contains("│ [>] Read main.rs"), "{story}");
    assert!(story.contains("│ [ ] Fix the bug"), "{story}");
}

/// On a terminal the answer streams in wrapped between words: the terminal never breaks a word
/// at its last column (read back through a terminal emulator 40 columns wide).
#[test]
fn a_streamed_answer_on_a_terminal_is_wrapped_between_words() {
    let dir = tempfile::tempdir().unwrap();
    let answer = "The build fails because the parser expects a semicolon after every statement, and you can fix it by adding one at the end of line twelve of src/parser.rs before running the tests again.";
    let script = script_file(dir.path(), "script.jsonl", &[json!({"text": answer})]);
    let mut command = golato();
    command
        .args(["run", "--ephemeral", "--script"])
        .arg(&script)
        .arg("-C")
        .arg(dir.path())
        .arg("go");
    let terminal = Terminal::start_sized(command, 24, 40);
    let (code, drawn) = terminal.finish();
    assert_eq!(code, Some(0), "{drawn}");
    let size = |n: u16| std::num::NonZeroU16::new(n).unwrap();
    let mut parser = vt100::Parser::new(size(24), size(40), 1000);
    parser.process(drawn.as_bytes());
    parser.screen_mut().set_scrollback(usize::MAX);
    let back = parser.screen().scrollback();
    let mut rows: Vec<String> = Vec::new();
    for offset in (1..=back).rev() {
        parser.screen_mut().set_scrollback(offset);
        rows.extend(parser.screen().rows(0, 40).take(1));
    }
    parser.screen_mut().set_scrollback(0);
    rows.extend(parser.screen().rows(0, 40));
    let words: std::collections::HashSet<&str> =
        rows.iter().flat_map(|row| row.split_whitespace()).collect();
    for word in answer.split_whitespace() {
        assert!(
            words.contains(word),
            "{word:?} was broken:\n{}",
            rows.join("\n")
        );
    }
}

/// The script format the README shows, replayed as it stands: with no prompt (the recording's),
/// its call runs and its answer is printed.
#[test]
fn the_readme_script_example_replays() {
    let readme = include_str!("../../../README.md");
    let section = readme
        .split_once("**Script files**")
        .expect("the README describes script files")
        .1;
    let example = section
        .split_once("```text\n")
        .and_then(|(_, rest)| rest.split_once("```"))
        .expect("an example follows")
        .0;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("README"), "hello").unwrap();
    let script = dir.path().join("example.jsonl");
    std::fs::write(&script, example).unwrap();
    let output = golato_output(&[
        "run",
        "--cwd",
        dir.path().to_str().unwrap(),
        "--script",
        script.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        "A README and a src folder."
    );
    assert!(story(&output).contains("ls"), "{}", story(&output));
}
