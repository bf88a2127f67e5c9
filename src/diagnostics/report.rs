//! What the model reads of a file's diagnostics: the ones a change introduced, errors first,
//! bounded in lines and characters, with a count of what was left out.

use lsp_types::{Diagnostic, DiagnosticSeverity, NumberOrString};
use serde_json::{json, Value};

/// The most diagnostic lines in one report.
pub(crate) const MAX_LINES: usize = 20;
/// The most characters of one report.
pub(crate) const MAX_CHARS: usize = 4_000;
/// New warnings are told only when there are at most this many (errors always are).
pub(crate) const MAX_WARNINGS: usize = 5;

/// The diagnostics of `after` that `before` did not have: counted by severity, code and
/// message, not position (a change moves the lines below it). `before` `None`: all are new.
pub(crate) fn introduced<'a>(
    before: Option<&[Diagnostic]>,
    after: &'a [Diagnostic],
) -> Vec<&'a Diagnostic> {
    let Some(before) = before else {
        return after.iter().collect();
    };
    let mut earlier: Vec<(Option<DiagnosticSeverity>, String, &str)> = before
        .iter()
        .map(|d| (d.severity, code(d), d.message.as_str()))
        .collect();
    after
        .iter()
        .filter(|d| {
            let key = (d.severity, code(d), d.message.as_str());
            match earlier.iter().position(|seen| *seen == key) {
                Some(at) => {
                    earlier.swap_remove(at);
                    false
                }
                None => true,
            }
        })
        .collect()
}

fn code(diagnostic: &Diagnostic) -> String {
    match &diagnostic.code {
        Some(NumberOrString::Number(number)) => number.to_string(),
        Some(NumberOrString::String(text)) => text.clone(),
        None => String::new(),
    }
}

fn is_error(diagnostic: &Diagnostic) -> bool {
    // A server that says no severity means an error (the protocol leaves it to the client).
    matches!(diagnostic.severity, None | Some(DiagnosticSeverity::ERROR))
}

fn is_warning(diagnostic: &Diagnostic) -> bool {
    diagnostic.severity == Some(DiagnosticSeverity::WARNING)
}

/// The new diagnostics of one file, as the model and a person read them.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Report {
    /// For the model: the lines appended to the call's result.
    pub(crate) text: String,
    /// For a person: "2 new errors in calc.py".
    pub(crate) summary: String,
    /// For `--json` and the session: each new diagnostic as data.
    pub(crate) details: Value,
}

/// The report of the diagnostics `new` of `shown` (the file as the call named it), `before`
/// that were there already; `None` when there is nothing to tell (no new error, and no new
/// warnings or too many to be worth it).
pub(crate) fn report(
    shown: &str,
    new: &[&Diagnostic],
    before: usize,
    left_out: usize,
) -> Option<Report> {
    let errors: Vec<&Diagnostic> = new.iter().copied().filter(|d| is_error(d)).collect();
    let warnings: Vec<&Diagnostic> = new.iter().copied().filter(|d| is_warning(d)).collect();
    let told_warnings = match warnings.len() <= MAX_WARNINGS {
        true => warnings.clone(),
        false => Vec::new(),
    };
    if errors.is_empty() && told_warnings.is_empty() {
        return None;
    }
    let summary = [(errors.len(), "error"), (told_warnings.len(), "warning")]
        .iter()
        .filter(|(count, _)| *count > 0)
        .map(|(count, what)| plural(*count, &format!("new {what}")))
        .collect::<Vec<_>>()
        .join(" and ");
    let summary = format!("{summary} in {shown}");
    let mut text = format!("Diagnostics after this change: {summary}");
    if before > 0 {
        text.push_str(&format!(
            " ({} it did not introduce, not listed)",
            plural(before, "other")
        ));
    }
    text.push_str(":\n");
    let mut listed = 0;
    let told: Vec<&Diagnostic> = errors.iter().chain(told_warnings.iter()).copied().collect();
    for diagnostic in &told {
        let line = line(shown, diagnostic);
        if listed == MAX_LINES || text.len() + line.len() > MAX_CHARS {
            break;
        }
        text.push_str(&line);
        text.push('\n');
        listed += 1;
    }
    let unlisted = told.len() - listed + left_out;
    if unlisted > 0 {
        text.push_str(&format!("({unlisted} more not shown)\n"));
    }
    let details = json!({
        "file": shown,
        "summary": summary,
        "new": told.iter().map(|d| json!({
            "line": d.range.start.line + 1,
            "column": d.range.start.character + 1,
            "severity": if is_error(d) { "error" } else { "warning" },
            "code": code(d),
            "message": d.message,
        })).collect::<Vec<_>>(),
        "before": before,
    });
    Some(Report {
        text: text.trim_end().to_owned(),
        summary,
        details,
    })
}

/// `calc.py:3:12: error [code] message` (1-based line and column, the message on one line).
pub(crate) fn line(shown: &str, diagnostic: &Diagnostic) -> String {
    let severity = match diagnostic.severity {
        Some(DiagnosticSeverity::WARNING) => "warning",
        Some(DiagnosticSeverity::INFORMATION) => "info",
        Some(DiagnosticSeverity::HINT) => "hint",
        _ => "error",
    };
    let code = match code(diagnostic) {
        code if code.is_empty() => String::new(),
        code => format!(" [{code}]"),
    };
    let message: String = diagnostic
        .message
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .take(400)
        .collect();
    format!(
        "{shown}:{}:{}: {severity}{code} {message}",
        diagnostic.range.start.line + 1,
        diagnostic.range.start.character + 1
    )
}

fn plural(count: usize, what: &str) -> String {
    match count {
        1 => format!("1 {what}"),
        _ => format!("{count} {what}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lsp_types::{Position, Range};

    fn diagnostic(line: u32, severity: DiagnosticSeverity, message: &str) -> Diagnostic {
        Diagnostic {
            range: Range::new(Position::new(line, 4), Position::new(line, 8)),
            severity: Some(severity),
            code: Some(NumberOrString::String("reportX".into())),
            message: message.into(),
            ..Diagnostic::default()
        }
    }

    #[test]
    fn only_what_the_change_introduced_is_told_errors_first() {
        let old = diagnostic(9, DiagnosticSeverity::ERROR, "old problem");
        let before = vec![old.clone()];
        // The old one moved down two lines: still not new.
        let mut moved = old;
        moved.range.start.line = 11;
        let after = vec![
            diagnostic(1, DiagnosticSeverity::WARNING, "unused x"),
            moved,
            diagnostic(2, DiagnosticSeverity::ERROR, "bad\n  type"),
        ];
        let new = introduced(Some(&before), &after);
        let told = report("calc.py", &new, 1, 0).unwrap();
        assert_eq!(told.summary, "1 new error and 1 new warning in calc.py");
        assert_eq!(
            told.text,
            "Diagnostics after this change: 1 new error and 1 new warning in calc.py (1 other it did not introduce, not listed):\ncalc.py:3:5: error [reportX] bad type\ncalc.py:2:5: warning [reportX] unused x"
        );
        assert!(report("calc.py", &[], 1, 0).is_none(), "clean: nothing");
    }

    #[test]
    fn a_flood_is_bounded_and_counted() {
        let after: Vec<Diagnostic> = (0..1000)
            .map(|n| diagnostic(n, DiagnosticSeverity::ERROR, &"x".repeat(300)))
            .collect();
        let new = introduced(None, &after);
        let told = report("a.py", &new, 0, 99_000).unwrap();
        assert!(told.text.len() <= MAX_CHARS + 100, "{}", told.text.len());
        assert!(told.text.lines().count() <= MAX_LINES + 2);
        assert!(told.text.ends_with("more not shown)"), "{}", told.text);
        // Many new warnings and no error: not worth telling.
        let warnings: Vec<Diagnostic> = (0..6)
            .map(|n| diagnostic(n, DiagnosticSeverity::WARNING, "w"))
            .collect();
        assert!(report("a.py", &introduced(None, &warnings), 0, 0).is_none());
    }
}
