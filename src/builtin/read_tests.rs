#![allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]

use super::*;

fn window(text: &str, start: usize, max_lines: usize, max_bytes: usize) -> Window {
    // A tiny buffer, so lines cross buffer boundaries.
    let mut reader = BufReader::with_capacity(3, text.as_bytes());
    scan(
        &mut reader,
        start,
        &limits(max_lines, max_bytes),
        &CancellationToken::new(),
    )
    .unwrap()
}

fn limits(max_lines: usize, max_bytes: usize) -> Limits {
    Limits {
        max_lines,
        max_bytes,
        count_beyond: u64::MAX,
    }
}

fn lines(text: &[&str]) -> Vec<String> {
    text.iter().map(|line| (*line).to_owned()).collect()
}

#[test]
fn counts_lines_with_or_without_a_final_newline() {
    assert_eq!(window("", 1, 10, 100).total_lines, 0);
    assert_eq!(window("a", 1, 10, 100).total_lines, 1);
    assert_eq!(window("a\n", 1, 10, 100).total_lines, 1);
    assert_eq!(window("a\n\nb", 1, 10, 100).lines, lines(&["a", "", "b"]));
}

#[test]
fn keeps_the_window_from_the_offset() {
    let w = window("one\ntwo\nthree\nfour\n", 2, 2, 100);
    assert_eq!(w.lines, lines(&["two", "three"]));
    assert_eq!(w.total_lines, 4);
    assert!(!w.stopped_by_bytes);
}

#[test]
fn stops_at_the_byte_limit_on_a_whole_line() {
    let w = window("aaaa\nbbbb\ncccc\n", 1, 10, 9);
    assert_eq!(w.lines, lines(&["aaaa", "bbbb"]));
    assert!(w.stopped_by_bytes);
    assert_eq!(w.total_lines, 3);
}

#[test]
fn reports_a_first_line_over_the_limit_without_keeping_it() {
    let long = "x".repeat(50);
    let w = window(&format!("{long}\nshort\n"), 1, 10, 20);
    assert_eq!(w.first_line_too_long, Some(50));
    assert!(w.lines.is_empty());
}

#[test]
fn strips_carriage_returns_and_replaces_invalid_utf8() {
    let mut reader = BufReader::new(&b"crlf\r\nbad \xff byte\n"[..]);
    let w = scan(&mut reader, 1, &limits(10, 100), &CancellationToken::new()).unwrap();
    assert_eq!(w.lines, lines(&["crlf", "bad \u{fffd} byte"]));
}

#[test]
fn notices_say_how_to_continue() {
    let text: String = (1..=10).map(|i| format!("line {i}\n")).collect();
    let w = window(&text, 3, 2, 1000);
    assert_eq!(
        render(&w, 3, Some(2), "f.txt").unwrap(),
        "line 3\nline 4\n\n[6 more lines in file. Use offset=5 to continue.]"
    );
    let w = window(&text, 1, 3, 1000);
    assert_eq!(
        render(&w, 1, None, "f.txt").unwrap(),
        "line 1\nline 2\nline 3\n\n[Showing lines 1-3 of 10. Use offset=4 to continue.]"
    );
    let w = window(&text, 9, 2, 1000);
    assert_eq!(render(&w, 9, Some(2), "f.txt").unwrap(), "line 9\nline 10");
    let w = window(&text, 11, 2, 1000);
    assert_eq!(
        render(&w, 11, None, "f.txt").unwrap_err().to_string(),
        "Offset 11 is beyond end of file (10 lines total)"
    );
}

#[test]
fn recognizes_images_by_content() {
    assert_eq!(image_type(b"\x89PNG\r\n\x1a\n...."), Some("image/png"));
    assert_eq!(image_type(&[0xFF, 0xD8, 0xFF, 0xE0]), Some("image/jpeg"));
    assert_eq!(image_type(b"GIF89a..."), Some("image/gif"));
    assert_eq!(image_type(b"RIFF\0\0\0\0WEBPVP8 "), Some("image/webp"));
    assert_eq!(image_type(b"plain text"), None);
}

/// A text file that never ends.
fn endless() -> impl BufRead {
    BufReader::new(io::repeat(b'y').take(u64::MAX).chain(io::empty()))
}

fn endless_lines() -> impl BufRead {
    struct Lines;
    impl Read for Lines {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            for (at, byte) in buf.iter_mut().enumerate() {
                *byte = if at % 4 == 3 { b'\n' } else { b'y' };
            }
            Ok(buf.len() / 4 * 4)
        }
    }
    BufReader::with_capacity(4096, Lines)
}

#[test]
fn a_file_that_never_ends_is_counted_only_so_far_past_the_window() {
    let limits = Limits {
        max_lines: 2,
        max_bytes: 100,
        count_beyond: 1024 * 1024,
    };
    let w = scan(&mut endless_lines(), 3, &limits, &CancellationToken::new()).unwrap();
    assert_eq!(w.lines, lines(&["yyy", "yyy"]));
    assert!(w.more_uncounted);
    assert!(w.total_lines >= 4 + 1024 * 1024 / 4, "{}", w.total_lines);
    let shown = render(&w, 3, None, "f.txt").unwrap();
    assert!(
        shown.starts_with("yyy\nyyy\n\n[Showing lines 3-4 of more than "),
        "{shown}"
    );
    assert_eq!(
        render(&w, 3, Some(2), "f.txt").unwrap().lines().last(),
        Some(
            format!(
                "[More than {} more lines in file. Use offset=5 to continue.]",
                w.total_lines - 4
            )
            .as_str()
        )
    );
}

#[test]
fn a_cancelled_read_stops_even_on_a_file_that_never_ends() {
    let cancel = CancellationToken::new();
    cancel.cancel();
    // One endless line: the window never completes, so only cancellation can stop it.
    let error = scan(&mut endless(), 1, &limits(10, 100), &cancel).unwrap_err();
    assert_eq!(error.kind(), io::ErrorKind::Interrupted);
}

#[test]
fn a_line_that_never_ends_is_read_only_so_far() {
    let limits = Limits {
        max_lines: 10,
        max_bytes: 100,
        count_beyond: 1024 * 1024,
    };
    let w = scan(&mut endless(), 1, &limits, &CancellationToken::new()).unwrap();
    assert!(w.more_uncounted);
    assert!(w.lines.is_empty());
    let shown = render(&w, 1, None, "f.txt").unwrap();
    assert!(
        shown.starts_with("[Line 1 is over 1.0MB, exceeds 50.0KB limit."),
        "{shown}"
    );
}
