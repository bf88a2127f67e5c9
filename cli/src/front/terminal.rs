//! The terminal the front end draws on: whether it can (a terminal on both ends, not `TERM=dumb`),
//! taken (raw mode, the kitty keyboard protocol, bracketed paste), and given back as it was
//! however the front end ends.

use std::io::Write as _;

use ratatui::{Terminal, TerminalOptions, Viewport};

use super::{outbox, screen, Screen, STUCK, VIEWPORT_ROWS};
use crate::args::ChatArgs;

/// Puts the terminal back as it was, however the front end ends.
pub(super) struct Restore(Option<outbox::Outbox>);

impl Drop for Restore {
    fn drop(&mut self) {
        use ratatui::crossterm::event::{DisableBracketedPaste, PopKeyboardEnhancementFlags};
        use ratatui::crossterm::{execute, terminal};
        // Not a blocking write to a terminal that stopped reading: golato must be able to end.
        let reads = self.0.as_ref().is_none_or(|outbox| outbox.drain(STUCK));
        if reads {
            let _ = execute!(
                std::io::stdout(),
                DisableBracketedPaste,
                PopKeyboardEnhancementFlags
            );
        }
        let _ = terminal::disable_raw_mode();
        if reads {
            let _ = writeln!(std::io::stdout());
        }
    }
}

/// Raw mode, bracketed paste, keys told apart by their modifiers, and the inline viewport where
/// the cursor is.
pub(super) fn open_screen() -> std::io::Result<(Screen, Restore)> {
    use ratatui::crossterm::event::{
        EnableBracketedPaste, KeyboardEnhancementFlags, PushKeyboardEnhancementFlags,
    };
    use ratatui::crossterm::{execute, terminal};
    terminal::enable_raw_mode()?;
    let mut restore = Restore(None);
    // The kitty keyboard protocol (kitty, WezTerm, Ghostty, foot, Alacritty, iTerm2 with CSI u
    // on): Shift-Enter is then told from Enter. A terminal without it ignores the request and
    // sends Enter for both; `\`+Enter, Alt-Enter and Ctrl-J make a new line everywhere.
    // xterm's modifyOtherKeys is not asked for: crossterm drops its `CSI 27;…~` keys, so it
    // would lose Alt-Enter where it works today.
    execute!(
        std::io::stdout(),
        EnableBracketedPaste,
        PushKeyboardEnhancementFlags(KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES)
    )?;
    let size = terminal::size()?;
    let outbox = outbox::Outbox::start()?;
    restore.0 = Some(outbox.clone());
    let screen = Terminal::with_options(
        screen::Steady::new(ratatui::layout::Size::new(size.0, size.1), outbox),
        TerminalOptions {
            viewport: Viewport::Inline(VIEWPORT_ROWS),
        },
    )?;
    Ok((screen, restore))
}

/// Whether the front end can run: a terminal on both ends that can draw, and no `--plain`.
pub(crate) fn usable(args: &ChatArgs) -> bool {
    !args.plain && terminal_can_draw()
}

/// A terminal on both ends that can draw.
pub(crate) fn terminal_can_draw() -> bool {
    use std::io::IsTerminal as _;
    let dumb = std::env::var_os("TERM").is_none_or(|term| term == "dumb" || term.is_empty());
    !dumb && std::io::stdin().is_terminal() && std::io::stdout().is_terminal()
}
