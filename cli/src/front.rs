//! The interactive front end (`golato`, `golato chat` on a terminal): an input area at the
//! bottom of the terminal and everything that happens written above it into the terminal's own
//! scrollback (an inline viewport, as codex and pi do), so copying and searching work as
//! always.
//!
//! The input is a multi-line editor with history; a paste is one message however many lines it
//! has. While a run works, what is typed stays in the input area: Enter sends it as steering,
//! Tab as a follow-up; Esc (or Ctrl-C) interrupts the run. Slash commands are the front end's
//! own and never reach the model. Questions (approvals) are single keys.

mod chat;
mod commands;
mod editor;
mod highlight;
mod markdown;
mod mention;
mod question;
mod transcript;

use std::io::Write as _;
use std::time::{Duration, Instant};

use futures::StreamExt as _;
use golato::agent::Event;
use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::event::{
    Event as TermEvent, KeyCode, KeyEvent, KeyEventKind, KeyModifiers,
};
use ratatui::layout::Position;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget as _};
use ratatui::{Terminal, TerminalOptions, Viewport};

use crate::args::ChatArgs;
use crate::interrupt::Signals;
use crate::settings::Settings;
use crate::setup::approve::Question;
use crate::view::report::{Answer, Tally};
use crate::{CliError, Exit};

use chat::{Chat, Running};
use editor::Editor;

/// Rows the front end keeps at the bottom: a status line, the input, a line of keys.
const VIEWPORT_ROWS: u16 = 6;
/// The shortest time between two frames of the input area: 60 a second.
const FRAME: Duration = Duration::from_micros(16_667);
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

/// What the input area is for now.
pub(crate) enum Mode {
    /// A prompt (or, while a run works, steering).
    Prompt,
    /// Ctrl-R: searching the history; `found` is an index in it.
    Search {
        query: String,
        found: Option<usize>,
        draft: String,
    },
    /// Esc on a question: typing why the call is refused.
    Why { question: Question, draft: String },
    /// `e` on a question: the command being edited before it runs.
    Edit { question: Question, draft: String },
    /// `/resume`: choosing a session.
    Pick { choices: Vec<Pick>, selected: usize },
}

/// A session `/resume` offers.
pub(crate) struct Pick {
    pub(crate) id: String,
    pub(crate) label: String,
}

/// The front end's state.
pub(crate) struct Front {
    screen: Screen,
    editor: Editor,
    mode: Mode,
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
    /// The workspace's files, listed at the first `@`.
    files: Option<mention::Files>,
    cwd: std::path::PathBuf,
    /// The last answer's reasoning, for Ctrl-O.
    reasoning: Option<String>,
    /// Whether the agent in use is plan mode's (shown above the input while idle).
    planning: bool,
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

    pub(crate) fn draw(&mut self) {
        let status = self.status();
        let keys = self.keys();
        let lines: Vec<String> = self.editor.lines().collect();
        let (row, column) = self.editor.cursor();
        let mark = match &self.mode {
            Mode::Why { .. } => "why? ",
            Mode::Edit { .. } => "$ ",
            _ => "› ",
        };
        let cyan = Style::default().fg(Color::Cyan);
        // What the input area shows instead of the editor, in the modes that have one.
        let instead: Option<Vec<Line<'static>>> = match &self.mode {
            Mode::Search { query, found, .. } => {
                let text = found
                    .and_then(|at| self.editor.history().get(at))
                    .map_or_else(|| "(no match)".to_owned(), |text| text.replace('\n', " ⏎ "));
                Some(vec![Line::from(vec![
                    Span::styled(format!("search history: {query}"), cyan),
                    Span::raw("  "),
                    Span::raw(crate::view::live::clip(&text)),
                ])])
            }
            Mode::Pick { choices, selected } => Some(
                choices
                    .iter()
                    .enumerate()
                    .map(|(at, choice)| match at == *selected {
                        true => Line::styled(
                            format!("› {}", choice.label),
                            Style::default().add_modifier(Modifier::REVERSED),
                        ),
                        false => Line::raw(format!("  {}", choice.label)),
                    })
                    .collect(),
            ),
            _ => None,
        };
        let _ = self.screen.draw(|frame| {
            let area = frame.area();
            let input_rows = usize::from(area.height.saturating_sub(2)).max(1);
            let mut shown: Vec<Line<'_>> = vec![status];
            let cursor = match instead {
                Some(rows) => {
                    let selected = match &self.mode {
                        Mode::Pick { selected, .. } => *selected,
                        _ => 0,
                    };
                    let first = selected.saturating_sub(input_rows - 1);
                    shown.extend(rows.into_iter().skip(first).take(input_rows));
                    None
                }
                None => {
                    // The input's rows around the cursor.
                    let first = row.saturating_sub(input_rows - 1);
                    for (index, line) in lines.iter().enumerate().skip(first).take(input_rows) {
                        let lead = if index == 0 { mark } else { "  " };
                        shown.push(Line::from(vec![
                            Span::styled(lead, cyan),
                            Span::raw(line.clone()),
                        ]));
                    }
                    let lead = if row == 0 { mark.len() } else { 2 };
                    Some((lead + column, row - first))
                }
            };
            while shown.len() < input_rows + 1 {
                shown.push(Line::default());
            }
            shown.push(keys);
            frame.render_widget(Paragraph::new(shown), area);
            if let Some((x, y)) = cursor {
                let x = area.x + u16::try_from(x).unwrap_or(u16::MAX);
                let y = area.y + 1 + u16::try_from(y).unwrap_or(0);
                frame.set_cursor_position(Position::new(x.min(area.right().saturating_sub(1)), y));
            }
        });
    }

    /// Starts `/resume`'s picker.
    pub(crate) fn pick(&mut self, choices: Vec<Pick>) {
        self.mode = Mode::Pick {
            choices,
            selected: 0,
        };
    }

    /// The files `@` completes to for what is typed at the cursor, if a mention is typed.
    fn mentions(&mut self) -> Option<Vec<String>> {
        let word = self.editor.word();
        let typed = mention::typed(word.as_ref())?.to_owned();
        let cwd = self.cwd.clone();
        let files = self.files.get_or_insert_with(|| mention::Files::scan(&cwd));
        Some(files.best(&typed, mention::SHOWN))
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
        if matches!(self.mode, Mode::Prompt) {
            let typed = self.editor.text();
            let commands = commands::matching(&typed);
            if !commands.is_empty() && typed.len() > 1 {
                return Line::styled(commands.join("  "), dim);
            }
            let word = self.editor.word();
            if let Some(typed) = mention::typed(word.as_ref()) {
                let found = match &self.files {
                    Some(files) => files.best(typed, mention::SHOWN),
                    None => Vec::new(),
                };
                return match found.as_slice() {
                    [] => Line::styled("@ no file matches", dim),
                    found => Line::from(vec![
                        Span::styled("@ ", Style::default().fg(Color::Cyan)),
                        Span::styled(
                            found[0].clone(),
                            Style::default().add_modifier(Modifier::BOLD),
                        ),
                        Span::styled(format!("  {}  (Tab)", found[1..].join("  ")), dim),
                    ]),
                };
            }
        }
        let Some(running) = &self.running else {
            return match self.planning {
                true => Line::from(vec![
                    Span::styled("plan mode", Style::default().fg(Color::Yellow)),
                    Span::styled(
                        " · read-only, no edits · /accept carries the plan out · /plan leaves",
                        dim,
                    ),
                ]),
                false => Line::default(),
            };
        };
        const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
        let elapsed = running.started.elapsed();
        let frame = SPINNER[(elapsed.as_millis() / 100) as usize % SPINNER.len()];
        let what = match (running.cancelling, running.calls.len()) {
            (true, _) => "interrupting".to_owned(),
            (false, 0) => "working".to_owned(),
            (false, calls) => format!(
                "running {}",
                crate::view::shown::count(calls as u64, "call")
            ),
        };
        Line::from(vec![
            Span::styled(format!("{frame} "), Style::default().fg(Color::Cyan)),
            Span::raw(what),
            Span::styled(
                // About four characters a token: the stream's deltas carry no counts.
                format!(
                    " · {}s · ≈{} streamed · Esc to interrupt",
                    elapsed.as_secs(),
                    crate::view::shown::count(running.streamed.div_ceil(4) as u64, "token")
                ),
                dim,
            ),
        ])
    }

    /// The line below the input: the keys that do something now.
    fn keys(&self) -> Line<'static> {
        let text = match (&self.mode, &self.asking, &self.running) {
            (Mode::Search { .. }, _, _) => {
                "type to search · Ctrl-R older · Enter take it · Esc back".to_owned()
            }
            (Mode::Why { .. }, _, _) => {
                "say why, for the model · Enter refuse with it · Esc refuse without".to_owned()
            }
            (Mode::Edit { .. }, _, _) => {
                "edit the command · Enter run it as it stands · Esc back to the question".to_owned()
            }
            (Mode::Pick { .. }, _, _) => "↑↓ choose · Enter go on with it · Esc cancel".to_owned(),
            (Mode::Prompt, Some(question), _) => {
                let edit = if question.tool == "bash" {
                    " · e edit"
                } else {
                    ""
                };
                format!(
                    "y yes · n no · a always for {} in this session{edit} · Esc no, and say why",
                    question.tool
                )
            }
            (Mode::Prompt, None, Some(_)) => {
                "Enter steer · Tab follow-up · Esc interrupt".to_owned()
            }
            (Mode::Prompt, None, None) => {
                "Enter send · Alt-Enter new line · ↑ history · /help · Ctrl-D quit".to_owned()
            }
        };
        Line::styled(text, Style::default().add_modifier(Modifier::DIM))
    }
}

/// The history file: one JSON string per line, in golato's data directory.
fn history_file() -> Option<std::path::PathBuf> {
    crate::store::session::data_directory()
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

/// What a key asks the loop to do.
enum Action {
    /// A prompt (steering while a run works).
    Send(String),
    /// A follow-up, held until the run would end.
    FollowUp(String),
}

/// `golato chat` (and `golato` alone) on a terminal.
pub(crate) async fn command(args: ChatArgs, settings: Settings) -> Result<Exit, CliError> {
    // Begun before the screen is taken: what starting says (an MCP server, instruction files
    // left unread) is written as ordinary lines.
    let conversation = crate::commands::chat::begin(&args, settings).await?;
    // A terminal that cannot say where its cursor is (or refuses raw mode) gets the plain chat.
    let (screen, restore) = match open_screen() {
        Ok(opened) => opened,
        Err(error) => {
            eprintln!("golato: the full-screen input is not available here ({error}); a plain chat follows");
            return crate::commands::chat::converse(conversation).await;
        }
    };
    let _restore = restore;
    let mut signals = Signals::listen()?;
    let history_file = history_file();
    let history = load_history(history_file.as_deref());
    let mut front = Front {
        screen,
        editor: Editor::with_history(history),
        mode: Mode::Prompt,
        running: None,
        asking: None,
        tally: Tally::default(),
        leaving: false,
        history_file,
        pending: None,
        asked_at: None,
        files: None,
        cwd: conversation.header.cwd.clone(),
        reasoning: None,
        planning: false,
    };
    front.note(&conversation.header.to_string());
    if !conversation.transcript.is_empty() {
        let width = front.width();
        front.say(transcript::earlier(&conversation.transcript, width));
        front.note("going on with this session");
    }
    let mut chat = Chat {
        conversation,
        changes: Default::default(),
        parked: None,
        planning: false,
    };
    let mut terminal_events = ratatui::crossterm::event::EventStream::new();
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    // At most one frame per FRAME: sixteen calls streaming at once would otherwise redraw the
    // input area for every event.
    let mut drawn_at = Instant::now()
        .checked_sub(FRAME)
        .unwrap_or_else(Instant::now);
    loop {
        let owed = drawn_at.elapsed() < FRAME;
        if !owed {
            front.draw();
            drawn_at = Instant::now();
        }
        tokio::select! {
            // What the run did is written before a question it then asks, and before keys.
            biased;
            event = terminal_events.next() => {
                let Some(Ok(event)) = event else {
                    front.leaving = true;
                    if let Some(running) = &mut front.running { running.cancelling = true; running.run.cancel(); }
                    break;
                };
                match on_terminal(&mut front, event) {
                    Some(Action::Send(text)) if front.running.is_some() => Chat::queue(&mut front, &text, false),
                    Some(Action::Send(text)) => chat.send(&mut front, text).await,
                    Some(Action::FollowUp(text)) => Chat::queue(&mut front, &text, true),
                    None => {}
                }
                if let Some(command) = commands::take(&mut front) {
                    if let Err(error) = chat.command(&mut front, command).await {
                        front.note(&error.to_string());
                    }
                }
                if front.leaving && front.running.is_none() {
                    break;
                }
            }
            event = next_event(&mut front.running) => {
                match event {
                    Some(event) => chat.on_event(&mut front, event).await,
                    None => chat.finish(&mut front).await,
                }
                if front.leaving && front.running.is_none() { break; }
            }
            Some(question) = crate::setup::approve::next_question(&mut chat.conversation.questions), if front.asking.is_none() && !matches!(front.mode, Mode::Why { .. } | Mode::Edit { .. }) => {
                if front.running.as_ref().is_some_and(|running| running.cancelling) || question.reply.is_closed() {
                    let _ = question.reply.send(Answer::No.into());
                    continue;
                }
                question::ask(&mut front, question);
            }
            _ = tick.tick(), if front.running.is_some() => {}
            () = tokio::time::sleep_until((drawn_at + FRAME).into()), if owed => {}
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
    chat.conversation.close().await;
    Ok(Exit::Success)
}

async fn next_event(running: &mut Option<Running>) -> Option<Event> {
    match running {
        Some(running) => running.run.next_event().await,
        None => std::future::pending().await,
    }
}

/// Handles a key, a paste or a resize.
fn on_terminal(front: &mut Front, event: TermEvent) -> Option<Action> {
    match event {
        TermEvent::Paste(text) if front.asking.is_none() => {
            front.editor.insert(&text);
            None
        }
        TermEvent::Key(key) if key.kind != KeyEventKind::Release => {
            if let Some(question) = front.asking.take() {
                question::key(front, question, key);
                return None;
            }
            match front.mode {
                Mode::Prompt => on_key(front, key),
                Mode::Search { .. } => {
                    on_search_key(front, key);
                    None
                }
                Mode::Pick { .. } => {
                    on_pick_key(front, key);
                    None
                }
                Mode::Why { .. } | Mode::Edit { .. } => {
                    match key.code {
                        KeyCode::Enter
                            if !key
                                .modifiers
                                .intersects(KeyModifiers::ALT | KeyModifiers::SHIFT) =>
                        {
                            question::finish_typing(front, true);
                        }
                        KeyCode::Esc => question::finish_typing(front, false),
                        _ => {
                            edit_key(front, key);
                        }
                    }
                    None
                }
            }
        }
        _ => None,
    }
}

/// Ctrl-R: typing searches the history, newest first; Ctrl-R again goes further back.
fn on_search_key(front: &mut Front, key: KeyEvent) {
    let control = key.modifiers.contains(KeyModifiers::CONTROL);
    let Mode::Search {
        query,
        found,
        draft,
    } = &mut front.mode
    else {
        return;
    };
    match key.code {
        KeyCode::Char('r') if control => {
            if let Some(older) = front.editor.search(query, *found) {
                *found = Some(older);
            }
        }
        KeyCode::Enter | KeyCode::Tab => {
            let text = found.and_then(|at| front.editor.history().get(at).cloned());
            let draft = std::mem::take(draft);
            front.editor.set_text(&text.unwrap_or(draft));
            front.mode = Mode::Prompt;
        }
        KeyCode::Esc => {
            let draft = std::mem::take(draft);
            front.editor.set_text(&draft);
            front.mode = Mode::Prompt;
        }
        KeyCode::Char('c' | 'g') if control => {
            let draft = std::mem::take(draft);
            front.editor.set_text(&draft);
            front.mode = Mode::Prompt;
        }
        KeyCode::Backspace => {
            query.pop();
            *found = front.editor.search(query, None);
        }
        KeyCode::Char(c) if !control => {
            query.push(c);
            *found = front.editor.search(query, None);
        }
        _ => {}
    }
}

/// `/resume`'s picker.
fn on_pick_key(front: &mut Front, key: KeyEvent) {
    let Mode::Pick { choices, selected } = &mut front.mode else {
        return;
    };
    match key.code {
        KeyCode::Up => *selected = selected.saturating_sub(1),
        KeyCode::Down => *selected = (*selected + 1).min(choices.len().saturating_sub(1)),
        KeyCode::Enter => {
            let id = choices.get(*selected).map(|choice| choice.id.clone());
            front.mode = Mode::Prompt;
            front.pending = id.map(|id| commands::Command::Resume(Some(id)));
        }
        KeyCode::Esc => front.mode = Mode::Prompt,
        KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => {
            front.mode = Mode::Prompt;
        }
        _ => {}
    }
}

/// The keys that edit text, in every mode that types.
fn edit_key(front: &mut Front, key: KeyEvent) {
    let control = key.modifiers.contains(KeyModifiers::CONTROL);
    let alt = key.modifiers.contains(KeyModifiers::ALT);
    let shift = key.modifiers.contains(KeyModifiers::SHIFT);
    let editor = &mut front.editor;
    match key.code {
        KeyCode::Enter if alt || shift => editor.newline(),
        KeyCode::Char('j') if control => editor.newline(),
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
}

fn on_key(front: &mut Front, key: KeyEvent) -> Option<Action> {
    let control = key.modifiers.contains(KeyModifiers::CONTROL);
    let newline = key
        .modifiers
        .intersects(KeyModifiers::ALT | KeyModifiers::SHIFT);
    match key.code {
        KeyCode::Enter if !newline => {
            if front.editor.is_empty() {
                return None;
            }
            let text = front.editor.take();
            if text.trim_start().starts_with('/') {
                commands::run(front, text.trim());
                return None;
            }
            remember(front.history_file.as_deref(), &text);
            return Some(Action::Send(text));
        }
        KeyCode::Tab => {
            if let Some(best) = front.mentions().and_then(|found| found.into_iter().next()) {
                front.editor.replace_word(&format!("@{best}"));
            } else if front.running.is_some() && !front.editor.is_empty() {
                let text = front.editor.take();
                remember(front.history_file.as_deref(), &text);
                return Some(Action::FollowUp(text));
            } else {
                commands::complete(&mut front.editor);
            }
        }
        KeyCode::Char('@') if !control => {
            front.editor.insert("@");
            // Listed now, so the line under the input can offer files at once.
            front.mentions();
        }
        KeyCode::Char('r') if control => {
            let draft = front.editor.take_draft();
            front.mode = Mode::Search {
                query: String::new(),
                found: None,
                draft,
            };
        }
        KeyCode::Char('o') if control => match front.reasoning.clone() {
            Some(reasoning) => {
                let width = front.width();
                front.say(transcript::reasoning(&reasoning, width));
            }
            None => front.note("no reasoning to show: the model sent none yet"),
        },
        KeyCode::Esc => interrupt(front),
        KeyCode::Char('c') if control => {
            if front.running.is_some() {
                interrupt(front);
            } else if !front.editor.is_empty() {
                front.editor.take_draft();
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
        _ => edit_key(front, key),
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
