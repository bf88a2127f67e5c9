//! The terminal the front end draws on: crossterm's backend, with a size that changes only when
//! the front end follows a resize.
//!
//! Ratatui resizes an inline viewport by itself on the first draw at a new size: it asks the
//! terminal where its cursor is and, on a narrower terminal, clears the whole screen. Both go
//! wrong here. The question waits on crossterm's event reader, which the front end's event
//! stream may be holding (two seconds lost, then no answer), and most terminals push a cleared
//! screen into the scrollback (copies of the input box, the conversation gone from view). So
//! the size ratatui sees is the one the front end last placed its live area at
//! (`Front::follow_resize`, run on the resize event, when the reader is free).

use ratatui::backend::{Backend, ClearType, CrosstermBackend, WindowSize};
use ratatui::buffer::Cell;
use ratatui::layout::{Position, Size};

use super::outbox::Outbox;

/// Crossterm's backend writing through the [`Outbox`] (never blocking on the terminal),
/// reporting the size it was given.
pub(crate) struct Steady {
    inner: CrosstermBackend<Outbox>,
    outbox: Outbox,
    size: Size,
    /// Where the cursor is, when the front end put it there itself: ratatui asks once, on
    /// placing the live area, and the terminal is not asked (see `Front::set_live_rows`).
    placed: Option<Position>,
}

impl Steady {
    /// A backend that says the terminal is `size`, writing through `outbox`.
    pub(crate) fn new(size: Size, outbox: Outbox) -> Steady {
        Steady {
            inner: CrosstermBackend::new(outbox.clone()),
            outbox,
            size,
            placed: None,
        }
    }

    /// As [`Steady::new`], with the cursor known to be at `cursor`.
    pub(crate) fn placed(size: Size, outbox: Outbox, cursor: Position) -> Steady {
        Steady {
            placed: Some(cursor),
            ..Steady::new(size, outbox)
        }
    }

    /// Where it writes.
    pub(crate) fn outbox(&self) -> &Outbox {
        &self.outbox
    }
}

impl Backend for Steady {
    type Error = std::io::Error;

    fn draw<'a, I>(&mut self, content: I) -> std::io::Result<()>
    where
        I: Iterator<Item = (u16, u16, &'a Cell)>,
    {
        self.inner.draw(content)
    }

    fn append_lines(&mut self, n: u16) -> std::io::Result<()> {
        self.inner.append_lines(n)
    }

    fn hide_cursor(&mut self) -> std::io::Result<()> {
        self.inner.hide_cursor()
    }

    fn show_cursor(&mut self) -> std::io::Result<()> {
        self.inner.show_cursor()
    }

    fn get_cursor_position(&mut self) -> std::io::Result<Position> {
        match self.placed.take() {
            Some(known) => Ok(known),
            None => self.inner.get_cursor_position(),
        }
    }

    fn set_cursor_position<P: Into<Position>>(&mut self, position: P) -> std::io::Result<()> {
        self.inner.set_cursor_position(position)
    }

    fn clear(&mut self) -> std::io::Result<()> {
        self.inner.clear()
    }

    fn clear_region(&mut self, clear_type: ClearType) -> std::io::Result<()> {
        self.inner.clear_region(clear_type)
    }

    fn size(&self) -> std::io::Result<Size> {
        Ok(self.size)
    }

    fn window_size(&mut self) -> std::io::Result<WindowSize> {
        let mut size = self.inner.window_size()?;
        size.columns_rows = self.size;
        Ok(size)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Backend::flush(&mut self.inner)
    }

    fn scroll_region_up(
        &mut self,
        region: std::ops::Range<u16>,
        line_count: u16,
    ) -> std::io::Result<()> {
        self.inner.scroll_region_up(region, line_count)
    }

    fn scroll_region_down(
        &mut self,
        region: std::ops::Range<u16>,
        line_count: u16,
    ) -> std::io::Result<()> {
        self.inner.scroll_region_down(region, line_count)
    }
}

/// Variables a terminal that re-wraps its lines on a resize sets: tmux, VTE (GNOME Terminal,
/// Tilix), kitty, Windows Terminal, Konsole, Alacritty, WezTerm; and `TERM_PROGRAM` for
/// the ones named in [`REWRAPPING_PROGRAMS`].
pub(crate) const REWRAPPING_MARKERS: [&str; 7] = [
    "TMUX",
    "VTE_VERSION",
    "KITTY_WINDOW_ID",
    "WT_SESSION",
    "KONSOLE_VERSION",
    "ALACRITTY_WINDOW_ID",
    "WEZTERM_PANE",
];

/// `TERM_PROGRAM`s of terminals that re-wrap their lines on a resize.
const REWRAPPING_PROGRAMS: [&str; 7] = [
    "iTerm.app",
    "Apple_Terminal",
    "WezTerm",
    "vscode",
    "ghostty",
    "tmux",
    "Tabby",
];

/// Whether the terminal re-wraps its lines when it gets narrower (then a line of the live area
/// drawn to the old width takes more rows above the cursor). Known by the variables such
/// terminals set; an unknown terminal is taken not to, as xterm and GNU screen do not: taking
/// a terminal that does not re-wrap for one that does would erase lines of the conversation,
/// the other way round leaves at most a line of the old live area in the scrollback.
pub(crate) fn rewraps(variable: impl Fn(&str) -> Option<String>) -> bool {
    let term = variable("TERM").unwrap_or_default();
    REWRAPPING_MARKERS
        .iter()
        .any(|marker| variable(marker).is_some_and(|value| !value.is_empty()))
        || variable("TERM_PROGRAM")
            .is_some_and(|program| REWRAPPING_PROGRAMS.contains(&program.as_str()))
        || [
            "xterm-kitty",
            "foot",
            "alacritty",
            "xterm-ghostty",
            "wezterm",
        ]
        .contains(&term.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_terminal_is_taken_to_rewrap_only_when_it_says_it_is_one_that_does() {
        let with = |pairs: &'static [(&'static str, &'static str)]| {
            rewraps(move |name| {
                pairs
                    .iter()
                    .find(|(key, _)| *key == name)
                    .map(|(_, value)| (*value).to_owned())
            })
        };
        assert!(with(&[("TMUX", "/tmp/tmux-0/default,1,0")]));
        assert!(with(&[("TERM_PROGRAM", "iTerm.app")]));
        assert!(with(&[("TERM", "xterm-kitty")]));
        assert!(!with(&[("TERM", "xterm-256color")]));
        assert!(!with(&[
            ("TERM", "xterm-256color"),
            ("XTERM_VERSION", "XTerm(390)")
        ]));
        assert!(!with(&[("TMUX", "")]));
        assert!(!with(&[("TERM_PROGRAM", "something-else")]));
    }
}
