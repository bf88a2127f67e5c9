use super::soft_wrapped;

#[test]
fn a_long_line_wraps_and_the_cursor_follows_it() {
    let line = "abcdefghij".repeat(3);
    let (rows, at) = soft_wrapped(std::slice::from_ref(&line), (0, 30), 12);
    let texts: Vec<&str> = rows.iter().map(|(_, text)| text.as_str()).collect();
    assert_eq!(texts, ["abcdefghijab", "cdefghijabcd", "efghij"]);
    assert_eq!(at, (2, 6));
    let (_, at) = soft_wrapped(&[line], (0, 12), 12);
    assert_eq!(at, (1, 0));
    let (rows, at) = soft_wrapped(&["x".repeat(12)], (0, 12), 12);
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!(at, (1, 0));
    let (rows, at) = soft_wrapped(&["one".into(), "two".into()], (1, 1), 12);
    assert_eq!(rows.len(), 2);
    assert_eq!(at, (1, 1));
    // Between words where it can.
    let (rows, at) = soft_wrapped(&["one two three four".into()], (0, 18), 9);
    let texts: Vec<&str> = rows.iter().map(|(_, text)| text.as_str()).collect();
    assert_eq!(texts, ["one two ", "three ", "four"]);
    assert_eq!(at, (2, 4));
}
