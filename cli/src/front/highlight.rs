//! Syntax colour for code blocks in answers, by the block's language (` ```rust `, ` ```py `):
//! Sublime Text grammars through syntect, loaded at the first block that names a language
//! (tens of milliseconds, which startup does not pay).

use std::sync::OnceLock;

use ratatui::style::{Color, Style};
use syntect::easy::HighlightLines;
use syntect::highlighting::{Theme, ThemeSet};
use syntect::parsing::SyntaxSet;
use syntect::util::LinesWithEndings;

/// What code is coloured with: the grammars, and a dark theme.
struct Highlighter {
    syntaxes: SyntaxSet,
    theme: Theme,
}

fn highlighter() -> Option<&'static Highlighter> {
    static LOADED: OnceLock<Option<Highlighter>> = OnceLock::new();
    LOADED
        .get_or_init(|| {
            let mut themes = ThemeSet::load_defaults();
            let theme = themes.themes.remove("base16-ocean.dark")?;
            Some(Highlighter {
                syntaxes: SyntaxSet::load_defaults_newlines(),
                theme,
            })
        })
        .as_ref()
}

/// Code without a known language: one colour, as before highlighting.
fn plain(code: &str) -> Vec<Vec<(Style, String)>> {
    let style = Style::default().fg(Color::Yellow);
    code.lines()
        .map(|line| vec![(style, line.to_owned())])
        .collect()
}

/// The lines of `code`, each as coloured pieces; one colour when `language` is unknown.
pub(crate) fn code(code: &str, language: &str) -> Vec<Vec<(Style, String)>> {
    // "rust,ignore" and "python title=x" name the language first.
    let language = language
        .split(|c: char| c == ',' || c.is_whitespace())
        .next()
        .unwrap_or_default();
    if language.is_empty() {
        return plain(code);
    }
    let Some(highlighter) = highlighter() else {
        return plain(code);
    };
    let syntaxes = &highlighter.syntaxes;
    let Some(syntax) = syntaxes
        .find_syntax_by_token(language)
        .or_else(|| syntaxes.find_syntax_by_extension(language))
    else {
        return plain(code);
    };
    let mut lines = HighlightLines::new(syntax, &highlighter.theme);
    let mut out = Vec::new();
    for line in LinesWithEndings::from(code) {
        let Ok(pieces) = lines.highlight_line(line, syntaxes) else {
            return plain(code);
        };
        out.push(
            pieces
                .into_iter()
                .map(|(style, text)| {
                    let colour = style.foreground;
                    (
                        Style::default().fg(Color::Rgb(colour.r, colour.g, colour.b)),
                        text.trim_end_matches(['\n', '\r']).to_owned(),
                    )
                })
                .collect(),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_known_language_is_coloured_by_its_grammar_and_an_unknown_one_is_left_plain() {
        let rust = code("fn main() {\n    let x = \"s\";\n}\n", "rust,ignore");
        assert_eq!(rust.len(), 3);
        let colours: std::collections::HashSet<Style> =
            rust.iter().flatten().map(|(style, _)| *style).collect();
        assert!(
            colours.len() > 2,
            "keywords, strings and the rest differ: {rust:?}"
        );
        let text: String = rust[1].iter().map(|(_, piece)| piece.as_str()).collect();
        assert_eq!(text, "    let x = \"s\";");
        let unknown = code("x = 1\n", "no-such-language");
        assert_eq!(
            unknown,
            vec![vec![(
                Style::default().fg(Color::Yellow),
                "x = 1".to_owned()
            )]]
        );
    }
}
