//! Property tests of `edit` through the tool: random files (Unicode, LF, CRLF, mixed line
//! endings, a BOM or not) and random edits taken from them. A successful edit changes nothing
//! outside the regions it replaced; a failed edit leaves the file untouched.

use crate::support;

use golato::builtin;
use golato::tool::Tool;
use proptest::prelude::*;
use serde_json::json;
use support::*;

/// Characters files are made of: ASCII, blanks, multi-byte letters and the Unicode quotes,
/// dashes and spaces edit's fuzzy match folds.
const ALPHABET: &[char] = &[
    'a', 'b', 'c', 'x', 'y', ' ', ' ', '\t', '(', ')', ';', '\'', '"', '-', 'é', '日', '🦀',
    '\u{2019}', '\u{201C}', '\u{201D}', '\u{2013}', '\u{00A0}',
];

#[derive(Debug, Clone, Copy)]
enum Endings {
    Lf,
    Crlf,
    Mixed,
}

#[derive(Debug, Clone)]
struct File {
    bom: bool,
    lines: Vec<String>,
    endings: Endings,
    /// For mixed endings: which lines end in CRLF.
    crlf: Vec<bool>,
}

impl File {
    fn text(&self) -> String {
        let mut text = String::new();
        if self.bom {
            text.push('\u{feff}');
        }
        for (index, line) in self.lines.iter().enumerate() {
            text.push_str(line);
            let crlf = match self.endings {
                Endings::Lf => false,
                Endings::Crlf => true,
                Endings::Mixed => self.crlf[index],
            };
            text.push_str(if crlf { "\r\n" } else { "\n" });
        }
        text
    }
}

fn line() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(ALPHABET), 0..24)
        .prop_map(|chars| chars.into_iter().collect())
}

fn file() -> impl Strategy<Value = File> {
    (
        any::<bool>(),
        prop::collection::vec(line(), 1..12),
        prop_oneof![Just(Endings::Lf), Just(Endings::Crlf), Just(Endings::Mixed)],
        prop::collection::vec(any::<bool>(), 12),
    )
        .prop_map(|(bom, lines, endings, crlf)| File {
            bom,
            lines,
            endings,
            crlf,
        })
}

/// Where an edit's `oldText` is taken from: a line, and a char range in it (as fractions, so
/// the strategy does not depend on the file).
#[derive(Debug, Clone)]
struct Pick {
    line: usize,
    from: usize,
    len: usize,
    new_text: String,
}

fn pick() -> impl Strategy<Value = Pick> {
    (0usize..12, 0usize..24, 0usize..10, line()).prop_map(|(line, from, len, new_text)| Pick {
        line,
        from,
        len,
        new_text,
    })
}

/// `oldText` of `pick` in `file`: a substring of one line (never a line break).
fn old_text(file: &File, pick: &Pick) -> String {
    let line = &file.lines[pick.line % file.lines.len()];
    let chars: Vec<char> = line.chars().collect();
    let from = pick.from.min(chars.len());
    let to = (from + pick.len).min(chars.len());
    chars[from..to].iter().collect()
}

fn tools_in(dir: &std::path::Path) -> Vec<Tool> {
    builtin::new(builtin::Config {
        working_directory: dir.into(),
        allowed_tool_names: Some(vec!["edit".into()]),
        ..Default::default()
    })
    .unwrap()
}

/// What the edits should give, when they are exact, unique and apart: each `oldText` replaced
/// where it is. `None` when edit must refuse them.
fn model(original: &str, edits: &[(String, String)]) -> Option<String> {
    let content = original.strip_prefix('\u{feff}').unwrap_or(original);
    let mut regions = Vec::new();
    for (index, (old, new)) in edits.iter().enumerate() {
        if old.is_empty() || old == new || edits[..index].iter().any(|(other, _)| other == old) {
            return None;
        }
        // Occurrences that overlap count too (" x " twice in " x x "), as edit counts them;
        // `match_indices` would skip the second.
        let mut found = content
            .char_indices()
            .map(|(at, _)| at)
            .filter(|at| content[*at..].starts_with(old.as_str()));
        let start = found.next()?;
        if found.next().is_some() {
            return None;
        }
        regions.push((start, start + old.len(), new.as_str()));
    }
    regions.sort();
    if regions.windows(2).any(|pair| pair[1].0 < pair[0].1) {
        return None;
    }
    let mut text = String::new();
    if original.starts_with('\u{feff}') {
        text.push('\u{feff}');
    }
    let mut copied = 0;
    for (start, end, new) in regions {
        text.push_str(&content[copied..start]);
        text.push_str(new);
        copied = end;
    }
    text.push_str(&content[copied..]);
    Some(text)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 192,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Edits taken from within lines: edit does exactly what the model says, byte for byte, or
    /// refuses and leaves the file as it was.
    #[test]
    fn an_edit_changes_exactly_its_regions_or_nothing(
        file in file(),
        picks in prop::collection::vec(pick(), 1..3),
    ) {
        let original = file.text();
        let edits: Vec<(String, String)> = picks
            .iter()
            .map(|pick| (old_text(&file, pick), pick.new_text.clone()))
            .collect();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.txt");
        std::fs::write(&path, &original).unwrap();
        let arguments = json!({
            "path": "f.txt",
            "edits": edits
                .iter()
                .map(|(old, new)| json!({"oldText": old, "newText": new}))
                .collect::<Vec<_>>(),
        });
        let result = call_tool(&tools_in(dir.path()), "edit", &arguments.to_string());
        let after = std::fs::read_to_string(&path).unwrap();
        match model(&original, &edits) {
            Some(expected) => {
                prop_assert!(!result.is_error, "refused: {}", result.text());
                prop_assert_eq!(after, expected);
            }
            None => {
                prop_assert!(result.is_error, "edit should have been refused: {}", result.text());
                prop_assert_eq!(after, original, "a refused edit changed the file");
            }
        }
    }

    /// Any `oldText` (across lines, with line endings of either kind, normalized quotes and
    /// blanks): when edit succeeds, the file is the original with one region replaced by the
    /// new text (in the file's line endings); when it fails, the file is untouched.
    #[test]
    fn a_fuzzy_or_multiline_edit_keeps_every_byte_outside_its_region(
        file in file(),
        first in 0usize..12,
        span in 0usize..4,
        skip in 0usize..8,
        take in 1usize..40,
        fold in any::<bool>(),
        new_text in line(),
    ) {
        let original = file.text();
        // Lines `first ..= first + span`, joined with LF whatever the file has, then cut.
        let lines: Vec<&String> = file.lines.iter().cycle().skip(first % file.lines.len()).take(span + 1).collect();
        let joined: String = lines.iter().map(|line| line.as_str()).collect::<Vec<_>>().join("\n");
        let mut old: String = joined.chars().skip(skip).take(take).collect();
        if fold {
            // What a model typing it would do: ASCII quotes and dashes, plain spaces.
            old = old
                .replace(['\u{2019}'], "'")
                .replace(['\u{201C}', '\u{201D}'], "\"")
                .replace('\u{2013}', "-")
                .replace('\u{00A0}', " ");
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.txt");
        std::fs::write(&path, &original).unwrap();
        let arguments = json!({"path": "f.txt", "edits": [{"oldText": old, "newText": new_text}]});
        let result = call_tool(&tools_in(dir.path()), "edit", &arguments.to_string());
        let after = std::fs::read_to_string(&path).unwrap();
        if result.is_error {
            prop_assert_eq!(after, original, "a refused edit changed the file: {}", result.text());
        } else {
            prop_assert!(
                is_one_replacement(&original, &after, &new_text),
                "not the original with one region replaced by {:?}:\n{:?}\n{:?}",
                new_text, original, after
            );
        }
    }

    /// Issue 21: any stretch of the file copied byte for byte, line endings and all (in a
    /// file of mixed endings, with a BOM or not), that occurs once is found as given and
    /// replaced exactly: `b\nc` in `BOM a\r\nb\nc\r\n` used to be looked for as `b\r\nc`.
    #[test]
    fn an_exact_copy_of_any_stretch_is_found_as_given(
        file in file(),
        from in 0usize..400,
        take in 1usize..60,
        new_text in line(),
    ) {
        let original = file.text();
        let content = original.strip_prefix('\u{feff}').unwrap_or(&original);
        let old: String = content.chars().skip(from % content.chars().count().max(1)).take(take).collect();
        // Once, overlapping occurrences included (`\n\n` occurs twice in `\n\n\n`).
        let occurrences = (0..content.len())
            .filter(|&at| content.is_char_boundary(at) && content[at..].starts_with(old.as_str()))
            .count();
        prop_assume!(!old.is_empty() && old != new_text && occurrences == 1);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.txt");
        std::fs::write(&path, &original).unwrap();
        let arguments = json!({"path": "f.txt", "edits": [{"oldText": old, "newText": new_text}]});
        let result = call_tool(&tools_in(dir.path()), "edit", &arguments.to_string());
        prop_assert!(!result.is_error, "refused: {}", result.text());
        let after = std::fs::read_to_string(&path).unwrap();
        let bom = if original.starts_with('\u{feff}') { "\u{feff}" } else { "" };
        prop_assert_eq!(after, format!("{bom}{}", content.replacen(old.as_str(), &new_text, 1)));
    }
}

/// Whether `after` is `original` with one region (after any BOM) replaced by `new`.
fn is_one_replacement(original: &str, after: &str, new: &str) -> bool {
    let prefix = original
        .bytes()
        .zip(after.bytes())
        .take_while(|(a, b)| a == b)
        .count();
    (0..=prefix).any(|start| {
        after.is_char_boundary(start) && after[start..].starts_with(new) && {
            let rest = &after[start + new.len()..];
            original.len() >= start + rest.len()
                && original.ends_with(rest)
                && original[..start] == after[..start]
        }
    })
}
