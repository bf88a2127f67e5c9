//! The files people keep for Claude Code and codex, through the binary (issue 56): a Claude
//! Code project's commands (each front-matter key, `$ARGUMENTS`, `$1`, `@file`, `` !`cmd` ``
//! under a deny rule, a namespaced subfolder) and a skill called by name, in `golato run`, the
//! front end and ACP; an untrusted copy offering none; hostile command files refused one line
//! each while the rest are still offered.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{json, Value};
use support::provider::{FakeProvider, Reply, Script};

/// A Claude Code project folder as people keep one, and a home of its own (no user commands,
/// no codex prompts, no user skills but the test's).
struct Project {
    _dir: tempfile::TempDir,
    ws: PathBuf,
    home: PathBuf,
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn claude_project() -> Project {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let ws = root.join("project");
    let home = root.join("home");
    std::fs::create_dir_all(ws.join(".git")).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    write(
        &ws.join(".claude/settings.json"),
        r#"{"permissions": {"deny": ["Bash(cat secret.txt)"]}}"#,
    );
    write(&ws.join("notes.md"), "the notes say ship on friday\n");
    write(&ws.join("secret.txt"), "hunter2\n");
    write(
        &ws.join(".claude/commands/review.md"),
        "---\n\
         description: Review a pull request\n\
         argument-hint: [pr-number] [priority]\n\
         allowed-tools: Bash(git status:*), Read\n\
         model: small-model\n\
         disable-model-invocation: true\n\
         color: blue\n\
         ---\n\
         Review PR #$1 (priority $2).\n\
         Shell says: !`echo from-the-shell`\n\
         Read @notes.md first.\n",
    );
    write(
        &ws.join(".claude/commands/frontend/check.md"),
        "---\ndescription: Check the frontend\n---\nCheck the frontend for $ARGUMENTS.\n",
    );
    write(
        &ws.join(".claude/commands/leak.md"),
        "Tell me the secret: !`cat secret.txt`\n",
    );
    write(
        &ws.join(".claude/agents/reviewer.md"),
        "---\nname: reviewer\ndescription: Reviews a change for bugs\ntools: Read, Grep, WebSearch\nmodel: small-model\ncolor: red\n---\nYou are the reviewer. Read, never write.\n",
    );
    write(
        &ws.join(".claude/agents/tester.md"),
        "---\nname: tester\ndescription: Runs the tests\nmodel: sonnet\n---\nYou run the tests.\n",
    );
    write(
        &ws.join(".claude/skills/pdf/SKILL.md"),
        "---\nname: pdf\ndescription: Fill PDF forms\n---\nRun fill.py with the form's fields.\n",
    );
    Project {
        _dir: dir,
        ws,
        home,
    }
}

impl Project {
    fn golato(&self) -> Command {
        let mut command = support::cli::golato();
        command
            .env("HOME", &self.home)
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("CODEX_HOME")
            .current_dir(&self.ws);
        command
    }
}

/// The model server's requests' last user message and tool names, as sent.
fn sent(server: &FakeProvider) -> Vec<(String, Vec<String>, String)> {
    server
        .sent()
        .into_iter()
        .map(|(_, _, body)| {
            let prompt = body["messages"]
                .as_array()
                .into_iter()
                .flatten()
                .rfind(|message| message["role"] == "user")
                .map(|message| match &message["content"] {
                    Value::String(text) => text.clone(),
                    other => other.to_string(),
                })
                .unwrap_or_default();
            let tools = body["tools"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|tool| tool["function"]["name"].as_str().map(str::to_owned))
                .collect();
            (
                prompt,
                tools,
                body["model"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

fn run(project: &Project, url: &str, prompt: &str, trust: bool) -> Output {
    let base = format!("{url}/v1");
    let mut command = project.golato();
    command.args([
        "run",
        "--ephemeral",
        "--base-url",
        &base,
        "--model",
        "big-model",
    ]);
    if trust {
        command.arg("--trust");
    }
    command.arg(prompt).output().unwrap()
}

#[test]
fn a_claude_code_projects_commands_and_skills_work_in_golato_run() {
    let project = claude_project();
    let (_runtime, url, server) = FakeProvider::start_blocking(Script::Repeat(Reply::ok(
        support::fixture("openai-chat/text-stop.sse"),
        1,
    )));
    let output = run(&project, &url, "/review 42 high", true);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let (prompt, tools, model) = sent(&server).pop().unwrap();
    assert!(
        prompt.contains("Review PR #42 (priority high)."),
        "{prompt}"
    );
    assert!(prompt.contains("Shell says: from-the-shell"), "{prompt}");
    assert!(!prompt.contains("!`"), "{prompt}");
    assert!(
        prompt.contains("The file notes.md:") && prompt.contains("ship on friday"),
        "{prompt}"
    );
    // allowed-tools narrows this prompt's tools; model picks its model.
    assert_eq!(tools, ["read", "bash"]);
    assert_eq!(model, "small-model");
    assert!(stderr.contains("/review sent as:"), "{stderr}");
    assert!(
        stderr.contains("bash $ echo from-the-shell ran"),
        "{stderr}"
    );

    // A namespaced subfolder, and $ARGUMENTS.
    let output = run(&project, &url, "/frontend:check the header's colours", true);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let (prompt, tools, model) = sent(&server).pop().unwrap();
    assert_eq!(
        prompt.trim(),
        "Check the frontend for the header's colours."
    );
    assert!(
        tools.len() > 2,
        "no narrowing without allowed-tools: {tools:?}"
    );
    assert_eq!(model, "big-model");

    // A `!` command a deny rule refuses: nothing is sent, and the line says why.
    let before = server.sent().len();
    let output = run(&project, &url, "/leak", true);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("/leak was not sent: !`cat secret.txt` was refused"),
        "{stderr}"
    );
    assert_eq!(server.sent().len(), before, "nothing reached the model");

    // A skill by name, and by $NAME inside a prompt.
    for typed in ["/pdf the tax form", "please use $pdf for the tax form"] {
        let output = run(&project, &url, typed, true);
        assert_eq!(output.status.code(), Some(0), "{output:?}");
        let (prompt, _, _) = sent(&server).pop().unwrap();
        assert!(
            prompt.contains("Use the skill pdf") && prompt.contains("Run fill.py"),
            "{typed}: {prompt}"
        );
        assert!(prompt.contains("the tax form"), "{prompt}");
    }
}

#[test]
fn an_untrusted_copy_offers_none_of_the_projects_commands_and_says_so() {
    let project = claude_project();
    let listed = project.golato().arg("commands").output().unwrap();
    let stdout = String::from_utf8_lossy(&listed.stdout);
    let stderr = String::from_utf8_lossy(&listed.stderr);
    assert!(!stdout.contains("/review"), "{stdout}");
    assert!(
        stderr.contains(".claude/commands left out: this folder is not trusted"),
        "{stderr}"
    );
    let (_runtime, url, server) = FakeProvider::start_blocking(Script::Repeat(Reply::ok(
        support::fixture("openai-chat/text-stop.sse"),
        1,
    )));
    let output = run(&project, &url, "/review 42", false);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("/review is not a command here"), "{stderr}");
    let (prompt, _, _) = sent(&server).pop().unwrap();
    assert_eq!(prompt, "/review 42", "sent as typed, nothing of the file");
}

#[test]
fn hostile_command_files_are_refused_one_line_each_and_the_rest_still_offered() {
    let project = claude_project();
    let commands = project.ws.join(".claude/commands");
    write(
        &commands.join("bad.md"),
        "---\nname: [unclosed\n  still\n---\nbody\n",
    );
    std::fs::write(commands.join("huge.md"), vec![b'a'; 10 * 1024 * 1024]).unwrap();
    write(&commands.join("ctl\u{1}name.md"), "a control character\n");
    write(&commands.join("help.md"), "not golato's /help\n");
    write(&project.home.join(".ssh/id_rsa"), "PRIVATE KEY\n");
    std::os::unix::fs::symlink(project.home.join(".ssh/id_rsa"), commands.join("key.md")).unwrap();
    let fifo = commands.join("fifo.md");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    // A command including itself: includes are not filled again, so there is no loop.
    write(
        &commands.join("again.md"),
        "Again: @.claude/commands/again.md\n",
    );
    let listed = project
        .golato()
        .args(["commands", "--trust"])
        .output()
        .unwrap();
    assert_eq!(listed.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&listed.stdout);
    let stderr = String::from_utf8_lossy(&listed.stderr);
    for offered in [
        "/review [pr-number] [priority]",
        "/frontend:check",
        "/leak",
        "/again",
    ] {
        assert!(stdout.contains(offered), "{offered}: {stdout}");
    }
    let refused = |name: &str, why: &str| {
        let lines: Vec<&str> = stderr.lines().filter(|line| line.contains(name)).collect();
        assert_eq!(lines.len(), 1, "{name}: {stderr}");
        assert!(lines[0].contains(why), "{name}: {}", lines[0]);
    };
    refused("bad.md", "not YAML");
    refused("huge.md", "larger than 64 KiB");
    refused("ctl^Aname.md", "control character");
    refused("help.md", "one of golato's own commands");
    refused("key.md", "outside the project");
    refused("fifo.md", "cannot be read");
    assert!(
        stderr.contains("review.md): golato has no counterpart for color"),
        "{stderr}"
    );
    assert!(!stdout.contains("PRIVATE KEY") && !stderr.contains("PRIVATE KEY"));

    let (_runtime, url, server) = FakeProvider::start_blocking(Script::Repeat(Reply::ok(
        support::fixture("openai-chat/text-stop.sse"),
        1,
    )));
    let output = run(&project, &url, "/again", true);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let (prompt, _, _) = sent(&server).pop().unwrap();
    assert_eq!(
        prompt
            .matches("The file .claude/commands/again.md:")
            .count(),
        1,
        "{prompt}"
    );
}

/// The official TypeScript client sees the commands in `available_commands_update` and sends
/// one, filled.
#[test]
#[ignore = "needs Node and @agentclientprotocol/sdk (GOLATO_ACP_SDK); .ci/run installs them"]
fn the_official_acp_client_sees_the_commands_and_sends_one() {
    let project = claude_project();
    let client_dir = super::acp::client_dir("commands_client.mjs");
    let script = support::cli::script_file(
        client_dir.path(),
        "script.jsonl",
        &[json!({"text": "Reviewed."})],
    );
    let output = Command::new("node")
        .arg("commands_client.mjs")
        .arg(support::golato_binary())
        .arg(&project.ws)
        .arg(&script)
        .current_dir(client_dir.path())
        .env("HOME", &project.home)
        .env("GOLATO_DATA_DIR", support::cli::data_dir())
        .env(
            "GOLATO_CONFIG",
            support::cli::data_dir().join("no-config.toml"),
        )
        .env(
            "CLAUDE_CONFIG_DIR",
            support::cli::data_dir().join("no-claude"),
        )
        .output()
        .unwrap();
    super::acp::client_passed(&output);
}

/// The front end's `/` list offers the project's commands and skills with their hints, and a
/// command sent shows what filled it and its first lines, at 80x24 and 120x40.
#[test]
fn the_front_end_lists_the_commands_and_shows_what_a_command_sent() {
    use super::front::{in_terminal, leave, ready, wait_until, SIZES};
    for size in SIZES {
        let project = claude_project();
        let script = support::cli::script_file(
            &project.home,
            "script.jsonl",
            &[json!({"text": "Reviewed it."})],
        );
        let mut command = project.golato();
        command
            .arg("--script")
            .arg(&script)
            .args(["--trust", "--ephemeral"]);
        let mut terminal = ready(in_terminal(command, size), size);
        terminal.type_raw("/rev");
        wait_until(&mut terminal, size, "the command in the list", |shown| {
            shown.contains("/review") && shown.contains("[pr-number] [priority] · Review a pull")
        });
        terminal.type_raw("\t7 low\r");
        let shown = wait_until(&mut terminal, size, "the answer", |shown| {
            shown.contains("Reviewed it.") && shown.contains("done: ")
        });
        assert!(shown.contains("/review sent as:"), "{shown}");
        assert!(shown.contains("Review PR #7 (priority low)."), "{shown}");
        assert!(shown.contains("echo from-the-shell"), "{shown}");
        terminal.type_raw("/p");
        wait_until(&mut terminal, size, "the skill in the list", |shown| {
            shown.contains("/pdf") && shown.contains("(skill) Fill PDF forms")
        });
        terminal.type_raw("\x15");
        leave(terminal, size);
    }
}

/// Two agents of a Claude Code project: listed with their tools and models, and one run by a
/// `task` call with its instructions, its tools narrowed to the session's and its model.
#[test]
fn a_projects_agents_are_listed_and_run_by_name_with_their_instructions_tools_and_model() {
    use support::compaction::{answers, sse, wire_call};
    let project = claude_project();
    let listed = project
        .golato()
        .args(["agents", "--trust"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&listed.stdout);
    let stderr = String::from_utf8_lossy(&listed.stderr);
    assert!(
        stdout.contains("reviewer  ") && stdout.contains("Reviews a change for bugs"),
        "{stdout}"
    );
    assert!(
        stdout.contains("tools: read, grep; model: small-model"),
        "{stdout}"
    );
    assert!(
        stdout.contains("tester  ")
            && stdout.contains("tools: the children's; model: the children's"),
        "{stdout}"
    );
    assert!(stderr.contains("WebSearch"), "{stderr}");
    assert!(
        stderr.contains("model `sonnet` is Claude Code's alias"),
        "{stderr}"
    );
    assert!(stderr.contains("no counterpart for color"), "{stderr}");
    let untrusted = project.golato().arg("agents").output().unwrap();
    assert!(String::from_utf8_lossy(&untrusted.stderr)
        .contains(".claude/agents left out: this folder is not trusted"));
    assert!(!String::from_utf8_lossy(&untrusted.stdout).contains("reviewer"));

    let respond = |request: &Value, _size: usize| {
        let system = request["messages"][0]["content"]
            .as_str()
            .unwrap_or_default();
        let answer = if system.starts_with("You are the reviewer.") {
            json!({"text": "LGTM from the reviewer"})
        } else if answers(request) == 0 {
            json!({"tool_calls": [wire_call("t1", "task", json!({"description": "review", "prompt": "review calc.py", "agent": "reviewer"}))]})
        } else {
            json!({"text": "done"})
        };
        Reply::sse(sse(&answer))
    };
    let (_runtime, url, server) = FakeProvider::start_blocking(Script::Respond(Box::new(respond)));
    let base = format!("{url}/v1");
    let output = project
        .golato()
        .args([
            "run",
            "--ephemeral",
            "--trust",
            "--json",
            "--base-url",
            &base,
            "--model",
            "big-model",
        ])
        .args(["--tools", "read,bash,task", "--approve", "never", "go"])
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let ended = support::cli::json_lines(&output)
        .into_iter()
        .find(|line| line["type"] == "tool_end" && line["call"]["id"] == "t1")
        .unwrap();
    assert!(
        ended["result"]["content"]
            .to_string()
            .contains("LGTM from the reviewer"),
        "{ended}"
    );
    let child = server
        .sent()
        .into_iter()
        .map(|(_, _, body)| body)
        .find(|body| {
            body["messages"][0]["content"]
                .as_str()
                .is_some_and(|text| text.starts_with("You are the reviewer."))
        })
        .unwrap();
    let tools: Vec<&str> = child["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|tool| tool["function"]["name"].as_str())
        .collect();
    // Read and Grep asked for; the session has no grep: read only, never a tool it lacks.
    assert_eq!(tools, ["read"]);
    assert_eq!(child["model"], "small-model");
}

/// The README's command and agent files, copied into a project as they stand there, work as
/// the README says.
#[test]
fn the_readmes_command_and_agent_examples_work_as_written() {
    let readme = std::fs::read_to_string(support::repository().join("README.md")).unwrap();
    let project = claude_project();
    let mut written = Vec::new();
    let mut lines = readme.lines();
    while let Some(line) = lines.next() {
        let Some(path) = line.strip_prefix("```markdown file=") else {
            continue;
        };
        let body: Vec<&str> = lines.by_ref().take_while(|line| *line != "```").collect();
        write(&project.ws.join(path), &format!("{}\n", body.join("\n")));
        written.push(path.to_owned());
    }
    assert_eq!(
        written,
        [".claude/commands/review.md", ".claude/agents/reviewer.md"]
    );
    write(
        &project.ws.join("CONTRIBUTING.md"),
        "Every change comes with a test.\n",
    );
    let git = |args: &[&str]| {
        let status = Command::new("git")
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "-c",
                "commit.gpgsign=false",
            ])
            .args(args)
            .current_dir(&project.ws)
            .status()
            .unwrap();
        assert!(status.success(), "git {args:?}");
    };
    std::fs::remove_dir_all(project.ws.join(".git")).unwrap();
    git(&["init", "-q"]);
    git(&["add", "notes.md"]);
    git(&["commit", "-qm", "one"]);
    write(&project.ws.join("calc.py"), "print(1)\n");
    git(&["add", "calc.py"]);
    git(&["commit", "-qm", "two"]);
    let (_runtime, url, server) = FakeProvider::start_blocking(Script::Repeat(Reply::ok(
        support::fixture("openai-chat/text-stop.sse"),
        1,
    )));
    let output = run(&project, &url, "/review 42 tests", true);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let (prompt, tools, _) = sent(&server).pop().unwrap();
    assert!(
        prompt.contains("Review pull request #42, looking hardest at tests."),
        "{prompt}"
    );
    assert!(prompt.contains("calc.py | 1 +"), "{prompt}");
    assert!(
        prompt.contains("Every change comes with a test."),
        "{prompt}"
    );
    assert_eq!(tools, ["read", "bash"]);
    let agents = project
        .golato()
        .args(["agents", "--trust"])
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&agents.stdout);
    assert!(
        listed.contains("reviewer  ") && listed.contains("tools: read, grep"),
        "{listed}"
    );
}
