//! Driving the built `golato` binary as a person or a script would.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// The binary, with none of the provider, colour or log variables of the environment the tests
/// run in, so each test sets exactly what it means to.
pub fn golato() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_golato"));
    for variable in [
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "OPENAI_MODEL",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
        "ANTHROPIC_MODEL",
        "NO_COLOR",
        "CLICOLOR",
        "CLICOLOR_FORCE",
        "RUST_LOG",
    ] {
        command.env_remove(variable);
    }
    command
}

/// Runs the binary with `args` to its end.
pub fn golato_output(args: &[&str]) -> Output {
    golato().args(args).output().unwrap()
}

/// `golato run FLAGS --cwd DIR --script SCRIPT go`, run to its end.
pub fn run_script(dir: &Path, script: &Path, flags: &[&str]) -> Output {
    let mut args = vec!["run"];
    args.extend_from_slice(flags);
    let (dir, script) = (dir.to_str().unwrap(), script.to_str().unwrap());
    args.extend(["--cwd", dir, "--script", script, "go"]);
    golato_output(&args)
}

/// Writes a script of JSONL `entries` into `dir` and returns its path.
pub fn script_file(dir: &Path, name: &str, entries: &[Value]) -> PathBuf {
    let path = dir.join(name);
    let text: String = entries.iter().map(|entry| format!("{entry}\n")).collect();
    std::fs::write(&path, text).unwrap();
    path
}

/// Every line of stdout parsed as JSON; fails the test on a line that is not.
pub fn json_lines(output: &Output) -> Vec<Value> {
    String::from_utf8(output.stdout.clone())
        .unwrap()
        .lines()
        .map(|line| {
            serde_json::from_str(line).unwrap_or_else(|error| panic!("not JSON ({error}): {line}"))
        })
        .collect()
}

/// The lines of the given `"type"`.
pub fn of_type<'a>(lines: &'a [Value], kind: &str) -> Vec<&'a Value> {
    lines.iter().filter(|line| line["type"] == kind).collect()
}

/// Whether `line` is the header `golato run` prints before a run (what it uses).
pub fn is_header(line: &str) -> bool {
    line.starts_with("golato: ") && line.contains(" · cwd ") && line.contains(" · tools ")
}

/// Stderr past the header, which must be a single line starting `golato: ` (no backtrace, no
/// panic).
pub fn one_error_line(output: &Output) -> String {
    let stderr = String::from_utf8(output.stderr.clone()).unwrap();
    let lines: Vec<&str> = stderr.lines().filter(|line| !is_header(line)).collect();
    assert_eq!(lines.len(), 1, "stderr should be one line, got: {stderr}");
    assert!(lines[0].starts_with("golato: "), "stderr: {stderr}");
    assert!(!stderr.contains("panicked"), "stderr: {stderr}");
    lines[0].to_owned()
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}
