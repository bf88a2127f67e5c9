//! The interactive front end (`golato`, `golato chat` on a terminal): an input area at the
//! bottom of the terminal and everything that happens written above it into the terminal's own
//! scrollback (an inline viewport, as codex and pi do), so copying and searching work as
//! always.
//!
//! The input is a multi-line editor with history; a paste is one message however many lines it
//! has. While a run works, what is typed stays in the input area: Enter sends it as steering,
//! Tab as a follow-up; Esc (or Ctrl-C) interrupts the run. Slash commands are the front end's
//! own and never reach the model. Questions (approvals) are single keys.

mod commands;
mod editor;
mod markdown;
mod transcript;

use std::collections::HashMap;
use std::io::Write as _;
use std::time::{Duration, Instant};

use futures::StreamExt as _;
use golato::agent::{Event, Input};
use golato::message::{Message, UserMessage};
use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::event::{
    Event as TermEvent, KeyCode, KeyEvent, KeyEventKind, KeyModifiers,
};
use ratatui::layout::Position;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget as _};
use ratatui::{Terminal, TerminalOptions, Viewport};

use crate::approve::Question;
use crate::args::ChatArgs;
use crate::interrupt::Signals;
use crate::report::{Answer, Tally};
use crate::run::describe;
use crate::{CliError, Exit};

use editor::Editor;

/// Rows the front end keeps at the bottom: a status line, the input, a line of keys.
const VIEWPORT_ROWS: u16 = 6;
/// Texts sent kept in the history file.
const HISTORY_KEPT: usize = 1000;

type Screen = Terminal<CrosstermBackend<std::io::Stdout>>;

/// Puts the terminal back as it was, however the front end ends.
struct Restore;

impl Drop for Restore {
    fn drop(&mut self) {
        use ratatui::crossterm::{event::DisableBracketedPaste, execute, terminal};
        let _ = execute!(std::io::stdout(), DisableBracketedPaste);
        let _ = terminal::disable_raw_mode();
        let _ = writeln!(std::io::stdout());
    }
}

/// A run being worked on.
struct Running {
    run: golato::Run,
    started: Instant,
    tally: Tally,
    /// Characters of answer and reasoning streamed so far.
    streamed: usize,
    /// Calls running, by index, with when they began.
    calls: HashMap<usize, Instant>,
    cancelling: bool,
}

/// The front end's state.
struct Front {
    screen: Screen,
    editor: Editor,
    running: Option<Running>,
    asking: Option<Question>,
    /// What the whole session cost so far.
    tally: Tally,
    leaving: bool,
    history_file: Option<std::path::PathBuf>,
    /// A slash command for the loop, which holds the session.
    pending: Option<commands::Command>,
    /// When the question on screen was asked: the time a person takes to answer is not the
    /// call's.
    asked_at: Option<Instant>,
}

impl Front {
    fn width(&self) -> usize {
        self.screen
            .size()
            .map_or(80, |size| usize::from(size.width))
    }

    /// Writes `lines` into the scrollback above the input area.
    fn say(&mut self, lines: Vec<Line<'static>>) {
        let rows = self
            .screen
            .size()
            .map_or(24, |size| size.height)
            .saturating_sub(VIEWPORT_ROWS)
            .max(1);
        for chunk in lines.chunks(usize::from(rows)) {
            let chunk = chunk.to_vec();
            let height = u16::try_from(chunk.len()).unwrap_or(rows);
            let _ = self.screen.insert_before(height, |buffer| {
                Paragraph::new(chunk).render(buffer.area, buffer);
            });
        }
    }

    fn note(&mut self, text: &str) {
        let width = self.width();
        let dim = Style::default().add_modifier(Modifier::DIM);
        self.say(markdown::wrap_plain(text, width, dim));
    }

    fn draw(&mut self) {
        let status = self.status();
        let keys = self.keys();
        let lines: Vec<String> = self.editor.lines().collect();
        let (row, column) = self.editor.cursor();
        let _ = self.screen.draw(|frame| {
            let area = frame.area();
            let input_rows = usize::from(area.height.saturating_sub(2)).max(1);
            // The input's rows around the cursor.
            let first = row.saturating_sub(input_rows - 1);
            let mut shown: Vec<Line<'_>> = vec![status];
            for (index, line) in lines.iter().enumerate().skip(first).take(input_rows) {
                let mark = if index == 0 { "› " } else { "  " };
                shown.push(Line::from(vec![
                    Span::styled(mark, Style::default().fg(Color::Cyan)),
                    Span::raw(line.clone()),
                ]));
            }
            while shown.len() < input_rows + 1 {
                shown.push(Line::default());
            }
            shown.push(keys);
            frame.render_widget(Paragraph::new(shown), area);
            let x = area.x + 2 + u16::try_from(column).unwrap_or(u16::MAX);
            let y = area.y + 1 + u16::try_from(row - first).unwrap_or(0);
            frame.set_cursor_position(Position::new(x.min(area.right().saturating_sub(1)), y));
        });
    }

    /// The line above the input: what is happening now.
    fn status(&self) -> Line<'static> {
        let dim = Style::default().add_modifier(Modifier::DIM);
        if let Some(question) = &self.asking {
            return Line::from(vec![
                Span::styled("? ", Style::default().fg(Color::Yellow)),
                Span::styled(
                    format!("Allow this {} call?", question.tool),
                    Style::default().add_modifier(Modifier::BOLD),
                ),
            ]);
        }
        let Some(running) = &self.running else {
            return Line::default();
        };
        const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
        let elapsed = running.started.elapsed();
        let frame = SPINNER[(elapsed.as_millis() / 100) as usize % SPINNER.len()];
        let what = match (running.cancelling, running.calls.len()) {
            (true, _) => "interrupting".to_owned(),
            (false, 0) => "working".to_owned(),
            (false, calls) => format!("running {}", crate::shown::count(calls as u64, "call")),
        };
        Line::from(vec![
            Span::styled(format!("{frame} "), Style::default().fg(Color::Cyan)),
            Span::raw(what),
            Span::styled(
                format!(
                    " · {}s · {} streamed · Esc to interrupt",
                    elapsed.as_secs(),
                    crate::shown::count(running.streamed as u64, "character")
                ),
                dim,
            ),
        ])
    }

    /// The line below the input: the keys that do something now.
    fn keys(&self) -> Line<'static> {
        let text = match (&self.asking, &self.running) {
            (Some(question), _) => format!(
                "y yes · n no · a always for {} in this session · Esc no",
                question.tool
            ),
            (None, Some(_)) => "Enter steer · Tab follow-up · Esc interrupt".to_owned(),
            (None, None) => {
                "Enter send · Alt-Enter new line · ↑ history · /help · Ctrl-D quit".to_owned()
            }
        };
        Line::styled(text, Style::default().add_modifier(Modifier::DIM))
    }
}

/// The history file: one JSON string per line, in golato's data directory.
fn history_file() -> Option<std::path::PathBuf> {
    crate::session::data_directory()
        .ok()
        .map(|dir| dir.join("history.jsonl"))
}

fn load_history(path: Option<&std::path::Path>) -> Vec<String> {
    let Some(path) = path else { return Vec::new() };
    let Ok(bytes) = crate::bounded::read(path, crate::bounded::CONFIG_LIMIT * 8) else {
        return Vec::new();
    };
    let texts: Vec<String> = String::from_utf8_lossy(&bytes)
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect();
    let skip = texts.len().saturating_sub(HISTORY_KEPT);
    texts.into_iter().skip(skip).collect()
}

fn remember(path: Option<&std::path::Path>, text: &str) {
    let Some(path) = path else { return };
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    if let Ok(mut file) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        let _ = writeln!(file, "{}", serde_json::Value::String(text.to_owned()));
    }
}

/// Raw mode, bracketed paste and the inline viewport where the cursor is.
fn open_screen() -> std::io::Result<(Screen, Restore)> {
    use ratatui::crossterm::{event::EnableBracketedPaste, execute, terminal};
    terminal::enable_raw_mode()?;
    let restore = Restore;
    execute!(std::io::stdout(), EnableBracketedPaste)?;
    let screen = Terminal::with_options(
        CrosstermBackend::new(std::io::stdout()),
        TerminalOptions {
            viewport: Viewport::Inline(VIEWPORT_ROWS),
        },
    )?;
    Ok((screen, restore))
}

/// Whether the front end can run: a terminal on both ends that can draw, and no `--plain`.
pub(crate) fn usable(args: &ChatArgs) -> bool {
    use std::io::IsTerminal as _;
    let dumb = std::env::var_os("TERM").is_none_or(|term| term == "dumb" || term.is_empty());
    !args.plain && !dumb && std::io::stdin().is_terminal() && std::io::stdout().is_terminal()
}

/// `golato chat` (and `golato` alone) on a terminal.
pub(crate) async fn command(args: ChatArgs) -> Result<Exit, CliError> {
    // A terminal that cannot say where its cursor is (or refuses raw mode) gets the plain chat.
    let (screen, restore) = match open_screen() {
        Ok(opened) => opened,
        Err(error) => {
            eprintln!("golato: the full-screen input is not available here ({error}); a plain chat follows");
            return crate::chat::command(args).await;
        }
    };
    let _restore = restore;
    let crate::chat::Begun {
        agent,
        header,
        mut questions,
        price,
        mut transcript,
        mut summary,
        mut saving,
        told,
        mut context,
    } = crate::chat::begin(&args).await?;
    let policy = &args.agent.policy;

    let mut signals = Signals::listen()?;
    let history_file = history_file();
    let history = load_history(history_file.as_deref());
    let mut front = Front {
        screen,
        editor: Editor::with_history(history),
        running: None,
        asking: None,
        tally: Tally::default(),
        leaving: false,
        history_file,
        pending: None,
        asked_at: None,
    };
    front.note(&header.to_string());
    if !transcript.is_empty() {
        let turns = transcript
            .iter()
            .filter(|message| matches!(message, Message::Assistant(_)))
            .count();
        front.note(&format!(
            "going on with the session: {} so far",
            crate::shown::count(turns as u64, "answer")
        ));
    }
    let mut terminal_events = ratatui::crossterm::event::EventStream::new();
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    loop {
        front.draw();
        tokio::select! {
            // What the run did is written before a question it then asks, and before keys.
            biased;
            event = terminal_events.next() => {
                let Some(Ok(event)) = event else {
                    front.leaving = true;
                    if let Some(running) = &mut front.running { running.cancelling = true; running.run.cancel(); }
                    break;
                };
                if let Some(text) = on_terminal(&mut front, event) {
                    let width = front.width();
                    match front.running.as_ref() {
                        Some(running) => {
                            let (how, sent) = match text.strip_prefix('\u{0}') {
                                Some(text) => ("follow-up", running.run.follow_up(UserMessage::new(text))),
                                None => ("steering", running.run.steer(UserMessage::new(text.clone()))),
                            };
                            let text = text.trim_start_matches('\u{0}').to_owned();
                            match sent {
                                Ok(()) => front.say(transcript::queued(&text, how, width)),
                                Err(_) => front.note("not delivered: the run has ended"),
                            }
                        }
                        None => {
                            let prompt = match crate::policy::prompt_submit(policy, &told, UserMessage::new(text.clone())).await {
                                Ok(prompt) => crate::policy::with_context(prompt, context.take()),
                                Err(error) => {
                                    front.note(&error.to_string());
                                    continue;
                                }
                            };
                            front.say(transcript::prompt(&text, width));
                            if let Some(saving) = &mut saving {
                                saving.step(&Message::User(prompt.clone()));
                            }
                            let fitting = summary.clone().filter(|summary| summary.fits(&transcript));
                            front.running = Some(Running {
                                run: agent.start(Input {
                                    prompts: vec![prompt],
                                    transcript: std::mem::take(&mut transcript),
                                    summary: fitting,
                                }),
                                started: Instant::now(),
                                tally: Tally::default(),
                                streamed: 0,
                                calls: HashMap::new(),
                                cancelling: false,
                            });
                        }
                    }
                }
                if let Some(command) = commands::take(&mut front) {
                    match command {
                        commands::Command::New => {
                            transcript.clear();
                            summary = None;
                            saving = crate::session::open(None, &args.agent.cwd, args.ephemeral, true)?.saving;
                            front.note("a new session: the conversation starts over");
                        }
                        commands::Command::Cost => {
                            let usage = &front.tally.usage;
                            let cost = price.map(|price| price.cost(&front.tally.usage));
                            let text = format!(
                                "this session: {}, {} in, {} out{}",
                                crate::shown::count(front.tally.turns as u64, "turn"),
                                crate::shown::count(usage.input_tokens, "token"),
                                usage.output_tokens,
                                cost.map_or_else(String::new, |cost| format!(", ${cost:.4}"))
                            );
                            front.note(&text);
                        }
                        commands::Command::Tools => front.note(&format!("tools: {}", header.tools.join(", "))),
                        commands::Command::Sandbox => front.note(&format!("sandbox: {}; approve: {}", header.sandbox.mode, header.approve)),
                    }
                }
                if front.leaving && front.running.is_none() {
                    break;
                }
            }
            event = next_event(&mut front.running) => {
                let width = front.width();
                let Some(event) = event else {
                    finish(&mut front, &mut transcript, price).await;
                    if front.leaving { break; }
                    continue;
                };
                if let Some(saving) = &mut saving {
                    let cancelling = front.running.as_ref().is_some_and(|running| running.cancelling);
                    saving.save_event(&event, cancelling);
                }
                if let Some(running) = &mut front.running {
                    running.tally.observe(&event);
                }
                match &event {
                    Event::MessageUpdate(update) => {
                        if let Some(running) = &mut front.running {
                            for delta in &update.deltas {
                                running.streamed += match delta {
                                    golato::generator::Delta::Text(text) | golato::generator::Delta::Reasoning(text) => text.chars().count(),
                                    _ => 0,
                                };
                            }
                        }
                    }
                    Event::MessageEnd(end) => front.say(transcript::answer(&end.message, width)),
                    Event::ToolExecutionStart(start) => {
                        if let Some(running) = &mut front.running {
                            running.calls.insert(start.index, Instant::now());
                        }
                    }
                    Event::ToolExecutionEnd(end) => {
                        let began = front.running.as_mut().and_then(|running| running.calls.remove(&end.index));
                        let seconds = began.map_or(0.0, |began| began.elapsed().as_secs_f64());
                        front.say(transcript::call_ended(&end.call, &end.result, seconds, width));
                    }
                    Event::Compaction(compaction) => {
                        summary = Some(golato::agent::compaction::Summary::new(compaction.summary.clone(), compaction.replaced));
                        front.note(&format!("context compacted: {} summarized", crate::shown::count(compaction.replaced as u64, "earlier message")));
                    }
                    Event::RunEnd(_) => {
                        finish(&mut front, &mut transcript, price).await;
                        if front.leaving { break; }
                    }
                    _ => {}
                }
            }
            Some(question) = crate::approve::next_question(&mut questions), if front.asking.is_none() => {
                if front.running.as_ref().is_some_and(|running| running.cancelling) || question.reply.is_closed() {
                    let _ = question.reply.send(Answer::No);
                    continue;
                }
                let width = front.width();
                let mut lines = vec![Line::default(), Line::styled(
                    format!("{} asks to run:", question.tool),
                    Style::default().add_modifier(Modifier::BOLD),
                )];
                if question.why != "the approval mode" {
                    lines.push(Line::styled(
                        format!("(asked by {})", crate::shown::visible(&question.why)),
                        Style::default().add_modifier(Modifier::DIM),
                    ));
                }
                for line in crate::shown::visible(&question.detail).lines() {
                    lines.push(Line::raw(format!("  │ {}", line.chars().take(width.saturating_sub(4)).collect::<String>())));
                }
                front.say(lines);
                front.asking = Some(question);
                front.asked_at = Some(Instant::now());
            }
            _ = tick.tick(), if front.running.is_some() => {}
            signal = signals.next() => {
                match &mut front.running {
                    Some(running) if !running.cancelling => {
                        running.cancelling = true;
                        running.run.cancel();
                        front.note(&format!("interrupted ({signal:?}): the run is being cancelled"));
                        // A closed terminal or a kill ends the front end once the run has ended:
                        // nobody is left to type (and the terminal's events stop coming).
                        if !matches!(signal, crate::interrupt::Signal::Interrupt) {
                            front.leaving = true;
                        }
                    }
                    _ => {
                        front.leaving = true;
                        break;
                    }
                }
            }
        }
    }
    front.draw();
    drop(front);
    crate::policy::session_end(policy, &told).await;
    Ok(Exit::Success)
}

async fn next_event(running: &mut Option<Running>) -> Option<Event> {
    match running {
        Some(running) => running.run.next_event().await,
        None => std::future::pending().await,
    }
}

/// The run is over: its outcome in one line, its transcript kept for the next prompt.
async fn finish(
    front: &mut Front,
    transcript: &mut Vec<Message>,
    price: Option<golato::generator::Price>,
) {
    let Some(running) = front.running.take() else {
        return;
    };
    let width = front.width();
    let outcome = running.run.finish().await;
    let seconds = running.started.elapsed().as_secs_f64();
    let cost = price.map(|price| price.cost(&running.tally.usage));
    front.tally.turns += running.tally.turns;
    front.tally.tool_calls += running.tally.tool_calls;
    front.tally.usage.input_tokens += running.tally.usage.input_tokens;
    front.tally.usage.output_tokens += running.tally.usage.output_tokens;
    let ending = match (&outcome, running.cancelling) {
        (_, true) => "interrupted".to_owned(),
        (Ok(_), false) => "done".to_owned(),
        (Err(error), false) => {
            front.note(&format!("golato: {}", describe(error)));
            "failed".to_owned()
        }
    };
    front.say(transcript::summary(
        &running.tally,
        seconds,
        cost,
        &ending,
        width,
    ));
    *transcript = match outcome {
        Ok(result) => result.messages,
        Err(error) => error
            .messages()
            .map(<[Message]>::to_vec)
            .unwrap_or_default(),
    };
}

/// Handles a key, a paste or a resize; returns a text to send (a follow-up starts with NUL).
fn on_terminal(front: &mut Front, event: TermEvent) -> Option<String> {
    match event {
        TermEvent::Paste(text) if front.asking.is_none() => {
            front.editor.insert(&text);
            None
        }
        TermEvent::Key(key) if key.kind != KeyEventKind::Release => match front.asking.take() {
            Some(question) => {
                answer(front, question, key);
                None
            }
            None => on_key(front, key),
        },
        _ => None,
    }
}

fn answer(front: &mut Front, question: Question, key: KeyEvent) {
    let answer = match key.code {
        KeyCode::Char('y' | 'Y') => Answer::Yes,
        KeyCode::Char('a' | 'A') => Answer::Always,
        KeyCode::Char('n' | 'N') | KeyCode::Esc => Answer::No,
        KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => Answer::No,
        _ => {
            front.asking = Some(question);
            return;
        }
    };
    let said = match answer {
        Answer::Yes => "allowed".to_owned(),
        Answer::Always => format!("allowed, and every {} call in this session", question.tool),
        Answer::No => format!(
            "refused: the model is told the user did not allow this {} call",
            question.tool
        ),
    };
    front.note(&said);
    let _ = question.reply.send(answer);
    if let (Some(asked_at), Some(running)) = (front.asked_at.take(), &mut front.running) {
        let waited = asked_at.elapsed();
        for began in running.calls.values_mut() {
            *began += waited;
        }
    }
}

fn on_key(front: &mut Front, key: KeyEvent) -> Option<String> {
    let control = key.modifiers.contains(KeyModifiers::CONTROL);
    let alt = key.modifiers.contains(KeyModifiers::ALT);
    let shift = key.modifiers.contains(KeyModifiers::SHIFT);
    let editor = &mut front.editor;
    match key.code {
        KeyCode::Enter if alt || shift => editor.newline(),
        KeyCode::Char('j') if control => editor.newline(),
        KeyCode::Enter => {
            if editor.is_empty() {
                return None;
            }
            let text = editor.take();
            if text.trim_start().starts_with('/') {
                commands::run(front, text.trim());
                return None;
            }
            remember(front.history_file.as_deref(), &text);
            return Some(text);
        }
        KeyCode::Tab if front.running.is_some() && !editor.is_empty() => {
            let text = editor.take();
            remember(front.history_file.as_deref(), &text);
            return Some(format!("\u{0}{text}"));
        }
        KeyCode::Tab => commands::complete(editor),
        KeyCode::Esc => interrupt(front),
        KeyCode::Char('c') if control => {
            if front.running.is_some() {
                interrupt(front);
            } else if !front.editor.is_empty() {
                front.editor.take();
            } else {
                front.leaving = true;
            }
        }
        KeyCode::Char('d') if control => {
            if front.editor.is_empty() && front.running.is_none() {
                front.leaving = true;
            } else {
                front.editor.delete();
            }
        }
        KeyCode::Char('a') if control => editor.home(),
        KeyCode::Char('e') if control => editor.end(),
        KeyCode::Char('w') if control => editor.delete_word(),
        KeyCode::Char('b') if alt => editor.word_left(),
        KeyCode::Char('f') if alt => editor.word_right(),
        KeyCode::Left if control || alt => editor.word_left(),
        KeyCode::Right if control || alt => editor.word_right(),
        KeyCode::Left => editor.left(),
        KeyCode::Right => editor.right(),
        KeyCode::Up => editor.up(),
        KeyCode::Down => editor.down(),
        KeyCode::Home => editor.home(),
        KeyCode::End => editor.end(),
        KeyCode::Backspace => editor.backspace(),
        KeyCode::Delete => editor.delete(),
        KeyCode::Char(c) if !control => editor.insert(&c.to_string()),
        _ => {}
    }
    None
}

fn interrupt(front: &mut Front) {
    if let Some(running) = &mut front.running {
        if !running.cancelling {
            running.cancelling = true;
            running.run.cancel();
            front.note("interrupting: started tools are stopped, the transcript is kept");
        }
    }
}
