//! Editors drive durable runs (issue 47, point 3): `golato acp --restate` driven by the official
//! TypeScript client, against a real Restate server and a `golato serve --approve ask` worker.
//! The prompt's question reaches the editor as a permission request; the ACP process is
//! SIGKILLed while the run goes on; a new one loads the session and follows the run to its end;
//! the next prompt is steered by another; the one after is cancelled with `session/cancel`.

use crate::support;

use serde_json::json;
use support::restate::{Server, Worker};

#[test]
#[ignore = "needs a Restate server (GOLATO_RESTATE_SERVER) and the ACP client library (GOLATO_ACP_SDK): .ci/run"]
fn an_editor_session_outlives_its_acp_process_and_drives_durable_runs() {
    let work = tempfile::tempdir().unwrap();
    let work_path = work.path().canonicalize().unwrap();
    let signals = support::signals();
    let sig = signals.path();
    // The first command waits on a FIFO the client writes once the session is loaded again (a
    // handshake: it cannot end before).
    for fifo in ["release", "release2"] {
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            sig.join(fifo),
            rustix::fs::Mode::from_raw_mode(0o600),
        )
        .unwrap();
    }
    let client_dir = super::acp::client_dir("durable_client.mjs");
    let script = support::cli::script_file(
        client_dir.path(),
        "script.jsonl",
        &[
            json!({"tool_calls": [{"id": "c1", "name": "bash", "arguments": {"command": format!(
                "echo ran >> {0}/ledger; touch {0}/started; cat {0}/release > /dev/null; echo released",
                sig.display()
            )}}]}),
            json!({"text": "slow thing done"}),
            json!({"tool_calls": [{"id": "c2", "name": "bash", "arguments": {"command": format!(
                "touch {0}/started2; cat {0}/release2 > /dev/null", sig.display()
            )}}]}),
            json!({"text": "steered done"}),
            json!({"tool_calls": [{"id": "c3", "name": "bash", "arguments": {"command": format!(
                "touch {}/started3; exec sleep 120", sig.display()
            )}}]}),
            json!({"text": "not reached"}),
        ],
    );
    let server = Server::start();
    let _worker = Worker::start(
        work.path(),
        "worker",
        &[
            "--script",
            script.to_str().unwrap(),
            "--cwd",
            work_path.to_str().unwrap(),
            "--restate-admin",
            &server.admin,
            "--restate",
            &server.ingress,
            "--approve",
            "ask",
        ],
    );
    let output = std::process::Command::new("node")
        .arg("durable_client.mjs")
        .arg(support::golato_binary())
        .arg(&work_path)
        .arg(sig)
        .arg(&server.ingress)
        .arg(&server.admin)
        .current_dir(client_dir.path())
        // The editor's side asks no model: without a key it still serves the session.
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .env("GOLATO_DATA_DIR", support::cli::data_dir())
        .env(
            "GOLATO_CONFIG",
            support::cli::data_dir().join("no-config.toml"),
        )
        .output()
        .unwrap();
    super::acp::client_passed(&output);
    // The first command ran once, on the worker, whatever happened to the ACP processes.
    assert_eq!(
        std::fs::read_to_string(sig.join("ledger")).unwrap(),
        "ran\n"
    );
}

/// A project's command in a durable editor session: filled in the ACP process (its `!` piece
/// run by the session's bash), then run as the durable run, whose transcript holds the filled
/// prompt.
#[test]
#[ignore = "needs a Restate server (GOLATO_RESTATE_SERVER): .ci/run"]
fn a_command_in_a_durable_editor_session_is_filled_then_run_durably() {
    let work = tempfile::tempdir().unwrap();
    let work_path = work.path().canonicalize().unwrap();
    std::fs::create_dir_all(work_path.join(".claude/commands")).unwrap();
    std::fs::write(
        work_path.join(".claude/commands/greet.md"),
        "Say hello to $ARGUMENTS. The shell said: !`echo filled-in-the-editor`\n",
    )
    .unwrap();
    let script =
        support::cli::script_file(&work_path, "script.jsonl", &[json!({"text": "Hello."})]);
    let server = Server::start();
    let _worker = Worker::start(
        work.path(),
        "worker",
        &[
            "--script",
            script.to_str().unwrap(),
            "--cwd",
            work_path.to_str().unwrap(),
            "--restate-admin",
            &server.admin,
            "--restate",
            &server.ingress,
        ],
    );
    let data = tempfile::tempdir().unwrap();
    let mut command = support::cli::golato();
    command
        .env("GOLATO_DATA_DIR", data.path())
        .args(["acp", "--trust", "--script"])
        .arg(&script)
        .args([
            "--restate",
            &server.ingress,
            "--restate-admin",
            &server.admin,
        ])
        .current_dir(&work_path);
    let mut acp = super::acp::Acp::from_command(command, json!({}));
    let session = acp.new_session(&work_path);
    let id = acp.prompt(&session, "/greet the team");
    let (done, _) = acp.response(id);
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    let saved = std::fs::read_dir(data.path().join("sessions"))
        .unwrap()
        .flatten()
        .map(|entry| std::fs::read_to_string(entry.path()).unwrap_or_default())
        .collect::<String>();
    assert!(
        saved.contains("Say hello to the team. The shell said: filled-in-the-editor"),
        "{saved}"
    );
}
