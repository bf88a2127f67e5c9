//! `golato console ADDR`: the viewer of a host's actor console, and `--json` for scripts.
//!
//! The stream is the host's own (JSON lines; see `golato_actors::console`): a hello, a
//! snapshot, then deltas. The viewer rebuilds the host's state from them ([`model`]) and draws
//! it on the alternate screen ([`draw`]) after each update and key.

mod draw;
mod model;

use std::io::Write as _;

use futures::StreamExt as _;
use golato::host::console::{ConsoleAddr, Update};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, BufReader};

use crate::args::ConsoleArgs;
use crate::error::{CliError, Exit};
use model::{Model, Tab};

/// The longest line the viewer reads: a snapshot of a very busy host.
const LINE_LIMIT: usize = 256 << 20;

pub(crate) async fn command(args: ConsoleArgs) -> Result<Exit, CliError> {
    let addr: ConsoleAddr = args
        .addr
        .parse()
        .map_err(|error: golato::host::console::ServeError| CliError::Usage(error.to_string()))?;
    let reader = connect(&addr).await.map_err(|error| {
        CliError::Failed(format!(
            "could not reach the console at {addr}: {error}; start golato with --console {addr} (or GOLATO_CONSOLE={addr}) and try again"
        ))
    })?;
    if args.json {
        return print_json(reader, args.updates).await;
    }
    if !crate::front::terminal_can_draw() {
        return Err(CliError::Usage(
            "golato console draws on a terminal; give --json to read the stream as JSON lines"
                .to_owned(),
        ));
    }
    view(reader, addr.to_string()).await
}

type Reader = Box<dyn AsyncBufRead + Unpin + Send>;

async fn connect(addr: &ConsoleAddr) -> std::io::Result<Reader> {
    Ok(match addr {
        ConsoleAddr::Tcp(socket) => Box::new(BufReader::new(
            tokio::net::TcpStream::connect(socket).await?,
        )),
        ConsoleAddr::Unix(path) => {
            Box::new(BufReader::new(tokio::net::UnixStream::connect(path).await?))
        }
    })
}

/// The next update, `None` at the end of the stream.
async fn next(reader: &mut Reader, line: &mut Vec<u8>) -> Result<Option<Update>, String> {
    line.clear();
    let mut limited = (&mut *reader).take(LINE_LIMIT as u64);
    let read = limited
        .read_until(b'\n', line)
        .await
        .map_err(|error| format!("the console's stream broke: {error}"))?;
    if read == 0 {
        return Ok(None);
    }
    if read == LINE_LIMIT && line.last() != Some(&b'\n') {
        return Err(format!(
            "the console sent a line longer than {} MiB; is ADDR a golato console?",
            LINE_LIMIT >> 20
        ));
    }
    serde_json::from_slice(line).map(Some).map_err(|error| {
        format!("the console sent a line that is not an update ({error}); is ADDR a golato console, of the same version?")
    })
}

use tokio::io::AsyncReadExt as _;

async fn print_json(mut reader: Reader, limit: Option<u64>) -> Result<Exit, CliError> {
    let mut line = Vec::new();
    let mut printed = 0u64;
    while limit.is_none_or(|limit| printed < limit) {
        match next(&mut reader, &mut line)
            .await
            .map_err(CliError::Failed)?
        {
            Some(update) => {
                let mut out = std::io::stdout().lock();
                // Re-serialized rather than copied, so what is printed is what this golato
                // understood.
                let written = serde_json::to_writer(&mut out, &update)
                    .map_err(std::io::Error::from)
                    .and_then(|()| writeln!(out))
                    .and_then(|()| out.flush());
                if written.is_err() {
                    // A closed pipe (`| head`): the reader has what it wanted.
                    return Ok(Exit::Success);
                }
                printed += 1;
            }
            None => return Ok(Exit::Success),
        }
    }
    Ok(Exit::Success)
}

/// The viewer: the alternate screen, redrawn after each update and key.
async fn view(mut reader: Reader, addr: String) -> Result<Exit, CliError> {
    let mut terminal = ratatui::try_init().map_err(|error| {
        CliError::Failed(format!(
            "could not take the terminal for the viewer: {error}"
        ))
    })?;
    let _restore = Restore;
    let mut model = Model::new(addr);
    let mut keys = ratatui::crossterm::event::EventStream::new();
    let mut line = Vec::new();
    let mut reading = true;
    loop {
        terminal
            .draw(|frame| draw::draw(frame, &model))
            .map_err(|error| CliError::Failed(format!("could not draw: {error}")))?;
        tokio::select! {
            update = next(&mut reader, &mut line), if reading => match update.and_then(|update| update.map(visible_update).transpose()) {
                Ok(Some(update)) => model.apply(update),
                Ok(None) => {
                    reading = false;
                    model.gone = Some("the host closed the stream".to_owned());
                }
                Err(error) => {
                    reading = false;
                    model.gone = Some(error);
                }
            },
            event = keys.next() => match event {
                Some(Ok(event)) => {
                    if key(&mut model, &event) {
                        return Ok(Exit::Success);
                    }
                }
                Some(Err(_)) | None => return Ok(Exit::Success),
            },
        }
    }
}

/// `update` with every text in it made visible (control characters as `^[`): names, paths and
/// call IDs come from outside golato (a model's arguments, whatever serves ADDR), and the viewer
/// draws them on the person's terminal. `--json` needs none of it: JSON escapes them.
fn visible_update(update: Update) -> Result<Update, String> {
    fn walk(value: &mut serde_json::Value) {
        match value {
            serde_json::Value::String(text) => {
                if let std::borrow::Cow::Owned(shown) = crate::view::shown::visible(text) {
                    *text = shown;
                }
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(walk),
            serde_json::Value::Object(fields) => fields.values_mut().for_each(walk),
            _ => {}
        }
    }
    let unreadable = |error: serde_json::Error| {
        format!("the console sent an update this viewer cannot show ({error})")
    };
    let mut value = serde_json::to_value(&update).map_err(unreadable)?;
    walk(&mut value);
    serde_json::from_value(value).map_err(unreadable)
}

/// Handles one key; true to quit.
fn key(model: &mut Model, event: &ratatui::crossterm::event::Event) -> bool {
    use ratatui::crossterm::event::{Event, KeyCode, KeyEventKind, KeyModifiers};
    let Event::Key(key) = event else { return false };
    if key.kind == KeyEventKind::Release {
        return false;
    }
    if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
        return true;
    }
    if model.editing_filter {
        match key.code {
            KeyCode::Enter => model.editing_filter = false,
            KeyCode::Esc => {
                model.filter.clear();
                model.editing_filter = false;
            }
            KeyCode::Backspace => {
                model.filter.pop();
            }
            KeyCode::Char(ch) => model.filter.push(ch),
            _ => {}
        }
        model.selected = 0;
        return false;
    }
    match key.code {
        KeyCode::Char('q') => return true,
        KeyCode::Esc if model.tab != Tab::Actors => model.show(Tab::Actors),
        KeyCode::Up | KeyCode::Char('k') => model.up(),
        KeyCode::Down | KeyCode::Char('j') => model.down(),
        KeyCode::Enter => model.enter(),
        KeyCode::Char('s') => model.sort = model.sort.next(),
        KeyCode::Char('/') => model.editing_filter = true,
        KeyCode::Char('1') => model.show(Tab::Actors),
        KeyCode::Char('2') => model.show(Tab::Run),
        KeyCode::Char('3') => model.show(Tab::Locks),
        KeyCode::Char('4') => model.show(Tab::Lints),
        KeyCode::Tab => {
            let next = match model.tab {
                Tab::Actors => Tab::Run,
                Tab::Run => Tab::Locks,
                Tab::Locks => Tab::Lints,
                Tab::Lints => Tab::Actors,
            };
            model.show(next);
        }
        _ => {}
    }
    false
}

/// Gives the terminal back however the viewer ends.
struct Restore;

impl Drop for Restore {
    fn drop(&mut self) {
        ratatui::restore();
    }
}
