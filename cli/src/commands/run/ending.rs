//! How a run ends for the command line: its exit status and error from the outcome (a failed
//! recorder or a differing replay fail it too), and its answer handed to standard output and
//! `-o`'s file.

use std::path::Path;

use crate::error::{CliError, Exit};
use crate::view::live::Target;
use crate::view::report::{describe, Tally};

/// How the run ended: its exit, the error to say, and its answer (with `--output-schema`, the
/// JSON value). A recorder that failed, or a replay that differs under `--strict-replay`,
/// fails a run that otherwise succeeded.
pub(super) fn verdict<'a>(
    outcome: &'a Result<golato::RunResult, golato::agent::Error>,
    interrupted: Option<crate::interrupt::Signal>,
    record_error: Option<CliError>,
    strict_replay: Option<bool>,
    tally: &Tally,
) -> (Exit, Option<String>, Option<std::borrow::Cow<'a, str>>) {
    let (exit, error, final_text) = match (outcome, interrupted) {
        (_, Some(signal)) => (Exit::Interrupted(signal), None, None),
        // With --output-schema, the answer is the JSON value.
        (Ok(result), None) => match &result.output {
            Some(value) => (
                Exit::Success,
                None,
                Some(std::borrow::Cow::Owned(
                    serde_json::to_string_pretty(value).unwrap_or_default(),
                )),
            ),
            None => (
                Exit::Success,
                None,
                Some(answer_text(&result.final_message)),
            ),
        },
        (Err(error), None) => (Exit::Failure, Some(describe(error)), None),
    };
    let (exit, error) = match (record_error, error) {
        (Some(record_error), None) if exit == Exit::Success => {
            (Exit::Failure, Some(record_error.to_string()))
        }
        (_, error) => (exit, error),
    };
    let (exit, error) = match strict_replay {
        Some(prompt_differs)
            if exit == Exit::Success && (prompt_differs || tally.replay_mismatches > 0) =>
        {
            (
                Exit::Failure,
                Some(format!(
                    "the replay differs from the recording ({}{}); --strict-replay makes that a failure",
                    crate::view::shown::count(tally.replay_mismatches as u64, "tool result"),
                    if prompt_differs { ", and the prompt" } else { "" }
                )),
            )
        }
        _ => (exit, error),
    };
    (exit, error, final_text)
}

/// The answer, to standard output when the story went elsewhere, and to `-o`'s file.
pub(super) fn hand_over(
    text: &str,
    story: Target,
    json: bool,
    last_message: Option<&Path>,
) -> Result<(), CliError> {
    if story != Target::Stdout && !json {
        use std::io::IsTerminal as _;
        use std::io::Write as _;
        let mut out = std::io::stdout().lock();
        // On a terminal the answer is shown; into a pipe or a file it is data, exact.
        let text = match out.is_terminal() {
            true => crate::view::shown::visible(text),
            false => std::borrow::Cow::Borrowed(text),
        };
        let _ = writeln!(out, "{text}").and_then(|()| out.flush());
    }
    if let Some(path) = last_message {
        std::fs::write(path, text.as_bytes()).map_err(|error| {
            CliError::Failed(format!(
                "the run ended but its answer could not be written to {} (-o): {error}",
                path.display()
            ))
        })?;
    }
    Ok(())
}

/// The text of `message`: borrowed when it is one part (an answer can be large), joined
/// otherwise.
pub(crate) fn answer_text(
    message: &golato::message::AssistantMessage,
) -> std::borrow::Cow<'_, str> {
    match message.content.as_slice() {
        [part] => match part.as_text() {
            Some(text) => std::borrow::Cow::Borrowed(text),
            None => std::borrow::Cow::Owned(message.text()),
        },
        _ => std::borrow::Cow::Owned(message.text()),
    }
}
