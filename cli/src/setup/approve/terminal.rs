//! Asking on a plain terminal: the lines typed, read by a thread of their own, and a question
//! shown and answered there (a signal meanwhile, or the end of input, answers for the person).

use tokio::sync::mpsc;

use super::{Question, DETAIL_LINES};
use crate::interrupt::Signals;
use crate::view::report::{Answer, View};

/// A line typed on the terminal: its text, or that it was not UTF-8.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Typed {
    Line(String),
    NotText,
}

/// The lines typed on the terminal, read by a thread of their own (a blocked read of standard
/// input cannot be cancelled, so it must not hold up the runtime at exit). A line that is not
/// UTF-8 is passed on as [`Typed::NotText`], not taken for the end of input.
pub(crate) fn terminal_lines() -> mpsc::UnboundedReceiver<Typed> {
    use std::io::BufRead as _;
    let (sender, lines) = mpsc::unbounded_channel();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().split(b'\n') {
            let Ok(mut line) = line else { break };
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            let typed = match String::from_utf8(line) {
                Ok(line) => Typed::Line(line),
                Err(_) => Typed::NotText,
            };
            if sender.send(typed).is_err() {
                break;
            }
        }
    });
    lines
}

/// What to say of a line that was not UTF-8.
pub(crate) const NOT_TEXT: &str =
    "that line was not UTF-8 text (a stray byte?); nothing was sent, type it again";

/// Shows `question` and waits for an answer; a signal meanwhile is returned instead (the run is
/// then cancelled), and the end of input answers no, as does a call that stopped waiting (its
/// run was cancelled, or it timed out).
pub(crate) async fn ask(
    view: &mut dyn View,
    question: &mut Question,
    lines: &mut mpsc::UnboundedReceiver<Typed>,
    signals: &mut Signals,
) -> Result<Answer, crate::interrupt::Signal> {
    // The whole call, made visible: the person approves what they can read, never a first line
    // or a cut (a second line of a command would otherwise go unseen).
    let shown = crate::view::shown::visible(&question.detail).into_owned();
    let detail: Vec<&str> = shown.lines().collect();
    let choices = format!("[y]es, [n]o, [a]lways for {} in this run", question.tool);
    if question.why != "the approval mode" {
        view.question(&format!(
            "Asked by {}.\n",
            crate::view::shown::visible(&question.why)
        ));
    }
    let hidden = detail.len().saturating_sub(DETAIL_LINES);
    let boxed =
        |lines: &[&str]| -> String { lines.iter().map(|line| format!("\n  │ {line}")).collect() };
    let asking = match detail.as_slice() {
        [one] => format!("Allow {one}? {choices}: "),
        _ if hidden == 0 => format!(
            "This call is {} lines:{}\nAllow it? {choices}: ",
            detail.len(),
            boxed(&detail)
        ),
        _ => format!(
            "This call is {} lines:{}\n  │ … {}\nAllow it? {choices}, [v]iew all: ",
            detail.len(),
            boxed(&detail[..DETAIL_LINES]),
            crate::view::shown::count(hidden as u64, "more line")
        ),
    };
    view.question(&asking);
    let answer = loop {
        tokio::select! {
            line = lines.recv() => {
                let Some(line) = line else { break Ok(Answer::No) };
                let Typed::Line(line) = line else {
                    view.question(&format!("{NOT_TEXT}. Answer y, n or a: "));
                    continue;
                };
                if hidden > 0 && line.trim().eq_ignore_ascii_case("v") {
                    view.question(&format!(
                        "The whole call:{}\nAllow it? {choices}: ",
                        boxed(&detail)
                    ));
                    continue;
                }
                match Answer::parse(&line) {
                    Some(answer) => break Ok(answer),
                    None => view.question("Answer y, n or a: "),
                }
            }
            signal = signals.next() => break Err(signal),
            () = question.reply.closed() => break Ok(Answer::No),
        }
    };
    view.answered(*answer.as_ref().unwrap_or(&Answer::No));
    answer
}
