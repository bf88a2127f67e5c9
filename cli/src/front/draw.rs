//! Drawing the front end's viewport: the status line, the input (or the question, the
//! picker, the search) and the line of keys.

mod menu;
mod resize;

use super::*;

impl Front {
    pub(crate) fn draw(&mut self) {
        if self.resize_pending() {
            return;
        }
        // What waited for the resize is written now (at the new size, or past the wait).
        if !self.held.is_empty() {
            let held = std::mem::take(&mut self.held);
            self.say(held);
        }
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
            Mode::Pick {
                choices,
                selected,
                query,
                ..
            } => Some(
                kept(choices, query)
                    .into_iter()
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
        // The slash commands the typed name may be, each with what it does.
        let menu = self.menu_lines();
        let width = self.width();
        let room = width.saturating_sub(3).max(1);
        let (rows, at) = soft_wrapped(&lines, (row, column), room);
        // Rows wanted: the list (or the picker's choices) and the input, within a third of the
        // screen; the live area grows and shrinks to them.
        let wanted = match &instead {
            Some(choices) => choices.len(),
            None => menu.len() + rows.len(),
        };
        self.set_live_rows(u16::try_from(wanted).unwrap_or(u16::MAX).saturating_add(2));
        let mut cursor_row = 0;
        let mut cursor_x = 0;
        let mut drawn_above = Vec::new();
        let _ = self.screen.draw(|frame| {
            let area = frame.area();
            let input_rows = usize::from(area.height.saturating_sub(2)).max(1);
            let mut shown: Vec<Line<'_>> = vec![status];
            let cursor = match instead {
                Some(choices) => {
                    let selected = match &self.mode {
                        Mode::Pick { selected, .. } => *selected,
                        _ => 0,
                    };
                    let first = selected.saturating_sub(input_rows - 1);
                    shown.extend(choices.into_iter().skip(first).take(input_rows));
                    // On the chosen row: the cursor is always somewhere known (see
                    // `follow_resize`).
                    Some((0, selected - first))
                }
                None => {
                    // The list first, as many of its rows as leave one for the input; then
                    // the input soft-wrapped at the width, its rows around the cursor.
                    let listed = menu.len().min(input_rows.saturating_sub(1));
                    shown.extend(menu.into_iter().take(listed));
                    let input_rows = input_rows - listed;
                    let first = at.0.saturating_sub(input_rows - 1);
                    for (index, (_, text)) in
                        rows.into_iter().enumerate().skip(first).take(input_rows)
                    {
                        let lead = if index == 0 { mark } else { "  " };
                        shown.push(Line::from(vec![Span::styled(lead, cyan), Span::raw(text)]));
                    }
                    let lead = if at.0 == 0 { mark.chars().count() } else { 2 };
                    Some((lead + at.1, listed + at.0 - first))
                }
            };
            while shown.len() < usize::from(area.height.saturating_sub(1)) {
                shown.push(Line::default());
            }
            shown.push(keys);
            if let Some((_, y)) = cursor {
                // The cells each row above the cursor fills (its closing blanks never written).
                drawn_above = shown[..=y.min(shown.len() - 1)]
                    .iter()
                    .map(|line| {
                        let text: String = line
                            .spans
                            .iter()
                            .map(|span| span.content.as_ref())
                            .collect();
                        unicode_width::UnicodeWidthStr::width(text.trim_end())
                    })
                    .collect();
            }
            frame.render_widget(Paragraph::new(shown), area);
            if let Some((x, y)) = cursor {
                let x = area.x + u16::try_from(x).unwrap_or(u16::MAX);
                let y = 1 + u16::try_from(y).unwrap_or(0);
                cursor_row = y;
                cursor_x = x.min(area.right().saturating_sub(1));
                frame.set_cursor_position(Position::new(cursor_x, area.y + y));
            }
        });
        self.cursor_row = cursor_row;
        self.cursor_x = cursor_x;
        self.drawn_above = drawn_above;
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
        if let Mode::Confirm { .. } = self.mode {
            return Line::from(vec![
                Span::styled("? ", Style::default().fg(Color::Yellow)),
                Span::styled(
                    "Write this draft to AGENTS.md?",
                    Style::default().add_modifier(Modifier::BOLD),
                ),
            ]);
        }
        if matches!(self.mode, Mode::Prompt) {
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
        if let (Some(shell), None) = (&self.shell, &self.running) {
            // As a call of the model's: a turning spinner, the command, its newest line.
            let elapsed = shell.started.elapsed();
            let label = crate::view::live::call_label(&shell.call);
            let tail = format!(" · {}s · Esc to interrupt", elapsed.as_secs());
            let room = self.width().saturating_sub(2 + tail.chars().count());
            let latest = shell.latest();
            let label = match latest {
                Some(_) => transcript::fit(&label, (room * 2 / 5).max(16)),
                None => transcript::fit(&label, room),
            };
            let latest = latest.map_or_else(String::new, |latest| {
                let left = room.saturating_sub(label.chars().count() + 3);
                format!(" · {}", transcript::fit(&latest, left))
            });
            return Line::from(vec![
                Span::styled(
                    format!("{} ", spinner_frame(elapsed)),
                    Style::default().fg(Color::Cyan),
                ),
                Span::styled(label, Style::default().add_modifier(Modifier::BOLD)),
                Span::styled(latest, dim),
                Span::styled(tail, dim),
            ]);
        }
        let Some(running) = &self.running else {
            let mut line = match self.planning {
                _ if self.quit_armed => Line::styled(
                    "Ctrl-C again quits (Ctrl-D too)",
                    Style::default().fg(Color::Yellow),
                ),
                true => Line::from(vec![
                    Span::styled("plan mode", Style::default().fg(Color::Yellow)),
                    Span::styled(" · read-only · /accept carries the plan out", dim),
                ]),
                false => Line::default(),
            };
            // Idle: what the next prompt runs under, at the right.
            let used = line.width();
            let footer = self.footer.text(self.width().saturating_sub(used + 3));
            if !footer.is_empty() {
                let gap = self
                    .width()
                    .saturating_sub(used + footer.chars().count() + 1);
                line.push_span(Span::raw(" ".repeat(gap)));
                line.push_span(Span::styled(footer, Style::default().fg(Color::Cyan)));
            }
            return line;
        };
        let elapsed = running.started.elapsed();
        let frame = spinner_frame(elapsed);
        let seconds = format!(" · {}s", elapsed.as_secs());
        let spinner = Span::styled(format!("{frame} "), Style::default().fg(Color::Cyan));
        let width = self.width();
        if running.cancelling {
            return Line::from(vec![
                spinner,
                Span::raw("interrupting"),
                Span::styled(seconds, dim),
            ]);
        }
        // The first running call by position, its newest output line, and how many more run.
        let mut calls: Vec<_> = running.calls.iter().collect();
        calls.sort_by_key(|(index, _)| **index);
        if let Some((_, call)) = calls.first() {
            let more = match calls.len() {
                1 => String::new(),
                n => format!(" (+{} more)", n - 1),
            };
            let tail = format!("{seconds}{more} · Esc to interrupt");
            let room = width.saturating_sub(2 + tail.chars().count());
            // The label gives way to the output: two fifths of the room at most.
            let label = match call.latest {
                Some(_) => transcript::fit(&call.label, (room * 2 / 5).max(16)),
                None => transcript::fit(&call.label, room),
            };
            let latest = call.latest.as_deref().map_or_else(String::new, |latest| {
                let left = room.saturating_sub(label.chars().count() + 3);
                format!(" · {}", transcript::fit(latest, left))
            });
            return Line::from(vec![
                spinner,
                Span::styled(label, Style::default().add_modifier(Modifier::BOLD)),
                Span::styled(latest, dim),
                Span::styled(tail, dim),
            ]);
        }
        // The block being written: its last line, as far as it fits.
        let open = running.streaming.open().trim_end();
        let tail = format!(
            "{seconds} · ≈{} streamed · Esc to interrupt",
            // About four characters a token: the stream's deltas carry no counts.
            crate::view::shown::count(running.streamed.div_ceil(4) as u64, "token")
        );
        let writing = match open.lines().last() {
            Some(last) if !last.trim().is_empty() => {
                let room = width.saturating_sub(2 + tail.chars().count());
                Span::raw(transcript::fit_end(
                    &crate::view::shown::visible(last),
                    room,
                ))
            }
            _ => Span::raw("working"),
        };
        Line::from(vec![spinner, writing, Span::styled(tail, dim)])
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
            (Mode::Confirm { .. }, _, _) => {
                "y write it to AGENTS.md · n leave it unwritten".to_owned()
            }
            (Mode::Pick { choices, query, .. }, _, _) => {
                let shown = kept(choices, query).len();
                let search = match query.is_empty() {
                    true => "type to search".to_owned(),
                    false => format!("search: {query} ({shown} of {})", choices.len()),
                };
                format!("{search} · ↑↓ choose · Enter go on with it · Esc cancel")
            }
            (Mode::Prompt, Some(question), _) => {
                let edit = if question.tool == "bash" {
                    " · e edit"
                } else {
                    ""
                };
                let remember = match &question.remember {
                    Some(offer) => {
                        let project = self.project_trusted;
                        let user = offer.chosen().user.is_some();
                        let keys = match (project, user) {
                            (true, true) => " · p/u remember",
                            (true, false) => " · p remember",
                            (false, true) => " · u remember",
                            (false, false) => "",
                        };
                        match offer.can_widen() {
                            true => format!("{keys} · w wider"),
                            false => keys.to_owned(),
                        }
                    }
                    None => String::new(),
                };
                format!(
                    "y yes · n no · a all {} (session){remember}{edit} · Esc no, say why",
                    question.tool
                )
            }
            (Mode::Prompt, None, Some(_)) => {
                "Enter steer · Tab follow-up · Esc interrupt".to_owned()
            }
            (Mode::Prompt, None, None) if self.shell.is_some() => {
                "your command runs · Esc or Ctrl-C stops it".to_owned()
            }
            (Mode::Prompt, None, _) if !self.menu().is_empty() => {
                "↑↓ choose · Tab complete · Enter run it · type on to narrow".to_owned()
            }
            (Mode::Prompt, None, _) if self.has_paste() => {
                "Enter send it all · Ctrl-X show the pasted lines to edit them".to_owned()
            }
            (Mode::Prompt, None, None) => {
                "Enter send · Shift/Alt-Enter new line · ↑ history · /help · Ctrl-D quit".to_owned()
            }
        };
        Line::styled(text, Style::default().add_modifier(Modifier::DIM))
    }
}

/// How long the front end waits for the event of a resize the terminal made before it draws
/// again at the size it knows.
pub(super) const RESIZE_WAIT: Duration = Duration::from_millis(300);

/// The most slash commands listed at once.
const MENU_ROWS: usize = 8;

/// The most rows the live area takes on a screen of `height` rows: a third of it for the
/// input, and its two lines (never fewer than the six it starts with).
fn most_live_rows(height: u16) -> u16 {
    (height / 3 + 2).max(VIEWPORT_ROWS)
}

/// The spinner's frame after `elapsed`: one a tenth of a second.
fn spinner_frame(elapsed: Duration) -> &'static str {
    const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
    SPINNER[(elapsed.as_millis() / 100) as usize % SPINNER.len()]
}

/// The input's lines cut into rows of at most `room` cells, between words where a row has a
/// space (else inside the word; a wide character is never split), each with its line and
/// whether it continues that line; and the cursor (a line and its cell there) as a row and a
/// cell in it.
#[allow(clippy::type_complexity)]
pub(super) fn soft_wrapped(
    lines: &[String],
    cursor: (usize, usize),
    room: usize,
) -> (Vec<((usize, bool), String)>, (usize, usize)) {
    use unicode_width::UnicodeWidthChar as _;
    let mut rows = Vec::new();
    let mut at = (0, 0);
    for (index, line) in lines.iter().enumerate() {
        let chars: Vec<char> = line.chars().collect();
        let widths: Vec<usize> = chars.iter().map(|c| c.width().unwrap_or(0)).collect();
        // Where each row after the first starts.
        let mut breaks = Vec::new();
        let (mut start, mut cells, mut after_space) = (0, 0, None);
        for (i, w) in widths.iter().enumerate() {
            if cells + w > room && i > start {
                let at = after_space.filter(|b| *b > start).unwrap_or(i);
                breaks.push(at);
                start = at;
                cells = widths[at..i].iter().sum();
                after_space = None;
            }
            cells += w;
            if chars[i] == ' ' {
                after_space = Some(i + 1);
            }
        }
        let first_row = rows.len();
        let mut bounds = vec![0];
        bounds.extend(&breaks);
        bounds.push(chars.len());
        for (n, pair) in bounds.windows(2).enumerate() {
            rows.push((
                (index, n > 0),
                chars[pair[0]..pair[1]].iter().collect::<String>(),
            ));
        }
        if index != cursor.0 {
            continue;
        }
        // The cursor's character, from its cell.
        let mut total = 0;
        let k = widths
            .iter()
            .position(|w| {
                let here = total >= cursor.1;
                total += w;
                here
            })
            .unwrap_or(chars.len());
        let row = breaks.iter().filter(|b| **b <= k).count();
        let row_start = bounds[row];
        let cell: usize = widths[row_start..k].iter().sum();
        at = if cell >= room {
            // After the last character of a full row: the next row's start.
            rows.insert(first_row + row + 1, ((index, true), String::new()));
            (first_row + row + 1, 0)
        } else {
            (first_row + row, cell)
        };
    }
    (rows, at)
}

#[cfg(test)]
mod tests;
