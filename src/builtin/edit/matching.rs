//! Where each edit's `old_text` is in the file: exactly once, or else once with whitespace,
//! quotes and dashes folded (bounded in time and work); the edits applied together or not at all.

/// A file's new text and the first line (1-based) that changed.
#[derive(Debug, PartialEq)]
pub(in crate::builtin) struct Edited {
    pub(in crate::builtin) text: String,
    pub(super) first_changed_line: usize,
}

pub(super) const BOM: char = '\u{feff}';

/// Most edits one call takes: matching is linear in the file and the edits together, but the
/// matcher's table grows with their number.
pub(in crate::builtin) const MAX_EDITS: usize = 10_000;

/// Applies every `(old, new)` replacement to `original`, each matched against `original`.
///
/// Each `old` is looked for as given, then (in a file whose first line ends in `\r\n`) with its
/// line endings made the file's, then with whitespace, quotes and dashes normalized; the first
/// way that finds it decides, and it must match exactly once. All edits are looked for together
/// in one pass over the file per way (see [`find_unique`]), so many edits cost what one does.
///
/// # Errors
/// A message naming the failing `edits[i]` and why.
pub(in crate::builtin) fn apply(original: &str, edits: &[(&str, &str)]) -> Result<Edited, String> {
    if edits.is_empty() {
        return Err("edits is empty; give at least one {oldText, newText}.".to_owned());
    }
    if edits.len() > MAX_EDITS {
        return Err(format!(
            "edits has {} entries, more than the {MAX_EDITS} one call takes; split them over several calls, or rewrite the file with write.",
            edits.len()
        ));
    }
    let (bom, content) = match original.strip_prefix(BOM) {
        Some(rest) => (true, rest),
        None => (false, original),
    };
    let crlf = content
        .find('\n')
        .is_some_and(|at| content[..at].ends_with('\r'));
    let convert = |text: &str| {
        let lf = text.replace("\r\n", "\n");
        if crlf {
            lf.replace('\n', "\r\n")
        } else {
            lf
        }
    };
    let converted: Vec<(String, String)> = edits
        .iter()
        .map(|(old, new)| (convert(old), convert(new)))
        .collect();
    let mut first_of: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for (index, (old, new)) in converted.iter().enumerate() {
        if old.is_empty() {
            return Err(format!(
                "edits[{index}].oldText is empty; give the exact text to replace."
            ));
        }
        if old == new {
            return Err(format!(
                "edits[{index}] changes nothing: newText equals oldText."
            ));
        }
        if let Some(first) = first_of.insert(old, index) {
            return Err(format!(
                "edits[{index}] duplicates edits[{first}]: both replace the same oldText."
            ));
        }
    }
    let repeated = |index: usize, count: usize| {
        format!(
            "edits[{index}].oldText occurs {count} times in the file; include more surrounding lines so it matches exactly once."
        )
    };
    let mut regions: Vec<Option<(usize, usize, String)>> = vec![None; edits.len()];
    // As given: also what finds an LF passage in a CRLF file (or the other way round). The new
    // text then takes the line endings of what it replaces.
    let raw: Vec<&str> = edits.iter().map(|(old, _)| *old).collect();
    let scan = find_unique(content, &raw, |_, _, _| true)?;
    if let Some(index) = scan.repeated {
        return Err(repeated(index, occurrences(content, raw[index])));
    }
    for (index, start) in scan.found.iter().enumerate() {
        if let Some(start) = *start {
            let (old, new) = edits[index];
            let lf = new.replace("\r\n", "\n");
            let new = if old.contains("\r\n") {
                lf.replace('\n', "\r\n")
            } else if old.contains('\n') {
                lf
            } else {
                converted[index].1.clone()
            };
            regions[index] = Some((start, start + old.len(), new));
        }
    }
    // With the file's line endings.
    let wanted: Vec<usize> = (0..edits.len())
        .filter(|&index| regions[index].is_none() && converted[index].0 != edits[index].0)
        .collect();
    if !wanted.is_empty() {
        let needles: Vec<&str> = wanted
            .iter()
            .map(|&index| converted[index].0.as_str())
            .collect();
        let scan = find_unique(content, &needles, |_, _, _| true)?;
        if let Some(at) = scan.repeated {
            return Err(repeated(wanted[at], occurrences(content, needles[at])));
        }
        for (at, start) in scan.found.iter().enumerate() {
            if let Some(start) = *start {
                let (old, new) = &converted[wanted[at]];
                regions[wanted[at]] = Some((start, start + old.len(), new.clone()));
            }
        }
    }
    // Normalized.
    let wanted: Vec<usize> = (0..edits.len())
        .filter(|&index| regions[index].is_none())
        .collect();
    if !wanted.is_empty() {
        fuzzy(content, &wanted, &converted, &mut regions, &repeated)?;
    }
    let mut regions: Vec<(usize, usize, usize, String)> = regions
        .into_iter()
        .enumerate()
        .filter_map(|(index, region)| region.map(|(start, end, new)| (start, end, index, new)))
        .collect();
    regions.sort_by_key(|(start, ..)| *start);
    for pair in regions.windows(2) {
        if let [(_, end, earlier, _), (start, _, later, _)] = pair {
            if start < end {
                let (first, second) = ((*earlier).min(*later), (*earlier).max(*later));
                return Err(format!(
                    "edits[{second}] overlaps edits[{first}]; merge them into one edit."
                ));
            }
        }
    }
    let mut text = String::with_capacity(original.len());
    if bom {
        text.push(BOM);
    }
    let mut copied = 0;
    for (start, end, _, new) in &regions {
        text.push_str(&content[copied..*start]);
        text.push_str(new);
        copied = *end;
    }
    text.push_str(&content[copied..]);
    let first_start = regions.first().map_or(0, |(start, ..)| *start);
    let first_changed_line = content[..first_start].matches('\n').count() + 1;
    Ok(Edited {
        text,
        first_changed_line,
    })
}

/// The edits `wanted` found with whitespace, quotes and dashes normalized (mapped back to the
/// original bytes), into `regions`; the first still missing is an error.
pub(super) fn fuzzy(
    content: &str,
    wanted: &[usize],
    converted: &[(String, String)],
    regions: &mut [Option<(usize, usize, String)>],
    repeated: &dyn Fn(usize, usize) -> String,
) -> Result<(), String> {
    let missing = |index: usize| {
        format!(
            "edits[{index}].oldText was not found in the file (nor with whitespace, quotes and dashes normalized); copy it exactly from the file."
        )
    };
    let normalized = Normalized::new(content, true);
    let needles: Vec<Normalized> = wanted
        .iter()
        .map(|&index| Normalized::new(&converted[index].0, false))
        .collect();
    if let Some(at) = needles.iter().position(|needle| needle.text.is_empty()) {
        return Err(missing(wanted[at]));
    }
    // Whitespace ending a needle was dropped as trailing: that holds only where the match ends
    // a line (mid-line, "foo " is not "foo").
    let ends_a_line = |needle: &Normalized, end: usize| {
        !needle.held_at_end
            || matches!(
                normalized.text.as_bytes().get(end),
                None | Some(b'\n' | b'\r')
            )
    };
    let texts: Vec<&str> = needles.iter().map(|needle| needle.text.as_str()).collect();
    let scan = find_unique(&normalized.text, &texts, |at, _, end| {
        ends_a_line(&needles[at], end)
    })?;
    if let Some(at) = scan.repeated {
        let count = normalized
            .text
            .match_indices(texts[at])
            .filter(|(start, _)| ends_a_line(&needles[at], start + texts[at].len()))
            .count();
        return Err(repeated(wanted[at], count));
    }
    for (at, start) in scan.found.iter().enumerate() {
        let index = wanted[at];
        let Some(start) = *start else {
            return Err(missing(index));
        };
        let end = start + texts[at].len();
        let (Some(from), Some(last)) = (
            normalized.source_start(start),
            normalized.source_start(end - 1),
        ) else {
            return Err(missing(index));
        };
        // The match ends where the character its last byte came from ends.
        let to = last + content[last..].chars().next().map_or(0, char::len_utf8);
        regions[index] = Some((from, to, converted[index].1.clone()));
    }
    Ok(())
}

/// Where each needle occurs in a haystack, found in one pass for all of them.
pub(super) struct Scan {
    /// Each needle's only start, or `None` where it does not occur.
    found: Vec<Option<usize>>,
    /// A needle found twice: the pass stopped there, and `found` is incomplete.
    repeated: Option<usize>,
}

/// How many bytes of each needle the multi-pattern automaton holds; the rest is compared where
/// that prefix matches. It keeps the automaton's size bounded by the number of needles, not
/// their length (the file's 64 MiB could all be needles).
pub(super) const PREFIX_BYTES: usize = 64;

/// Bytes compared past prefixes before giving up: needles that share long prefixes with much of
/// the file could otherwise make matching quadratic.
pub(super) const COMPARE_BUDGET_BYTES: usize = 1 << 30;

/// Finds where each of `needles` (none empty) occurs in `haystack`, counting only occurrences
/// `accept(needle, start, end)` takes, and stopping at the first needle found twice.
///
/// One Aho-Corasick pass over the haystack with every needle's first [`PREFIX_BYTES`] (at
/// character boundaries), each prefix match then compared in full: linear in the haystack and
/// the needles, where looking for each needle in turn was their product.
pub(super) fn find_unique(
    haystack: &str,
    needles: &[&str],
    accept: impl Fn(usize, usize, usize) -> bool,
) -> Result<Scan, String> {
    let mut scan = Scan {
        found: vec![None; needles.len()],
        repeated: None,
    };
    let prefix = |needle: &str| -> usize {
        let mut cut = needle.len().min(PREFIX_BYTES);
        while !needle.is_char_boundary(cut) {
            cut -= 1;
        }
        cut
    };
    // Needles sharing a prefix share one pattern of the automaton.
    let mut patterns: Vec<&str> = Vec::new();
    let mut sharing: Vec<Vec<usize>> = Vec::new();
    let mut pattern_of: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for (index, needle) in needles.iter().enumerate() {
        let head = &needle[..prefix(needle)];
        let pattern = *pattern_of.entry(head).or_insert_with(|| {
            patterns.push(head);
            sharing.push(Vec::new());
            patterns.len() - 1
        });
        sharing[pattern].push(index);
    }
    let automaton = aho_corasick::AhoCorasick::builder()
        .match_kind(aho_corasick::MatchKind::Standard)
        .build(&patterns)
        .map_err(|error| format!("the edits could not be matched: {error}"))?;
    let mut compared = 0usize;
    for found in automaton.find_overlapping_iter(haystack) {
        let start = found.start();
        for &index in &sharing[found.pattern().as_usize()] {
            let needle = needles[index];
            compared += needle.len() - found.len();
            if compared > COMPARE_BUDGET_BYTES {
                return Err("the edits are too many and too alike (long shared beginnings that recur all over the file) to match in reasonable time; split them over several calls with more distinct oldText.".to_owned());
            }
            let end = start + needle.len();
            if haystack.as_bytes().get(start..end) != Some(needle.as_bytes())
                || !accept(index, start, end)
            {
                continue;
            }
            if scan.found[index].is_some() {
                scan.repeated = Some(index);
                return Ok(scan);
            }
            scan.found[index] = Some(start);
        }
    }
    Ok(scan)
}

/// How many times `needle` occurs in `haystack`, overlapping ones included (`aa` occurs twice
/// in `aaa`): what makes an `oldText` ambiguous, so what the refusal counts.
pub(super) fn occurrences(haystack: &str, needle: &str) -> usize {
    let step = needle.chars().next().map_or(1, char::len_utf8);
    let (mut count, mut from) = (0, 0);
    while let Some(at) = haystack.get(from..).and_then(|rest| rest.find(needle)) {
        count += 1;
        from += at + step;
    }
    count
}

/// Text with the fuzzy differences folded away, and (for a file's text) for each of its bytes
/// where the character it came from starts in the source.
///
/// Its memory is bounded by the source's size: the folded text (at most as long as the
/// source) and one 4-byte offset per byte, so about 6× the source with the source itself
/// (edit reads at most [`MAX_EDIT_BYTES`]).
pub(super) struct Normalized {
    text: String,
    /// Empty when not asked for, and for a source too long for 32-bit offsets (no fuzzy match
    /// is then mapped back).
    starts: Vec<u32>,
    /// Whether the source ended in spaces or tabs (left out of `text`, as trailing).
    held_at_end: bool,
}

pub(super) fn fold(c: char) -> char {
    match c {
        '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' | '\u{2032}' | '\u{2035}' => '\'',
        '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' | '\u{2033}' | '\u{2036}' => '"',
        '\u{2010}'..='\u{2015}' | '\u{2212}' | '\u{FE58}' | '\u{FE63}' | '\u{FF0D}' => '-',
        '\u{00A0}'
        | '\u{1680}'
        | '\u{2000}'..='\u{200A}'
        | '\u{202F}'
        | '\u{205F}'
        | '\u{3000}' => ' ',
        other => other,
    }
}

pub(super) fn is_blank(c: char) -> bool {
    c == ' ' || c == '\t'
}

impl Normalized {
    fn new(source: &str, map_back: bool) -> Normalized {
        let map_back = map_back && u32::try_from(source.len()).is_ok();
        let mut normalized = Normalized {
            text: String::with_capacity(source.len()),
            starts: Vec::with_capacity(if map_back { source.len() } else { 0 }),
            held_at_end: false,
        };
        // Spaces and tabs are held back (as where their run starts) until something other
        // than a line end follows them, so trailing whitespace never reaches the text.
        let mut held: Option<usize> = None;
        for (at, c) in source.char_indices() {
            let folded = fold(c);
            if is_blank(folded) {
                held.get_or_insert(at);
                continue;
            }
            if let Some(from) = held.take() {
                if folded != '\n' && folded != '\r' {
                    for (offset, blank) in source[from..at].char_indices() {
                        normalized.push(fold(blank), from + offset, map_back);
                    }
                }
            }
            normalized.push(folded, at, map_back);
        }
        normalized.held_at_end = held.is_some();
        normalized
    }

    fn push(&mut self, c: char, from: usize, map_back: bool) {
        self.text.push(c);
        if map_back {
            // Fits: `new` maps back only sources shorter than 4 GiB.
            let from = u32::try_from(from).unwrap_or(u32::MAX);
            self.starts.extend(std::iter::repeat_n(from, c.len_utf8()));
        }
    }

    /// Where the source character behind byte `at` of the text starts.
    fn source_start(&self, at: usize) -> Option<usize> {
        self.starts.get(at).map(|&from| from as usize)
    }
}
