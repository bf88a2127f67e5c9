//! `golato submit`: a durable run, watched live. The run's events come from its
//! `GolatoEvents` object (published by its workers, whichever runs it) and go to the same views
//! as `golato run`'s: the live view on stderr, or JSON lines with `--json`, each event with its
//! number (`seq`). Without a prompt, `--id` attaches to a run submitted before and shows its
//! events from the start (or `--from SEQ`).

use std::io::Write as _;
use std::time::Instant;

use futures::StreamExt as _;
use golato::agent::Event;
use golato::message::Message;
use golato_restate::{Client, Outcome};
use serde_json::json;

use crate::args::SubmitArgs;
use crate::commands::questions::{self, Questions};
use crate::error::{CliError, Exit};
use crate::view::json::JsonLines;
use crate::view::live::{Live, Target};
use crate::view::report::{Ending, Tally, View};

/// Submits the prompt (or attaches to the run `--id` names), shows the run's events as they
/// come, and prints the outcome: the final text, or JSON lines with `--json`.
pub(crate) async fn submit(args: SubmitArgs) -> Result<Exit, CliError> {
    let client = Client::new(&args.restate)
        .map_err(|error| CliError::usage(format!("--restate: {error}")))?
        .with_reconnect_for(args.reconnect_for);
    let attaching = args.id.is_some() && args.prompt.is_none();
    let id = args.id.clone().unwrap_or_else(new_id);
    // Refused before anything is sent: a bad ID must not be retried for a minute, nor fold
    // into another run's.
    golato_restate::check_run_id(&id).map_err(|error| CliError::usage(error.to_string()))?;
    // As `golato run` takes it: the text, @FILE, or standard input (too large for argv).
    let prompt = match attaching {
        true => None,
        false => Some(crate::setup::prompt::user_message(args.prompt.clone(), &[])?.text()),
    };
    let failed = |error: golato_restate::Error| CliError::Failed(error.to_string());
    if attaching {
        let first = client.events(&id, args.from).await.map_err(failed)?;
        if first.first_kept > args.from {
            eprintln!(
                "golato: run {id}'s events before {} were dropped (a run keeps its last {} events, {} MiB at most); showing from there",
                first.first_kept,
                golato_restate::KEPT_EVENTS,
                golato_restate::KEPT_BYTES >> 20
            );
        }
    }
    let mut shown = Shown::new(args.json, args.from);
    if args.json {
        shown.line(
            json!({"type": "durable_run", "run_id": id, "attached": attaching, "from": args.from}),
        );
    } else {
        eprintln!(
            "golato: run {id}{}",
            if attaching { " (attached)" } else { "" }
        );
    }
    let started = Instant::now();
    let submitted = async {
        match &prompt {
            Some(prompt) => client.submit(&id, prompt).await,
            None => client.attach(&id).await,
        }
    };
    let mut submitted = std::pin::pin!(submitted);
    let mut events = Box::pin(client.watch(&id, args.from));
    let mut watching = true;
    // Calls waiting for a person's yes: asked here on a terminal, shown otherwise.
    let mut questions = Questions::default();
    let mut poll = tokio::time::interval(questions::POLL);
    let asks = !args.json && std::io::IsTerminal::is_terminal(&std::io::stdin());
    let mut lines = None;
    // Ctrl-C detaches: the run is the server's, not this process's. Listened for across the
    // loop's turns (one made each turn would miss a signal sent while a turn's work runs).
    let mut interrupted = std::pin::pin!(crate::interrupt::interrupted());
    let outcome = loop {
        tokio::select! {
            outcome = &mut submitted => break outcome.map_err(failed)?,
            _ = poll.tick() => {
                for question in questions.new_ones(&client, &id).await {
                    if args.json {
                        shown.line(questions::json_line(&question));
                    } else if asks {
                        if questions.queue(question) {
                            if let Some(current) = questions.current() {
                                shown.question(&questions::prompt(current));
                            }
                            lines.get_or_insert_with(crate::setup::approve::terminal_lines);
                        }
                    } else {
                        eprintln!("{}", questions::how_to_answer(&question, &args.restate));
                    }
                }
            }
            line = next_line(&mut lines), if questions.current().is_some() => {
                let Some(current) = questions.current().cloned() else { continue };
                let answer = match line {
                    Some(crate::setup::approve::Typed::Line(line)) => questions::parse(&line),
                    Some(crate::setup::approve::Typed::NotText) => None,
                    None => {
                        // The end of input: nobody here answers; say how to, elsewhere.
                        lines = None;
                        shown.answered();
                        eprintln!("{}", questions::how_to_answer(&current, &args.restate));
                        questions.next();
                        continue;
                    }
                };
                let Some(answer) = answer else {
                    shown.question("Answer y, n, or n REASON: ");
                    continue;
                };
                shown.answered();
                if let Err(error) = client.answer(&id, &current.call_id, &answer).await {
                    eprintln!("golato: {error}");
                }
                if let Some(next) = questions.next() {
                    shown.question(&questions::prompt(next));
                }
            }
            event = events.next(), if watching => match event {
                Some(Ok(event)) => shown.event(event.seq, &event.event),
                Some(Err(error)) => {
                    watching = false;
                    eprintln!("golato: the run's events cannot be shown ({error}); its outcome comes when it ends");
                }
                None => watching = false,
            },
            signal = &mut interrupted => {
                shown.abandon();
                eprintln!(
                    "golato: detached from run {id}, which goes on on the server; `golato submit --restate {} --id {id} --from {}` shows the rest",
                    args.restate, shown.next
                );
                return Ok(Exit::Interrupted(signal));
            }
        }
    };
    // The run's workers send its last events before they answer: whatever the watch has not
    // shown yet is there now (a page at a time).
    let mut from = shown.next;
    while watching {
        match client.events(&id, from).await {
            Ok(rest) => {
                rest.events
                    .iter()
                    .for_each(|event| shown.event(event.seq, &event.event));
                watching = !rest.ended && rest.next > from;
                from = rest.next;
            }
            Err(error) => {
                eprintln!("golato: the run's last events cannot be shown ({error})");
                watching = false;
            }
        }
    }
    if shown.next == args.from && !attaching {
        eprintln!("golato: no live events came from run {id}: its workers publish them only with `golato serve --restate URL`");
    }
    if let (Some(prompt), false) = (&prompt, attaching) {
        warn_if_another_prompt(&id, &outcome, prompt);
    }
    Ok(shown.end(&outcome, started))
}

/// The ID named a run submitted before with another prompt: its outcome is what comes back.
fn warn_if_another_prompt(id: &str, outcome: &Outcome, prompt: &str) {
    let first_prompt = outcome.messages.iter().find_map(|message| match message {
        Message::User(user) => Some(user.text()),
        _ => None,
    });
    if first_prompt.is_some_and(|first| first != prompt) {
        eprintln!(
            "golato: run {id} was submitted before with another prompt; this is that run's outcome (the prompt given now was not used; a new --id starts a new run)"
        );
    }
}

/// Where the run is shown: the live view on stderr, or JSON lines on stdout.
struct Shown {
    view: ShownView,
    story: Target,
    /// The number of the next event to show.
    next: u64,
}

enum ShownView {
    Json(JsonLines),
    Live(Live),
}

impl Shown {
    fn new(json: bool, from: u64) -> Shown {
        use std::io::IsTerminal as _;
        // As `golato run` does: piped, standard output carries the final answer alone.
        let story = match (json, std::io::stdout().is_terminal()) {
            (true, _) => Target::Nowhere,
            (false, true) => Target::Stdout,
            (false, false) => Target::Stderr,
        };
        let view = match json {
            true => ShownView::Json(JsonLines::default()),
            false => {
                let view = crate::args::ViewArgs {
                    json: false,
                    trace: false,
                };
                ShownView::Live(Live::new(
                    story,
                    crate::commands::run::spinners(&view, story),
                ))
            }
        };
        Shown {
            view,
            story,
            next: from,
        }
    }

    fn line(&self, line: serde_json::Value) {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{line}").and_then(|()| out.flush());
    }

    fn event(&mut self, seq: u64, event: &Event) {
        // A page read after the watch may repeat what the watch showed.
        if seq < self.next {
            return;
        }
        if seq > self.next {
            eprintln!(
                "golato: {} of the run could not be shown (dropped, or not readable by this golato)",
                match seq - self.next {
                    1 => format!("event {}", self.next),
                    _ => format!("events {} to {}", self.next, seq - 1),
                }
            );
        }
        self.next = seq + 1;
        match &mut self.view {
            ShownView::Json(lines) => lines.numbered(seq, event),
            ShownView::Live(live) => live.event(event),
        }
    }

    fn abandon(&mut self) {
        if let ShownView::Live(live) = &mut self.view {
            live.abandon();
        }
    }

    /// Puts a question to the person (the live view's spinners step aside).
    fn question(&mut self, text: &str) {
        if let ShownView::Live(live) = &mut self.view {
            live.question(text);
        }
    }

    /// The person answered: the live view goes on.
    fn answered(&mut self) {
        if let ShownView::Live(live) = &mut self.view {
            live.answered(crate::view::report::Answer::Yes);
        }
    }

    /// Shows how the run ended and gives the exit.
    fn end(&mut self, outcome: &Outcome, started: Instant) -> Exit {
        let exit = match outcome.error {
            Some(_) => Exit::Failure,
            None => Exit::Success,
        };
        let tally = tally(outcome);
        let retried = outcome
            .messages
            .iter()
            .filter(|message| matches!(message, Message::ToolResult(result) if result.attempt.is_some()))
            .count();
        let final_text = outcome.final_text();
        match &mut self.view {
            ShownView::Json(_) => self.line(json!({
                "type": "outcome",
                "run_id": outcome.run_id,
                "status": if outcome.error.is_some() { "failed" } else { "completed" },
                "exit_code": exit.code(),
                "error": outcome.error,
                "final_text": final_text,
                "turns": outcome.turns,
                "tool_calls": tally.tool_calls,
                "tool_errors": tally.tool_errors,
                "retried_calls": retried,
                "usage": tally.usage,
                "events": self.next,
            })),
            ShownView::Live(live) => {
                if let Some(error) = &outcome.error {
                    eprintln!(
                        "golato: run {} failed: {}",
                        outcome.run_id,
                        crate::view::shown::visible(error)
                    );
                }
                live.end(&Ending {
                    exit,
                    error: outcome.error.clone(),
                    final_text: final_text.as_deref(),
                    tally: &tally,
                    wall: started.elapsed(),
                    workspace: None,
                    cost: None,
                });
                // On a terminal the live view showed the answer; into a pipe or a file it is
                // data, exact.
                if let (Some(text), false) = (&final_text, self.story == Target::Stdout) {
                    let mut out = std::io::stdout().lock();
                    let _ = writeln!(out, "{text}").and_then(|()| out.flush());
                }
            }
        }
        exit
    }
}

/// What the outcome's transcript holds, counted as a run's events count it.
fn tally(outcome: &Outcome) -> Tally {
    let mut tally = Tally {
        turns: outcome.turns,
        ..Tally::default()
    };
    for message in &outcome.messages {
        match message {
            Message::Assistant(assistant) => tally.usage += assistant.usage,
            Message::ToolResult(result) => {
                tally.tool_calls += 1;
                tally.tool_errors += usize::from(result.is_error);
            }
            _ => {}
        }
    }
    tally
}

/// The next line typed, once there is a reader of the terminal.
async fn next_line(
    lines: &mut Option<tokio::sync::mpsc::UnboundedReceiver<crate::setup::approve::Typed>>,
) -> Option<crate::setup::approve::Typed> {
    match lines {
        Some(lines) => lines.recv().await,
        None => std::future::pending().await,
    }
}

/// A run ID unlikely to be taken: the time and the process.
fn new_id() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos());
    format!("run-{nanos:x}-{:x}", std::process::id())
}
