//! `golato chat`: an interactive loop on the terminal. Each line is a prompt in one session,
//! shown with the same live view as `golato run`; a line typed while a run is busy steers it
//! (`Run::steer`), or with a leading `+` waits as a follow-up (`Run::follow_up`); Ctrl-C
//! cancels the current run, not the program; Ctrl-D (or `/exit`) leaves. The session is saved
//! like any other (`golato resume` goes on with it).

use std::io::Write as _;

use golato::agent::{Event, Input};
use golato::message::{Message, UserMessage};

use crate::args::ChatArgs;
use crate::commands::run::spinners;
use crate::interrupt::Signals;
use crate::setup::agent::{build_agent, Built};
use crate::setup::approve::Question;
use crate::view::live::{Live, Target};
use crate::view::report::describe;
use crate::view::report::{Answer, Ending, Tally, View};
use crate::{CliError, Exit};

/// What starts a follow-up instead of steering.
const FOLLOW_UP: char = '+';

/// What a chat starts from, in either front end: the agent, the session it saves into, and
/// what the hooks are told.
pub(crate) struct Begun {
    pub(crate) agent: golato::Agent,
    pub(crate) header: crate::view::header::Header,
    pub(crate) questions: Option<crate::setup::approve::Questions>,
    pub(crate) price: Option<golato::generator::Price>,
    pub(crate) transcript: Vec<Message>,
    pub(crate) summary: Option<golato::agent::compaction::Summary>,
    pub(crate) saving: Option<crate::store::session::Writer>,
    /// The session as hooks see it.
    pub(crate) told: golato::policy::HookSession,
    /// What SessionStart hooks added, for the first prompt.
    pub(crate) context: Option<String>,
    /// Who answers for calls that ask (`/approve` changes its mode).
    pub(crate) approver: std::sync::Arc<crate::setup::approve::Approver>,
    /// How to make the plan-mode agent (`/plan`).
    pub(crate) plan_mode: Option<crate::setup::plan::PlanMode>,
    /// Where hooks (and checkpoints) learn which session is saved; told again when it changes.
    pub(crate) hook_session: tokio::sync::watch::Sender<golato::policy::HookSession>,
}

/// Builds the agent, opens the session (the newest of the directory with `-c`) and fires the
/// SessionStart hooks.
pub(crate) async fn begin(args: &ChatArgs) -> Result<Begun, CliError> {
    let going_on = match args.continue_session {
        true => Some(crate::store::session::find(None, Some(&args.agent.cwd))?),
        false => None,
    };
    let Built {
        agent,
        mut header,
        questions,
        price,
        session: hook_session,
        approver,
        plan_mode,
        ..
    } = build_agent(&args.agent, None, true).await?;
    // Each prompt is a new one: calls a stop cut off are closed first.
    let crate::store::session::Opened {
        transcript,
        summary,
        saving,
    } = crate::store::session::open(going_on, &args.agent.cwd, args.ephemeral, true)?;
    header.session = saving.as_ref().map(crate::store::session::Writer::id);
    hook_session.send_modify(|session| {
        if let Some(saving) = &saving {
            session.session_id = saving.id();
            session.transcript_path = saving.path().to_owned();
        }
    });
    let told = hook_session.borrow().clone();
    let context = crate::setup::session_hooks::session_start(
        &args.agent.policy,
        &told,
        !transcript.is_empty(),
    )
    .await;
    Ok(Begun {
        agent,
        header,
        questions,
        price,
        transcript,
        summary,
        saving,
        told,
        context,
        approver,
        plan_mode,
        hook_session,
    })
}

pub(crate) async fn command(args: ChatArgs) -> Result<Exit, CliError> {
    let begun = begin(&args).await?;
    converse(args, begun).await
}

/// The line chat, once begun.
pub(crate) async fn converse(args: ChatArgs, begun: Begun) -> Result<Exit, CliError> {
    let Begun {
        agent,
        header,
        mut questions,
        price,
        mut transcript,
        mut summary,
        mut saving,
        told,
        mut context,
        ..
    } = begun;
    let policy = &args.agent.policy;
    eprintln!("{header}");
    eprintln!(
        "golato: each line is a prompt; while a run is busy a line steers it ({FOLLOW_UP} first: a follow-up); Ctrl-C cancels the run, Ctrl-D leaves"
    );
    let mut signals = Signals::listen()?;
    let mut lines = crate::setup::approve::terminal_lines();
    let view_args = crate::args::ViewArgs {
        json: false,
        trace: false,
    };
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
        let prompt =
            match crate::setup::session_hooks::prompt_submit(policy, &told, UserMessage::new(line))
                .await
            {
                Ok(prompt) => crate::setup::session_hooks::with_context(prompt, context.take()),
                Err(error) => {
                    eprintln!(
                        "golato: {}",
                        crate::view::shown::visible(&error.to_string())
                    );
                    continue;
                }
            };
        if let Some(saving) = &mut saving {
            saving.step(&Message::User(prompt.clone()));
        }
        // A run that failed without its transcript leaves nothing the summary could stand for.
        let fitting = summary.clone().filter(|summary| summary.fits(&transcript));
        let run = agent.start(Input {
            prompts: vec![prompt],
            transcript: std::mem::take(&mut transcript),
            summary: fitting,
        });
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
                    // The next line's run sends the history as this one does now.
                    if let Event::Compaction(compaction) = &event {
                        summary = Some(golato::agent::compaction::Summary::new(compaction.summary.clone(), compaction.replaced));
                    }
                    if let Some(saving) = &mut saving {
                        saving.save_event(&event, cancelling);
                    }
                    view.event(&event);
                    if matches!(event, Event::RunEnd(_)) {
                        break;
                    }
                }
                Some(mut question) = crate::setup::approve::next_question(&mut questions) => {
                    let answer = match cancelling || question.reply.is_closed() {
                        true => Answer::No,
                        false => match crate::setup::approve::ask(&mut view, &mut question, &mut lines, &mut signals).await {
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
            cost: price.map(|price| price.cost(&tally.usage)),
        });
        // The conversation goes on from what the run left, whatever ended it.
        transcript = match outcome {
            Ok(result) => result.messages,
            Err(error) => error
                .messages()
                .map(<[Message]>::to_vec)
                .unwrap_or_default(),
        };
        if leaving {
            break;
        }
    }
    eprintln!();
    crate::setup::session_hooks::session_end(policy, &told).await;
    Ok(Exit::Success)
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
