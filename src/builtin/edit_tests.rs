#![allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]

use super::matching::MAX_EDITS;
use super::*;

fn edited(original: &str, edits: &[(&str, &str)]) -> String {
    apply(original, edits).unwrap().text
}

fn failure(original: &str, edits: &[(&str, &str)]) -> String {
    apply(original, edits).unwrap_err()
}

#[test]
fn replaces_several_regions_matched_against_the_original() {
    let original = "alpha\nbeta\ngamma\n";
    // The second edit's oldText only exists in the original, not after the first edit.
    let result = apply(original, &[("gamma", "GAMMA beta"), ("beta", "BETA")]).unwrap();
    assert_eq!(result.text, "alpha\nBETA\nGAMMA beta\n");
    assert_eq!(result.first_changed_line, 2);
}

#[test]
fn rejects_bad_edits_naming_them() {
    let original = "one two two\nthree\n";
    assert!(failure(original, &[]).contains("edits is empty"));
    assert!(failure(original, &[("", "x")]).contains("edits[0].oldText is empty"));
    assert!(failure(original, &[("one", "one")]).contains("edits[0] changes nothing"));
    assert!(failure(original, &[("two", "2")]).contains("edits[0].oldText occurs 2 times"));
    assert!(failure(original, &[("one", "1"), ("four", "4")])
        .contains("edits[1].oldText was not found"));
    assert!(failure(original, &[("three", "3"), ("three", "III")])
        .contains("edits[1] duplicates edits[0]"));
    assert!(failure(original, &[("one two", "x"), ("two two", "y")])
        .contains("edits[1] overlaps edits[0]"));
}

#[test]
fn fuzzy_matching_tolerates_trailing_whitespace_quotes_dashes_and_spaces() {
    let original = "let s = \u{201C}hi\u{201D};   \nx \u{2014} y\u{00A0}z\n";
    assert_eq!(
        edited(original, &[("let s = \"hi\";\nx - y z", "replaced")]),
        "replaced\n",
    );
    // Only the matched region changes: the trailing spaces after a match stay.
    assert_eq!(
        edited("keep  \nnext\n", &[("keep", "kept")]),
        "kept  \nnext\n"
    );
    assert_eq!(
        edited("a \u{2018}q\u{2019} b\n", &[("'q'", "Q")]),
        "a Q b\n"
    );
}

#[test]
fn fuzzy_uniqueness_is_judged_in_the_normalized_text() {
    let original = "x \u{2013} y\nx \u{2014} y\n";
    assert!(failure(original, &[("x - y", "z")]).contains("occurs 2 times"));
}

#[test]
fn keeps_the_bom_and_the_first_newline_convention() {
    let original = "\u{feff}first\r\nsecond\r\nthird\r\n";
    let result = edited(original, &[("first\nsecond", "1\n2")]);
    assert_eq!(result, "\u{feff}1\r\n2\r\nthird\r\n");
    let lf = edited("a\nb\n", &[("a\r\nb", "c\r\nd")]);
    assert_eq!(lf, "c\nd\n");
}

#[test]
fn bytes_outside_the_region_stay_exactly_as_they_were() {
    let original = "  indented\t\n\u{201C}quoted\u{201D}\n trailing \n";
    let result = edited(original, &[("\"quoted\"", "plain")]);
    assert_eq!(result, "  indented\t\nplain\n trailing \n");
}

#[test]
fn trailing_whitespace_is_ignored_only_before_a_line_end() {
    // Mid-line, "foo " is not "foo".
    assert!(failure("foobar\n", &[("foo ", "X")]).contains("not found"));
    assert!(failure("say foo\u{2014}bar\n", &[("foo\u{2013} ", "X")]).contains("not found"));
    // Before a line end (or the end of the file) it may be.
    assert_eq!(edited("foo\nbar\n", &[("foo  ", "X")]), "X\nbar\n");
    assert_eq!(edited("bar\nfoo", &[("foo\t", "X")]), "bar\nX");
}

/// Rebuilds both sides of a unified diff from its lines (context, removed, added).
fn sides_of(diff: &str) -> (String, String) {
    let (mut old, mut new) = (String::new(), String::new());
    for line in diff.split_inclusive('\n').skip(2) {
        match line.as_bytes().first() {
            Some(b' ') => {
                old.push_str(&line[1..]);
                new.push_str(&line[1..]);
            }
            Some(b'-') => old.push_str(&line[1..]),
            Some(b'+') => new.push_str(&line[1..]),
            _ => {}
        }
    }
    (old, new)
}

#[test]
fn a_diff_out_of_time_is_still_a_correct_diff() {
    let original: String = (0..2_000).map(|i| format!("line a{i}\n")).collect();
    let text: String = (0..2_000)
        .map(|i| {
            if i % 3 == 0 {
                format!("line a{i}\n")
            } else {
                format!("other b{i}\n")
            }
        })
        .collect();
    for limit in [Duration::ZERO, Duration::from_secs(60)] {
        let applied = Applied {
            shown: "f.txt".into(),
            replaced: 1,
            original: original.clone(),
            edited: Edited {
                text: text.clone(),
                first_changed_line: 2,
            },
        };
        let report = applied.report(limit);
        let diff = report.details.as_ref().unwrap()["diff"]
            .as_str()
            .unwrap()
            .to_owned();
        // Single hunk: the whole file is within the context, so both sides come back whole.
        assert_eq!(
            sides_of(&diff),
            (original.clone(), text.clone()),
            "{limit:?}"
        );
    }
}

#[test]
fn fuzzy_matches_map_back_to_whole_characters() {
    // Curly quotes (3 bytes) and a no-break space (2 bytes) folded, the match mapped back to
    // the original bytes, the replacement ending after the last multi-byte character.
    let original = "say \u{201C}hi\u{00A0}there\u{201D} now\n";
    assert_eq!(
        edited(original, &[("\"hi there\"", "'yo'")]),
        "say 'yo' now\n"
    );
    // Blank runs held back mid-line are kept as they were.
    assert_eq!(edited("a \t b\u{2019}\n", &[("a \t b'", "x")]), "x\n");
}

#[test]
fn an_exact_match_is_found_as_given_in_a_file_of_mixed_line_endings() {
    // Issue 21: the first line ends in CRLF, so oldText used to be looked for with CRLF only.
    let original = "\u{feff}a\r\nb\nc\r\nd\n";
    assert_eq!(
        edited(original, &[("b\nc", "B\nC")]),
        "\u{feff}a\r\nB\nC\r\nd\n"
    );
    // And the other way round: a CRLF passage in a file whose first line ends in LF.
    assert_eq!(
        edited("a\nb\r\nc\n", &[("b\r\nc", "B\r\nC")]),
        "a\nB\r\nC\n"
    );
    // An oldText without line endings in a CRLF file still gets CRLF in its newText.
    assert_eq!(edited("a\r\nb\r\n", &[("b", "x\ny")]), "a\r\nx\r\ny\r\n");
}

#[test]
fn many_edits_are_matched_together_and_checked_like_one() {
    let lines: Vec<String> = (0..40_000).map(|n| format!("line {n:05} here")).collect();
    let original = lines.join("\n") + "\n";
    let olds: Vec<String> = (0..40_000)
        .step_by(4)
        .map(|n| format!("line {n:05} here"))
        .collect();
    let news: Vec<String> = olds.iter().map(|old| old.to_uppercase()).collect();
    let edits: Vec<(&str, &str)> = olds
        .iter()
        .zip(&news)
        .map(|(old, new)| (old.as_str(), new.as_str()))
        .collect();
    let text = edited(&original, &edits);
    assert_eq!(text.matches("LINE").count(), 10_000);
    assert!(text.starts_with("LINE 00000 HERE\nline 00001 here\n"));
    // One missing among them is named.
    let mut broken = edits.clone();
    broken[7_000] = ("line 99999 here", "x");
    assert!(failure(&original, &broken).contains("edits[7000].oldText was not found"));
    // A repeated one is counted.
    let mut repeated = edits[..5].to_vec();
    repeated.push(("here\n", "x"));
    assert!(failure(&original, &repeated).contains("edits[5].oldText occurs 40000 times"));
    // More than the cap is refused before any matching.
    let too_many: Vec<(&str, &str)> = vec![("a", "b"); MAX_EDITS + 1];
    assert!(failure(&original, &too_many).contains("more than the 10000"));
}

#[test]
fn needles_sharing_a_long_prefix_are_told_apart() {
    let head = "x".repeat(100);
    let original = format!("{head}1\n{head}2\n{head}3\n");
    let (one, two) = (format!("{head}1"), format!("{head}2"));
    assert_eq!(
        edited(&original, &[(&one, "one"), (&two, "two")]),
        format!("one\ntwo\n{head}3\n")
    );
}

#[test]
fn an_old_text_overlapping_itself_is_ambiguous_and_the_refusal_counts_both() {
    let error = apply("\n\n\n", &[("\n\n", "x")]).err().unwrap_or_default();
    assert!(error.contains("occurs 2 times"), "{error}");
}
