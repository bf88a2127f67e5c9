//! The value of one shell word as bash passes it to a program: quotes removed, escapes
//! applied. A word whose value depends on the run (`$x`, `$(…)`, `{a,b}`) keeps its text as
//! written and is not `known`: a deny pattern still sees it, an allow never trusts it.

use tree_sitter::Node;

/// One word of a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Word {
    /// The value (or, when not `known`, the text as written).
    pub(super) text: String,
    /// Whether `text` is exactly what bash passes, whatever the run.
    pub(super) known: bool,
    /// Whether bash may expand it into file names (an unquoted `*`, `?` or `[`).
    pub(super) globbed: bool,
}

/// The text of `node` in `line`.
pub(super) fn source<'a>(node: Node<'_>, line: &'a str) -> &'a str {
    line.get(node.byte_range()).unwrap_or_default()
}

/// The value of the argument (or command name) `node`.
pub(super) fn value(node: Node<'_>, line: &str) -> Word {
    let written = source(node, line);
    let unknown = || Word {
        text: written.to_owned(),
        known: false,
        globbed: false,
    };
    match node.kind() {
        "command_name" => match node.named_child(0) {
            Some(inner) => value(inner, line),
            None => unknown(),
        },
        "word" => Word {
            text: unescape_unquoted(written),
            known: !brace_expanded(written),
            globbed: has_glob(written),
        },
        "number" => Word {
            text: written.to_owned(),
            known: true,
            globbed: false,
        },
        "raw_string" => Word {
            text: written
                .strip_prefix('\'')
                .and_then(|rest| rest.strip_suffix('\''))
                .unwrap_or(written)
                .to_owned(),
            known: true,
            globbed: false,
        },
        "string" => double_quoted(node, line),
        "ansi_c_string" => Word {
            // Decoded so a deny pattern sees `rm` in `$'\x72m'`; never trusted by an allow
            // (the desync came from exactly this quoting).
            text: ansi_c(
                written
                    .strip_prefix("$'")
                    .and_then(|rest| rest.strip_suffix('\''))
                    .unwrap_or(written),
            ),
            known: false,
            globbed: false,
        },
        "concatenation" => {
            let mut joined = Word {
                text: String::new(),
                known: true,
                globbed: false,
            };
            let mut cursor = node.walk();
            for part in node.children(&mut cursor) {
                let part = if part.is_named() {
                    value(part, line)
                } else {
                    // An operator token inside a word is nothing plain.
                    Word {
                        text: source(part, line).to_owned(),
                        known: false,
                        globbed: false,
                    }
                };
                joined.text.push_str(&part.text);
                joined.known &= part.known;
                joined.globbed |= part.globbed;
            }
            // `{a,b}` is cut by the grammar into `{`, `a,b`, `}`: look at the whole.
            if brace_expanded(written) && !written.contains(['\'', '"']) {
                joined.known = false;
            }
            joined
        }
        _ => unknown(),
    }
}

/// `"…"`: known when it holds text only (no `$x`, `$(…)`, backquote).
fn double_quoted(node: Node<'_>, line: &str) -> Word {
    let mut word = Word {
        text: String::new(),
        known: true,
        globbed: false,
    };
    let mut cursor = node.walk();
    for part in node.children(&mut cursor) {
        match (part.is_named(), part.kind()) {
            (false, "\"") => {}
            (true, "string_content") => word.text.push_str(&unescape_double(source(part, line))),
            _ => {
                word.text.push_str(source(part, line));
                word.known = false;
            }
        }
    }
    word
}

/// An unquoted word: `\x` is `x`, a backslash before a newline joins the lines.
fn unescape_unquoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('\n') | None => {}
                Some(next) => out.push(next),
            },
            other => out.push(other),
        }
    }
    out
}

/// Inside `"…"` a backslash escapes only `$`, a backquote, `"`, `\` and a newline.
fn unescape_double(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek()) {
            ('\\', Some('\n')) => {
                chars.next();
            }
            ('\\', Some(&next @ ('$' | '`' | '"' | '\\'))) => {
                out.push(next);
                chars.next();
            }
            (other, _) => out.push(other),
        }
    }
    out
}

/// `$'…'`'s escapes, the common ones (anything else is kept as written).
pub(super) fn ansi_c(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(kind) = chars.next() else {
            out.push('\\');
            break;
        };
        let simple = match kind {
            'a' => Some('\x07'),
            'b' => Some('\x08'),
            'e' | 'E' => Some('\x1b'),
            'f' => Some('\x0c'),
            'n' => Some('\n'),
            'r' => Some('\r'),
            't' => Some('\t'),
            'v' => Some('\x0b'),
            '\\' | '\'' | '"' | '?' => Some(kind),
            _ => None,
        };
        if let Some(simple) = simple {
            out.push(simple);
            continue;
        }
        let (radix, most) = match kind {
            'x' => (16, 2),
            'u' => (16, 4),
            'U' => (16, 8),
            '0'..='7' => (8, 2),
            _ => {
                out.push('\\');
                out.push(kind);
                continue;
            }
        };
        let mut digits = String::new();
        if radix == 8 {
            digits.push(kind);
        }
        while digits.len() < most + usize::from(radix == 8) {
            match chars.peek() {
                Some(&digit) if digit.is_digit(radix) => {
                    digits.push(digit);
                    chars.next();
                }
                _ => break,
            }
        }
        match u32::from_str_radix(&digits, radix)
            .ok()
            .and_then(char::from_u32)
        {
            Some(decoded) => out.push(decoded),
            None => {
                out.push('\\');
                out.push(kind);
                if radix == 16 {
                    out.push_str(&digits);
                }
            }
        }
    }
    out
}

/// `text` with each `$'…'` replaced by what it means, for a crude reading of a line the
/// grammar could not read.
pub(super) fn decode_ansi_c(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("$'") {
        out.push_str(&rest[..start]);
        let body = &rest[start + 2..];
        let mut end = None;
        let mut escaped = false;
        for (at, c) in body.char_indices() {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '\'') => {
                    end = Some(at);
                    break;
                }
                _ => {}
            }
        }
        let Some(end) = end else {
            out.push_str(&rest[start..]);
            return out;
        };
        out.push_str(&ansi_c(&body[..end]));
        rest = &body[end + 1..];
    }
    out.push_str(rest);
    out
}

/// Whether unquoted `text` holds a brace expansion (`{a,b}`, `{1..3}`), which turns one word
/// into several.
fn brace_expanded(text: &str) -> bool {
    let Some(open) = text.find('{') else {
        return false;
    };
    let rest = &text[open..];
    rest.contains('}') && (rest.contains(',') || rest.contains(".."))
}

/// Whether unquoted `text` is a file-name pattern.
fn has_glob(text: &str) -> bool {
    let mut escaped = false;
    for c in text.chars() {
        match (escaped, c) {
            (true, _) => escaped = false,
            (false, '\\') => escaped = true,
            (false, '*' | '?' | '[') => return true,
            _ => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_are_read_as_bash_reads_them() {
        assert_eq!(unescape_unquoted("r\\m"), "rm");
        assert_eq!(unescape_unquoted("a\\ b"), "a b");
        assert_eq!(unescape_double("a\\\"b\\n\\$"), "a\"b\\n$");
        assert_eq!(ansi_c("\\x72m \\n\\'\\101\\u00e9"), "rm \n'Aé");
        assert_eq!(ansi_c("\\q\\xZZ"), "\\q\\xZZ");
        assert_eq!(
            decode_ansi_c("a $'\\x72'm $'\\'' b $'open"),
            "a rm ' b $'open"
        );
    }

    #[test]
    fn expansions_of_one_word_into_many_are_seen() {
        assert!(brace_expanded("{-c,alias.x=y}"));
        assert!(brace_expanded("a{1..3}"));
        assert!(!brace_expanded("stash@{0}"));
        assert!(has_glob("*.rs"));
        assert!(!has_glob("\\*.rs"));
    }
}
