//! What a provider's own web search did for an answer, as lines every front end shows under
//! it: the queries, then the pages cited, numbered.

use golato::message::WebSearch;

use super::shown::visible;

/// The most pages listed; the rest are counted.
const MAX_SOURCES: usize = 20;

/// The queries, each quoted, in one line.
fn queries(search: &WebSearch) -> String {
    search
        .queries
        .iter()
        .map(|query| format!("\"{}\"", visible(query)))
        .collect::<Vec<_>>()
        .join(" · ")
}

/// The lines: `searched: …` and `sources:` with one page per line.
pub(crate) fn lines(search: &WebSearch) -> Vec<String> {
    let mut lines = Vec::new();
    if !search.queries.is_empty() {
        lines.push(format!("searched the web: {}", queries(search)));
    }
    if !search.citations.is_empty() {
        lines.push("sources:".to_owned());
        for (number, citation) in search.citations.iter().take(MAX_SOURCES).enumerate() {
            let title = citation
                .title
                .as_deref()
                .map(|title| format!("{} — ", visible(title)))
                .unwrap_or_default();
            lines.push(format!(
                "  [{}] {title}{}",
                number + 1,
                visible(&citation.url)
            ));
        }
        if search.citations.len() > MAX_SOURCES {
            lines.push(format!(
                "  … and {} more",
                search.citations.len() - MAX_SOURCES
            ));
        }
    }
    lines
}

/// The same as Markdown, for a client that renders it (ACP).
pub(crate) fn markdown(search: &WebSearch) -> String {
    let mut text = String::new();
    if !search.queries.is_empty() {
        text.push_str(&format!("\n\n*Searched the web: {}*", queries(search)));
    }
    if !search.citations.is_empty() {
        text.push_str("\n\nSources:");
        for citation in search.citations.iter().take(MAX_SOURCES) {
            let title = citation.title.as_deref().unwrap_or(&citation.url);
            text.push_str(&format!(
                "\n- [{}]({})",
                visible(title).replace(['[', ']'], ""),
                visible(&citation.url).replace(['(', ')', ' '], "")
            ));
        }
    }
    text
}
