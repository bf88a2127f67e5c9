//! The question a terminal is asked the first time golato starts in a folder whose project
//! would steer it: every file it would then read or apply, named, wrapped between words at the
//! terminal's width, answered with one key (`y` trusts it; any other key does not), remembered
//! for the folder.

use std::path::{Path, PathBuf};

use super::project_files;
use super::trust::Folder;
use crate::error::CliError;

/// What trusting a folder lets in: its configuration's settings (each marked when it loosens
/// safety), its instruction files and its skill folders.
#[derive(Debug, Default)]
pub(crate) struct AtStake {
    /// The configuration file and what it sets (`key = value`, marked when trusting the
    /// folder is what lets it through).
    pub(crate) config: Option<(String, Vec<(String, bool)>)>,
    pub(crate) instructions: Vec<PathBuf>,
    pub(crate) skills: Vec<PathBuf>,
}

impl AtStake {
    /// The instruction files and skill folders of the project for a run in `cwd`.
    pub(crate) fn project(cwd: &Path) -> AtStake {
        AtStake {
            config: None,
            instructions: project_files::instruction_files(cwd),
            skills: project_files::skill_folders(cwd),
        }
    }

    /// The question's lines, before wrapping.
    fn lines(&self, folder: &str) -> Vec<String> {
        let shown =
            |path: &Path| crate::view::shown::visible(&path.display().to_string()).into_owned();
        let mut lines = vec![format!(
            "golato: trusting {folder} lets its project steer golato:"
        )];
        if let Some((source, marked)) = &self.config {
            lines.push(format!(
                "  apply {} (! loosens safety):",
                crate::view::shown::visible(source)
            ));
            for (line, dangerous) in marked {
                let mark = if *dangerous { "!" } else { " " };
                lines.push(format!("    {mark} {}", crate::view::shown::visible(line)));
            }
        }
        for file in &self.instructions {
            lines.push(format!(
                "  read {} (instructions for the model)",
                shown(file)
            ));
        }
        for skills in &self.skills {
            lines.push(format!("  offer the skills in {}", shown(skills)));
        }
        lines.push(format!(
            "Trust {folder}? Remembered for this folder (`golato untrust` undoes it). y yes, any other key no: "
        ));
        lines
    }
}

/// Asks the person at the terminal whether to trust `folder`, showing `at_stake`; one key
/// answers (`y` yes, any other key no, Ctrl-C leaves golato), and the answer is remembered.
///
/// # Errors
/// The answer could not be remembered, or the person pressed Ctrl-C (nothing is remembered).
pub(crate) fn ask(folder: &Folder, at_stake: &AtStake) -> Result<bool, CliError> {
    use std::io::Write as _;
    let shown = crate::view::shown::visible(&folder.path.display().to_string()).into_owned();
    // A terminal that gives no width (0) gets 80 columns.
    let width = ratatui::crossterm::terminal::size()
        .ok()
        .map(|(columns, _)| usize::from(columns))
        .filter(|columns| *columns > 0)
        .unwrap_or(80);
    let mut question = String::new();
    for line in at_stake.lines(&shown) {
        // Wrapped between words; a continued line keeps its indentation.
        let indent = line.len() - line.trim_start().len();
        let room = width.saturating_sub(indent + 3);
        let mut wrap = crate::view::wrap::WordWrap::new(room, 0);
        let mut text = wrap.push(line.trim_start());
        text.push_str(&wrap.finish());
        let continued = format!("\n{}", " ".repeat(indent + 2));
        question.push_str(&" ".repeat(indent));
        question.push_str(&text.replace('\n', &continued));
        question.push('\n');
    }
    // The key is read at the end of the last line. Raw mode first: a key pressed as soon as
    // the question shows is then neither echoed nor held for a line's end.
    let question = format!("{} ", question.trim_end());
    let raw = ratatui::crossterm::terminal::enable_raw_mode().is_ok();
    let mut stderr = std::io::stderr();
    // In raw mode a line feed does not go back to the line's start.
    let shown = match raw {
        true => question.replace('\n', "\r\n"),
        false => question,
    };
    let _ = write!(stderr, "{shown}");
    let _ = stderr.flush();
    let key = match raw {
        true => one_key(),
        false => Key::No,
    };
    let _ = ratatui::crossterm::terminal::disable_raw_mode();
    let trusted = matches!(key, Key::Yes);
    let _ = writeln!(stderr, "{}", if trusted { "yes" } else { "no" });
    if matches!(key, Key::Leave) {
        return Err(CliError::Failed(
            "the trust question was left unanswered (Ctrl-C); nothing was remembered, and it is asked again next time".to_owned(),
        ));
    }
    folder.remember(trusted)?;
    if !trusted {
        let _ = writeln!(
            stderr,
            "golato: not trusted; its files stay unread or limited here, and later starts say so in one line"
        );
    }
    Ok(trusted)
}

/// How one key answered.
enum Key {
    Yes,
    No,
    /// Ctrl-C or Ctrl-D: no answer; golato leaves.
    Leave,
}

/// One key read from the terminal, in raw mode (the end of input is no).
fn one_key() -> Key {
    use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
    loop {
        match event::read() {
            Ok(Event::Key(key)) if key.kind != KeyEventKind::Release => {
                let control = key.modifiers.contains(KeyModifiers::CONTROL);
                break match key.code {
                    KeyCode::Char('c' | 'd') if control => Key::Leave,
                    KeyCode::Char('y' | 'Y') => Key::Yes,
                    _ => Key::No,
                };
            }
            Ok(_) => {}
            Err(_) => break Key::No,
        }
    }
}
