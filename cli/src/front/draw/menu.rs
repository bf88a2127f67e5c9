//! The menu under the input (slash commands, @-mentions, a list to pick from) and what is chosen in it.

use super::*;

impl Front {
    /// The slash commands the typed name may become (none while a question, a picker or
    /// another mode has the input).
    pub(in crate::front) fn menu(&self) -> Vec<(String, String)> {
        if !matches!(self.mode, Mode::Prompt) || self.asking.is_some() {
            return Vec::new();
        }
        commands::menu(&self.editor.text(), &self.kept)
    }

    /// The command chosen in a list of `count`.
    pub(in crate::front) fn menu_chosen(&self, count: usize) -> usize {
        match self.menu_at.1 == self.editor.text() {
            true => self.menu_at.0.min(count.saturating_sub(1)),
            false => 0,
        }
    }

    /// The list's rows: the chosen command highlighted, each with what it does; at most
    /// [`MENU_ROWS`], scrolled to keep the chosen one in view.
    pub(in crate::front) fn menu_lines(&self) -> Vec<Line<'static>> {
        let menu = self.menu();
        let chosen = self.menu_chosen(menu.len());
        let first = chosen.saturating_sub(MENU_ROWS - 1);
        let width = self.width();
        let dim = Style::default().add_modifier(Modifier::DIM);
        menu.into_iter()
            .enumerate()
            .skip(first)
            .take(MENU_ROWS)
            .map(|(at, (name, what))| {
                let what = transcript::fit(&what, width.saturating_sub(14));
                match at == chosen {
                    true => Line::from(vec![
                        Span::styled(
                            format!("› {name:<10}"),
                            Style::default().add_modifier(Modifier::REVERSED),
                        ),
                        Span::raw(format!(" {what}")),
                    ]),
                    false => Line::from(vec![
                        Span::raw(format!("  {name:<10}")),
                        Span::styled(format!(" {what}"), dim),
                    ]),
                }
            })
            .collect()
    }

    /// Starts a picker of `choices` for `then`.
    pub(crate) fn pick(&mut self, choices: Vec<Pick>, then: Picking) {
        self.mode = Mode::Pick {
            choices,
            selected: 0,
            query: String::new(),
            then,
        };
    }

    /// The files `@` completes to for what is typed at the cursor, if a mention is typed.
    pub(in crate::front) fn mentions(&mut self) -> Option<Vec<String>> {
        let word = self.editor.word();
        let typed = mention::typed(word.as_ref())?.to_owned();
        let cwd = self.cwd.clone();
        let files = self.files.get_or_insert_with(|| mention::Files::scan(&cwd));
        Some(files.best(&typed, mention::SHOWN))
    }
}
