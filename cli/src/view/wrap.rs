//! Streamed text wrapped between words at the terminal's width as it arrives, so the terminal
//! never breaks a word in two at its last column. A word is written once it is whole (the next
//! space or line end shows that); a word longer than a line is broken at the width.

use unicode_width::UnicodeWidthChar as _;

/// The wrapping state of one stream of text.
#[derive(Debug)]
pub(crate) struct WordWrap {
    width: usize,
    /// Cells written on the current line.
    column: usize,
    /// Spaces after the last word written, held: dropped if the next word goes to a new line.
    spaces: String,
    /// The word being received.
    word: String,
}

impl WordWrap {
    /// Wrapping at `width` cells (at least 10); the first line starts at `column`.
    pub(crate) fn new(width: usize, column: usize) -> WordWrap {
        WordWrap {
            width: width.max(10),
            column,
            spaces: String::new(),
            word: String::new(),
        }
    }

    /// Takes more text (already made visible: no control characters but `\n` and `\t`);
    /// returns what to write now.
    pub(crate) fn push(&mut self, text: &str) -> String {
        let mut out = String::new();
        for c in text.chars() {
            match c {
                '\n' => {
                    self.flush_word(&mut out);
                    self.spaces.clear();
                    out.push('\n');
                    self.column = 0;
                }
                ' ' | '\t' => {
                    self.flush_word(&mut out);
                    self.spaces.push(c);
                }
                _ => self.word.push(c),
            }
        }
        out
    }

    /// The word still held, written (the stream ended).
    pub(crate) fn finish(&mut self) -> String {
        let mut out = String::new();
        self.flush_word(&mut out);
        self.spaces.clear();
        out
    }

    fn flush_word(&mut self, out: &mut String) {
        if self.word.is_empty() {
            return;
        }
        let word = std::mem::take(&mut self.word);
        let word_width: usize = word.chars().map(cell_width).sum();
        let spaces_width: usize = self.spaces.chars().map(cell_width).sum();
        if self.column > 0 && self.column + spaces_width + word_width > self.width {
            out.push('\n');
            self.column = 0;
        } else {
            out.push_str(&self.spaces);
            self.column += spaces_width;
        }
        self.spaces.clear();
        for c in word.chars() {
            let w = cell_width(c);
            // Only a word longer than a whole line is broken inside.
            if self.column + w > self.width && self.column > 0 {
                out.push('\n');
                self.column = 0;
            }
            out.push(c);
            self.column += w;
        }
    }
}

fn cell_width(c: char) -> usize {
    match c {
        '\t' => 4,
        c => c.width().unwrap_or(0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wrapped(width: usize, chunks: &[&str]) -> String {
        let mut wrap = WordWrap::new(width, 0);
        let mut out: String = chunks.iter().map(|chunk| wrap.push(chunk)).collect();
        out.push_str(&wrap.finish());
        out
    }

    #[test]
    fn words_never_break_at_the_width_however_the_text_is_chunked() {
        let text = "The answer explains why the build fails and you can fix it with one line.";
        let whole = wrapped(20, &[text]);
        for line in whole.lines() {
            assert!(line.chars().count() <= 20, "{line:?}");
        }
        assert_eq!(
            whole.split_whitespace().collect::<Vec<_>>(),
            text.split_whitespace().collect::<Vec<_>>()
        );
        let chars: Vec<String> = text.chars().map(String::from).collect();
        let chunks: Vec<&str> = chars.iter().map(String::as_str).collect();
        assert_eq!(wrapped(20, &chunks), whole);
    }

    #[test]
    fn line_ends_are_kept_and_a_word_longer_than_a_line_is_broken() {
        assert_eq!(wrapped(10, &["one\ntwo"]), "one\ntwo");
        assert_eq!(wrapped(10, &["abcdefghijklmno"]), "abcdefghij\nklmno");
        assert_eq!(
            wrapped(10, &["hello ", "abcdefghijkl"]),
            "hello\nabcdefghij\nkl"
        );
    }
}
