//! `golato review`: `--approve auto`'s reviewer asked about calls that never run, one JSON
//! object a line on standard input, one review a line on standard output; a fresh reviewer for
//! each (no breaker, no cache between them), so each line is judged alone. The evaluation
//! (`benches/review_eval.py`) drives it.

use std::io::{BufRead as _, Write as _};

use serde::Deserialize;

use crate::error::{CliError, Exit};
use crate::settings::Settings;
use crate::setup::reviewer::{Outcome, Told};

/// One call to review.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    /// Echoed back, to match the answer to the case.
    #[serde(default)]
    id: serde_json::Value,
    /// The person's messages, oldest first.
    #[serde(default)]
    intent: Vec<String>,
    tool: String,
    arguments: serde_json::Value,
    /// Why the call would be reviewed.
    #[serde(default)]
    why: Option<String>,
}

pub(crate) async fn command(settings: Settings) -> Result<Exit, CliError> {
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    for (number, line) in stdin.lock().lines().enumerate() {
        let line = line.map_err(|error| CliError::Failed(format!("standard input: {error}")))?;
        if line.trim().is_empty() {
            continue;
        }
        let case: Case = serde_json::from_str(&line).map_err(|error| {
            CliError::usage(format!(
                "line {} of standard input is not a call to review ({error}): give {{\"intent\": [\"…\"], \"tool\": \"bash\", \"arguments\": {{…}}}}",
                number + 1
            ))
        })?;
        let reviewer = crate::setup::reviewer_source::reviewer(&settings)?;
        reviewer.tell(Told::Nowhere);
        for said in &case.intent {
            reviewer.heard(said);
        }
        let call = golato::message::ToolCall::new("review", &case.tool, case.arguments.to_string());
        let detail = crate::setup::approve::detail(&call, &case.arguments);
        let why = case.why.as_deref().unwrap_or("the approval mode");
        let review = match reviewer
            .review(&case.tool, detail, &case.arguments, why)
            .await
        {
            Outcome::Allow(review)
            | Outcome::Deny(review)
            | Outcome::Ask(review)
            | Outcome::Failed(review) => review,
            Outcome::Paused => continue,
        };
        let mut answer = serde_json::to_value(&review).unwrap_or_default();
        if let Some(fields) = answer.as_object_mut() {
            fields.insert("id".into(), case.id);
        }
        let _ = writeln!(out, "{answer}");
        let _ = out.flush();
    }
    Ok(Exit::Success)
}
