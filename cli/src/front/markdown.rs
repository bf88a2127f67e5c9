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
    let text = crate::view::shown::visible(text);
    let mut renderer = Renderer::new(width.max(10));
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH;
    for event in Parser::new_ext(&text, options) {
        renderer.event(event);
    }
    renderer.finish()
}

/// What rendering has made so far, and where in the document it is.
struct Renderer {
    width: usize,
    out: Vec<Line<'static>>,
    /// The text of the block being read, before it is wrapped.
    pieces: Vec<Piece>,
    /// The style of each open span (emphasis, a link…), innermost last.
    styles: Vec<Style>,
    frames: Vec<Frame>,
    /// The marker of the list item whose first line is not written yet.
    item_marker: Option<String>,
    /// A code block being read: its language and its text so far (highlighted whole at its end).
    code: Option<(String, String)>,
    /// A table being read: its rows of cells.
    table: Option<Vec<Vec<String>>>,
    cell: String,
    /// The address of the link being read.
    link: Option<String>,
}

impl Renderer {
    fn new(width: usize) -> Self {
        Renderer {
            width,
            out: Vec::new(),
            pieces: Vec::new(),
            styles: vec![Style::default()],
            frames: Vec::new(),
            item_marker: None,
            code: None,
            table: None,
            cell: String::new(),
            link: None,
        }
    }

    /// The lines, without trailing blank ones.
    fn finish(mut self) -> Vec<Line<'static>> {
        self.flush();
        while self.out.last().is_some_and(|line| line.width() == 0) {
            self.out.pop();
        }
        self.out
    }

    fn style(&self) -> Style {
        *self.styles.last().unwrap_or(&Style::default())
    }

    /// What the open quotes and items put before each line.
    fn prefix(&self) -> String {
        let mut prefix = String::new();
        for frame in &self.frames {
            match frame {
                Frame::Quote => prefix.push_str("│ "),
                Frame::Item => prefix.push_str("  "),
                Frame::List(_) => {}
            }
        }
        prefix
    }

    /// Writes the block read so far, wrapped.
    fn flush(&mut self) {
        if self.pieces.is_empty() {
            return;
        }
        let base = self.prefix();
        let (first, rest) = match self.item_marker.take() {
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
        self.out
            .extend(wrap(&self.pieces, self.width, &first, &rest));
        self.pieces.clear();
    }

    fn inside_item(&self) -> bool {
        self.frames.iter().any(|frame| matches!(frame, Frame::Item))
    }

    fn event(&mut self, event: Event<'_>) {
        let style = self.style();
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(text) => match (&mut self.code, &mut self.table) {
                (Some((_, code)), _) => code.push_str(&text),
                (None, Some(_)) => self.cell.push_str(&text),
                (None, None) => self.pieces.push(Piece {
                    text: text.replace('\n', " "),
                    style,
                }),
            },
            Event::Code(text) if self.table.is_some() => self.cell.push_str(&text),
            Event::Code(text) => self.pieces.push(Piece {
                text: text.to_string(),
                style: style.fg(Color::Yellow),
            }),
            Event::SoftBreak => self.pieces.push(Piece {
                text: " ".into(),
                style,
            }),
            Event::HardBreak => self.flush(),
            Event::Rule => {
                self.flush();
                self.out.push(Line::styled(
                    "─".repeat(self.width.min(40)),
                    Style::default().add_modifier(Modifier::DIM),
                ));
            }
            Event::Html(html) | Event::InlineHtml(html) => self.pieces.push(Piece {
                text: html.to_string(),
                style,
            }),
            _ => {}
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        let style = self.style();
        match tag {
            Tag::Heading { level, .. } => {
                self.flush();
                let heading = match level {
                    HeadingLevel::H1 => {
                        Style::default().add_modifier(Modifier::BOLD | Modifier::UNDERLINED)
                    }
                    _ => Style::default().add_modifier(Modifier::BOLD),
                };
                self.styles.push(heading);
            }
            Tag::Emphasis => self.styles.push(style.add_modifier(Modifier::ITALIC)),
            Tag::Strong => self.styles.push(style.add_modifier(Modifier::BOLD)),
            Tag::Strikethrough => self.styles.push(style.add_modifier(Modifier::CROSSED_OUT)),
            Tag::Link { dest_url, .. } => {
                self.link = Some(dest_url.to_string());
                self.styles
                    .push(style.fg(Color::Cyan).add_modifier(Modifier::UNDERLINED));
            }
            Tag::BlockQuote(_) => {
                self.flush();
                self.frames.push(Frame::Quote);
            }
            Tag::List(start) => {
                self.flush();
                self.frames.push(Frame::List(start));
            }
            Tag::Item => {
                self.flush();
                let number = self.frames.iter_mut().rev().find_map(|frame| match frame {
                    Frame::List(number) => Some(number),
                    _ => None,
                });
                let marker = match number {
                    Some(Some(number)) => {
                        let marker = format!("{number}. ");
                        *number += 1;
                        marker
                    }
                    _ => "• ".to_owned(),
                };
                self.frames.push(Frame::Item);
                self.item_marker = Some(marker);
            }
            Tag::CodeBlock(kind) => {
                self.flush();
                let language = match kind {
                    CodeBlockKind::Fenced(language) => language.to_string(),
                    CodeBlockKind::Indented => String::new(),
                };
                self.code = Some((language, String::new()));
            }
            Tag::Table(_) => {
                self.flush();
                self.table = Some(Vec::new());
            }
            Tag::TableHead | Tag::TableRow => {
                if let Some(rows) = &mut self.table {
                    rows.push(Vec::new());
                }
            }
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Heading(_) => {
                self.styles.pop();
                self.flush();
                self.out.push(Line::default());
            }
            TagEnd::Paragraph => {
                self.flush();
                if !self.inside_item() {
                    self.out.push(Line::default());
                }
            }
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough => {
                self.styles.pop();
            }
            TagEnd::Link => {
                self.styles.pop();
                if let Some(url) = self.link.take() {
                    let shown = self.pieces.last().is_some_and(|piece| piece.text == url);
                    if !shown {
                        self.pieces.push(Piece {
                            text: format!(" ({url})"),
                            style: Style::default().add_modifier(Modifier::DIM),
                        });
                    }
                }
            }
            TagEnd::BlockQuote(_) => {
                self.flush();
                self.frames.pop();
            }
            TagEnd::List(_) => {
                self.frames.pop();
                if !self.inside_item() {
                    self.out.push(Line::default());
                }
            }
            TagEnd::Item => {
                self.flush();
                self.frames.pop();
            }
            TagEnd::CodeBlock => self.code_block(),
            TagEnd::TableCell => {
                if let Some(row) = self.table.as_mut().and_then(|rows| rows.last_mut()) {
                    row.push(std::mem::take(&mut self.cell).trim().to_owned());
                }
            }
            TagEnd::Table => {
                if let Some(rows) = self.table.take() {
                    self.out.extend(super::table::lines(&rows, self.width));
                    self.out.push(Line::default());
                }
            }
            _ => {}
        }
    }

    /// The code block just read, highlighted; its lines are kept, cut at the width rather than
    /// re-flowed.
    fn code_block(&mut self) {
        let (language, text) = self.code.take().unwrap_or_default();
        let base = self.prefix();
        // The last column stays free: a terminal that wraps there would add a line.
        let room = self.width.saturating_sub(base.width() + 2 + 1).max(1);
        let dim = Style::default().add_modifier(Modifier::DIM);
        for spans in super::highlight::code(&text, &language) {
            // A line longer than the room goes on under a ↪, never cut.
            let mut line = vec![Span::raw(format!("{base}  "))];
            let mut cells = 0;
            for (style, piece) in spans {
                let mut shown = String::new();
                for c in crate::view::shown::visible(&piece).chars() {
                    let w = c.width().unwrap_or(0);
                    if cells + w > room && cells > 0 {
                        line.push(Span::styled(std::mem::take(&mut shown), style));
                        self.out.push(Line::from(std::mem::take(&mut line)));
                        line = vec![Span::raw(base.clone()), Span::styled("↪ ", dim)];
                        cells = 0;
                    }
                    cells += w;
                    shown.push(c);
                }
                line.push(Span::styled(shown, style));
            }
            self.out.push(Line::from(line));
        }
        self.out.push(Line::default());
    }
}

/// Lines as their text, styles dropped (for tests).
#[cfg(test)]
pub(crate) fn plain(lines: &[Line<'_>]) -> Vec<String> {
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

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn a_code_line_longer_than_the_width_goes_on_under_a_marker() {
        let long: String = (0..170)
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect();
        let lines = plain(&render(&format!("```\n{long}\n```\n"), 80));
        for line in &lines {
            assert!(line.width() < 80, "{line:?}");
        }
        let code: Vec<&String> = lines.iter().filter(|line| !line.is_empty()).collect();
        assert!(code.len() >= 3, "{lines:#?}");
        assert!(
            code[1..].iter().all(|line| line.starts_with("↪ ")),
            "{lines:#?}"
        );
        let joined: String = code
            .iter()
            .map(|line| line.trim_start_matches("  ").trim_start_matches("↪ "))
            .collect();
        assert_eq!(joined, long);
    }
}
