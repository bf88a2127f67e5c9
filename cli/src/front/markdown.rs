//! An answer's markdown as terminal lines: headings, emphasis, code, lists, quotes, tables and
//! rules styled, and everything wrapped at the width between words (a word longer than the
//! line is the only thing ever cut). Control characters are made visible first: the text comes
//! from a model.

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use unicode_width::{UnicodeWidthChar as _, UnicodeWidthStr as _};

/// A run of text in one style, before wrapping.
#[derive(Debug, Clone)]
struct Piece {
    text: String,
    style: Style,
}

/// Lays pieces out in lines of at most `width` cells, each line starting with `first` (the
/// first) or `rest` (the others), breaking between words.
fn wrap(
    pieces: &[Piece],
    width: usize,
    first: &Line<'static>,
    rest: &Line<'static>,
) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    let mut line = first.clone();
    let mut used = first.width();
    let mut fresh = true;
    let indent = rest.width();
    let room = |used: usize| width.saturating_sub(used);
    for piece in pieces {
        // Words and the spaces between them, kept in order.
        let mut rest_of_piece = piece.text.as_str();
        while !rest_of_piece.is_empty() {
            let split = if rest_of_piece.starts_with(' ') {
                rest_of_piece
                    .find(|c| c != ' ')
                    .unwrap_or(rest_of_piece.len())
            } else {
                rest_of_piece.find(' ').unwrap_or(rest_of_piece.len())
            };
            let (token, after) = rest_of_piece.split_at(split);
            rest_of_piece = after;
            let is_space = token.starts_with(' ');
            if is_space {
                if fresh {
                    continue;
                }
                if token.width() >= room(used) {
                    lines.push(std::mem::replace(&mut line, rest.clone()));
                    used = indent;
                    fresh = true;
                    continue;
                }
                line.spans.push(Span::styled(token.to_owned(), piece.style));
                used += token.width();
                continue;
            }
            let mut token = token.to_owned();
            if token.width() > room(used) && !fresh {
                // Trailing spaces do not go to the next line.
                while line
                    .spans
                    .last()
                    .is_some_and(|span| span.content.trim().is_empty())
                {
                    line.spans.pop();
                }
                lines.push(std::mem::replace(&mut line, rest.clone()));
                used = indent;
            }
            // A word longer than a whole line: cut where the line ends.
            while token.width() > room(used) && room(used) > 0 {
                let mut cut = String::new();
                let mut cells = 0;
                let mut chars = token.chars();
                for c in chars.by_ref() {
                    let w = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
                    if cells + w > room(used) {
                        let remainder: String = std::iter::once(c).chain(chars).collect();
                        line.spans.push(Span::styled(cut, piece.style));
                        lines.push(std::mem::replace(&mut line, rest.clone()));
                        used = indent;
                        token = remainder;
                        break;
                    }
                    cells += w;
                    cut.push(c);
                }
            }
            used += token.width();
            line.spans.push(Span::styled(token, piece.style));
            fresh = false;
        }
    }
    if !fresh || lines.is_empty() {
        lines.push(line);
    }
    lines
}

/// Plain `text` (made visible) in lines of at most `width` cells, in `style`, broken between
/// words.
pub(crate) fn wrap_plain(text: &str, width: usize, style: Style) -> Vec<Line<'static>> {
    let text = crate::view::shown::visible(text);
    let mut lines = Vec::new();
    for paragraph in text.split('\n') {
        let pieces = [Piece {
            text: paragraph.to_owned(),
            style,
        }];
        lines.extend(wrap(
            &pieces,
            width.max(10),
            &Line::default(),
            &Line::raw("  "),
        ));
    }
    lines
}

/// What a block is inside of.
#[derive(Debug, Clone)]
enum Frame {
    List(Option<u64>),
    Item,
    Quote,
}

/// Renders `text` (markdown) in lines of at most `width` cells.
pub(crate) fn render(text: &str, width: usize) -> Vec<Line<'static>> {
    let width = width.max(10);
    let text = crate::view::shown::visible(text);
    let mut out: Vec<Line<'static>> = Vec::new();
    let mut pieces: Vec<Piece> = Vec::new();
    let mut styles: Vec<Style> = vec![Style::default()];
    let mut frames: Vec<Frame> = Vec::new();
    let mut item_marker: Option<String> = None;
    // A code block being read: its language and its text so far (highlighted whole at its end).
    let mut code: Option<(String, String)> = None;
    let mut table: Option<Vec<Vec<String>>> = None;
    let mut cell = String::new();
    let mut link: Option<String> = None;

    let prefix = |frames: &[Frame]| -> String {
        let mut prefix = String::new();
        for frame in frames {
            match frame {
                Frame::Quote => prefix.push_str("│ "),
                Frame::Item => prefix.push_str("  "),
                Frame::List(_) => {}
            }
        }
        prefix
    };
    let flush = |pieces: &mut Vec<Piece>,
                 out: &mut Vec<Line<'static>>,
                 frames: &[Frame],
                 marker: &mut Option<String>| {
        if pieces.is_empty() {
            return;
        }
        let base = prefix(frames);
        let (first, rest) = match marker.take() {
            // The item's own indent is its marker's width.
            Some(marker) => {
                let outer = base
                    .get(..base.len().saturating_sub(2))
                    .unwrap_or("")
                    .to_owned();
                (
                    format!("{outer}{marker}"),
                    format!("{outer}{}", " ".repeat(marker.width())),
                )
            }
            None => (base.clone(), base),
        };
        let dim = Style::default().add_modifier(Modifier::DIM);
        let first = Line::from(Span::styled(first, dim));
        let rest = Line::from(Span::styled(rest, dim));
        out.extend(wrap(pieces, width, &first, &rest));
        pieces.clear();
    };

    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH;
    for event in Parser::new_ext(&text, options) {
        let style = *styles.last().unwrap_or(&Style::default());
        match event {
            Event::Start(Tag::Heading { level, .. }) => {
                flush(&mut pieces, &mut out, &frames, &mut item_marker);
                let heading = match level {
                    HeadingLevel::H1 => {
                        Style::default().add_modifier(Modifier::BOLD | Modifier::UNDERLINED)
                    }
                    _ => Style::default().add_modifier(Modifier::BOLD),
                };
                styles.push(heading);
            }
            Event::End(TagEnd::Heading(_)) => {
                styles.pop();
                flush(&mut pieces, &mut out, &frames, &mut item_marker);
                out.push(Line::default());
            }
            Event::Start(Tag::Paragraph) => {}
            Event::End(TagEnd::Paragraph) => {
                flush(&mut pieces, &mut out, &frames, &mut item_marker);
                if !frames.iter().any(|frame| matches!(frame, Frame::Item)) {
                    out.push(Line::default());
                }
            }
            Event::Start(Tag::Emphasis) => styles.push(style.add_modifier(Modifier::ITALIC)),
            Event::Start(Tag::Strong) => styles.push(style.add_modifier(Modifier::BOLD)),
            Event::Start(Tag::Strikethrough) => {
                styles.push(style.add_modifier(Modifier::CROSSED_OUT))
            }
            Event::End(TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough) => {
                styles.pop();
            }
            Event::Start(Tag::Link { dest_url, .. }) => {
                link = Some(dest_url.to_string());
                styles.push(style.fg(Color::Cyan).add_modifier(Modifier::UNDERLINED));
            }
            Event::End(TagEnd::Link) => {
                styles.pop();
                if let Some(url) = link.take() {
                    let shown = pieces.last().is_some_and(|piece| piece.text == url);
                    if !shown {
                        pieces.push(Piece {
                            text: format!(" ({url})"),
                            style: Style::default().add_modifier(Modifier::DIM),
                        });
                    }
                }
            }
            Event::Start(Tag::BlockQuote(_)) => {
                flush(&mut pieces, &mut out, &frames, &mut item_marker);
                frames.push(Frame::Quote);
            }
            Event::End(TagEnd::BlockQuote(_)) => {
                flush(&mut pieces, &mut out, &frames, &mut item_marker);
                frames.pop();
            }
            Event::Start(Tag::List(start)) => {
                flush(&mut pieces, &mut out, &frames, &mut item_marker);
                frames.push(Frame::List(start));
            }
            Event::End(TagEnd::List(_)) => {
                frames.pop();
                if !frames.iter().any(|frame| matches!(frame, Frame::Item)) {
                    out.push(Line::default());
                }
            }
            Event::Start(Tag::Item) => {
                flush(&mut pieces, &mut out, &frames, &mut item_marker);
                let marker = match frames.iter_mut().rev().find_map(|frame| match frame {
                    Frame::List(number) => Some(number),
                    _ => None,
                }) {
                    Some(Some(number)) => {
                        let marker = format!("{number}. ");
                        *number += 1;
                        marker
                    }
                    _ => "• ".to_owned(),
                };
                frames.push(Frame::Item);
                item_marker = Some(marker);
            }
            Event::End(TagEnd::Item) => {
                flush(&mut pieces, &mut out, &frames, &mut item_marker);
                frames.pop();
            }
            Event::Start(Tag::CodeBlock(kind)) => {
                flush(&mut pieces, &mut out, &frames, &mut item_marker);
                let language = match kind {
                    CodeBlockKind::Fenced(language) => language.to_string(),
                    CodeBlockKind::Indented => String::new(),
                };
                code = Some((language, String::new()));
            }
            Event::End(TagEnd::CodeBlock) => {
                let (language, text) = code.take().unwrap_or_default();
                let base = prefix(&frames);
                let room = width.saturating_sub(base.width() + 2 + 1);
                for spans in super::highlight::code(&text, &language) {
                    // Code keeps its lines: cut at the width rather than re-flowed.
                    let mut line = vec![Span::raw(format!("{base}  "))];
                    let mut cells = 0;
                    for (style, piece) in spans {
                        let mut shown = String::new();
                        for c in crate::view::shown::visible(&piece).chars() {
                            let w = c.width().unwrap_or(0);
                            if cells + w > room {
                                break;
                            }
                            cells += w;
                            shown.push(c);
                        }
                        line.push(Span::styled(shown, style));
                    }
                    out.push(Line::from(line));
                }
                out.push(Line::default());
            }
            Event::Text(text) if code.is_some() => {
                if let Some((_, code)) = &mut code {
                    code.push_str(&text);
                }
            }
            Event::Text(text) if table.is_some() => cell.push_str(&text),
            Event::Code(text) if table.is_some() => cell.push_str(&text),
            Event::Text(text) => pieces.push(Piece {
                text: text.replace('\n', " "),
                style,
            }),
            Event::Code(text) => pieces.push(Piece {
                text: text.to_string(),
                style: style.fg(Color::Yellow),
            }),
            Event::SoftBreak => pieces.push(Piece {
                text: " ".into(),
                style,
            }),
            Event::HardBreak => flush(&mut pieces, &mut out, &frames, &mut item_marker),
            Event::Rule => {
                flush(&mut pieces, &mut out, &frames, &mut item_marker);
                out.push(Line::styled(
                    "─".repeat(width.min(40)),
                    Style::default().add_modifier(Modifier::DIM),
                ));
            }
            Event::Start(Tag::Table(_)) => {
                flush(&mut pieces, &mut out, &frames, &mut item_marker);
                table = Some(Vec::new());
            }
            Event::Start(Tag::TableHead | Tag::TableRow) => {
                if let Some(rows) = &mut table {
                    rows.push(Vec::new());
                }
            }
            Event::End(TagEnd::TableCell) => {
                if let Some(row) = table.as_mut().and_then(|rows| rows.last_mut()) {
                    row.push(std::mem::take(&mut cell).trim().to_owned());
                }
            }
            Event::End(TagEnd::Table) => {
                if let Some(rows) = table.take() {
                    out.extend(table_lines(&rows, width));
                    out.push(Line::default());
                }
            }
            Event::Html(html) | Event::InlineHtml(html) => pieces.push(Piece {
                text: html.to_string(),
                style,
            }),
            _ => {}
        }
    }
    flush(&mut pieces, &mut out, &frames, &mut item_marker);
    while out.last().is_some_and(|line| line.width() == 0) {
        out.pop();
    }
    out
}

/// A table's rows, columns padded to their widest cell; the header bold; each row cut at the
/// width.
fn table_lines(rows: &[Vec<String>], width: usize) -> Vec<Line<'static>> {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|column| {
            rows.iter()
                .filter_map(|row| row.get(column))
                .map(|cell| cell.width())
                .max()
                .unwrap_or(0)
        })
        .collect();
    rows.iter()
        .enumerate()
        .map(|(index, row)| {
            let mut text = String::new();
            for (column, cell_width) in widths.iter().enumerate() {
                let cell = row.get(column).map_or("", String::as_str);
                if column > 0 {
                    text.push_str(" │ ");
                }
                text.push_str(cell);
                text.push_str(&" ".repeat(cell_width.saturating_sub(cell.width())));
            }
            let text: String = text
                .trim_end()
                .chars()
                .scan(0, |cells, c| {
                    *cells += unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
                    (*cells <= width).then_some(c)
                })
                .collect();
            let style = match index {
                0 => Style::default().add_modifier(Modifier::BOLD),
                _ => Style::default(),
            };
            Line::styled(text, style)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(lines: &[Line<'_>]) -> Vec<String> {
        lines
            .iter()
            .map(|line| {
                line.spans
                    .iter()
                    .map(|span| span.content.as_ref())
                    .collect()
            })
            .collect()
    }

    #[test]
    fn paragraphs_wrap_between_words_at_the_width() {
        let text = "The **cause** is a missing semicolon in the parser, which the compiler reports two lines later.";
        let lines = render(text, 30);
        for line in plain(&lines) {
            assert!(line.width() <= 30, "{line:?}");
            assert!(!line.ends_with(' '), "{line:?}");
        }
        let joined = plain(&lines).join(" ");
        assert_eq!(joined, text.replace("**", ""));
        let bold = lines[0]
            .spans
            .iter()
            .find(|span| span.content == "cause")
            .unwrap();
        assert!(bold.style.add_modifier.contains(Modifier::BOLD));
    }

    #[test]
    fn lists_quotes_code_and_tables_keep_their_shape() {
        let text = "# Plan\n\n1. read the file\n2. fix the bug that is described in the issue\n\n- a\n- b\n\n> quoted\n\n```rust\nfn main() {}\n```\n\n| a | bb |\n|---|---|\n| 1 | 2 |\n";
        let lines = plain(&render(text, 24));
        assert_eq!(lines[0], "Plan");
        assert!(lines.contains(&"1. read the file".to_owned()), "{lines:#?}");
        assert!(
            lines.contains(&"2. fix the bug that is".to_owned()),
            "{lines:#?}"
        );
        assert!(
            lines.contains(&"   described in the".to_owned()),
            "{lines:#?}"
        );
        assert!(lines.contains(&"• a".to_owned()), "{lines:#?}");
        assert!(lines.contains(&"│ quoted".to_owned()), "{lines:#?}");
        assert!(lines.contains(&"  fn main() {}".to_owned()), "{lines:#?}");
        assert!(lines.contains(&"a │ bb".to_owned()), "{lines:#?}");
        assert!(lines.contains(&"1 │ 2".to_owned()), "{lines:#?}");
    }

    #[test]
    fn a_word_longer_than_the_line_is_cut_and_escapes_are_made_visible() {
        let lines = plain(&render(
            "see https://example.com/a/very/long/path/that/goes/on",
            20,
        ));
        assert!(lines.iter().all(|line| line.width() <= 20), "{lines:#?}");
        let lines = plain(&render("title\x1b]0;pwned\x07 here", 40));
        assert!(!lines.concat().contains('\x1b'), "{lines:#?}");
    }
}
