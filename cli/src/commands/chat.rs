//! `golato chat`: an interactive loop on the terminal. Each line is a prompt in one session,
//! shown with the same live view as `golato run`; a line typed while a run is busy steers it
//! (`Run::steer`), or with a leading `+` waits as a follow-up (`Run::follow_up`); Ctrl-C
//! cancels the current run, not the program; Ctrl-D (or `/exit`) leaves. The session is saved
//! like any other (`golato resume` goes on with it).

use std::io::Write as _;

use golato::agent::Event;
use golato::message::UserMessage;

use crate::args::ChatArgs;
use crate::commands::run::spinners;
use crate::conversation::{Conversation, Opening};
use crate::error::{CliError, Exit};
use crate::interrupt::Signals;
use crate::settings::Settings;
use crate::setup::approve::Question;
use crate::view::live::{Live, Target};
use crate::view::report::describe;
use crate::view::report::{Answer, Ending, Tally, View};

/// What starts a follow-up instead of steering.
const FOLLOW_UP: char = '+';

/// Opens the conversation of a chat, in either front end: a new session, or the directory's
/// newest with `-c`.
pub(crate) async fn begin(args: &ChatArgs, settings: Settings) -> Result<Conversation, CliError> {
    let going_on = match args.continue_session {
        true => Some(crate::store::session::find(None, Some(&settings.cwd))?),
        false => None,
    };
    let opening = Opening {
        going_on,
        ephemeral: args.ephemeral,
        // Each prompt is a new one: calls a stop cut off are closed first.
        prompted: true,
        interactive: true,
    };
    Conversation::begin(settings, opening).await
}

pub(crate) async fn command(args: ChatArgs, settings: Settings) -> Result<Exit, CliError> {
    let conversation = begin(&args, settings).await?;
    converse(conversation).await
}

/// The line chat, once begun.
pub(crate) async fn converse(mut conversation: Conversation) -> Result<Exit, CliError> {
    eprintln!("{}", conversation.header);
    eprintln!(
        "golato: each line is a prompt; while a run is busy a line steers it ({FOLLOW_UP} first: a follow-up); Ctrl-C cancels the run, Ctrl-D leaves"
    );
    let mut signals = Signals::listen()?;
    let mut lines = crate::setup::approve::terminal_lines();
    loop {
        prompt_marker();
        let line = tokio::select! {
            line = lines.recv() => line,
            _ = signals.next() => {
                eprintln!("\n(Ctrl-D or /exit leaves)");
                continue;
            }
        };
        let Some(line) = line else { break };
        let crate::setup::approve::Typed::Line(line) = line else {
            eprintln!("golato: {}", crate::setup::approve::NOT_TEXT);
            continue;
        };
        let line = line.trim().to_owned();
        if line.is_empty() {
            continue;
        }
        if line == "/exit" {
            break;
        }
        let run = match conversation.send(UserMessage::new(line)).await {
            Ok(run) => run,
            Err(error) => {
                eprintln!(
                    "golato: {}",
                    crate::view::shown::visible(&error.to_string())
                );
                continue;
            }
        };
        let leaving = drive(&mut conversation, run, &mut lines, &mut signals).await;
        if leaving {
            break;
        }
    }
    eprintln!();
    conversation.close().await;
    Ok(Exit::Success)
}

/// Drives one prompt's run to its end: its events shown and kept, its questions asked, lines
/// typed meanwhile queued (or `/exit`), Ctrl-C cancelling it (a second one exits). Returns
/// whether the person is leaving.
async fn drive(
    conversation: &mut Conversation,
    run: golato::Run,
    lines: &mut tokio::sync::mpsc::UnboundedReceiver<crate::setup::approve::Typed>,
    signals: &mut Signals,
) -> bool {
    let view_args = crate::args::ViewArgs {
        json: false,
        trace: false,
    };
    let story = Target::Stdout;
    let mut view = Live::new(story, spinners(&view_args, story));
    let mut tally = Tally::default();
    let mut cancelling = false;
    let mut leaving = false;
    let mut interrupted = None;
    let started = std::time::Instant::now();
    loop {
        tokio::select! {
            event = run.next_event() => {
                let Some(event) = event else { break };
                tally.observe(&event);
                conversation.keep(&event, cancelling);
                view.event(&event);
                if matches!(event, Event::RunEnd(_)) {
                    break;
                }
            }
            Some(mut question) = crate::setup::approve::next_question(&mut conversation.questions) => {
                let answer = match cancelling || question.reply.is_closed() {
                    true => Answer::No,
                    false => match crate::setup::approve::ask(&mut view, &mut question, lines, signals).await {
                        Ok(answer) => answer,
                        Err(signal) => {
                            cancelling = true;
                            interrupted = Some(signal);
                            view.interrupted(signal);
                            run.cancel();
                            Answer::No
                        }
                    },
                };
                answer_question(question, answer);
            }
            line = lines.recv(), if !leaving => {
                match line {
                    // The terminal closed, or /exit: end the run, then leave.
                    None => {
                        cancelling = true;
                        leaving = true;
                        run.cancel();
                    }
                    Some(crate::setup::approve::Typed::Line(line)) if line.trim() == "/exit" => {
                        view.note("» leaving: cancelling the run first");
                        cancelling = true;
                        leaving = true;
                        run.cancel();
                    }
                    Some(crate::setup::approve::Typed::Line(line)) => queue(&run, &mut view, line.trim()),
                    Some(crate::setup::approve::Typed::NotText) => view.note(&format!("» {}", crate::setup::approve::NOT_TEXT)),
                }
            }
            signal = signals.next() => {
                if cancelling {
                    view.abandon();
                    golato::mcp::stop_servers();
                    std::process::exit(i32::from(signal.exit_code()));
                }
                cancelling = true;
                interrupted = Some(signal);
                view.interrupted(signal);
                run.cancel();
            }
        }
    }
    let outcome = run.finish().await;
    let (exit, error, final_text) = match (&outcome, interrupted) {
        (_, Some(signal)) => (Exit::Interrupted(signal), None, None),
        (Ok(result), None) => (
            Exit::Success,
            None,
            Some(crate::commands::run::answer_text(&result.final_message)),
        ),
        (Err(error), None) => (Exit::Failure, Some(describe(error)), None),
    };
    if let Some(error) = &error {
        eprintln!("golato: {}", crate::view::shown::visible(error));
    }
    view.end(&Ending {
        exit,
        error,
        final_text: final_text.as_deref(),
        tally: &tally,
        wall: started.elapsed(),
        workspace: None,
        cost: conversation.price.map(|price| price.cost(&tally.usage)),
    });
    conversation.went_on(outcome);
    leaving
}

fn answer_question(question: Question, answer: Answer) {
    let _ = question.reply.send(answer.into());
}

/// A line typed while the run is busy: steering, or with a leading `+` a follow-up.
fn queue(run: &golato::Run, view: &mut Live, line: &str) {
    if line.is_empty() {
        return;
    }
    let (kind, text, queued) = match line.strip_prefix(FOLLOW_UP) {
        Some(text) => {
            let message = UserMessage::new(text.trim());
            ("follow-up", text.trim(), run.follow_up(message))
        }
        None => ("steering", line, run.steer(UserMessage::new(line))),
    };
    match queued {
        // Saved when it joins the transcript (its event), where the run puts it.
        Ok(()) => view.note(&format!("» {kind}: {text}")),
        Err(_) => view.note(&format!("» not delivered ({kind}): the run has ended")),
    }
}

/// The marker that says a prompt is awaited.
fn prompt_marker() {
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "› ").and_then(|()| err.flush());
}
