//! A markdown table laid out in the terminal's width: its columns as wide as their widest cell
//! when they fit; else narrowed (the widest give way first) with each cell wrapped between
//! words inside its column; and when even that leaves a column too narrow to read, one block
//! per row (`header: cell` lines). No cell's text is ever dropped.

use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use unicode_width::{UnicodeWidthChar as _, UnicodeWidthStr as _};

/// Between two columns.
const SEPARATOR: &str = " │ ";
/// The narrowest a column gets before the table becomes a list.
const NARROWEST: usize = 6;

/// `rows` (the header first) in lines of at most `width` cells; the header bold.
pub(crate) fn lines(rows: &[Vec<String>], width: usize) -> Vec<Line<'static>> {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    if columns == 0 {
        return Vec::new();
    }
    let natural: Vec<usize> = (0..columns)
        .map(|column| {
            rows.iter()
                .filter_map(|row| row.get(column))
                .map(|cell| cell.width())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let room = width.saturating_sub(SEPARATOR.width() * (columns - 1));
    match fitted(&natural, room) {
        Some(widths) => grid(rows, &widths),
        None => listed(rows, width),
    }
}

/// Column widths that fit `room` cells: the natural ones when they do; else each column gets
/// an equal share, and what the narrower ones leave goes to the wider ones. `None` when a share
/// would be under [`NARROWEST`].
fn fitted(natural: &[usize], room: usize) -> Option<Vec<usize>> {
    if natural.iter().sum::<usize>() <= room {
        return Some(natural.to_vec());
    }
    let mut widths = vec![0; natural.len()];
    let mut open: Vec<usize> = (0..natural.len()).collect();
    let mut left = room;
    // Water-filling: a column that needs less than an equal share takes what it needs.
    loop {
        let share = left / open.len().max(1);
        let (small, wide): (Vec<usize>, Vec<usize>) =
            open.iter().partition(|column| natural[**column] <= share);
        if small.is_empty() {
            if share < NARROWEST {
                return None;
            }
            for (at, column) in wide.iter().enumerate() {
                // The remainder goes to the first columns, one cell each.
                widths[*column] = share + usize::from(at < left % wide.len());
            }
            return Some(widths);
        }
        for column in small {
            widths[column] = natural[column];
            left -= natural[column];
        }
        open = wide;
        if open.is_empty() {
            return Some(widths);
        }
    }
}

/// The table as a grid of wrapped cells.
fn grid(rows: &[Vec<String>], widths: &[usize]) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    for (index, row) in rows.iter().enumerate() {
        let cells: Vec<Vec<String>> = widths
            .iter()
            .enumerate()
            .map(|(column, width)| wrap(row.get(column).map_or("", String::as_str), *width))
            .collect();
        let height = cells.iter().map(Vec::len).max().unwrap_or(1);
        for line in 0..height {
            let mut text = String::new();
            for (column, width) in widths.iter().enumerate() {
                if column > 0 {
                    text.push_str(SEPARATOR);
                }
                let cell = cells[column].get(line).map_or("", String::as_str);
                text.push_str(cell);
                text.push_str(&" ".repeat(width.saturating_sub(cell.width())));
            }
            out.push(Line::styled(text.trim_end().to_owned(), style(index)));
        }
    }
    out
}

/// The table as blocks, one per row: each cell on its own line after its column's header.
fn listed(rows: &[Vec<String>], width: usize) -> Vec<Line<'static>> {
    let Some((header, body)) = rows.split_first() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (at, row) in body.iter().enumerate() {
        if at > 0 {
            out.push(Line::default());
        }
        for (column, cell) in row.iter().enumerate() {
            let name = header.get(column).map_or("", String::as_str);
            let text = match name.is_empty() {
                true => cell.clone(),
                false => format!("{name}: {cell}"),
            };
            for line in wrap(&text, width) {
                out.push(Line::raw(line));
            }
        }
    }
    out
}

fn style(row: usize) -> Style {
    match row {
        0 => Style::default().add_modifier(Modifier::BOLD),
        _ => Style::default(),
    }
}

/// `text` in lines of at most `width` cells, broken between words (a word longer than the
/// line is broken inside).
pub(crate) fn wrap(text: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut lines = vec![String::new()];
    for word in text.split_whitespace() {
        let current = lines.last().map_or(0, |line| line.width());
        let needed = word.width() + usize::from(current > 0);
        if current > 0 && current + needed > width {
            lines.push(String::new());
        }
        let mut line = lines.pop().unwrap_or_default();
        if !line.is_empty() {
            line.push(' ');
        }
        for c in word.chars() {
            let w = c.width().unwrap_or(0);
            if line.width() + w > width && !line.is_empty() {
                lines.push(std::mem::take(&mut line));
            }
            line.push(c);
        }
        lines.push(line);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::front::markdown::plain;

    fn table(cells: &[&[&str]]) -> Vec<Vec<String>> {
        cells
            .iter()
            .map(|row| row.iter().map(|cell| (*cell).to_owned()).collect())
            .collect()
    }

    #[test]
    fn a_table_that_fits_keeps_its_natural_columns() {
        let rows = table(&[&["a", "bb"], &["1", "2"]]);
        assert_eq!(plain(&lines(&rows, 80)), ["a │ bb", "1 │ 2"]);
    }

    #[test]
    fn a_wide_table_wraps_its_cells_and_loses_no_word() {
        let rows = table(&[
            &["name", "what it does", "default", "where"],
            &[
                "sandbox",
                "confines the tools to the working directory and the temporary folders",
                "workspace-write",
                "the flags, the configuration files and the front end's /sandbox",
            ],
            &["approve", "which calls ask first", "never", "--approve"],
        ]);
        let squeezed = |text: &str| text.split_whitespace().collect::<String>();
        for width in [80, 60, 40] {
            let shown = plain(&lines(&rows, width));
            for line in &shown {
                assert!(line.width() <= width, "{width}: {line:?}\n{shown:#?}");
            }
            // Read down each column: its fragments, in order, are its cells, in order.
            for column in 0..4 {
                let read: String = shown
                    .iter()
                    .map(|line| squeezed(line.split('│').nth(column).unwrap_or("")))
                    .collect();
                let written: String = rows.iter().map(|row| squeezed(&row[column])).collect();
                assert_eq!(read, written, "{width}: column {column}\n{shown:#?}");
            }
        }
    }

    #[test]
    fn a_table_too_wide_for_columns_becomes_one_block_per_row() {
        let rows = table(&[
            &["a", "b", "c", "d", "e", "f"],
            &["one", "two", "three", "four", "five", "six"],
        ]);
        let shown = plain(&lines(&rows, 24));
        assert!(shown.contains(&"a: one".to_owned()), "{shown:#?}");
        assert!(shown.contains(&"f: six".to_owned()), "{shown:#?}");
    }

    #[test]
    fn wrapping_breaks_between_words_and_inside_a_word_too_long() {
        assert_eq!(wrap("one two three", 7), ["one two", "three"]);
        assert_eq!(wrap("abcdefghij", 4), ["abcd", "efgh", "ij"]);
        assert_eq!(wrap("", 4), [""]);
    }
}
