//! What each key does, in each of the input's modes.

use super::*;
use crate::front::history::remember;

/// Handles a key, a paste or a resize.
pub(super) fn on_terminal(front: &mut Front, event: TermEvent) -> Option<Action> {
    match event {
        TermEvent::Paste(text) if front.asking.is_none() => {
            if front.enter_pending.take().is_some() {
                front.editor.newline();
            }
            match front.mode {
                Mode::Prompt => front.paste(&text),
                _ => front.editor.insert(&text),
            }
            None
        }
        TermEvent::Resize(columns, rows) => {
            front.follow_resize(ratatui::layout::Size::new(columns, rows));
            None
        }
        TermEvent::Key(key) if key.kind != KeyEventKind::Release => {
            // A key right after Enter: that Enter was a line end of a paste.
            if front.enter_pending.take().is_some() {
                front.editor.newline();
            }
            if let Some(question) = front.asking.take() {
                question::key(front, question, key);
                return None;
            }
            match front.mode {
                Mode::Prompt => on_key(front, key),
                Mode::Search { .. } => {
                    on_search_key(front, key);
                    None
                }
                Mode::Pick { .. } => {
                    on_pick_key(front, key);
                    None
                }
                Mode::Confirm { .. } => {
                    on_confirm_key(front, key);
                    None
                }
                Mode::Why { .. } | Mode::Edit { .. } => {
                    match key.code {
                        KeyCode::Enter if continues_line(front, key) => front.editor.newline(),
                        KeyCode::Enter => question::finish_typing(front, true),
                        KeyCode::Esc => question::finish_typing(front, false),
                        _ => {
                            edit_key(front, key);
                        }
                    }
                    None
                }
            }
        }
        _ => None,
    }
}

/// Ctrl-R: typing searches the history, newest first; Ctrl-R again goes further back.
fn on_search_key(front: &mut Front, key: KeyEvent) {
    let control = key.modifiers.contains(KeyModifiers::CONTROL);
    let Mode::Search {
        query,
        found,
        draft,
    } = &mut front.mode
    else {
        return;
    };
    match key.code {
        KeyCode::Char('r') if control => {
            if let Some(older) = front.editor.search(query, *found) {
                *found = Some(older);
            }
        }
        KeyCode::Enter | KeyCode::Tab => {
            let text = found.and_then(|at| front.editor.history().get(at).cloned());
            let draft = std::mem::take(draft);
            front.editor.set_text(&text.unwrap_or(draft));
            front.mode = Mode::Prompt;
        }
        KeyCode::Esc => {
            let draft = std::mem::take(draft);
            front.editor.set_text(&draft);
            front.mode = Mode::Prompt;
        }
        KeyCode::Char('c' | 'g') if control => {
            let draft = std::mem::take(draft);
            front.editor.set_text(&draft);
            front.mode = Mode::Prompt;
        }
        KeyCode::Backspace => {
            query.pop();
            *found = front.editor.search(query, None);
        }
        KeyCode::Char(c) if !control => {
            query.push(c);
            *found = front.editor.search(query, None);
        }
        _ => {}
    }
}

/// `/init`'s draft: `y` writes it, `n`, Esc or Ctrl-C leave it unwritten.
fn on_confirm_key(front: &mut Front, key: KeyEvent) {
    let control = key.modifiers.contains(KeyModifiers::CONTROL);
    let write = match key.code {
        KeyCode::Char('y' | 'Y') => true,
        KeyCode::Char('n' | 'N') | KeyCode::Esc => false,
        KeyCode::Char('c') if control => false,
        _ => return,
    };
    let Mode::Confirm { draft } = std::mem::replace(&mut front.mode, Mode::Prompt) else {
        return;
    };
    match write {
        true => {
            let cwd = front.cwd.clone();
            chat::slash::write_agents_md(front, &cwd, &draft);
        }
        false => front.note("AGENTS.md not written; the draft stays above"),
    }
}

/// `/resume`'s picker.
fn on_pick_key(front: &mut Front, key: KeyEvent) {
    let Mode::Pick {
        choices,
        selected,
        query,
        then,
    } = &mut front.mode
    else {
        return;
    };
    let count = kept(choices, query).len();
    let control = key.modifiers.contains(KeyModifiers::CONTROL);
    match key.code {
        KeyCode::Up => *selected = selected.saturating_sub(1),
        KeyCode::Down => *selected = (*selected + 1).min(count.saturating_sub(1)),
        KeyCode::Enter => {
            let id = kept(choices, query)
                .get(*selected)
                .map(|choice| choice.id.clone());
            let then = *then;
            front.mode = Mode::Prompt;
            front.pending = id.map(|id| match then {
                Picking::Session => commands::Command::Resume(Some(id)),
                Picking::Model => commands::Command::Model(Some(id)),
            });
        }
        KeyCode::Char(c) if !control => {
            query.push(c);
            *selected = 0;
        }
        KeyCode::Backspace => {
            query.pop();
            *selected = 0;
        }
        KeyCode::Esc => front.mode = Mode::Prompt,
        KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => {
            front.mode = Mode::Prompt;
        }
        _ => {}
    }
}

/// The keys that edit text, in every mode that types.
fn edit_key(front: &mut Front, key: KeyEvent) {
    let control = key.modifiers.contains(KeyModifiers::CONTROL);
    let alt = key.modifiers.contains(KeyModifiers::ALT);
    let shift = key.modifiers.contains(KeyModifiers::SHIFT);
    let editor = &mut front.editor;
    if !matches!(key.code, KeyCode::Up | KeyCode::Down) {
        editor.touch();
    }
    match key.code {
        KeyCode::Enter if alt || shift => editor.newline(),
        KeyCode::Char('j') if control => editor.newline(),
        KeyCode::Char('a') if control => editor.home(),
        KeyCode::Char('e') if control => editor.end(),
        KeyCode::Char('w') if control => editor.delete_word(),
        KeyCode::Char('u') if control => editor.kill_to_start(),
        KeyCode::Char('k') if control => editor.kill_to_end(),
        KeyCode::Char('y') if control => editor.yank(),
        KeyCode::Char('b') if alt => editor.word_left(),
        KeyCode::Char('f') if alt => editor.word_right(),
        KeyCode::Left if control || alt => editor.word_left(),
        KeyCode::Right if control || alt => editor.word_right(),
        KeyCode::Left => editor.left(),
        KeyCode::Right => editor.right(),
        KeyCode::Up => editor.up(),
        KeyCode::Down => editor.down(),
        KeyCode::Home => editor.home(),
        KeyCode::End => editor.end(),
        KeyCode::Backspace => editor.backspace(),
        KeyCode::Delete => editor.delete(),
        KeyCode::Char(c) if !control => editor.insert(&c.to_string()),
        _ => {}
    }
}

/// Whether Enter makes a new line rather than sending: with Shift or Alt (Shift-Enter where the
/// terminal tells it apart), or after a `\` at the cursor, which it takes (as Claude Code
/// does, for terminals that send Enter for Shift-Enter).
fn continues_line(front: &mut Front, key: KeyEvent) -> bool {
    if key
        .modifiers
        .intersects(KeyModifiers::ALT | KeyModifiers::SHIFT)
    {
        return true;
    }
    // A command being edited keeps its `\`: to the shell it continues the line too.
    if front.editor.before_cursor().ends_with('\\') {
        if !matches!(front.mode, Mode::Edit { .. }) {
            front.editor.backspace();
        }
        return true;
    }
    false
}

/// The list of slash commands above the input: ↑↓ choose, Tab completes the chosen one, Enter
/// runs it. Whether the key was the list's.
fn on_menu_key(front: &mut Front, key: KeyEvent) -> bool {
    let menu = front.menu();
    if menu.is_empty() {
        return false;
    }
    let chosen = front.menu_chosen(menu.len());
    let typed = front.editor.text();
    match key.code {
        KeyCode::Up => {
            front.menu_at = ((chosen + menu.len() - 1) % menu.len(), typed);
            true
        }
        KeyCode::Down => {
            front.menu_at = ((chosen + 1) % menu.len(), typed);
            true
        }
        KeyCode::Tab => {
            front.editor.set_text(&format!("{} ", menu[chosen].0));
            true
        }
        // The chosen command is what Enter runs (`/mo` Enter: /model).
        KeyCode::Enter
            if !key
                .modifiers
                .intersects(KeyModifiers::ALT | KeyModifiers::SHIFT) =>
        {
            front.editor.set_text(&menu[chosen].0);
            false
        }
        _ => false,
    }
}

fn on_key(front: &mut Front, key: KeyEvent) -> Option<Action> {
    if on_menu_key(front, key) {
        return None;
    }
    let control = key.modifiers.contains(KeyModifiers::CONTROL);
    // Any key but a second Ctrl-C disarms the quit; any but Tab ends a round of completions.
    let quit_armed = std::mem::take(&mut front.quit_armed);
    let completing = std::mem::take(&mut front.completing);
    match key.code {
        KeyCode::Enter if continues_line(front, key) => front.editor.newline(),
        // Sent once no key follows at once (`submit`): a paste typed as keys stays one text.
        KeyCode::Enter => {
            if !front.editor.is_empty() {
                front.enter_pending = Some(Instant::now());
            }
        }
        KeyCode::Tab => {
            let word = front.editor.word().map(|(_, word)| word);
            let next = completing.filter(|(choices, at)| {
                word.as_deref()
                    == choices
                        .get(*at)
                        .map(|choice| format!("@{choice}"))
                        .as_deref()
            });
            if let Some((choices, at)) = next {
                // A second Tab: the next completion, round again after the last.
                let at = (at + 1) % choices.len();
                front.editor.replace_word(&format!("@{}", choices[at]));
                front.completing = Some((choices, at));
            } else if let Some(found) = front.mentions().filter(|found| !found.is_empty()) {
                front.editor.replace_word(&format!("@{}", found[0]));
                front.completing = Some((found, 0));
            } else if front.running.is_some() && !front.editor.is_empty() {
                let text = front.take_input();
                remember(front.history_file.as_deref(), &text);
                return Some(Action::FollowUp(text));
            } else {
                commands::complete(&mut front.editor);
            }
        }
        KeyCode::Char('@') if !control => {
            front.editor.insert("@");
            // Listed now, so the line above the input can offer files at once.
            front.mentions();
        }
        KeyCode::Char('r') if control => {
            let draft = front.editor.take_draft();
            // An empty query shows the newest entry, as a shell's Ctrl-R does.
            let newest = front.editor.history().len().checked_sub(1);
            front.mode = Mode::Search {
                query: String::new(),
                found: newest,
                draft,
            };
        }
        // Backspace after a collapsed paste takes it all: half a placeholder would send as
        // itself, the paste lost.
        KeyCode::Backspace if front.has_paste() => {
            let before = front.editor.before_cursor();
            let whole = front
                .pastes
                .iter()
                .position(|(placeholder, _)| before.ends_with(placeholder.as_str()));
            match whole {
                Some(at) => {
                    let (placeholder, _) = front.pastes.remove(at);
                    for _ in placeholder.chars() {
                        front.editor.backspace();
                    }
                }
                None => front.editor.backspace(),
            }
        }
        // Shift-Tab: the next approval mode, then plan mode (as Claude Code's).
        KeyCode::BackTab => front.pending = Some(commands::Command::NextMode),
        // Ctrl-X: the collapsed pastes put in the input as their lines, to edit them.
        KeyCode::Char('x') if control && front.has_paste() => {
            let whole = front.expanded();
            front.editor.set_text(&whole);
            front.pastes.clear();
        }
        // Ctrl-L: the screen cleared, as a shell's, and the input drawn again at its top.
        KeyCode::Char('l') if control => front.clear_screen(),
        KeyCode::Char('o') if control => match front.reasoning.clone() {
            Some(reasoning) => {
                let width = front.width();
                front.say(transcript::reasoning(&reasoning, width));
            }
            None => front.note("no reasoning to show: the model sent none yet"),
        },
        KeyCode::Esc => interrupt(front),
        KeyCode::Char('c') if control => {
            if front.running.is_some() || front.shell.is_some() {
                interrupt(front);
            } else if !front.editor.is_empty() {
                front.editor.take_draft();
            } else if quit_armed {
                front.leaving = true;
            } else {
                // One Ctrl-C too many should not end a session: a second one does. Said on
                // the line above the input, which the next key clears: not in the scrollback.
                front.quit_armed = true;
            }
        }
        KeyCode::Char('d') if control => {
            if front.editor.is_empty() && front.running.is_none() {
                front.leaving = true;
            } else {
                front.editor.delete();
            }
        }
        _ => edit_key(front, key),
    }
    None
}

/// The input sent, as Enter asked: a `!command`, a slash command, or a prompt.
pub(super) fn submit(front: &mut Front) -> Option<Action> {
    if front.editor.is_empty() || !matches!(front.mode, Mode::Prompt) || front.asking.is_some() {
        return None;
    }
    let text = front.take_input();
    if let Some(command) = text.trim_start().strip_prefix('!') {
        if !command.trim().is_empty() {
            remember(front.history_file.as_deref(), &text);
            front.pending = Some(commands::Command::Shell(command.trim().to_owned()));
            return None;
        }
    }
    if commands::is_command(&text, &front.cwd) && !commands::is_kept(front, &text) {
        commands::run(front, text.trim());
        return None;
    }
    remember(front.history_file.as_deref(), &text);
    Some(Action::Send(text))
}

fn interrupt(front: &mut Front) {
    if let Some(shell) = &front.shell {
        shell.stop();
    }
    if let Some((filling, _)) = &front.filling {
        filling.cancel.cancel();
    }
    if let Some(running) = &mut front.running {
        if !running.cancelling {
            running.cancelling = true;
            running.run.cancel();
            front.note("interrupting: started tools are stopped, the transcript is kept");
        }
    }
}
