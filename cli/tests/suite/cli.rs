//! The `golato` binary: `golato tool NAME JSON_ARGS [--cwd DIR]`.

use std::process::{Command, Output};

use pretty_assertions::assert_eq;
use serde_json::{json, Value};

fn golato(args: &[&str]) -> Output {
    Command::new(crate::support::golato_binary())
        .args(args)
        .output()
        .unwrap()
}

fn text(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn printed(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap()
}

#[test]
fn a_successful_call_prints_its_result_and_exits_0() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("hello.txt"), "hello\nworld\n").unwrap();
    let cwd = dir.path().to_str().unwrap();
    let output = golato(&["tool", "read", r#"{"path": "hello.txt"}"#, "--cwd", cwd]);
    assert_eq!(output.status.code(), Some(0));
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert_eq!(stdout, "{\"content\":[{\"type\":\"text\",\"text\":\"hello\\nworld\"}],\"is_error\":false,\"details\":null}\n");
}

#[test]
fn an_error_result_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().to_str().unwrap();
    let output = golato(&[
        "tool",
        "bash",
        r#"{"command": "echo oops; exit 7"}"#,
        "--cwd",
        cwd,
    ]);
    assert_eq!(output.status.code(), Some(1));
    let value = printed(&output);
    assert_eq!(value["is_error"], true);
    assert_eq!(value["details"]["exit_code"], 7);
    // Validation failures come from the same pipeline.
    let output = golato(&["tool", "read", r#"{"path": 5}"#, "--cwd", cwd]);
    assert_eq!(output.status.code(), Some(1));
    assert!(printed(&output)["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("/path"));
    let output = golato(&["tool", "nope", "{}", "--cwd", cwd]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        printed(&output)["content"],
        json!([{"type": "text", "text": "Tool \"nope\" not found. Available tools: read, bash, edit, write, grep, find, ls, update_plan, web_fetch."}])
    );
}

#[test]
fn arguments_too_long_for_a_command_line_come_from_standard_input() {
    use std::io::Write as _;
    let dir = tempfile::tempdir().unwrap();
    // Longer than one argument may be (MAX_ARG_STRLEN, 128 KiB).
    let content = "x".repeat(300 * 1024);
    let mut child = Command::new(crate::support::golato_binary())
        .args(["tool", "write", "-", "--cwd", dir.path().to_str().unwrap()])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let arguments = json!({"path": "long.txt", "content": content}).to_string();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(arguments.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("long.txt")).unwrap(),
        content
    );
}

#[test]
fn running_out_of_file_descriptors_names_the_operation_and_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f.txt"), "one\n").unwrap();
    let calls = [
        ("read", json!({"path": "f.txt"})),
        ("bash", json!({"command": "echo hi"})),
        ("write", json!({"path": "g.txt", "content": "x"})),
        (
            "edit",
            json!({"path": "f.txt", "edits": [{"oldText": "one", "newText": "two"}]}),
        ),
    ];
    // Where the limit bites depends on what this process inherited: walk through limits from
    // "cannot even start" to "enough", so some call runs out inside its tool.
    let mut inside_a_tool = Vec::new();
    // The child inherits at most what this process has open.
    let open_here = std::fs::read_dir("/proc/self/fd").unwrap().count();
    for limit in 8..=open_here + 40 {
        for (tool, arguments) in &calls {
            let output = Command::new("bash")
                .arg("-c")
                .arg(format!(
                    "ulimit -n {limit} && exec \"$0\" tool \"$1\" \"$2\" --cwd \"$3\""
                ))
                .arg(crate::support::golato_binary())
                .arg(tool)
                .arg(arguments.to_string())
                .arg(dir.path())
                .output()
                .unwrap();
            let stdout = String::from_utf8_lossy(&output.stdout);
            let stderr = String::from_utf8_lossy(&output.stderr);
            for text in [&stdout, &stderr] {
                if text.contains("Too many open files") {
                    assert!(text.contains("ulimit -n"), "no advice: {text}");
                    assert!(
                        text.contains("could not") || text.contains("Could not"),
                        "no operation: {text}"
                    );
                }
            }
            if stdout.contains("Too many open files") {
                inside_a_tool.push(stdout.into_owned());
            }
        }
    }
    assert!(
        !inside_a_tool.is_empty(),
        "no limit made a tool run out of descriptors"
    );
}

#[test]
fn bash_output_too_long_to_show_without_a_temporary_directory_keeps_its_tail() {
    let dir = tempfile::tempdir().unwrap();
    let output = Command::new(crate::support::golato_binary())
        .args([
            "tool",
            "bash",
            r#"{"command": "seq 200000; echo the end"}"#,
            "--cwd",
        ])
        .arg(dir.path())
        .env("TMPDIR", "/nonexistent/tmp")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let value = printed(&output);
    let text = value["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("199999\n200000\nthe end"), "{text}");
    assert!(
        text.contains("could not create a file in /nonexistent/tmp"),
        "{text}"
    );
    assert_eq!(value["details"]["full_output_path"], Value::Null);
    assert_eq!(value["details"]["exit_code"], 0);
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(golato(&["tool", "read"]).status.code(), Some(2));
    assert_eq!(golato(&["frobnicate"]).status.code(), Some(2));
    let output = golato(&["tool", "read", "{}", "--cwd", "/no/such/dir"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("/no/such/dir"));
}

#[test]
fn golato_tool_write_from_stdin_holds_the_content_about_twice() {
    // Issue 21: `golato tool write -` held about three times the content (the arguments, the
    // script's copy of them, the parsed content). Measured by a Python parent's getrusage.
    let dir = tempfile::tempdir().unwrap();
    let content_bytes = 64 * 1024 * 1024;
    let arguments = dir.path().join("args.json");
    std::fs::write(
        &arguments,
        json!({"path": "big.txt", "content": "x".repeat(content_bytes)}).to_string(),
    )
    .unwrap();
    let output = Command::new("python3")
        .arg("-c")
        .arg(
            "import resource, subprocess, sys\n\
             subprocess.run([sys.argv[1], 'tool', 'write', '-', '--cwd', sys.argv[2]], stdin=open(sys.argv[3]), stdout=subprocess.DEVNULL, check=True)\n\
             print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)",
        )
        .arg(crate::support::golato_binary())
        .arg(dir.path())
        .arg(&arguments)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let peak_kib: u64 = String::from_utf8_lossy(&output.stdout)
        .trim()
        .parse()
        .unwrap();
    assert_eq!(
        std::fs::metadata(dir.path().join("big.txt")).unwrap().len(),
        content_bytes as u64
    );
    // Three copies were 216 MiB here; two and the process itself are about 150.
    assert!(
        peak_kib < 180 * 1024,
        "peak {} MiB for {} MiB of content",
        peak_kib / 1024,
        content_bytes / (1024 * 1024)
    );
}

#[test]
fn help_says_what_golato_is_for_and_groups_the_options_of_run() {
    let help = text(&golato(&["-h"]));
    assert!(
        help.starts_with("A coding agent for your terminal"),
        "{help}"
    );
    let run = text(&golato(&["run", "-h"]));
    for heading in [
        "Model:",
        "Tools:",
        "Safety:",
        "Limits:",
        "Output:",
        "Sessions:",
    ] {
        assert!(
            run.contains(&format!("\n{heading}\n")),
            "{heading} in {run}"
        );
    }
    // -C takes a directory wherever one is taken.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "hello\n").unwrap();
    let read = golato(&[
        "tool",
        "read",
        r#"{"path": "a.txt"}"#,
        "-C",
        dir.path().to_str().unwrap(),
    ]);
    assert_eq!(read.status.code(), Some(0), "{read:?}");
    assert!(text(&read).contains("hello"));
}

#[test]
fn grep_skips_what_the_sandbox_denies_reading_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "the token is here\n").unwrap();
    std::fs::write(dir.path().join("secret.env"), "token=hunter2\n").unwrap();
    let cwd = dir.path().to_str().unwrap();
    let output = golato(&[
        "tool",
        "grep",
        r#"{"pattern": "token"}"#,
        "--cwd",
        cwd,
        "--sandbox",
        "workspace-write",
        "--deny-read",
        "secret.env",
    ]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let printed: Value = serde_json::from_slice(&output.stdout).unwrap();
    let text = printed["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("notes.txt:1: the token is here"), "{text}");
    assert!(!text.contains("hunter2"), "{text}");
    assert!(text.contains("1 file(s) could not be read"), "{text}");
}
