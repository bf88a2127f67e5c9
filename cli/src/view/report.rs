//! What a view of a run is told: its events, the differences from a recording, notices, and
//! how it ended. The terminal view ([`crate::view::live`]) and the JSON lines view ([`crate::view::json`])
//! both implement [`View`].

use std::path::PathBuf;
use std::time::Duration;

use golato::agent::Event;
use golato::message::Usage;

use crate::error::Exit;

/// Shows a run as it happens.
pub(crate) trait View {
    /// An event of the run, as it arrives.
    fn event(&mut self, event: &Event);
    /// A replayed tool result differs from the recorded one.
    fn mismatch(&mut self, mismatch: &Mismatch);
    /// The run was interrupted by a signal and is being cancelled.
    fn interrupted(&mut self, signal: crate::interrupt::Signal);
    /// The run is over.
    fn end(&mut self, ending: &Ending<'_>);
    /// The program exits at once (a second signal): leave the terminal clean.
    fn abandon(&mut self);
    /// A call waits for a yes: show `prompt` where the person will answer.
    fn question(&mut self, prompt: &str) {
        let _ = prompt;
    }
    /// The question was answered.
    fn answered(&mut self, answer: Answer) {
        let _ = answer;
    }
}

/// What the person said to a question (an approval).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Answer {
    Yes,
    No,
    /// Yes, and to every later call of this tool in this run.
    Always,
}

impl Answer {
    /// The answer a line of input gives, if it is one.
    pub(crate) fn parse(line: &str) -> Option<Answer> {
        match line.trim().to_ascii_lowercase().as_str() {
            "y" | "yes" => Some(Answer::Yes),
            "n" | "no" | "" => Some(Answer::No),
            "a" | "always" => Some(Answer::Always),
            _ => None,
        }
    }
}

/// Counts of a run, kept from its events.
#[derive(Debug, Default, Clone)]
pub(crate) struct Tally {
    /// Model requests made.
    pub(crate) turns: usize,
    /// Tool calls that got a result.
    pub(crate) tool_calls: usize,
    /// Of those, the error results.
    pub(crate) tool_errors: usize,
    /// Tokens, where the provider reports them.
    pub(crate) usage: Usage,
    /// Tool results that differ from the recording being replayed.
    pub(crate) replay_mismatches: usize,
}

impl Tally {
    pub(crate) fn observe(&mut self, event: &Event) {
        match event {
            Event::TurnStart(_) => self.turns += 1,
            Event::MessageEnd(end) => self.usage += end.message.usage,
            // The CLI's summaries are written by the run's own model, at its price.
            Event::Compaction(compaction) => self.usage += compaction.usage,
            Event::ToolExecutionEnd(end) => {
                self.tool_calls += 1;
                self.tool_errors += usize::from(end.result.is_error);
            }
            // A subagent's tokens are the run's too (as in its usage and budget).
            Event::Subagent(nested) => match &*nested.event {
                Event::MessageEnd(end) => self.usage += end.message.usage,
                Event::Compaction(compaction) => self.usage += compaction.usage,
                _ => {}
            },
            _ => {}
        }
    }
}

/// How a run ended, for the last thing a view shows.
#[derive(Debug)]
pub(crate) struct Ending<'a> {
    pub(crate) exit: Exit,
    /// Why the run did not end normally (also printed on stderr).
    pub(crate) error: Option<String>,
    /// The final answer's text, when the run ended normally (borrowed: an answer can be large).
    pub(crate) final_text: Option<&'a str>,
    pub(crate) tally: &'a Tally,
    pub(crate) wall: Duration,
    /// Where the demo's project is (for `golato demo`).
    pub(crate) workspace: Option<PathBuf>,
    /// What the tokens cost in US dollars, when the model's price is known.
    pub(crate) cost: Option<f64>,
}

impl Ending<'_> {
    /// `completed`, `failed` or `interrupted`.
    pub(crate) fn status(&self) -> &'static str {
        match self.exit {
            Exit::Success => "completed",
            Exit::Interrupted(_) => "interrupted",
            Exit::Failure | Exit::Usage => "failed",
        }
    }
}

/// A replayed tool result that differs from the recorded one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Mismatch {
    /// 1-based turn.
    pub(crate) turn: usize,
    /// 0-based position of the call in the turn's message.
    pub(crate) index: usize,
    pub(crate) call_id: String,
    pub(crate) tool_name: String,
    /// What differs, in words.
    pub(crate) difference: String,
}

/// The error in the command line's terms.
pub(crate) fn describe(error: &golato::agent::Error) -> String {
    match error {
        golato::agent::Error::MaxTurns { limit, .. } => format!(
            "the run reached its limit of {} and the model asked for another; raise --max-turns",
            crate::view::shown::count(*limit as u64, "turn")
        ),
        golato::agent::Error::Budget { reached, .. } => format!(
            "the run reached its budget ({reached}) and was ended after its last batch; raise --max-tokens or --max-cost, or go on with golato run -c"
        ),
        golato::agent::Error::Generator { source, .. } => {
            let hint = match source {
                golato::generator::Error::Provider {
                    status: Some(404), ..
                } => "; a 404 from an OpenAI-compatible server often means the base URL lacks /v1 at its end (--base-url http://HOST:PORT/v1)",
                golato::generator::Error::Provider {
                    status: Some(401 | 403),
                    ..
                } => "; the API refused the key: check OPENAI_API_KEY (OpenAI, OpenAI-compatible servers) or ANTHROPIC_API_KEY (Anthropic), whichever this run's provider reads (the header line names the provider)",
                _ => "",
            };
            one_line(&format!("the model's API failed: {source}{hint}"))
        }
        other => one_line(&other.to_string()),
    }
}

/// `text` on one line (a provider's HTML error page has many), cut at 600 characters.
fn one_line(text: &str) -> String {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match joined.char_indices().nth(600) {
        Some((cut, _)) => format!("{} …", &joined[..cut]),
        None => joined,
    }
}

/// A model request sent again, as a line for the person: `the request failed (HTTP 503);
/// trying again (1 of 3) in 0.5 s`.
pub(crate) fn retrying(retrying: &golato::generator::Retrying) -> String {
    format!(
        "the request failed ({}); trying again ({} of {}) in {:.1} s",
        crate::view::shown::visible(&retrying.reason),
        retrying.attempt,
        retrying.retries,
        retrying.wait_ms as f64 / 1000.0
    )
}
