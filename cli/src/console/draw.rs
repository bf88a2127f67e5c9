//! The viewer's screen: a title line, the current tab's table, a line of keys.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style, Stylize};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, Row, Table, TableState};
use ratatui::Frame;

use golato::host::console::{Activity, ActorView, Kind};

use super::model::{busy_us, Model, Tab};

pub(crate) fn draw(frame: &mut Frame<'_>, model: &Model) {
    let [title, body, keys] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(1),
        Constraint::Length(1),
    ])
    .areas(frame.area());
    frame.render_widget(Paragraph::new(title_line(model)), title);
    match model.tab {
        Tab::Actors => actors(frame, body, model),
        Tab::Run => run(frame, body, model),
        Tab::Locks => locks(frame, body, model),
        Tab::Lints => lints(frame, body, model),
    }
    frame.render_widget(Paragraph::new(keys_line(model)), keys);
}

fn title_line(model: &Model) -> Line<'static> {
    let tab = |tab: Tab, name: &'static str| {
        let span = Span::raw(format!(" {name} "));
        if model.tab == tab {
            span.reversed()
        } else {
            span
        }
    };
    // The tabs first: on a narrow terminal the rest is what gets cut.
    let lints = tab(Tab::Lints, "4 lints");
    let mut spans = vec![
        tab(Tab::Actors, "1 actors"),
        tab(Tab::Run, "2 run"),
        tab(Tab::Locks, "3 locks"),
        if model.lints.is_empty() {
            lints
        } else {
            lints.red()
        },
        Span::raw(format!(
            "  {} actors · {} lints",
            model.actors.len(),
            model.lints.len()
        ))
        .bold(),
    ];
    if model.dropped > 0 {
        spans.push(Span::raw(format!(" · {} updates dropped", model.dropped)).yellow());
    }
    if let Some(gone) = &model.gone {
        spans.push(Span::raw(format!(" · {gone}")).red());
    }
    spans.push(Span::raw(format!(" · {}", model.addr)).dim());
    Line::from(spans)
}

fn keys_line(model: &Model) -> Line<'static> {
    if model.editing_filter {
        return Line::from(format!(
            "filter: {}▏ (Enter keeps it, Esc clears it)",
            model.filter
        ));
    }
    let filter = if model.filter.is_empty() {
        String::new()
    } else {
        format!(" · filter \"{}\"", model.filter)
    };
    Line::from(format!(
        "↑↓ move · Enter open · s sort ({}) · / filter{filter} · 1-4 tabs · q quit",
        model.sort.name()
    ))
    .dim()
}

/// `1.2 s`, `340 ms`, `12 µs`.
pub(crate) fn duration_us(us: u64) -> String {
    if us >= 10_000_000 {
        format!("{} s", us / 1_000_000)
    } else if us >= 1_000_000 {
        format!("{:.1} s", us as f64 / 1e6)
    } else if us >= 1_000 {
        format!("{} ms", us / 1_000)
    } else {
        format!("{us} µs")
    }
}

fn ms(ms: u64) -> String {
    duration_us(ms.saturating_mul(1_000))
}

fn activity_cell(actor: &ActorView) -> Cell<'static> {
    let text = format!("{} ({})", actor.activity, ms(actor.for_ms));
    let style = match actor.activity {
        Activity::Handling { .. } | Activity::Running { .. } => Style::new().green(),
        Activity::Waiting { .. } => Style::new().yellow(),
        _ => Style::new().dim(),
    };
    Cell::from(text).style(style)
}

fn table<'a>(rows: Vec<Row<'a>>, header: Row<'a>, widths: Vec<Constraint>) -> Table<'a> {
    Table::new(rows, widths)
        .header(header.style(Style::new().add_modifier(Modifier::BOLD)))
        .row_highlight_style(Style::new().reversed())
}

fn render(frame: &mut Frame<'_>, area: Rect, table: Table<'_>, selected: usize) {
    let mut state = TableState::default().with_selected(Some(selected));
    frame.render_stateful_widget(table, area, &mut state);
}

fn actors(frame: &mut Frame<'_>, area: Rect, model: &Model) {
    let rows = model
        .visible()
        .into_iter()
        .map(|actor| {
            Row::new(vec![
                Cell::from(match actor.kind {
                    Kind::PathLock => "lock",
                    kind => kind.as_str(),
                }),
                Cell::from(actor.label()),
                activity_cell(actor),
                Cell::from(actor.mailbox_depth.to_string()),
                Cell::from(actor.handled.to_string()),
                Cell::from(duration_us(busy_us(actor))),
                Cell::from(ms(actor.age_ms)),
            ])
        })
        .collect();
    let header = Row::new(["kind", "actor", "doing", "mbox", "handled", "busy", "age"]);
    let widths = vec![
        Constraint::Length(5),
        Constraint::Fill(2),
        Constraint::Fill(3),
        Constraint::Length(4),
        Constraint::Length(7),
        Constraint::Length(7),
        Constraint::Length(6),
    ];
    render(frame, area, table(rows, header, widths), model.selected);
}

fn run(frame: &mut Frame<'_>, area: Rect, model: &Model) {
    let Some(run) = model.run else {
        frame.render_widget(
            Paragraph::new(
                "No run chosen: select an actor of a run in the list (1) and press Enter.",
            ),
            area,
        );
        return;
    };
    let rows = model.run_rows(run);
    let [list, held] = Layout::vertical([Constraint::Min(1), Constraint::Length(3)]).areas(area);
    // The timeline: each row's life against the run's, as a bar.
    let span_ms = rows
        .iter()
        .find(|actor| actor.kind == Kind::Run)
        .map_or(1, |actor| actor.age_ms.max(1));
    let bar_width = 24usize;
    let table_rows = rows
        .iter()
        .map(|actor| {
            let lived = actor.age_ms;
            let ended_ago = actor.ended_ms_ago.unwrap_or(0);
            let start = span_ms.saturating_sub(lived + ended_ago);
            let bar = timeline(start, lived, span_ms, bar_width);
            let what = match actor.kind {
                Kind::Run => format!("run {run}"),
                Kind::Batch => format!("  batch {}", actor.identity.batch.unwrap_or(0)),
                _ => format!(
                    "    {} {}",
                    actor.identity.call.as_deref().unwrap_or("?"),
                    actor.identity.tool.as_deref().unwrap_or("")
                ),
            };
            let state = if actor.ended_ms_ago.is_some() {
                Cell::from(format!("ended, lived {}", ms(lived))).dim()
            } else {
                activity_cell(actor)
            };
            Row::new(vec![Cell::from(what), state, Cell::from(bar)])
        })
        .collect();
    let header = Row::new(["", "doing", "timeline"]);
    let widths = vec![
        Constraint::Percentage(35),
        Constraint::Min(20),
        Constraint::Length(bar_width as u16),
    ];
    render(
        frame,
        list,
        table(table_rows, header, widths),
        model.selected,
    );
    let locks: Vec<String> = model
        .locks
        .iter()
        .filter_map(|lock| {
            if lock
                .holder
                .as_ref()
                .is_some_and(|holder| holder.run == Some(run))
            {
                Some(format!("holds {}", lock.path))
            } else if lock.waiting.iter().any(|party| party.run == Some(run)) {
                Some(format!("waits for {}", lock.path))
            } else {
                None
            }
        })
        .collect();
    let text = if locks.is_empty() {
        "path locks: none held or waited for".to_owned()
    } else {
        format!("path locks: {}", locks.join(" · "))
    };
    frame.render_widget(Paragraph::new(text), held);
}

/// A bar of `width` cells: the part of `0..total` from `start` for `length`.
fn timeline(start: u64, length: u64, total: u64, width: usize) -> String {
    let cell =
        |ms: u64| usize::try_from(ms.saturating_mul(width as u64) / total.max(1)).unwrap_or(width);
    let from = cell(start).min(width.saturating_sub(1));
    let to = cell(start + length).clamp(from + 1, width);
    let mut bar = String::with_capacity(width * 3);
    for at in 0..width {
        bar.push(if (from..to).contains(&at) {
            '█'
        } else {
            '·'
        });
    }
    bar
}

fn locks(frame: &mut Frame<'_>, area: Rect, model: &Model) {
    let party = |run: Option<u64>, call: &Option<String>, for_ms: u64| {
        format!(
            "{}/{} {}",
            run.map_or("?".to_owned(), |run| run.to_string()),
            call.as_deref().unwrap_or("?"),
            ms(for_ms)
        )
    };
    let rows = model
        .locks
        .iter()
        .map(|lock| {
            let holder = lock.holder.as_ref().map_or("free".to_owned(), |holder| {
                party(holder.run, &holder.call, holder.for_ms)
            });
            let waiting: Vec<String> = lock
                .waiting
                .iter()
                .map(|waiter| party(waiter.run, &waiter.call, waiter.for_ms))
                .collect();
            Row::new(vec![
                Cell::from(lock.path.clone()),
                Cell::from(holder),
                Cell::from(waiting.join(", ")),
            ])
        })
        .collect();
    let header = Row::new(["path", "held by (run/call, for)", "waiting, in order"]);
    let widths = vec![
        Constraint::Percentage(40),
        Constraint::Percentage(25),
        Constraint::Percentage(35),
    ];
    render(frame, area, table(rows, header, widths), model.selected);
}

fn lints(frame: &mut Frame<'_>, area: Rect, model: &Model) {
    let rows = model
        .lints
        .iter()
        .map(|lint| {
            Row::new(vec![
                Cell::from(lint.lint.as_str()).red(),
                Cell::from(lint.message.clone()),
            ])
        })
        .collect();
    let header = Row::new(["lint", "what (Enter: the actor)"]);
    let widths = vec![Constraint::Length(16), Constraint::Min(20)];
    render(frame, area, table(rows, header, widths), model.selected);
}
