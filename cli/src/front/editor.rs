//! The input being typed: lines of text and a cursor, with the motions a person expects
//! (characters, words, lines, start and end), and the history of what was sent.

use unicode_width::UnicodeWidthChar as _;

/// The text being typed and where the cursor is in it (a line, and a character in that line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Editor {
    lines: Vec<Vec<char>>,
    row: usize,
    column: usize,
    /// Sent texts, oldest first, and where Up/Down is in them (`None`: the text being typed).
    history: Vec<String>,
    browsing: Option<usize>,
    /// The text being typed when Up first left it.
    draft: Option<String>,
    /// The text is an entry Up or Down brought back, and the cursor has not moved into it
    /// since: Up and Down go on through the history rather than through its lines.
    recalled: bool,
    /// What Ctrl-U, Ctrl-K or Ctrl-W cut last, for Ctrl-Y.
    killed: String,
}

impl Default for Editor {
    fn default() -> Self {
        Editor {
            lines: vec![Vec::new()],
            row: 0,
            column: 0,
            history: Vec::new(),
            browsing: None,
            draft: None,
            recalled: false,
            killed: String::new(),
        }
    }
}

impl Editor {
    /// An empty editor whose Up goes back through `history` (oldest first).
    pub(crate) fn with_history(history: Vec<String>) -> Editor {
        Editor {
            history,
            ..Editor::default()
        }
    }

    /// The whole text.
    pub(crate) fn text(&self) -> String {
        self.lines
            .iter()
            .map(|line| line.iter().collect::<String>())
            .collect::<Vec<_>>()
            .join("\n")
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.lines.len() == 1 && self.lines[0].is_empty()
    }

    /// The lines, for drawing.
    pub(crate) fn lines(&self) -> impl Iterator<Item = String> + '_ {
        self.lines.iter().map(|line| line.iter().collect())
    }

    /// The cursor: its line, and its column in terminal cells.
    pub(crate) fn cursor(&self) -> (usize, usize) {
        let cells = self.lines[self.row][..self.column]
            .iter()
            .map(|c| c.width().unwrap_or(0))
            .sum();
        (self.row, cells)
    }

    /// Takes the text out (to send it), leaving the editor empty, and keeps it in the history.
    pub(crate) fn take(&mut self) -> String {
        let text = self.text();
        if !text.trim().is_empty() && self.history.last() != Some(&text) {
            self.history.push(text.clone());
        }
        self.set_text("");
        self.browsing = None;
        self.draft = None;
        text
    }

    /// Takes the text out without keeping it in the history (a reason, a command being
    /// edited, a draft set aside).
    pub(crate) fn take_draft(&mut self) -> String {
        let text = self.text();
        self.set_text("");
        self.browsing = None;
        self.draft = None;
        text
    }

    /// Texts sent, oldest first.
    pub(crate) fn history(&self) -> &[String] {
        &self.history
    }

    /// The newest text sent before `before` (an index in the history; `None`: from the
    /// newest) that contains `query`, for Ctrl-R.
    pub(crate) fn search(&self, query: &str, before: Option<usize>) -> Option<usize> {
        let end = before.unwrap_or(self.history.len()).min(self.history.len());
        let query = query.to_lowercase();
        self.history[..end]
            .iter()
            .rposition(|text| text.to_lowercase().contains(&query))
    }

    /// The cursor's line up to the cursor.
    pub(crate) fn before_cursor(&self) -> String {
        self.lines[self.row][..self.column].iter().collect()
    }

    /// Replaces the whole text, the cursor at its end.
    pub(crate) fn set_text(&mut self, text: &str) {
        self.recalled = false;
        self.lines = text
            .split('\n')
            .map(|line| line.chars().collect())
            .collect();
        self.row = self.lines.len() - 1;
        self.column = self.lines[self.row].len();
    }

    /// Inserts `text` at the cursor; a pasted block keeps its line breaks as lines (terminals
    /// paste them as CR, CRLF or LF).
    pub(crate) fn insert(&mut self, text: &str) {
        self.touch();
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        for c in text.chars() {
            match c {
                '\n' => self.newline(),
                // A tab is typed as spaces: a tab cell has no fixed width to draw.
                '\t' => {
                    for _ in 0..4 {
                        self.insert_char(' ');
                    }
                }
                c if c.is_control() => {}
                c => self.insert_char(c),
            }
        }
    }

    fn insert_char(&mut self, c: char) {
        self.lines[self.row].insert(self.column, c);
        self.column += 1;
    }

    /// The word the cursor is in or just after (what `@` completion completes), with the
    /// column it starts at.
    pub(crate) fn word(&self) -> Option<(usize, String)> {
        let line = &self.lines[self.row];
        let mut start = self.column;
        while start > 0 && !line[start - 1].is_whitespace() {
            start -= 1;
        }
        let end = (self.column..line.len())
            .find(|&at| line[at].is_whitespace())
            .unwrap_or(line.len());
        (start < end).then(|| (start, line[start..end].iter().collect()))
    }

    /// Replaces the word the cursor is in with `text`, the cursor after it.
    pub(crate) fn replace_word(&mut self, text: &str) {
        let Some((start, word)) = self.word() else {
            return self.insert(text);
        };
        let end = start + word.chars().count();
        self.lines[self.row].drain(start..end);
        self.column = start;
        self.insert(text);
    }

    /// Breaks the line at the cursor.
    pub(crate) fn newline(&mut self) {
        self.touch();
        let rest = self.lines[self.row].split_off(self.column);
        self.lines.insert(self.row + 1, rest);
        self.row += 1;
        self.column = 0;
    }

    pub(crate) fn backspace(&mut self) {
        if self.column > 0 {
            self.column -= 1;
            self.lines[self.row].remove(self.column);
        } else if self.row > 0 {
            let line = self.lines.remove(self.row);
            self.row -= 1;
            self.column = self.lines[self.row].len();
            self.lines[self.row].extend(line);
        }
    }

    pub(crate) fn delete(&mut self) {
        if self.column < self.lines[self.row].len() {
            self.lines[self.row].remove(self.column);
        } else if self.row + 1 < self.lines.len() {
            let next = self.lines.remove(self.row + 1);
            self.lines[self.row].extend(next);
        }
    }

    pub(crate) fn left(&mut self) {
        if self.column > 0 {
            self.column -= 1;
        } else if self.row > 0 {
            self.row -= 1;
            self.column = self.lines[self.row].len();
        }
    }

    pub(crate) fn right(&mut self) {
        if self.column < self.lines[self.row].len() {
            self.column += 1;
        } else if self.row + 1 < self.lines.len() {
            self.row += 1;
            self.column = 0;
        }
    }

    /// To the start of the previous word.
    pub(crate) fn word_left(&mut self) {
        let line = &self.lines[self.row];
        let mut at = self.column;
        while at > 0 && line[at - 1].is_whitespace() {
            at -= 1;
        }
        while at > 0 && !line[at - 1].is_whitespace() {
            at -= 1;
        }
        if at == self.column {
            self.left();
        } else {
            self.column = at;
        }
    }

    /// To the end of the next word.
    pub(crate) fn word_right(&mut self) {
        let line = &self.lines[self.row];
        let mut at = self.column;
        while at < line.len() && line[at].is_whitespace() {
            at += 1;
        }
        while at < line.len() && !line[at].is_whitespace() {
            at += 1;
        }
        if at == self.column {
            self.right();
        } else {
            self.column = at;
        }
    }

    /// Deletes the word before the cursor (Ctrl-W).
    pub(crate) fn delete_word(&mut self) {
        if self.column == 0 {
            return self.backspace();
        }
        // Within the line: word_left from a column above 0 never leaves it.
        let end = self.column;
        self.word_left();
        let start = self.column;
        self.killed = self.lines[self.row].drain(start..end).collect();
    }

    /// Cuts from the start of the line to the cursor (Ctrl-U), for Ctrl-Y.
    pub(crate) fn kill_to_start(&mut self) {
        let column = self.column;
        self.killed = self.lines[self.row].drain(..column).collect();
        self.column = 0;
    }

    /// Cuts from the cursor to the end of the line (Ctrl-K), or at its end the line break, for
    /// Ctrl-Y.
    pub(crate) fn kill_to_end(&mut self) {
        if self.column == self.lines[self.row].len() {
            if self.row + 1 < self.lines.len() {
                self.delete();
                self.killed = "\n".to_owned();
            }
            return;
        }
        let column = self.column;
        self.killed = self.lines[self.row].drain(column..).collect();
    }

    /// Puts back what was cut last (Ctrl-Y).
    pub(crate) fn yank(&mut self) {
        let killed = self.killed.clone();
        self.insert(&killed);
    }

    pub(crate) fn home(&mut self) {
        self.column = 0;
    }

    pub(crate) fn end(&mut self) {
        self.column = self.lines[self.row].len();
    }

    /// The person moved into the text or changed it: Up and Down go through its lines again.
    pub(crate) fn touch(&mut self) {
        self.recalled = false;
    }

    /// Up: the line above, or on the first line (or on an entry just brought back) the
    /// previous text sent.
    pub(crate) fn up(&mut self) {
        if self.row > 0 && !self.recalled {
            self.row -= 1;
            self.column = self.column.min(self.lines[self.row].len());
            return;
        }
        let previous = match self.browsing {
            None if !self.history.is_empty() => self.history.len() - 1,
            Some(at) if at > 0 => at - 1,
            _ => return,
        };
        if self.browsing.is_none() {
            self.draft = Some(self.text());
        }
        self.browsing = Some(previous);
        let text = self.history[previous].clone();
        self.set_text(&text);
        self.recalled = true;
    }

    /// Down: the line below, or on the last line the next text sent (then what was being typed).
    pub(crate) fn down(&mut self) {
        if self.row + 1 < self.lines.len() && !self.recalled {
            self.row += 1;
            self.column = self.column.min(self.lines[self.row].len());
            return;
        }
        let Some(at) = self.browsing else { return };
        if at + 1 < self.history.len() {
            self.browsing = Some(at + 1);
            let text = self.history[at + 1].clone();
            self.set_text(&text);
            self.recalled = true;
        } else {
            self.browsing = None;
            let draft = self.draft.take().unwrap_or_default();
            self.set_text(&draft);
            self.recalled = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readline_kills_and_yank_cut_and_put_back() {
        let mut editor = Editor::default();
        editor.insert("git commit -m wip");
        editor.word_left();
        editor.kill_to_end();
        assert_eq!(editor.text(), "git commit -m ");
        editor.kill_to_start();
        assert_eq!(editor.text(), "");
        assert!(editor.is_empty());
        editor.yank();
        assert_eq!(editor.text(), "git commit -m ");
        editor.insert("done");
        editor.delete_word();
        editor.yank();
        assert_eq!(editor.text(), "git commit -m done");
        // Ctrl-K at a line's end takes the line break.
        let mut editor = Editor::default();
        editor.insert("a\nb");
        editor.up();
        editor.end();
        editor.kill_to_end();
        assert_eq!(editor.text(), "ab");
    }

    #[test]
    fn typing_moving_and_deleting_edit_the_text_where_the_cursor_is() {
        let mut editor = Editor::default();
        editor.insert("hello world");
        editor.word_left();
        editor.insert("big ");
        assert_eq!(editor.text(), "hello big world");
        editor.home();
        editor.delete();
        editor.end();
        editor.backspace();
        assert_eq!(editor.text(), "ello big worl");
        editor.delete_word();
        assert_eq!(editor.text(), "ello big ");
        editor.word_left();
        editor.word_left();
        assert_eq!(editor.cursor(), (0, 0));
    }

    #[test]
    fn a_pasted_block_is_one_text_of_many_lines() {
        let mut editor = Editor::default();
        editor.insert("Traceback:\r\n  File \"a.py\"\n\tError\x1b[31m");
        assert_eq!(editor.text(), "Traceback:\n  File \"a.py\"\n    Error[31m");
        assert_eq!(editor.cursor().0, 2);
        editor.up();
        editor.end();
        editor.backspace();
        assert_eq!(editor.lines().nth(1).unwrap(), "  File \"a.py");
        // Backspace at a line's start joins it to the line above.
        editor.down();
        editor.home();
        editor.backspace();
        assert_eq!(editor.lines().count(), 2);
    }

    #[test]
    fn up_and_down_walk_the_history_and_come_back_to_the_draft() {
        let mut editor = Editor::with_history(vec!["first".into()]);
        editor.insert("second");
        assert_eq!(editor.take(), "second");
        editor.insert("draft");
        editor.up();
        assert_eq!(editor.text(), "second");
        editor.up();
        assert_eq!(editor.text(), "first");
        editor.up();
        assert_eq!(editor.text(), "first");
        editor.down();
        editor.down();
        assert_eq!(editor.text(), "draft");
        assert_eq!(editor.history(), ["first", "second"]);
    }

    #[test]
    fn up_on_a_recalled_entry_of_many_lines_goes_on_through_the_history_until_moved_into() {
        let mut editor = Editor::with_history(vec!["older".into(), "one\ntwo\nthree".into()]);
        editor.up();
        assert_eq!(editor.text(), "one\ntwo\nthree");
        // Not through its lines: the entry before it.
        editor.up();
        assert_eq!(editor.text(), "older");
        editor.down();
        assert_eq!(editor.text(), "one\ntwo\nthree");
        // Moved into, Up goes through its lines.
        editor.touch();
        editor.up();
        assert_eq!(editor.text(), "one\ntwo\nthree");
        assert_eq!(editor.cursor().0, 1);
        // Typed in, the same.
        let mut editor = Editor::with_history(vec!["a\nb".into()]);
        editor.up();
        editor.insert("c");
        editor.up();
        assert_eq!(editor.text(), "a\nbc");
    }

    #[test]
    fn the_word_at_the_cursor_is_found_and_replaced_and_history_is_searched_newest_first() {
        let mut editor = Editor::with_history(vec!["fix the tests".into(), "run tests".into()]);
        editor.insert("look at @src/ma please");
        for _ in 0..7 {
            editor.left();
        }
        assert_eq!(editor.word(), Some((8, "@src/ma".to_owned())));
        editor.replace_word("@src/main.rs");
        assert_eq!(editor.text(), "look at @src/main.rs please");
        assert_eq!(editor.search("TESTS", None), Some(1));
        assert_eq!(editor.search("tests", Some(1)), Some(0));
        assert_eq!(editor.search("tests", Some(0)), None);
        assert_eq!(editor.search("nothing", None), None);
    }

    #[test]
    fn the_cursor_counts_wide_characters_as_two_cells() {
        let mut editor = Editor::default();
        editor.insert("日本x");
        assert_eq!(editor.cursor(), (0, 5));
    }
}
