//! An answer as it streams in: each finished markdown block (a paragraph, a list, a closed
//! code block: what a blank line outside a code fence ends) goes to the scrollback as soon as
//! it is whole, rendered as the finished answer would be; the open block is shown in the live
//! area until it is whole too. What was committed is never drawn again.

/// The part of the current message's text the scrollback does not have yet.
#[derive(Debug, Default)]
pub(crate) struct Streaming {
    /// Text streamed in since the last commit.
    pending: String,
    /// The message's text committed so far, in order.
    committed: String,
    /// Reasoning streamed in (its first line goes before the first block).
    pub(crate) reasoning: String,
}

impl Streaming {
    /// Adds streamed text; returns the blocks it finished (markdown), if any.
    pub(crate) fn push(&mut self, text: &str) -> Option<String> {
        self.pending.push_str(text);
        let end = finished_end(&self.pending)?;
        let finished: String = self.pending.drain(..end).collect();
        self.committed.push_str(&finished);
        Some(finished)
    }

    /// Whether some of the message is in the scrollback already.
    pub(crate) fn started(&self) -> bool {
        !self.committed.trim().is_empty()
    }

    /// The block being written, for the live area.
    pub(crate) fn open(&self) -> &str {
        &self.pending
    }

    /// The message's end: what of `whole` (its final text) the scrollback still lacks. When the
    /// stream and the final text disagree (a provider that corrects itself), `None`: the whole
    /// text is shown again rather than a wrong half.
    pub(crate) fn rest<'a>(&self, whole: &'a str) -> Option<&'a str> {
        whole.strip_prefix(self.committed.as_str())
    }
}

/// Where the finished blocks of `text` end: after the last blank line that is outside a code
/// fence and has text after it (a blank line at the very end may still be followed by more of
/// the same list), or `None`.
fn finished_end(text: &str) -> Option<usize> {
    let mut fence: Option<(char, usize)> = None;
    let mut end = None;
    let mut offset = 0;
    let mut blank_at = None;
    for line in text.split_inclusive('\n') {
        let complete = line.ends_with('\n');
        let trimmed = line.trim_start_matches(' ');
        let indent = line.len() - trimmed.len();
        if indent < 4 {
            if let Some(mark) = fence_mark(trimmed) {
                match fence {
                    None => fence = Some(mark),
                    Some((c, n))
                        if mark.0 == c && mark.1 >= n && trimmed.trim().chars().all(|x| x == c) =>
                    {
                        fence = None
                    }
                    Some(_) => {}
                }
            }
        }
        if fence.is_none() && complete && line.trim().is_empty() {
            blank_at = Some(offset + line.len());
        } else if !line.trim().is_empty() {
            // Text after a blank line: the blocks before it are finished.
            if let Some(at) = blank_at.take() {
                end = Some(at);
            }
        }
        offset += line.len();
    }
    end
}

/// A code fence's character and length (three or more backticks or tildes), if `line` opens or
/// closes one.
fn fence_mark(line: &str) -> Option<(char, usize)> {
    let c = line.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let n = line.chars().take_while(|x| *x == c).count();
    (n >= 3).then_some((c, n))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pushed(chunks: &[&str]) -> (Vec<String>, Streaming) {
        let mut streaming = Streaming::default();
        let committed = chunks
            .iter()
            .filter_map(|chunk| streaming.push(chunk))
            .collect();
        (committed, streaming)
    }

    #[test]
    fn a_paragraph_is_committed_once_the_next_one_begins() {
        let (committed, streaming) = pushed(&["First para", "graph.\n", "\n", "Sec", "ond"]);
        assert_eq!(committed, ["First paragraph.\n\n"]);
        assert_eq!(streaming.open(), "Second");
        assert_eq!(
            streaming.rest("First paragraph.\n\nSecond one."),
            Some("Second one.")
        );
    }

    #[test]
    fn blank_lines_inside_a_code_fence_finish_nothing() {
        let text = "Look:\n\n```rust\nfn a() {}\n\nfn b() {}\n```\n\nDone";
        let (committed, streaming) = pushed(&[text]);
        assert_eq!(
            committed.concat(),
            "Look:\n\n```rust\nfn a() {}\n\nfn b() {}\n```\n\n"
        );
        assert_eq!(streaming.open(), "Done");
        // Streamed one character at a time, the same blocks are committed.
        let chars: Vec<String> = text.chars().map(String::from).collect();
        let chunks: Vec<&str> = chars.iter().map(String::as_str).collect();
        let (committed, _) = pushed(&chunks);
        assert_eq!(
            committed.concat(),
            "Look:\n\n```rust\nfn a() {}\n\nfn b() {}\n```\n\n"
        );
    }

    #[test]
    fn a_fence_closed_by_a_shorter_or_other_mark_stays_open() {
        let (committed, _) = pushed(&["````\na\n```\n\nstill code\n\n"]);
        assert!(committed.is_empty(), "{committed:?}");
    }

    #[test]
    fn a_final_text_that_disagrees_with_the_stream_is_shown_whole() {
        let (_, streaming) = pushed(&["One.\n\nTwo"]);
        assert_eq!(streaming.rest("Other.\n\nTwo"), None);
        assert!(streaming.started());
    }
}
