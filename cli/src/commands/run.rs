//! `golato run`: builds the agent from the flags, then drives one run to its end while a view
//! shows it, a recorder writes it down and a recording it replays is checked against it.

mod ending;
mod resume;

pub(crate) use ending::answer_text;
pub(crate) use resume::{resume, resumed, same_model_as_newest};

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use golato::agent::{Agent, Event, Input};
use indicatif::MultiProgress;
use tokio::sync::mpsc;

use crate::args::{RunArgs, ViewArgs};
use crate::conversation::{Conversation, Opening};
use crate::error::{CliError, Exit};
use crate::interrupt::Signals;
use crate::run::ending::{hand_over, verdict};
use crate::settings::Settings;
use crate::setup::approve::Questions;
use crate::setup::trace;
use crate::store::record::{Recorder, Recording};
use crate::store::session::Saved;
use crate::view::header::Header;
use crate::view::json::JsonLines;
use crate::view::live::{Live, Target};
use crate::view::report::{Answer, Ending, Tally, View};

pub(crate) async fn command(args: RunArgs, settings: Settings) -> Result<Exit, CliError> {
    let going_on = match args.continue_session {
        true => Some(crate::store::session::find(None, Some(&settings.cwd))?),
        false => None,
    };
    start(args, settings, going_on).await
}

/// Runs the flags' agent on the prompt, going on with `going_on` when given.
async fn start(
    args: RunArgs,
    settings: Settings,
    going_on: Option<Saved>,
) -> Result<Exit, CliError> {
    // Everything a usage error can come from is checked before anything runs.
    let recorded = match &settings.script {
        Some(path) => crate::setup::agent::load_script(path)?.1.prompt,
        None => None,
    };
    let mut prompt_differs = false;
    let prompt = match &going_on {
        // A recording made with --record carries its prompt: a replay needs none.
        None if args.prompt.is_none() && recorded.is_some() => Some(
            crate::setup::prompt::user_message(recorded.clone(), &args.image)?,
        ),
        None => {
            let prompt = crate::setup::prompt::user_message(args.prompt, &args.image)?;
            if let Some(recorded) = &recorded {
                if prompt.text() != *recorded {
                    prompt_differs = true;
                    eprintln!(
                        "golato: the prompt differs from the one the script was recorded with ({}); the replay may differ too",
                        crate::view::live::clip(recorded)
                    );
                }
            }
            Some(prompt)
        }
        Some(saved) => {
            let prompt = crate::setup::prompt::optional_user_message(args.prompt, &args.image)?;
            if prompt.is_none() && saved.answered() {
                return Err(CliError::usage(format!(
                    "the session {} ended with the model's answer; give a prompt to go on (golato resume {} \"and now …\")",
                    saved.header.id, saved.header.id
                )));
            }
            prompt
        }
    };
    let interactive = std::io::stdin().is_terminal() && !args.view.json;
    let recorder = match &args.record {
        Some(path) => Some(Recorder::create(
            path,
            prompt.as_ref().map(golato::message::UserMessage::text),
        )?),
        None => None,
    };
    let journal = match &args.journal {
        Some(path) => Some(Arc::new(
            golato::journal::FileJournal::open(path)
                .map_err(|error| CliError::usage(format!("--journal: {error}")))?,
        )),
        None => None,
    };
    let opening = Opening {
        going_on,
        ephemeral: args.ephemeral,
        prompted: prompt.is_some(),
        interactive,
    };
    let mut conversation = Conversation::begin(settings, opening).await?;
    // The reviewer of --approve auto: told in --json's lines, and the person's intent is
    // what they typed (a command's filled text holds command output, never intent).
    let reviews = conversation.approver.reviewer().map(|reviewer| {
        let (told, reviews) = tokio::sync::mpsc::unbounded_channel();
        reviewer.tell(crate::setup::reviewer::Told::Channel(told));
        reviews
    });
    if let Some(prompt) = &prompt {
        conversation.approver.heard(&prompt.text());
    }
    // `/NAME ARGS` of a command file or skill, `$NAME` of a skill: filled before it is sent.
    let mut expanded = None;
    let prompt = match prompt {
        Some(prompt) => match conversation.prepare(&prompt.text()) {
            Some(Ok(pending)) => {
                let filled = fill(&mut conversation, pending).await?;
                if !args.view.json && !args.quiet {
                    for (call, result) in &filled.ran {
                        eprintln!(
                            "golato: {} {}",
                            crate::view::live::call_label(call),
                            if result.is_error { "failed" } else { "ran" }
                        );
                    }
                    eprintln!("golato: {} sent as:", filled.name);
                    for line in filled.first_lines(6) {
                        eprintln!("  {line}");
                    }
                }
                let mut message = filled.message();
                // The images given with --image stay with it.
                message.content.extend(
                    prompt
                        .content
                        .into_iter()
                        .filter(|part| !matches!(part, golato::message::Content::Text { .. })),
                );
                expanded = Some(filled);
                Some(message)
            }
            Some(Err(why)) => return Err(CliError::usage(why)),
            None => {
                let text = prompt.text();
                if let Some(name) = text
                    .trim_start()
                    .strip_prefix('/')
                    .and_then(|rest| rest.split_whitespace().next())
                {
                    if !name.contains('/') && !args.quiet {
                        eprintln!(
                            "golato: /{} is not a command here (`golato commands` lists them); the prompt is sent as written",
                            crate::view::shown::visible(name)
                        );
                    }
                }
                Some(prompt)
            }
        },
        None => None,
    };
    let prompt = match prompt {
        Some(prompt) => match conversation.submitted(prompt).await {
            Ok(prompt) => Some(prompt),
            // A UserPromptSubmit hook blocked it: nothing ran, and with --json the outcome is
            // still the last line, as it always is.
            Err(error) if args.view.json => {
                use crate::view::report::View as _;
                let exit = match &error {
                    CliError::Usage(_) => Exit::Usage,
                    CliError::Failed(_) => Exit::Failure,
                };
                JsonLines::with_header(Some(&conversation.header)).end(&Ending {
                    exit,
                    error: Some(error.to_string()),
                    final_text: None,
                    tally: &Tally::default(),
                    wall: std::time::Duration::ZERO,
                    workspace: None,
                    cost: None,
                });
                return Err(error);
            }
            Err(error) => return Err(error),
        },
        None => None,
    };
    // As `codex exec` does: piped, standard output carries the final answer and nothing else.
    let story = if args.quiet {
        Target::Nowhere
    } else if std::io::stdout().is_terminal() {
        Target::Stdout
    } else {
        Target::Stderr
    };
    // The one run is driven here; the conversation's parts go to it.
    let Conversation {
        agent,
        settings,
        header,
        questions,
        price,
        transcript,
        summary,
        saving,
        told,
        recording,
        background,
        ..
    } = conversation;
    // A command file's tools and model hold for its prompt, the one this run sends.
    let agent = match &expanded {
        Some(expanded) => {
            let (agent, notes) = expanded.agent(&settings, &agent);
            for note in notes {
                eprintln!("golato: {}", crate::view::shown::visible(&note));
            }
            agent
        }
        None => agent,
    };
    let policy = settings.policy;
    let ended = drive(OneRun {
        agent,
        policy: policy.clone(),
        hook_session: told.clone(),
        input: Input {
            prompts: prompt.into_iter().collect(),
            transcript,
            summary,
        },
        saving,
        view: args.view,
        story,
        last_message: args.output_last_message,
        recorder,
        recording,
        workspace: None,
        journal: journal.map(|journal| journal as Arc<dyn golato::journal::Journal>),
        header: Some(header),
        questions,
        strict_replay: args.strict_replay.then_some(prompt_differs),
        price,
        reviews,
    })
    .await;
    if let Some(background) = background {
        end_background(&background);
    }
    crate::setup::session_hooks::session_end(&policy, &told).await;
    ended
}

/// `pending` filled with the session's tools. Nobody answers questions while it fills: a
/// call that would ask is refused, naming the rule that would let it run.
async fn fill(
    conversation: &mut Conversation,
    pending: crate::conversation::expansion::Pending,
) -> Result<crate::conversation::expansion::Expanded, CliError> {
    let mut filling = Some(conversation.fill(pending));
    loop {
        tokio::select! {
            filled = crate::conversation::expansion::Filling::finished(&mut filling) => {
                return filled.map_err(CliError::usage);
            }
            Some(question) = crate::setup::approve::next_question(&mut conversation.questions) => {
                let _ = question.reply.send(crate::setup::approve::Reply::Unanswered(format!(
                    "golato run asks nothing while a command's prompt is filled ({}); allow it with a rule (--allow, or an allow in .golato/config.toml)",
                    question.why
                )));
            }
        }
    }
}

/// Background commands end with the run: the person is told which were still running.
fn end_background(background: &golato::builtin::Background) {
    let running: Vec<String> = background
        .list()
        .into_iter()
        .filter(|command| command.ended.is_none())
        .map(|command| {
            format!(
                "{} ({})",
                command.id,
                crate::view::live::clip(&crate::view::shown::visible(&command.command))
            )
        })
        .collect();
    if !running.is_empty() {
        eprintln!(
            "golato: the run is over, so its background commands still running end with it: {}",
            running.join(", ")
        );
    }
}

/// One run to drive.
pub(crate) struct OneRun {
    pub(crate) agent: Agent,
    /// The rules and hooks in effect (the `Stop` hooks are fired here).
    pub(crate) policy: golato::policy::CallPolicy,
    /// What hooks are told of the session.
    pub(crate) hook_session: golato::policy::HookSession,
    /// The prompt, after a saved transcript when going on with a session.
    pub(crate) input: Input,
    /// Where the session is saved as it goes (none with `--ephemeral`, or for the demo).
    pub(crate) saving: Option<crate::store::session::Writer>,
    pub(crate) view: ViewArgs,
    /// Where the live view writes; unless it is standard output, the final answer goes there
    /// alone at the end.
    pub(crate) story: Target,
    /// Where the final answer is also written (`-o`).
    pub(crate) last_message: Option<PathBuf>,
    pub(crate) recorder: Option<Recorder>,
    pub(crate) recording: Option<Recording>,
    /// Shown at the end (the demo's project directory).
    pub(crate) workspace: Option<PathBuf>,
    /// Where the run's steps are journaled (`--journal`).
    pub(crate) journal: Option<Arc<dyn golato::journal::Journal>>,
    /// What the run uses, shown before it starts (stderr, or `run_start` in `--json`).
    pub(crate) header: Option<Header>,
    /// Calls waiting for a yes on the terminal (`--approve`).
    pub(crate) questions: Option<Questions>,
    /// The model's price, for the cost in the summary.
    pub(crate) price: Option<golato::generator::Price>,
    /// `--strict-replay`: any difference from the recording fails the run; whether the prompt
    /// already differs.
    pub(crate) strict_replay: Option<bool>,
    /// What `--approve auto`'s reviewer decided, as it decides: told and saved here.
    pub(crate) reviews:
        Option<tokio::sync::mpsc::UnboundedReceiver<crate::setup::reviewer::Review>>,
}

/// A review told (a `review` line in `--json`, else a line on stderr) and kept in the session.
fn told(
    review: &crate::setup::reviewer::Review,
    json: bool,
    saving: Option<&mut crate::store::session::Writer>,
) {
    let value = serde_json::to_value(review).unwrap_or_default();
    if json {
        use std::io::Write as _;
        let mut line = value.clone();
        if let Some(fields) = line.as_object_mut() {
            fields.insert("type".into(), "review".into());
        }
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    } else {
        eprintln!("golato: {}", crate::setup::reviewer::line(review));
    }
    if let Some(saving) = saving {
        saving.reviewed(&value);
    }
}

/// Runs the session to its end: events to the view as they arrive, each finished turn to the
/// recorder and compared with the recording, and the first Ctrl-C or SIGTERM cancels the run
/// (started tools are waited for); a second one exits at once.
pub(crate) async fn drive(mut session: OneRun) -> Result<Exit, CliError> {
    let mut signals = Signals::listen()?;
    let mut view = open_view(&session)?;
    let started = Instant::now();
    if let Some(saving) = &mut session.saving {
        for prompt in &session.input.prompts {
            saving.step(&golato::message::Message::User(prompt.clone()));
        }
    }
    let mut input = session.input;
    let mut tally = Tally::default();
    let mut reviewing = crate::setup::reviewer::Spent::default();
    let mut interrupted = None;
    let mut record_error = None;
    let mut answers: Option<mpsc::UnboundedReceiver<crate::setup::approve::Typed>> = None;
    let mut sent_on = 0;
    let outcome = loop {
        let run = match session.journal.clone() {
            Some(journal) => session.agent.start_journaled(input, journal),
            None => session.agent.start(input),
        };
        loop {
            tokio::select! {
                Some(review) = crate::setup::reviewer::next(&mut session.reviews) => {
                    reviewing.add(&review);
                    told(&review, session.view.json, session.saving.as_mut());
                }
                Some(mut question) = crate::setup::approve::next_question(&mut session.questions) => {
                    // A run being cancelled asks nothing more (its calls are refused anyway).
                    if interrupted.is_some() || question.reply.is_closed() {
                        let _ = question.reply.send(Answer::No.into());
                        continue;
                    }
                    let lines = answers.get_or_insert_with(crate::setup::approve::terminal_lines);
                    match crate::setup::approve::ask(&mut *view, &mut question, lines, &mut signals).await {
                        Ok(answer) => {
                            let _ = question.reply.send(answer.into());
                        }
                        Err(signal) => {
                            let _ = question.reply.send(Answer::No.into());
                            interrupted = Some(signal);
                            view.interrupted(signal);
                            run.cancel();
                        }
                    }
                }
                event = run.next_event() => {
                    let Some(event) = event else { break };
                    tally.observe(&event);
                    if let Some(saving) = &mut session.saving {
                        saving.save_event(&event, interrupted.is_some());
                    }
                    view.event(&event);
                    let Event::TurnEnd(turn) = &event else { continue };
                    if let Some(recording) = &session.recording {
                        for mismatch in recording.compare(turn) {
                            tally.replay_mismatches += 1;
                            view.mismatch(&mismatch);
                        }
                    }
                    if let (Some(recorder), None) = (&mut session.recorder, &record_error) {
                        record_error = recorder.record(turn).err();
                    }
                }
                signal = signals.next() => {
                    if interrupted.is_some() {
                        view.abandon();
                        golato::mcp::stop_servers();
                        std::process::exit(i32::from(signal.exit_code()));
                    }
                    interrupted = Some(signal);
                    view.interrupted(signal);
                    run.cancel();
                }
            }
        }
        // Reviews told as the run's last events came: not one is left unsaid.
        while let Some(review) = session
            .reviews
            .as_mut()
            .and_then(|told| told.try_recv().ok())
        {
            reviewing.add(&review);
            told(&review, session.view.json, session.saving.as_mut());
        }
        let outcome = run.finish().await;
        // A Stop hook may send the model on (exit 2): its reason becomes the next prompt.
        // A journaled run is one run of one prompt: its journal records no continuation.
        let (Ok(result), None, None) = (&outcome, interrupted, &session.journal) else {
            break outcome;
        };
        let Some(next) = stop_hook_prompt(
            &session.policy,
            &session.hook_session,
            session.saving.as_mut(),
            result,
            &mut sent_on,
        )
        .await
        else {
            break outcome;
        };
        input = next;
    };
    let (exit, error, final_text) = verdict(
        &outcome,
        interrupted,
        record_error,
        session.strict_replay,
        &tally,
    );
    // The error first, then the summary that counts it.
    if let Some(error) = &error {
        eprintln!("golato: {}", crate::view::shown::visible(error));
    }
    // The reviewer's tokens and money are the run's too (as in its budget), at its own price.
    let cost = session
        .price
        .map(|price| price.cost(&tally.usage))
        .zip(reviewing.cost)
        .map(|(run, reviews)| run + reviews);
    tally.usage += reviewing.usage;
    view.end(&Ending {
        exit,
        error,
        final_text: final_text.as_deref(),
        tally: &tally,
        wall: started.elapsed(),
        workspace: session.workspace,
        cost,
    });
    if let Some(text) = &final_text {
        hand_over(
            text,
            session.story,
            session.view.json,
            session.last_message.as_deref(),
        )?;
    }
    Ok(exit)
}

/// What a Stop hook that sends the model on (exit 2) makes the next input: its reason as a
/// prompt (saved), after what the run left; `None` when no hook does.
async fn stop_hook_prompt(
    policy: &golato::policy::CallPolicy,
    told: &golato::policy::HookSession,
    saving: Option<&mut crate::store::session::Writer>,
    result: &golato::RunResult,
    sent_on: &mut usize,
) -> Option<Input> {
    let reason = crate::setup::session_hooks::stop(policy, told, *sent_on).await?;
    *sent_on += 1;
    let prompt = golato::message::UserMessage::new(format!("[Stop hook] {reason}"));
    if let Some(saving) = saving {
        saving.step(&golato::message::Message::User(prompt.clone()));
    }
    Some(Input {
        prompts: vec![prompt],
        transcript: result.messages.clone(),
        summary: result.summary.clone(),
    })
}

/// The view of `--json` (its first line the header) or the live view (the header written
/// first, unless nothing is shown); `--trace` draws beside the live view's spinners.
fn open_view(session: &OneRun) -> Result<Box<dyn View>, CliError> {
    let bars = spinners(&session.view, session.story);
    if session.view.trace {
        trace::install(bars.clone())?;
    }
    Ok(if session.view.json {
        Box::new(JsonLines::with_header(session.header.as_ref()))
    } else {
        if let (Some(header), false) = (&session.header, session.story == Target::Nowhere) {
            eprintln!("{header}");
        }
        Box::new(Live::new(session.story, bars))
    })
}

/// Spinners are drawn only on a terminal that can show them, and never with `--json`.
pub(crate) fn spinners(view: &ViewArgs, story: Target) -> Option<MultiProgress> {
    let dumb = std::env::var("TERM").is_ok_and(|term| term == "dumb");
    (!view.json && !dumb && story.is_terminal())
        .then(|| MultiProgress::with_draw_target(story.draw_target()))
}
