//! Linters without a language server (ruff, eslint, a compiler's syntax check): a command run
//! on a file's text, its output read in a format the user names, confined as the servers are.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use lsp_types::{Diagnostic, DiagnosticSeverity, NumberOrString, Position, Range};
use tokio::io::AsyncReadExt as _;

use super::server::MAX_KEPT;

/// The most bytes of a linter's output read.
const MAX_OUTPUT_BYTES: u64 = 4 * 1024 * 1024;

/// How a linter writes what it found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum LintFormat {
    /// One finding a line, as compilers write them: `FILE:LINE:COL: error: MESSAGE`, the
    /// column and the severity optional (no severity: an error); a first word such as `F401`
    /// is the code (ruff's `--output-format concise`, gcc, clang, shellcheck's `gcc` format).
    Gcc,
    /// ESLint's `--format json`: files, each with its `messages` (`line`, `column`,
    /// `severity` 1 or 2, `message`, `ruleId`).
    EslintJson,
}

/// A linter: the command, the files it checks, and how it writes its findings.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[non_exhaustive]
pub struct LinterSpec {
    /// Its name, in notes and configuration (`[lint.ruff]`).
    pub name: String,
    /// The program and its arguments; `{file}` is replaced by the file's path relative to the
    /// workspace. The file's text (as the call leaves it, or as it was) is its standard input,
    /// so give the linter its stdin option (`ruff check --stdin-filename {file} -`).
    pub command: Vec<String>,
    /// The file extensions it checks, without the dot.
    pub extensions: Vec<String>,
    /// How its output is read.
    pub format: LintFormat,
}

impl LinterSpec {
    /// A linter of `extensions` run as `command`, read as `format`.
    pub fn new(
        name: impl Into<String>,
        command: impl IntoIterator<Item = impl Into<String>>,
        extensions: impl IntoIterator<Item = impl Into<String>>,
        format: LintFormat,
    ) -> LinterSpec {
        LinterSpec {
            name: name.into(),
            command: command.into_iter().map(Into::into).collect(),
            extensions: extensions.into_iter().map(Into::into).collect(),
            format,
        }
    }
}

/// Runs `spec` on `text` as the content of `file` (shown to it as `shown`), within `within`:
/// its findings (at most [`MAX_KEPT`], and how many more), or why it could not say.
pub(crate) async fn run(
    spec: &LinterSpec,
    root: &Path,
    shown: &str,
    text: &str,
    sandbox: Option<&golato_sandbox::Prepared>,
    within: Duration,
) -> Result<(Vec<Diagnostic>, usize), String> {
    let command: Vec<String> = spec
        .command
        .iter()
        .map(|part| part.replace("{file}", shown))
        .collect();
    let Some((program, arguments)) = command.split_first() else {
        return Err(format!("linter {}: its command is empty", spec.name));
    };
    // The text goes in through a private file: a confined command has no standard input of
    // golato's (the sandbox's helper keeps its own for its status), so it reads the file.
    let input = tempfile::Builder::new()
        .prefix("golato-lint-")
        .tempfile()
        .map_err(|error| format!("linter {}: could not keep the text: {error}", spec.name))?;
    std::fs::write(input.path(), text)
        .map_err(|error| format!("linter {}: could not keep the text: {error}", spec.name))?;
    let mut process = match sandbox {
        None => {
            let mut process = tokio::process::Command::new(program);
            process.args(arguments).stdin(
                std::fs::File::open(input.path())
                    .map_err(|error| format!("linter {}: {error}", spec.name))?,
            );
            process
        }
        Some(sandbox) => {
            let mut process =
                super::server::reading_confined(sandbox, input.path(), program, arguments);
            process.stdin(Stdio::null());
            process
        }
    };
    process
        .current_dir(root)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = process.spawn().map_err(|error| match error.kind() {
        std::io::ErrorKind::NotFound => {
            format!("linter {}: {program} was not found on PATH", spec.name)
        }
        _ => format!("linter {}: could not start {program}: {error}", spec.name),
    })?;
    let Some(stdout) = child.stdout.take() else {
        return Err(format!("linter {}: its output is missing", spec.name));
    };
    let mut output = Vec::new();
    let read = tokio::time::timeout(
        within,
        stdout.take(MAX_OUTPUT_BYTES).read_to_end(&mut output),
    )
    .await;
    let _ = child.start_kill();
    match read {
        Err(_) => {
            return Err(format!(
                "linter {} did not finish within {} ms",
                spec.name,
                (within.as_secs_f64() * 1000.0).round()
            ))
        }
        Ok(Err(error)) => return Err(format!("linter {}: could not read it: {error}", spec.name)),
        Ok(Ok(_)) => {}
    }
    let output = String::from_utf8_lossy(&output);
    let mut found = match spec.format {
        LintFormat::Gcc => gcc(&output),
        LintFormat::EslintJson => eslint(&output).map_err(|why| {
            format!(
                "linter {}: its output is not ESLint's JSON ({why})",
                spec.name
            )
        })?,
    };
    let left_out = found.len().saturating_sub(MAX_KEPT);
    found.truncate(MAX_KEPT);
    Ok((found, left_out))
}

fn diagnostic(
    line: u32,
    column: u32,
    severity: DiagnosticSeverity,
    code: Option<String>,
    message: String,
) -> Diagnostic {
    let at = Position::new(line.saturating_sub(1), column.saturating_sub(1));
    Diagnostic {
        range: Range::new(at, at),
        severity: Some(severity),
        code: code.map(NumberOrString::String),
        message,
        ..Diagnostic::default()
    }
}

/// `FILE:LINE[:COL]: [SEVERITY:] [CODE] MESSAGE` lines; other lines are not findings.
fn gcc(output: &str) -> Vec<Diagnostic> {
    output
        .lines()
        .filter_map(|line| {
            let mut parts = line.splitn(4, ':');
            let _file = parts.next()?;
            let line_number: u32 = parts.next()?.trim().parse().ok()?;
            let third = parts.next()?;
            let (column, rest) = match third.trim().parse::<u32>() {
                Ok(column) => (column, parts.next()?.to_owned()),
                Err(_) => (
                    1,
                    [Some(third), parts.next()]
                        .into_iter()
                        .flatten()
                        .collect::<Vec<_>>()
                        .join(":"),
                ),
            };
            let rest = rest.trim();
            let (severity, rest) = match rest.split_once(':') {
                Some((word, after)) => match word.trim() {
                    "error" | "fatal error" => (DiagnosticSeverity::ERROR, after.trim()),
                    "warning" => (DiagnosticSeverity::WARNING, after.trim()),
                    "note" | "info" => (DiagnosticSeverity::INFORMATION, after.trim()),
                    _ => (DiagnosticSeverity::ERROR, rest),
                },
                None => (DiagnosticSeverity::ERROR, rest),
            };
            let (code, message) = match rest.split_once(' ') {
                Some((first, after))
                    if first.len() > 1
                        && first.chars().next().is_some_and(|c| c.is_ascii_uppercase())
                        && first.chars().any(|c| c.is_ascii_digit())
                        && first.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') =>
                {
                    (
                        Some(first.to_owned()),
                        after.trim_start_matches("[*]").trim(),
                    )
                }
                _ => (None, rest),
            };
            (!message.is_empty())
                .then(|| diagnostic(line_number, column, severity, code, message.to_owned()))
        })
        .collect()
}

/// ESLint's JSON: `[{"messages": [{"line", "column", "severity", "message", "ruleId"}]}]`.
fn eslint(output: &str) -> Result<Vec<Diagnostic>, String> {
    #[derive(serde::Deserialize)]
    struct File {
        #[serde(default)]
        messages: Vec<Message>,
    }
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Message {
        #[serde(default)]
        line: u32,
        #[serde(default)]
        column: u32,
        #[serde(default)]
        severity: u8,
        message: String,
        #[serde(default)]
        rule_id: Option<String>,
    }
    let files: Vec<File> = serde_json::from_str(output).map_err(|error| error.to_string())?;
    Ok(files
        .into_iter()
        .flat_map(|file| file.messages)
        .map(|found| {
            let severity = match found.severity {
                1 => DiagnosticSeverity::WARNING,
                _ => DiagnosticSeverity::ERROR,
            };
            diagnostic(
                found.line,
                found.column,
                severity,
                found.rule_id,
                found.message,
            )
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compiler_lines_are_read_with_their_severity_and_code() {
        let found = gcc("a.py:1:8: F401 [*] `os` imported but unused\n\
             main.c:3:5: warning: unused variable 'x'\n\
             main.c:4: error: expected ';'\n\
             Found 1 error.\n");
        assert_eq!(found.len(), 3);
        assert_eq!(found[0].code, Some(NumberOrString::String("F401".into())));
        assert_eq!(found[0].message, "`os` imported but unused");
        assert_eq!(found[0].range.start, Position::new(0, 7));
        assert_eq!(found[1].severity, Some(DiagnosticSeverity::WARNING));
        assert_eq!(found[1].message, "unused variable 'x'");
        assert_eq!(found[2].range.start, Position::new(3, 0));
        assert_eq!(found[2].message, "expected ';'");
    }

    #[test]
    fn eslint_json_is_read_and_what_is_not_json_is_refused() {
        let found = eslint(
            r#"[{"filePath": "a.js", "messages": [{"ruleId": "no-undef", "severity": 2, "message": "'x' is not defined.", "line": 2, "column": 3}]}]"#,
        )
        .unwrap();
        assert_eq!(
            found[0].code,
            Some(NumberOrString::String("no-undef".into()))
        );
        assert_eq!(found[0].range.start, Position::new(1, 2));
        assert!(eslint("Oops, something went wrong").is_err());
    }
}
