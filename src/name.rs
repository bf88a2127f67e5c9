//! Plain names: IDs that name the same thing on disk and in a URL, whoever spells them
//! (session IDs, durable run IDs).

/// Why `id` is not a plain name, or `None` when it is. A plain name is at most `max` bytes of
/// ASCII letters, digits, `-`, `_`, `.` and the characters of `extra`, and does not start with
/// `.` (so it is never a dot segment a URL collapses, nor a hidden file). Whitespace and
/// control characters are refused: servers and proxies on the way fold or drop them, so two
/// names would become one.
///
/// ```
/// use golato::name::why_not_plain;
/// assert_eq!(why_not_plain("run-18c3f.2a", 128, &[]), None);
/// assert_eq!(why_not_plain("a:b", 128, &[':']), None);
/// assert!(why_not_plain("..", 128, &[]).unwrap().contains("dot segment"));
/// assert!(why_not_plain("tab\tid", 128, &[]).unwrap().contains("\\t"));
/// ```
pub fn why_not_plain(id: &str, max: usize, extra: &[char]) -> Option<String> {
    if id.is_empty() {
        return Some("it is empty".to_owned());
    }
    if id.starts_with('.') {
        return Some(
            "it starts with '.' (a dot segment in a URL, a hidden file on disk)".to_owned(),
        );
    }
    if id.len() > max {
        return Some(format!("it is {} bytes long, more than {max}", id.len()));
    }
    id.chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') || extra.contains(c)))
        .map(|c| format!("it holds {c:?}"))
}

/// `id` as an error message shows it: quoted, escaped, its first 40 characters.
///
/// ```
/// assert_eq!(golato::name::shown("a\nb"), "\"a\\nb\"");
/// ```
pub fn shown(id: &str) -> String {
    let cut: String = id.chars().take(40).collect();
    let more = if id.chars().count() > 40 { "…" } else { "" };
    format!("\"{}{more}\"", cut.escape_debug())
}
