//! An incremental Server-Sent Events decoder: bytes in, events out, however the bytes are cut.

/// One server-sent event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct SseEvent {
    /// The `event:` field, if any.
    pub event: Option<String>,
    /// The `data:` lines, joined with `\n`.
    pub data: String,
}

/// Decodes a `text/event-stream` body fed in arbitrary pieces.
///
/// Lines end with `\n` or `\r\n`; a blank line ends an event; `:` starts a comment (a keep-alive);
/// unknown fields are ignored; the last event counts even without a trailing blank line (call
/// [`SseDecoder::finish`]). Text is decoded per whole line, so a UTF-8 character cut between two
/// pieces comes out whole.
#[derive(Debug)]
pub(crate) struct SseDecoder {
    line: Vec<u8>,
    event: Option<String>,
    data: Option<String>,
    limit: usize,
    overflowed: bool,
}

impl Default for SseDecoder {
    fn default() -> Self {
        SseDecoder::with_limit(usize::MAX)
    }
}

impl SseDecoder {
    /// A decoder that holds at most `limit` bytes of one event (its unfinished line and its
    /// data so far); past that it drops what it holds and [`overflowed`](Self::overflowed)
    /// says so, instead of growing without bound (a line that never ends).
    pub(crate) fn with_limit(limit: usize) -> Self {
        SseDecoder {
            line: Vec::new(),
            event: None,
            data: None,
            limit,
            overflowed: false,
        }
    }

    /// Whether an event outgrew the limit given to [`with_limit`](Self::with_limit); the
    /// decoder then yields nothing more.
    pub(crate) fn overflowed(&self) -> bool {
        self.overflowed
    }

    /// Feeds the next piece of the body; returns the events it completed.
    pub(crate) fn feed(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        let mut events = Vec::new();
        let mut rest = bytes;
        while let Some(at) = memchr::memchr(b'\n', rest) {
            if self.overflowed {
                return events;
            }
            self.line.extend_from_slice(&rest[..at]);
            rest = &rest[at + 1..];
            let line = std::mem::take(&mut self.line);
            events.extend(self.on_line(&line));
            self.check_limit(0);
        }
        self.check_limit(rest.len());
        if !self.overflowed {
            self.line.extend_from_slice(rest);
        }
        events
    }

    /// Drops everything held when the current event (with `more` bytes of its line to come)
    /// would outgrow the limit.
    fn check_limit(&mut self, more: usize) {
        let held = self.line.len() + more + self.data.as_ref().map_or(0, String::len);
        if held > self.limit {
            self.overflowed = true;
            self.line = Vec::new();
            self.data = None;
            self.event = None;
        }
    }

    /// Ends the body: returns the last event if it was not closed by a blank line.
    pub(crate) fn finish(&mut self) -> Option<SseEvent> {
        if self.overflowed {
            return None;
        }
        let line = std::mem::take(&mut self.line);
        let from_line = if line.is_empty() {
            None
        } else {
            self.on_line(&line)
        };
        // Bytes that are not UTF-8 become U+FFFD, three bytes each: the data can outgrow the
        // line it came from.
        self.check_limit(0);
        if self.overflowed {
            return None;
        }
        from_line.or_else(|| self.dispatch())
    }

    fn on_line(&mut self, line: &[u8]) -> Option<SseEvent> {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            return self.dispatch();
        }
        if line.starts_with(b":") {
            return None;
        }
        let text = String::from_utf8_lossy(line);
        let (field, value) = match text.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (text.as_ref(), ""),
        };
        match field {
            "event" => self.event = Some(value.to_owned()),
            "data" => match &mut self.data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(value);
                }
                None => self.data = Some(value.to_owned()),
            },
            _ => {}
        }
        None
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        let event = self.event.take();
        self.data.take().map(|data| SseEvent { event, data })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use proptest::prelude::*;

    #[test]
    fn an_event_cut_between_pieces_and_a_last_event_without_a_blank_line() {
        let mut decoder = SseDecoder::default();
        let mut events = decoder.feed(b"event: ping\ndata: {\"a\":");
        events.extend(decoder.feed(b"1}\n\ndata: last"));
        events.extend(decoder.finish());
        assert_eq!(events.len(), 2);
        assert_eq!(events[0].data, "{\"a\":1}");
        assert_eq!(events[1].data, "last");
    }

    #[test]
    fn an_event_past_the_limit_is_dropped_and_said_so() {
        let mut decoder = SseDecoder::with_limit(8);
        assert!(decoder.feed(b"data: far more than eight bytes").is_empty());
        assert!(decoder.overflowed());
    }

    /// What a body is made of: data lines, comments, blank lines, lines without end.
    fn piece() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            "[a-z]{0,40}".prop_map(|text| format!("data: {text}\n").into_bytes()),
            (0usize..20).prop_map(|n| [b"data: ".as_slice(), &vec![0xe6; n], b"\n"].concat()),
            Just(b": ping\n".to_vec()),
            Just(b"\n".to_vec()),
            Just(b"\r\n".to_vec()),
            (1usize..200).prop_map(|n| vec![b'x'; n]),
        ]
    }

    #[test]
    fn bytes_that_are_not_utf8_cannot_make_the_last_event_outgrow_the_limit() {
        // Found by the sse_limit fuzz target: a last line without a newline, whose bytes that
        // are not UTF-8 became three-byte U+FFFD each, came out larger than the limit.
        let mut body = b"data:".to_vec();
        body.extend(std::iter::repeat_n(0xe6u8, 40));
        let mut decoder = SseDecoder::with_limit(64);
        assert!(decoder.feed(&body).is_empty());
        assert_eq!(decoder.finish(), None);
        assert!(decoder.overflowed());
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

        /// Issue 21: however a body is cut, a decoder with a limit never yields an event larger
        /// than it, and says it overflowed exactly when an event outgrew it.
        #[test]
        fn an_event_never_outgrows_the_limit(
            pieces in prop::collection::vec(piece(), 0..40),
            cuts in prop::collection::vec(1usize..64, 1..8),
            limit in 1usize..120,
        ) {
            let body: Vec<u8> = pieces.concat();
            let mut decoder = SseDecoder::with_limit(limit);
            let mut unbounded = SseDecoder::default();
            let mut events = Vec::new();
            let mut at = 0;
            for cut in cuts.iter().cycle() {
                if at >= body.len() {
                    break;
                }
                let end = (at + cut).min(body.len());
                events.extend(decoder.feed(&body[at..end]));
                at = end;
            }
            events.extend(decoder.finish());
            let mut all = unbounded.feed(&body);
            all.extend(unbounded.finish());
            for event in &events {
                prop_assert!(event.data.len() <= limit);
            }
            if !decoder.overflowed() {
                // Nothing was dropped: the same events as without a limit.
                prop_assert_eq!(&events, &all);
            }
        }
    }
}
