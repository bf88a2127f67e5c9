//! Following the terminal's size: the live area placed again after a resize (the rows the lines
//! above the cursor take at the new width counted on terminals that re-wrap), the screen cleared.

use super::*;

impl Front {
    /// Empties the live area and leaves the cursor at its top (on leaving).
    pub(crate) fn clear(&mut self) {
        let mut top = None;
        let _ = self.screen.draw(|frame| top = Some(frame.area().y));
        let _ = self.screen.clear();
        if let Some(y) = top {
            let _ = self.screen.set_cursor_position(Position { x: 0, y });
        }
        let _ = self.screen.show_cursor();
    }

    /// After the terminal changed to `size`: the old live area erased where the terminal moved
    /// it, and a new one placed there (see `screen`). Run on the resize event: crossterm's
    /// reader is free then to hear where the cursor is.
    pub(crate) fn follow_resize(&mut self, size: ratatui::layout::Size) {
        use ratatui::crossterm::{cursor, terminal};
        // The terminal's size now: an event of a quick series of resizes carries one that
        // has passed already, and the cursor answered below is at the size now.
        let size = terminal::size().map_or(size, |(columns, rows)| {
            ratatui::layout::Size::new(columns, rows)
        });
        let outbox = self.screen.backend().outbox().clone();
        // The question below is written straight to the terminal: after what is queued, and
        // not to a terminal that stopped reading.
        if !outbox.drain(super::STUCK) {
            return;
        }
        let Ok((_, row)) = cursor::position() else {
            tracing::debug!("the terminal did not say where its cursor is after a resize");
            return;
        };
        let above = self.rows_above_cursor(size.width);
        self.place_live_area(size, row.saturating_sub(above));
        self.pending_since = None;
        // What happened while the resize was on its way is written now, at the new size.
        let held = std::mem::take(&mut self.held);
        if !held.is_empty() {
            self.say(held);
        }
    }

    /// How many rows the live area's lines above the cursor take at `width` columns: a
    /// terminal that re-wraps its lines on a narrower resize (tmux, VTE, kitty, iTerm2) makes
    /// a line drawn to the old width two rows or more, and the area's top is that much higher
    /// above the cursor than it was drawn. Elsewhere (xterm) the rows it was drawn in.
    fn rows_above_cursor(&self, width: u16) -> u16 {
        if !self.rewraps {
            return self.cursor_row;
        }
        let width = usize::from(width.max(1));
        let rows: usize = self
            .drawn_above
            .iter()
            .map(|used| used.div_ceil(width).max(1))
            .sum();
        u16::try_from(rows).unwrap_or(u16::MAX)
    }

    /// Whether to wait for a resize the terminal made and the front end has not followed yet:
    /// drawing now, at the old size, would leave pieces of the live area where the terminal
    /// moved it. The event comes in a moment; one that does not (crossterm loses one of a
    /// quick series now and then) is waited for [`RESIZE_WAIT`] at most, and then the front end
    /// draws at the size it knows, as it did before it waited, until the next resize.
    pub(in crate::front) fn resize_pending(&mut self) -> bool {
        let drawn = ratatui::backend::Backend::size(self.screen.backend()).ok();
        let now = ratatui::crossterm::terminal::size().ok();
        let pending = matches!((drawn, now), (Some(drawn), Some((columns, rows))) if (drawn.width, drawn.height) != (columns, rows));
        if !pending {
            self.pending_since = None;
            return false;
        }
        let since = *self.pending_since.get_or_insert_with(Instant::now);
        since.elapsed() < RESIZE_WAIT
    }

    /// Ctrl-L: the screen cleared (the scrollback kept, as a shell's Ctrl-L keeps it) and the
    /// live area drawn again at its top.
    pub(crate) fn clear_screen(&mut self) {
        if !self.screen.backend().outbox().drain(super::STUCK) {
            return;
        }
        let size = ratatui::backend::Backend::size(self.screen.backend()).unwrap_or_default();
        self.place_live_area(size, 0);
    }

    /// Erases everything from row `top` down and places a new live area there, on a terminal
    /// of `size`.
    fn place_live_area(&mut self, size: ratatui::layout::Size, top: u16) {
        use ratatui::crossterm::{cursor, execute, terminal};
        let outbox = self.screen.backend().outbox().clone();
        let _ = execute!(
            outbox.clone(),
            cursor::MoveTo(0, top),
            terminal::Clear(terminal::ClearType::FromCursorDown)
        );
        if !outbox.drain(super::STUCK) {
            return;
        }
        self.live_rows = self.live_rows.min(most_live_rows(size.height));
        // The cursor is where the MoveTo above put it: ratatui need not ask the terminal.
        match Terminal::with_options(
            super::screen::Steady::placed(size, outbox, Position::new(0, top)),
            TerminalOptions {
                viewport: Viewport::Inline(self.live_rows),
            },
        ) {
            Ok(screen) => self.screen = screen,
            Err(error) => tracing::debug!(%error, "the live area could not be placed again"),
        }
    }

    /// Gives the live area `rows` rows (within what the screen allows), placed again from its
    /// top: growing past the screen's bottom scrolls what is above into the scrollback, as a
    /// terminal does; shrinking leaves the rows below it empty.
    pub(in crate::front) fn set_live_rows(&mut self, rows: u16) {
        let size = ratatui::backend::Backend::size(self.screen.backend()).unwrap_or_default();
        let rows = rows.clamp(VIEWPORT_ROWS, most_live_rows(size.height));
        if rows == self.live_rows {
            return;
        }
        let top = self.screen.get_frame().area().y;
        self.live_rows = rows;
        self.place_live_area(size, top);
    }
}
