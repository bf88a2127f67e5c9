//! What the front end writes into the terminal's scrollback for each thing that happens: the
//! prompt, the answer as markdown, reasoning dimmed to one line, a tool call as a compact block
//! (an edit's diff, a command's last lines), and the run's one-line summary.

use golato::message::{AssistantMessage, ToolCall, ToolResultMessage};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use crate::view::report::Tally;

/// Lines of a command's output shown (its last ones: errors come at the end).
const TAIL_LINES: usize = 4;
/// Lines of an edit's diff shown.
const DIFF_LINES: usize = 12;

fn dim() -> Style {
    Style::default().add_modifier(Modifier::DIM)
}

/// `text` made visible and cut to `width` cells.
pub(crate) fn fit(text: &str, width: usize) -> String {
    let text = crate::view::shown::visible(text);
    let mut cells = 0;
    let mut out = String::new();
    for c in text.chars() {
        let w = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
        if cells + w > width {
            out.pop();
            out.push('…');
            return out;
        }
        cells += w;
        out.push(c);
    }
    out
}

/// `text` in at most `width` cells, its end kept: `…` and the last characters that fit (a line
/// being written is read at its end).
pub(crate) fn fit_end(text: &str, width: usize) -> String {
    let text = crate::view::shown::visible(text);
    let mut cells = 0;
    let mut kept = Vec::new();
    for c in text.chars().rev() {
        let w = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
        if cells + w > width {
            kept.pop();
            kept.push('…');
            break;
        }
        cells += w;
        kept.push(c);
    }
    kept.iter().rev().collect()
}

/// The prompt as sent.
pub(crate) fn prompt(text: &str, width: usize) -> Vec<Line<'static>> {
    let style = Style::default().add_modifier(Modifier::BOLD);
    let mut lines = vec![Line::default()];
    // The whole prompt, wrapped between words: what was sent is kept whole in the scrollback.
    let room = width.saturating_sub(3).max(1);
    let rows = text
        .lines()
        .flat_map(|line| super::table::wrap(&crate::view::shown::visible(line), room));
    for (index, row) in rows.enumerate() {
        let mark = if index == 0 { "› " } else { "  " };
        lines.push(Line::from(vec![
            Span::styled(mark, Style::default().fg(Color::Cyan)),
            Span::styled(row, style),
        ]));
    }
    lines
}

/// A message typed while the run worked, and how it was sent.
pub(crate) fn queued(text: &str, how: &str, width: usize) -> Vec<Line<'static>> {
    vec![Line::from(vec![
        Span::styled(format!("» {how}: "), Style::default().fg(Color::Cyan)),
        Span::raw(fit(
            text.lines().next().unwrap_or_default(),
            width.saturating_sub(14),
        )),
    ])]
}

/// The model's answer: its reasoning in one dim line, its text as markdown.
pub(crate) fn answer(message: &AssistantMessage, width: usize) -> Vec<Line<'static>> {
    let mut lines: Vec<Line<'static>> = thinking(&message.reasoning, width).into_iter().collect();
    let text = message.text();
    if !text.trim().is_empty() {
        lines.push(Line::default());
        lines.extend(super::markdown::render(&text, width));
    }
    lines
}

/// Reasoning collapsed to its first line, dim, with the key that shows it all; `None` without
/// reasoning.
pub(crate) fn thinking(reasoning: &str, width: usize) -> Option<Line<'static>> {
    let reasoning = reasoning.trim();
    let first = reasoning.lines().next()?;
    let hint = " (Ctrl-O shows it all)";
    Some(Line::from(vec![
        Span::styled(
            fit(
                &format!("thinking: {first}"),
                width.saturating_sub(hint.len()),
            ),
            dim().add_modifier(Modifier::ITALIC),
        ),
        Span::styled(hint, dim()),
    ]))
}

/// A subagent's finished call, compact and indented under the `task` call that started it
/// (`depth` 1 for a child, 2 for a grandchild): its mark, its label, its first result line.
pub(crate) fn nested_call_ended(
    call: &ToolCall,
    result: &ToolResultMessage,
    depth: usize,
    width: usize,
) -> Line<'static> {
    let (mark, color) = match result.is_error {
        true => ("✗ ", Color::Red),
        false => ("✓ ", Color::Green),
    };
    let indent = format!("{}┆ ", "  ".repeat(depth));
    let room = width.saturating_sub(indent.chars().count() + 2);
    let label = fit(&crate::view::live::call_label(call), room);
    let text = result.text();
    let first = text
        .lines()
        .find(|line| !line.trim().is_empty())
        .unwrap_or_default();
    let rest = room.saturating_sub(label.chars().count() + 1);
    let mut spans = vec![
        Span::styled(indent, dim()),
        Span::styled(mark, Style::default().fg(color)),
        Span::styled(label, Style::default().add_modifier(Modifier::BOLD)),
    ];
    if rest > 3 && !first.is_empty() {
        spans.push(Span::styled(format!(" {}", fit(first, rest)), dim()));
    }
    Line::from(spans)
}

/// A call's end: its mark, label and time, then what it did.
pub(crate) fn call_ended(
    call: &ToolCall,
    result: &ToolResultMessage,
    seconds: f64,
    width: usize,
) -> Vec<Line<'static>> {
    let (mark, color) = match result.is_error {
        true => ("✗ ", Color::Red),
        false => ("✓ ", Color::Green),
    };
    let ran = crate::view::label::as_ran(call, result.details.as_ref());
    let label = crate::view::live::call_label(&ran);
    let time = format!(" {seconds:.1}s");
    let mut lines = vec![Line::from(vec![
        Span::styled(mark, Style::default().fg(color)),
        Span::styled(
            fit(&label, width.saturating_sub(2 + time.len())),
            Style::default().add_modifier(Modifier::BOLD),
        ),
        Span::styled(time, dim()),
    ])];
    let body = width.saturating_sub(4);
    let bar = || Span::styled("  │ ", dim());
    if let std::borrow::Cow::Owned(_) = ran {
        let asked = crate::view::live::call_label(call);
        lines.push(Line::from(vec![
            bar(),
            Span::styled(
                fit(
                    &format!("as you changed it; the model asked for: {asked}"),
                    body,
                ),
                dim(),
            ),
        ]));
    }
    let diff = result
        .details
        .as_ref()
        .and_then(|details| details["diff"].as_str())
        .filter(|_| call.name == "edit" && !result.is_error);
    // What the change broke, under it (the model reads the diagnostics themselves).
    let broke = golato::diagnostics::summary(result.details.as_ref()).map(|summary| {
        Line::from(vec![
            bar(),
            Span::styled(
                fit(&format!("⚠ {summary}"), body),
                Style::default().fg(Color::Yellow),
            ),
        ])
    });
    if let Some(diff) = diff {
        lines.extend(diff_lines(diff, width, DIFF_LINES));
        lines.extend(broke);
        return lines;
    }
    if let Some(broke) = broke {
        lines.push(broke);
    }
    if call.name == "read" && !result.is_error {
        return lines;
    }
    // The plan itself, every step.
    if let Some(plan) = golato::builtin::plan_of(result) {
        for line in crate::view::plan::lines(&plan) {
            lines.push(Line::from(vec![bar(), Span::raw(fit(&line, body))]));
        }
        return lines;
    }
    let text = result.text();
    let output: Vec<&str> = text.lines().collect();
    let skip = output.len().saturating_sub(TAIL_LINES);
    if skip > 0 {
        let earlier = crate::view::shown::count(skip as u64, "earlier line");
        lines.push(Line::from(vec![
            bar(),
            Span::styled(format!("… {earlier}"), dim()),
        ]));
    }
    for line in &output[skip..] {
        lines.push(Line::from(vec![
            bar(),
            Span::styled(fit(line, body), dim()),
        ]));
    }
    if let Some(network) = crate::view::network::summary(result.details.as_ref()) {
        lines.push(Line::from(vec![bar(), Span::raw(fit(&network, body))]));
    }
    lines
}

/// The run's end in one line: turns, calls, files changed, time, tokens, money.
pub(crate) fn summary(
    tally: &Tally,
    files_changed: usize,
    seconds: f64,
    cost: Option<f64>,
    ending: &str,
    width: usize,
) -> Vec<Line<'static>> {
    let mut parts = vec![
        crate::view::shown::count(tally.turns as u64, "turn"),
        crate::view::shown::count(tally.tool_calls as u64, "tool call"),
    ];
    if files_changed > 0 {
        parts.push(format!(
            "{} changed",
            crate::view::shown::count(files_changed as u64, "file")
        ));
    }
    parts.push(format!("{seconds:.1}s"));
    let usage = &tally.usage;
    if usage.input_tokens + usage.output_tokens > 0 {
        parts.push(format!(
            "{} in, {} out",
            crate::view::shown::count(usage.input_tokens, "token"),
            usage.output_tokens
        ));
    }
    if let Some(cost) = cost {
        parts.push(format!("${cost:.4}"));
    }
    vec![
        Line::default(),
        Line::styled(
            fit(&format!("{ending}: {}", parts.join(" · ")), width),
            dim(),
        ),
    ]
}

/// A reasoning text in full, dimmed (Ctrl-O).
pub(crate) fn reasoning(text: &str, width: usize) -> Vec<Line<'static>> {
    let style = dim().add_modifier(Modifier::ITALIC);
    let mut lines = vec![Line::styled("thinking:", style)];
    lines.extend(super::markdown::wrap_plain(text, width, style));
    lines
}

/// One file's changes in this session, as diffs.
pub(crate) fn diff(path: &str, diffs: &[String], width: usize) -> Vec<Line<'static>> {
    let mut lines = vec![Line::styled(
        fit(path, width),
        Style::default().add_modifier(Modifier::BOLD),
    )];
    for diff in diffs {
        lines.extend(diff_lines(diff, width, usize::MAX));
    }
    lines
}

/// A unified diff coloured, its file headers left out, at most `most` lines.
pub(crate) fn diff_lines(diff: &str, width: usize, most: usize) -> Vec<Line<'static>> {
    let body = width.saturating_sub(4);
    let changed: Vec<&str> = diff
        .lines()
        .filter(|line| !line.starts_with("--- ") && !line.starts_with("+++ "))
        .collect();
    let mut lines = Vec::new();
    for line in changed.iter().take(most) {
        let style = match line.as_bytes().first() {
            Some(b'+') => Style::default().fg(Color::Green),
            Some(b'-') => Style::default().fg(Color::Red),
            Some(b'@') => Style::default().fg(Color::Cyan),
            _ => dim(),
        };
        lines.push(Line::from(vec![
            Span::styled("  │ ", dim()),
            Span::styled(fit(line, body), style),
        ]));
    }
    if changed.len() > most {
        let more = crate::view::shown::count((changed.len() - most) as u64, "more diff line");
        lines.push(Line::from(vec![
            Span::styled("  │ ", dim()),
            Span::styled(format!("… {more}"), dim()),
        ]));
    }
    lines
}

/// Messages of an earlier conversation shown when going on with it.
const EARLIER_SHOWN: usize = 60;

/// An earlier conversation, compactly: prompts, the first lines of answers, calls as one line
/// each; its oldest part cut when long (the session file keeps it all).
pub(crate) fn earlier(messages: &[golato::message::Message], width: usize) -> Vec<Line<'static>> {
    use golato::message::Message;
    let skip = messages.len().saturating_sub(EARLIER_SHOWN);
    let mut lines = vec![Line::styled("earlier in this session:", dim())];
    if skip > 0 {
        lines.push(Line::styled(
            format!(
                "… {}",
                crate::view::shown::count(skip as u64, "earlier message")
            ),
            dim(),
        ));
    }
    // What the person changed a call to before it ran, kept with its result.
    let ran: std::collections::HashMap<&str, &golato::message::ToolResultMessage> = messages
        .iter()
        .filter_map(|message| match message {
            Message::ToolResult(result) => Some((result.tool_call_id.as_str(), result)),
            _ => None,
        })
        .collect();
    for message in &messages[skip..] {
        match message {
            // Prompts whole, as they were sent.
            Message::User(user) => lines.extend(prompt(&user.text(), width).into_iter().skip(1)),
            Message::Assistant(answer) => {
                // An answer's first two lines, rendered as the answer was.
                let rendered = super::markdown::render(&answer.text(), width.saturating_sub(2));
                for line in rendered.into_iter().filter(|line| line.width() > 0).take(2) {
                    let mut spans = vec![Span::raw("  ")];
                    spans.extend(line.spans);
                    lines.push(Line::from(spans));
                }
                for call in &answer.tool_calls {
                    let details = ran
                        .get(call.id.as_str())
                        .and_then(|result| result.details.as_ref());
                    let call = crate::view::label::as_ran(call, details);
                    lines.push(Line::styled(
                        format!(
                            "  · {}",
                            fit(
                                &crate::view::live::call_label(&call),
                                width.saturating_sub(4)
                            )
                        ),
                        dim(),
                    ));
                }
            }
            _ => {}
        }
    }
    lines
}
