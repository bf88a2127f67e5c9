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
mod draw;
mod editor;
mod footer;
mod highlight;
mod history;
mod keys;
mod markdown;
mod mention;
mod outbox;
mod question;
mod screen;
mod shell;
mod stream;
mod table;
mod terminal;
mod transcript;

pub(crate) use terminal::{terminal_can_draw, usable};

use std::time::{Duration, Instant};

use chat::{Chat, Running};
use editor::Editor;
use footer::Footer;
use futures::StreamExt as _;
use golato::agent::Event;
use history::{history_file, load_history};
use keys::on_terminal;
use ratatui::crossterm::event::{
    Event as TermEvent, KeyCode, KeyEvent, KeyEventKind, KeyModifiers,
};
use ratatui::layout::Position;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget as _};
use ratatui::{Terminal, TerminalOptions, Viewport};
use terminal::open_screen;

use crate::args::ChatArgs;
use crate::error::{CliError, Exit};
use crate::interrupt::Signals;
use crate::settings::Settings;
use crate::setup::approve::Question;
use crate::view::report::{Answer, Tally};

/// Rows the front end keeps at the bottom at least: a status line, four of input, a line of
/// keys. A longer input (or the slash commands' list) takes more, up to a third of the screen.
const VIEWPORT_ROWS: u16 = 6;
/// The shortest time between two frames of the input area: 60 a second.
const FRAME: Duration = Duration::from_micros(16_667);
/// How soon a key after Enter makes that Enter part of a paste (a terminal without bracketed
/// paste types a pasted block as keys, its line ends as Enter): a person's next key comes
/// tens of milliseconds later, a paste's within one read.
const PASTE_GAP: Duration = Duration::from_millis(12);

type Screen = Terminal<screen::Steady>;

/// How long a terminal may take to read what was written before it counts as stuck (and
/// nothing more is written to it directly, which could block).
const STUCK: Duration = Duration::from_millis(500);

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
    /// `/init`'s draft shown: `y` writes it to AGENTS.md, `n` (or Esc) does not.
    Confirm { draft: String },
    /// `/resume` or `/model`: choosing; typing narrows the choices down (`selected` is an
    /// index among the ones `query` keeps).
    Pick {
        choices: Vec<Pick>,
        selected: usize,
        query: String,
        /// What Enter does with the choice.
        then: Picking,
    },
}

/// What a picker picks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Picking {
    /// `/resume`: a session to go on with.
    Session,
    /// `/model`: the model the next turn asks.
    Model,
}

/// A choice a picker offers (a session, a model).
pub(crate) struct Pick {
    pub(crate) id: String,
    pub(crate) label: String,
}

/// The choices `query` keeps: those whose label holds it, whatever the case.
pub(crate) fn kept<'a>(choices: &'a [Pick], query: &str) -> Vec<&'a Pick> {
    let query = query.to_lowercase();
    choices
        .iter()
        .filter(|choice| choice.label.to_lowercase().contains(&query))
        .collect()
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
    /// Ctrl-C was pressed once on an empty, idle input: a second one quits.
    quit_armed: bool,
    /// When Enter was pressed on a prompt it has not sent yet: a key right after it makes it
    /// a new line of a paste instead.
    enter_pending: Option<Instant>,
    /// The `@` completions Tab goes through, and the one it put in (a second Tab: the next).
    completing: Option<(Vec<String>, usize)>,
    /// The cursor's row in the live area as last drawn: after a resize, the cursor (which the
    /// terminal moves with the text) tells where the area went.
    cursor_row: u16,
    /// The cursor's column as last drawn.
    cursor_x: u16,
    /// The slash command chosen in the list above the input (an index in it), and the text it
    /// was chosen for: typing on starts again at the first.
    menu_at: (usize, String),
    /// Whether the terminal re-wraps its lines on a resize (`screen::rewraps`).
    rewraps: bool,
    /// The cells each row of the live area above the cursor filled when last drawn.
    drawn_above: Vec<usize>,
    /// Since when a resize has been on its way without the front end following it.
    pending_since: Option<Instant>,
    /// Lines to write once the resize on its way is followed.
    held: Vec<Line<'static>>,
    /// The live area's rows now: it grows with the input (and the slash commands' list) up
    /// to a third of the screen, and shrinks back.
    live_rows: u16,
    /// What the idle status line shows at its right.
    footer: Footer,
    /// A `!command` running.
    shell: Option<shell::Shell>,
    /// A command's prompt being filled (its `!` commands and `@` files), with the text typed.
    filling: Option<(crate::conversation::expansion::Filling, String)>,
    /// The commands and skills the `/` list offers beside golato's own: name, what it does.
    kept: Vec<(String, String)>,
    /// What `--approve auto`'s reviewer decided, as it decides.
    reviews: Option<tokio::sync::mpsc::UnboundedReceiver<crate::setup::reviewer::Review>>,
    /// Whether the folder is trusted: a project's allow rules apply only then, so only then
    /// is one offered to be written there.
    project_trusted: bool,
    /// Long pastes, shown in the input as their placeholder (`[pasted 30 lines]`) and sent as
    /// their text.
    pastes: Vec<(String, String)>,
}

/// A paste of more lines than this (or more characters than [`PASTE_CHARS`]) is shown
/// collapsed: the input's rows could not show it, nor its `›`.
const PASTE_LINES: usize = 4;
const PASTE_CHARS: usize = 2000;

impl Front {
    /// A paste into the input: as it is when short, else as a placeholder that sends its text.
    fn paste(&mut self, text: &str) {
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        let lines = text.lines().count();
        if lines <= PASTE_LINES && text.chars().count() <= PASTE_CHARS {
            self.editor.insert(&text);
            return;
        }
        let mut placeholder = format!(
            "[pasted {}]",
            crate::view::shown::count(lines as u64, "line")
        );
        let same = self
            .pastes
            .iter()
            .filter(|(shown, _)| shown.starts_with(&placeholder[..placeholder.len() - 1]))
            .count();
        if same > 0 {
            placeholder = format!("{} #{}]", &placeholder[..placeholder.len() - 1], same + 1);
        }
        self.editor.insert(&placeholder);
        self.pastes.push((placeholder, text));
    }

    /// The input with each paste's placeholder as the text it stands for.
    fn expanded(&self) -> String {
        let mut text = self.editor.text();
        for (placeholder, pasted) in &self.pastes {
            text = text.replacen(placeholder, pasted, 1);
        }
        text
    }

    /// Takes the input out to send it, pastes expanded (the history keeps them whole too).
    fn take_input(&mut self) -> String {
        if !self.pastes.is_empty() {
            let whole = self.expanded();
            self.editor.set_text(&whole);
            self.pastes.clear();
        }
        self.editor.take()
    }

    /// Whether the input shows a collapsed paste.
    fn has_paste(&self) -> bool {
        let text = self.editor.text();
        self.pastes
            .iter()
            .any(|(placeholder, _)| text.contains(placeholder))
    }

    fn width(&self) -> usize {
        self.screen
            .size()
            .map_or(80, |size| usize::from(size.width))
    }

    /// Writes `lines` into the scrollback above the input area (once a resize on its way was
    /// followed: see `resize_pending`).
    fn say(&mut self, lines: Vec<Line<'static>>) {
        if self.resize_pending() {
            self.held.extend(lines);
            return;
        }
        // What waited for a resize comes first.
        let lines = match self.held.is_empty() {
            true => lines,
            false => {
                let mut held = std::mem::take(&mut self.held);
                held.extend(lines);
                held
            }
        };
        let rows = self
            .screen
            .size()
            .map_or(24, |size| size.height)
            .saturating_sub(self.live_rows)
            .max(1);
        for chunk in lines.chunks(usize::from(rows)) {
            let chunk = chunk.to_vec();
            let height = u16::try_from(chunk.len()).unwrap_or(rows);
            let _ = self.screen.insert_before(height, |buffer| {
                Paragraph::new(chunk).render(buffer.area, buffer);
            });
        }
        // Ratatui leaves the cursor after the lines it wrote; back where the input has it, so
        // that the terminal answers a resize's question of where the cursor is (which places
        // the live area again) from the live area, whenever it comes.
        let area = self.screen.get_frame().area();
        let row = area
            .y
            .saturating_add(self.cursor_row)
            .min(area.bottom().saturating_sub(1));
        let _ = self
            .screen
            .set_cursor_position(Position::new(self.cursor_x, row));
    }

    fn note(&mut self, text: &str) {
        let width = self.width();
        let dim = Style::default().add_modifier(Modifier::DIM);
        self.say(markdown::wrap_plain(text, width, dim));
    }
}

impl Front {
    /// The front end on `screen`, its input's history loaded, working in `cwd`.
    fn new(screen: Screen, cwd: std::path::PathBuf) -> Front {
        let history_file = history_file();
        let history = load_history(history_file.as_deref());
        Front {
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
            cwd,
            reasoning: None,
            planning: false,
            quit_armed: false,
            completing: None,
            cursor_row: 0,
            cursor_x: 0,
            live_rows: VIEWPORT_ROWS,
            menu_at: (0, String::new()),
            held: Vec::new(),
            pending_since: None,
            drawn_above: Vec::new(),
            rewraps: screen::rewraps(|name| std::env::var(name).ok()),
            pastes: Vec::new(),
            footer: Footer::default(),
            shell: None,
            filling: None,
            kept: Vec::new(),
            reviews: None,
            enter_pending: None,
            project_trusted: false,
        }
    }
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
    open(conversation).await
}

/// The front end on `conversation` (begun: what starting said is above it).
pub(crate) async fn open(
    conversation: crate::conversation::Conversation,
) -> Result<Exit, CliError> {
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
    let mut front = Front::new(screen, conversation.header.cwd.clone());
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
        ran: Vec::new(),
        initializing: false,
    };
    chat.show_modes(&mut front, None);
    front.project_trusted = chat.conversation.settings.trusted;
    front.kept = commands::kept(&chat.conversation.offered);
    if let Some(reviewer) = chat.conversation.approver.reviewer() {
        let (told, reviews) = tokio::sync::mpsc::unbounded_channel();
        reviewer.tell(crate::setup::reviewer::Told::Channel(told));
        front.reviews = Some(reviews);
    }
    let mut terminal_events = ratatui::crossterm::event::EventStream::new();
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    // At most one frame per FRAME: sixteen calls streaming at once would otherwise redraw the
    // input area for every event.
    let mut drawn_at = Instant::now()
        .checked_sub(FRAME)
        .unwrap_or_else(Instant::now);
    loop {
        if front.screen.backend().outbox().take_lost() {
            front.note("the terminal stopped reading for a while: some of what happened was not shown (the session has it; Ctrl-L draws the input again)");
        }
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
                let action = on_terminal(&mut front, event);
                if act(&mut front, &mut chat, action).await {
                    break;
                }
            }
            // An Enter no key followed at once: typed, not pasted. It sends.
            () = enter_settles(front.enter_pending), if front.enter_pending.is_some() => {
                front.enter_pending = None;
                let action = keys::submit(&mut front);
                if act(&mut front, &mut chat, action).await {
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
            result = shell::Shell::finished(&mut front.shell) => chat.shell_ended(&mut front, result),
            Some(review) = crate::setup::reviewer::next(&mut front.reviews) => {
                front.note(&crate::setup::reviewer::line(&review));
                if let Some(saving) = &mut chat.conversation.saving {
                    saving.reviewed(&serde_json::to_value(&review).unwrap_or_default());
                }
            }
            filled = crate::conversation::expansion::Filling::finished_with(&mut front.filling) => {
                chat.send_filled(&mut front, filled).await;
            }
            // Background commands end on their own: the footer's count follows them.
            _ = tick.tick(), if front.running.is_some() || front.shell.is_some() || front.footer.background > 0 => {
                front.footer.background = chat
                    .conversation
                    .background
                    .as_ref()
                    .map_or(0, golato::builtin::Background::running);
            }
            () = tokio::time::sleep_until((drawn_at + FRAME).into()), if owed => {}
            // A resize whose event has not come: drawing goes on once the wait is over.
            () = tokio::time::sleep(draw::RESIZE_WAIT), if front.pending_since.is_some() => {}
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
    if let Some((filling, _)) = &front.filling {
        filling.cancel.cancel();
    }
    // A `!command` still running is stopped, not left behind.
    if let Some(shell) = &front.shell {
        shell.stop();
        let _ = shell::Shell::finished(&mut front.shell).await;
    }
    // The live area goes: the shell's prompt comes where the input was, nothing of it left
    // (unless the terminal stopped reading: then nothing more is written to it).
    let reads = front.screen.backend().outbox().drain(STUCK);
    if reads {
        front.clear();
    }
    drop(front);
    drop(_restore);
    // A session the model never answered in was not saved: nothing to go on with.
    let saved = chat
        .conversation
        .saving
        .as_ref()
        .filter(|saving| saving.on_disk());
    if let (Some(saving), true) = (saved, reads) {
        eprintln!(
            "golato: session {} saved; `golato -c` goes on with it here (or `golato resume {}`)",
            saving.id(),
            saving.id()
        );
    }
    chat.conversation.close().await;
    Ok(Exit::Success)
}

/// Does what a key asked for (a prompt sent, steering or a follow-up queued, a slash
/// command); whether the front end leaves now.
async fn act(front: &mut Front, chat: &mut Chat, action: Option<Action>) -> bool {
    match action {
        Some(Action::Send(text)) if front.running.is_some() => Chat::queue(front, &text, false),
        Some(Action::Send(text)) => chat.send(front, text).await,
        Some(Action::FollowUp(text)) => Chat::queue(front, &text, true),
        None => {}
    }
    if let Some(command) = commands::take(front) {
        if let Err(error) = chat.command(front, command).await {
            front.note(&error.to_string());
        }
        chat.show_modes(front, None);
    }
    front.leaving && front.running.is_none()
}

/// When an Enter typed at `pressed` sends: once [`PASTE_GAP`] passed with no key after it.
async fn enter_settles(pressed: Option<Instant>) {
    match pressed {
        Some(pressed) => tokio::time::sleep_until((pressed + PASTE_GAP).into()).await,
        None => std::future::pending().await,
    }
}

async fn next_event(running: &mut Option<Running>) -> Option<Event> {
    match running {
        Some(running) => running.run.next_event().await,
        None => std::future::pending().await,
    }
}
