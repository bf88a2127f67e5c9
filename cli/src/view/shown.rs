//! Text from outside golato (a model's answer, a tool's output, a call's name, a provider's
//! error, a saved prompt) as a terminal view shows it: control characters made visible, so
//! none reaches the terminal as a command. An escape sequence could otherwise write the
//! clipboard (OSC 52), set the title, clear the screen, hide a link behind text (OSC 8), query
//! the terminal (DCS) or rewrite a question being asked. `--json` output stays exact.

use std::borrow::Cow;

/// `text` with every control character but newline and tab replaced by a visible form:
/// `^[` for escape and the caret form for the rest of C0, `^?` for delete, `<U+009B>` for the
/// C1 controls (which some terminals obey like escape sequences).
///
/// ```ignore
/// assert_eq!(visible("a\u{1b}]52;c;eA==\u{7}b"), "a^[]52;c;eA==^Gb");
/// ```
pub(crate) fn visible(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_hidden_control) {
        return Cow::Borrowed(text);
    }
    let mut shown = String::with_capacity(text.len() + 8);
    for character in text.chars() {
        match character {
            control if (control as u32) < 0x20 && is_hidden_control(control) => {
                shown.push('^');
                shown.push(char::from(b'@' + control as u8));
            }
            '\u{7f}' => shown.push_str("^?"),
            control if is_hidden_control(control) => {
                shown.push_str(&format!("<U+{:04X}>", control as u32));
            }
            other => shown.push(other),
        }
    }
    Cow::Owned(shown)
}

/// Whether `character` would act on a terminal rather than show: C0 but newline and tab,
/// delete, C1.
fn is_hidden_control(character: char) -> bool {
    matches!(character, '\u{0}'..='\u{8}' | '\u{b}'..='\u{1f}' | '\u{7f}'..='\u{9f}')
}

/// The civil date (year, month, day) of a day count since 1970-01-01 (Howard Hinnant's
/// algorithm).
fn civil(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

/// Seconds since the epoch as a UTC date, `YYYY-MM-DD`.
/// The most characters of a path or an argument an error text echoes.
pub(crate) const ECHOED_CHARS: usize = 2_000;

/// `text` as an error echoes it: whole up to [`ECHOED_CHARS`] characters, else cut there with
/// its length (a 65 KB `cwd` was echoed whole to the client).
pub(crate) fn echoed(text: &str) -> String {
    cut(text, ECHOED_CHARS)
}

/// `text` whole up to `chars` characters, else cut there with its length.
pub(crate) fn cut(text: &str, chars: usize) -> String {
    match text.char_indices().nth(chars) {
        Some((at, _)) => format!("{}… ({} bytes in all)", &text[..at], text.len()),
        None => text.to_owned(),
    }
}

pub(crate) fn utc_date(seconds: u64) -> String {
    let (year, month, day) = civil((seconds / 86_400) as i64);
    format!("{year:04}-{month:02}-{day:02}")
}

/// Seconds since the epoch as an RFC 3339 UTC time.
pub(crate) fn utc_time(seconds: u64) -> String {
    let (hour, minute, second) = (seconds % 86_400 / 3600, seconds % 3600 / 60, seconds % 60);
    format!("{}T{hour:02}:{minute:02}:{second:02}Z", utc_date(seconds))
}

/// How long ago, in the largest unit that is at least one: `42s ago`, `5m ago`, `3h ago`,
/// `2d ago`.
pub(crate) fn ago(seconds: u64) -> String {
    match seconds {
        0..60 => format!("{seconds}s ago"),
        60..3600 => format!("{}m ago", seconds / 60),
        3600..86_400 => format!("{}h ago", seconds / 3600),
        _ => format!("{}d ago", seconds / 86_400),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;
    use proptest::prelude::*;

    #[test]
    fn escape_sequences_are_shown_not_obeyed() {
        assert_eq!(visible("plain\ttext\n"), "plain\ttext\n");
        assert_eq!(visible("a\u{1b}]52;c;eA==\u{7}b"), "a^[]52;c;eA==^Gb");
        assert_eq!(
            visible("\u{1b}[2J\r\u{9b}31m\u{7f}"),
            "^[[2J^M<U+009B>31m^?"
        );
    }

    proptest! {
        /// Whatever comes in, nothing but newline and tab among the controls goes out, and
        /// text without controls is unchanged.
        #[test]
        fn no_control_survives(text in any::<String>()) {
            let shown = visible(&text);
            prop_assert!(!shown.chars().any(is_hidden_control));
            if !text.chars().any(is_hidden_control) {
                prop_assert_eq!(shown.as_ref(), text.as_str());
            }
        }
    }
}

/// A size in bytes for a person: "512 B", "3.4 KiB", "12.0 MiB", "1.5 GiB".
pub(crate) fn bytes(n: u64) -> String {
    const UNITS: [&str; 3] = ["KiB", "MiB", "GiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut size = n as f64 / 1024.0;
    let mut unit = 0;
    while size >= 1024.0 && unit + 1 < UNITS.len() {
        size /= 1024.0;
        unit += 1;
    }
    format!("{size:.1} {}", UNITS[unit])
}

/// `n` things in words: "1 turn", "2 turns", "0 turns".
pub(crate) fn count(n: impl Into<u64>, thing: &str) -> String {
    let n = n.into();
    match n {
        1 => format!("1 {thing}"),
        _ => format!("{n} {thing}s"),
    }
}

#[cfg(test)]
mod bytes_tests {
    #[test]
    fn sizes_read_in_the_unit_that_fits() {
        assert_eq!(super::bytes(0), "0 B");
        assert_eq!(super::bytes(1023), "1023 B");
        assert_eq!(super::bytes(1536), "1.5 KiB");
        assert_eq!(super::bytes(10 * 1024 * 1024), "10.0 MiB");
        assert_eq!(super::bytes(3 << 40), "3072.0 GiB");
    }
}

#[cfg(test)]
mod count_tests {
    #[test]
    fn one_is_singular_and_every_other_number_plural() {
        assert_eq!(super::count(1u64, "turn"), "1 turn");
        assert_eq!(super::count(0u64, "tool call"), "0 tool calls");
        assert_eq!(super::count(2u64, "error result"), "2 error results");
    }
}

#[cfg(test)]
mod time_tests {
    use super::*;

    #[test]
    fn times_are_utc_civil_dates() {
        assert_eq!(utc_time(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc_time(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(utc_date(1_796_414_400), "2026-12-04");
    }
}
