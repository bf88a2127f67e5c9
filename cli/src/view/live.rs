//! The terminal view: streamed answer text, a line per tool call (a spinner with its elapsed
//! time and latest output line while it runs, then ✓ or ✗ with the first lines of its result),
//! and a one-line summary.
//!
//! On a terminal the spinners are indicatif progress bars, one line each, so parallel calls show
//! at once. Without one (piped or redirected, or `TERM=dumb`) the same story is told in plain
//! lines with no spinner and no escape codes; colours also honour `NO_COLOR` and `CLICOLOR`
//! (through anstream).

mod calls;

use std::collections::HashMap;
use std::io::Write;
use std::time::{Duration, Instant};

use anstyle::{AnsiColor, Style};
use golato::agent::event::SubagentEvent;
use golato::agent::Event;
use golato::generator::Delta;
use golato::hook::HookAction;
use golato::message::{AssistantMessage, Content, StopReason, ToolCall, ToolResultMessage};
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};

use crate::interrupt::Signal;
use crate::view::report::Mismatch;
use crate::view::report::{Answer, Ending, View};
use crate::view::shown::visible;

pub(crate) use super::label::{call_label, clip};
use super::label::{decoded_size, styled};

const GREEN: Style = AnsiColor::Green.on_default();
const RED: Style = AnsiColor::Red.on_default();
const YELLOW: Style = AnsiColor::Yellow.on_default();
const DIM: Style = Style::new().dimmed();
const BOLD: Style = Style::new().bold();

/// Lines of a result shown under its ✓ or ✗.
const RESULT_LINES: usize = 3;

/// Where the live view writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    /// Standard output: the terminal, or (for the demo) wherever it goes.
    Stdout,
    /// Standard error, when standard output carries only the final answer.
    Stderr,
    /// Nowhere (`--quiet`).
    Nowhere,
}

impl Target {
    /// Whether the target is a terminal that can show spinners.
    pub(crate) fn is_terminal(self) -> bool {
        use std::io::IsTerminal as _;
        match self {
            Target::Stdout => std::io::stdout().is_terminal(),
            Target::Stderr => std::io::stderr().is_terminal(),
            Target::Nowhere => false,
        }
    }

    /// The spinners' draw target on this stream.
    pub(crate) fn draw_target(self) -> indicatif::ProgressDrawTarget {
        match self {
            Target::Stdout => indicatif::ProgressDrawTarget::stdout(),
            Target::Stderr => indicatif::ProgressDrawTarget::stderr(),
            Target::Nowhere => indicatif::ProgressDrawTarget::hidden(),
        }
    }
}

/// The terminal view.
pub(crate) struct Live {
    /// Where the story goes.
    target: Target,
    /// The spinners, when the target is a terminal.
    bars: Option<MultiProgress>,
    /// Calls of the current batch that have started and not ended, by index.
    calls: HashMap<usize, Running>,
    /// What the current message has streamed so far.
    stream: Streamed,
    /// Whether the cursor is at the start of a line.
    at_line_start: bool,
    /// The terminal's width, when the story goes to one: the answer is wrapped between words
    /// there as it streams (else the terminal would break words at its last column).
    width: Option<usize>,
    /// The answer's wrapping while it streams.
    wrap: Option<super::wrap::WordWrap>,
}

struct Running {
    /// The call's ID: a subagent's events name the call that started it.
    id: String,
    label: String,
    started: Instant,
    bar: Option<ProgressBar>,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Streamed {
    #[default]
    Nothing,
    Reasoning,
    Text,
}

impl Live {
    /// A view drawing spinners through `bars` when given (stdout is a terminal), plain lines
    /// otherwise.
    pub(crate) fn new(target: Target, bars: Option<MultiProgress>) -> Live {
        Live {
            target,
            bars,
            calls: HashMap::new(),
            stream: Streamed::Nothing,
            at_line_start: true,
            width: target
                .is_terminal()
                .then(ratatui::crossterm::terminal::size)
                .and_then(Result::ok)
                .map(|(columns, _)| usize::from(columns)),
            wrap: None,
        }
    }

    /// Writes to the target with the spinners cleared, so text never lands inside a bar.
    fn write(&mut self, text: &str) {
        if text.is_empty() || self.target == Target::Nowhere {
            return;
        }
        self.at_line_start = text.ends_with('\n');
        let target = self.target;
        let write = || {
            // A closed stream (a pipe whose reader left) must not stop the run.
            let _ = match target {
                Target::Stderr => {
                    let mut out = anstream::stderr().lock();
                    out.write_all(text.as_bytes()).and_then(|()| out.flush())
                }
                _ => {
                    let mut out = anstream::stdout().lock();
                    out.write_all(text.as_bytes()).and_then(|()| out.flush())
                }
            };
        };
        match &self.bars {
            Some(bars) => bars.suspend(write),
            None => write(),
        }
    }

    /// Shows a note of the command line's own (what was done with a typed line), dimmed.
    pub(crate) fn note(&mut self, text: &str) {
        self.line(&format!("{DIM}{text}{DIM:#}"));
    }

    /// Writes `line` on a line of its own.
    fn line(&mut self, line: &str) {
        let mut text = String::new();
        if !self.at_line_start {
            text.push('\n');
        }
        text.push_str(line);
        text.push('\n');
        self.write(&text);
    }

    fn delta(&mut self, delta: &Delta) {
        match delta {
            Delta::Text(text) => {
                if self.stream == Streamed::Reasoning {
                    self.line("");
                }
                self.stream = Streamed::Text;
                let text = visible(text);
                match self.width {
                    Some(width) => {
                        let column = if self.at_line_start { 0 } else { width };
                        let wrap = self
                            .wrap
                            .get_or_insert_with(|| super::wrap::WordWrap::new(width, column));
                        let out = wrap.push(&text);
                        self.write(&out);
                    }
                    None => self.write(&text),
                }
            }
            Delta::Reasoning(text) => {
                self.stream = Streamed::Reasoning;
                self.write(&format!("{DIM}{}{DIM:#}", visible(text)));
            }
            // A call is shown when it starts, with its whole arguments.
            Delta::ToolCall { .. } => {}
        }
    }

    fn message_end(&mut self, message: &AssistantMessage) {
        if let Some(mut wrap) = self.wrap.take() {
            let out = wrap.finish();
            self.write(&out);
        }
        let text = message.text();
        if self.stream != Streamed::Text && !text.is_empty() {
            self.write(&visible(&text));
        }
        if !self.at_line_start {
            self.write("\n");
        }
        let note = match message.stop_reason {
            StopReason::Length => Some("the answer hit the output token limit".to_owned()),
            StopReason::Aborted => Some("the answer was cut short by cancellation".to_owned()),
            StopReason::Error => Some(format!(
                "the answer was cut short: {}",
                visible(message.error_message.as_deref().unwrap_or("provider error"))
            )),
            StopReason::Stop | StopReason::ToolCalls => None,
        };
        if let Some(note) = note {
            self.line(&format!("{YELLOW}({note}){YELLOW:#}"));
        }
        if let Some(search) = &message.web_search {
            for line in super::sources::lines(search) {
                self.line(&format!("{DIM}{line}{DIM:#}"));
            }
        }
        self.stream = Streamed::Nothing;
    }

    /// A subagent's progress, under the `task` call that started it: its calls as they end
    /// (and, on a terminal, the one running on that call's spinner), and what it says.
    fn subagent(&mut self, nested: &SubagentEvent) {
        let indent = format!("{}{DIM}┆{DIM:#} ", "  ".repeat(nested.path.len()));
        match &*nested.event {
            Event::ToolExecutionStart(start) => {
                let label = call_label(&start.call);
                let top = nested.path.first();
                let bar = self
                    .calls
                    .values()
                    .find(|running| Some(&running.id) == top)
                    .and_then(|running| running.bar.as_ref());
                match bar {
                    Some(bar) => bar.set_message(label),
                    None => self.line(&format!("{indent}{DIM}→{DIM:#} {}", styled(&label))),
                }
            }
            Event::ToolExecutionEnd(end) => {
                let mark = match end.result.is_error {
                    true => format!("{RED}✗{RED:#}"),
                    false => format!("{GREEN}✓{GREEN:#}"),
                };
                let text = end.result.text();
                let first = text.lines().find(|line| !line.trim().is_empty());
                let mut line = format!("{indent}{mark} {}", styled(&call_label(&end.call)));
                if let Some(first) = first {
                    line.push_str(&format!(" {DIM}{}{DIM:#}", clip(first)));
                }
                self.line(&line);
            }
            Event::MessageEnd(end) => {
                let text = end.message.text();
                if let Some(first) = text.lines().find(|line| !line.trim().is_empty()) {
                    self.line(&format!("{indent}{DIM}{}{DIM:#}", clip(first)));
                }
            }
            _ => {}
        }
    }

    fn clear_bars(&mut self) {
        for (_, running) in self.calls.drain() {
            if let Some(bar) = running.bar {
                bar.finish_and_clear();
            }
        }
    }
}

impl View for Live {
    fn event(&mut self, event: &Event) {
        match event {
            Event::MessageStart(_) => self.stream = Streamed::Nothing,
            Event::MessageUpdate(update) => update.deltas.iter().for_each(|d| self.delta(d)),
            Event::MessageEnd(end) => self.message_end(&end.message),
            Event::ToolExecutionStart(start) => self.tool_start(start.index, &start.call),
            Event::ToolExecutionUpdate(update) => {
                let mut parts = update.partial_result.content.iter().rev();
                let text = parts.find_map(golato::message::Content::as_text);
                self.tool_update(update.index, text.unwrap_or_default())
            }
            Event::ToolExecutionEnd(end) => self.tool_end(end.index, &end.call, &end.result),
            Event::Subagent(nested) => self.subagent(nested),
            Event::ToolHook(hook) => {
                // Changed before it ran (by a hook, or the person's `e`): named as it runs,
                // timed from now.
                if let HookAction::Rewrote { arguments } = &hook.action {
                    if let Some(running) = self.calls.get_mut(&hook.index) {
                        running.label = call_label(&ToolCall {
                            arguments: arguments.to_string(),
                            ..hook.call.clone()
                        });
                        running.started = Instant::now();
                    }
                }
                let what = match &hook.action {
                    HookAction::Blocked { reason } => format!("blocked: {reason}"),
                    HookAction::Rewrote { arguments } => {
                        format!("rewrote the arguments: {arguments}")
                    }
                    HookAction::ReplacedResult => "replaced the result".to_owned(),
                    HookAction::Failed { error } => format!("failed: {error}"),
                    other => format!("{other:?}"),
                };
                self.line(&format!(
                    "{YELLOW}  hook on {}: {}{YELLOW:#}",
                    clip(&hook.call.name),
                    clip(&what)
                ));
            }
            Event::UserMessage(message) => {
                self.line(&format!("{DIM}> {}{DIM:#}", clip(&message.message.text())));
            }
            Event::Retry(retry) => {
                self.line(&format!(
                    "{YELLOW}{}{YELLOW:#}",
                    clip(&crate::view::report::retrying(&retry.retrying))
                ));
            }
            Event::Compaction(compaction) => {
                let why = match compaction.reason {
                    golato::agent::compaction::CompactionReason::ContextTooLong => {
                        "the provider refused the request as too long"
                    }
                    _ => "the context window is filling up",
                };
                self.line(&format!(
                    "{DIM}context compacted ({why}): {} summarized, about {} → {} tokens sent{DIM:#}",
                    crate::view::shown::count(compaction.replaced as u64, "earlier message"),
                    compaction.tokens_before,
                    compaction.tokens_after
                ));
            }
            _ => {}
        }
    }

    fn mismatch(&mut self, mismatch: &Mismatch) {
        self.line(&format!(
            "{YELLOW}! the replay differs from the recording at turn {}, call {} ({} {}): {}{YELLOW:#}",
            mismatch.turn,
            mismatch.index + 1,
            clip(&mismatch.tool_name),
            clip(&mismatch.call_id),
            visible(&mismatch.difference)
        ));
    }

    fn interrupted(&mut self, signal: Signal) {
        self.line(&format!(
            "{YELLOW}{} received: cancelling the run, waiting for started tools (press Ctrl-C again to exit at once){YELLOW:#}",
            signal.name()
        ));
    }

    fn end(&mut self, ending: &Ending<'_>) {
        self.clear_bars();
        let tally = ending.tally;
        let mut parts = vec![
            crate::view::shown::count(tally.turns as u64, "turn"),
            crate::view::shown::count(tally.tool_calls as u64, "tool call"),
        ];
        if tally.tool_errors > 0 {
            parts.push(crate::view::shown::count(
                tally.tool_errors as u64,
                "error result",
            ));
        }
        if tally.replay_mismatches > 0 {
            parts.push(crate::view::shown::count(
                tally.replay_mismatches as u64,
                "replay difference",
            ));
        }
        parts.push(format!("{:.2} s", ending.wall.as_secs_f64()));
        let usage = tally.usage;
        if usage.total_tokens() > 0 {
            // Prompt tokens of every kind, and how many of them the provider's cache served:
            // what shows that prompt caching works.
            let cached = match usage.cache_read_tokens {
                0 => String::new(),
                read => format!(" ({read} cached)"),
            };
            parts.push(format!(
                "{} in{cached} / {} out tokens",
                usage.prompt_tokens(),
                usage.output_tokens
            ));
        }
        if let Some(cost) = ending.cost {
            parts.push(format!("${cost:.4}"));
        }
        let (style, status) = match ending.status() {
            "completed" => (GREEN, "done"),
            "interrupted" => (YELLOW, "interrupted"),
            _ => (RED, "failed"),
        };
        self.line(&format!(
            "{BOLD}{style}{status}{style:#}{BOLD:#}: {}",
            parts.join(", ")
        ));
        if let Some(workspace) = &ending.workspace {
            self.line(&format!(
                "The demo project is in {}; run `bash check.sh` there to see it pass.",
                workspace.display()
            ));
        }
    }

    fn question(&mut self, prompt: &str) {
        // The spinners step aside while the person reads and types; they come back after.
        if let Some(bars) = &self.bars {
            let _ = bars.clear();
            bars.set_draw_target(indicatif::ProgressDrawTarget::hidden());
        }
        let mut err = anstream::stderr().lock();
        if !self.at_line_start {
            let _ = err.write_all(b"\n");
            self.at_line_start = true;
        }
        let _ = write!(err, "{YELLOW}?{YELLOW:#} {prompt}").and_then(|()| err.flush());
    }

    fn answered(&mut self, _answer: Answer) {
        if let Some(bars) = &self.bars {
            bars.set_draw_target(self.target.draw_target());
        }
    }

    fn abandon(&mut self) {
        self.clear_bars();
        if !self.at_line_start {
            self.write("\n");
        }
    }
}
