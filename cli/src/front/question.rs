//! Approvals in the front end: the call shown whole (a command, or the diff an edit or a write
//! would make) before single keys answer it: y, n, a (always for this tool in this session),
//! p or u (yes, and a narrow allow rule for calls like it, written to the project's or the
//! user's configuration; w offers a wider one first), e (edit the command first), Esc (no, and
//! type why for the model).

use std::time::Instant;

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;

use super::{transcript, Front, Mode};
use crate::setup::approve::{Question, Reply};
use crate::setup::remember::Offer;
use crate::view::report::Answer;

/// Lines of a preview diff shown before the question.
const PREVIEW_LINES: usize = 40;

/// Writes the question's call above the input and makes it the one being answered.
pub(crate) fn ask(front: &mut Front, question: Question) {
    let width = front.width();
    let dim = Style::default().add_modifier(Modifier::DIM);
    let mut lines = vec![
        Line::default(),
        Line::styled(
            format!("{} asks to run:", question.tool),
            Style::default().add_modifier(Modifier::BOLD),
        ),
    ];
    if question.why != "the approval mode" {
        lines.push(Line::styled(
            format!("(asked by {})", crate::view::shown::visible(&question.why)),
            dim,
        ));
    }
    // Whole, wrapped where a space allows and every character kept (two spaces in a quoted
    // argument are part of what would run): a question is answered about all of it.
    let room = width.saturating_sub(4).max(1);
    let detail: Vec<String> = crate::view::shown::visible(&question.detail)
        .lines()
        .map(str::to_owned)
        .collect();
    for (_, row) in super::draw::soft_wrapped(&detail, (0, 0), room).0 {
        lines.push(Line::raw(format!("  │ {row}")));
    }
    if let Some(preview) = &question.preview {
        lines.extend(transcript::diff_lines(
            &crate::view::shown::visible(preview),
            width,
            PREVIEW_LINES,
        ));
    }
    if let Some(offer) = &question.remember {
        lines.extend(remember_lines(offer, front.project_trusted));
    }
    front.say(lines);
    front.asking = Some(question);
    front.asked_at = Some(Instant::now());
}

/// What `p` and `u` would remember, where it would hold, and whether `w` widens it.
fn remember_lines(offer: &Offer, project_trusted: bool) -> Vec<Line<'static>> {
    let dim = Style::default().add_modifier(Modifier::DIM);
    let chosen = offer.chosen();
    let mut lines = Vec::new();
    if project_trusted {
        lines.push(Line::styled(
            format!(
                "  p  yes, and allow {} in this project (.golato/config.toml)",
                crate::view::shown::visible(&chosen.project)
            ),
            dim,
        ));
    }
    lines.push(Line::styled(
        match &chosen.user {
            Some(rule) => format!(
                "  u  yes, and allow {} in every project (your configuration)",
                crate::view::shown::visible(rule)
            ),
            None => {
                "  u  (none for every project: this rule names a file of this project)".to_owned()
            }
        },
        dim,
    ));
    if offer.can_widen() {
        let wider = &offer.steps[offer.at + 1].project;
        lines.push(Line::styled(
            format!(
                "  w  offer the wider {} instead",
                crate::view::shown::visible(wider)
            ),
            dim,
        ));
    }
    lines
}

/// A key while a question waits.
pub(crate) fn key(front: &mut Front, question: Question, key: KeyEvent) {
    let control = key.modifiers.contains(KeyModifiers::CONTROL);
    let reply = match key.code {
        KeyCode::Char('y' | 'Y') => Answer::Yes.into(),
        KeyCode::Char('a' | 'A') => Answer::Always.into(),
        KeyCode::Char('n' | 'N') => Answer::No.into(),
        KeyCode::Char('w' | 'W') if question.remember.as_ref().is_some_and(Offer::can_widen) => {
            let mut question = question;
            if let Some(offer) = &mut question.remember {
                offer.widen();
                let lines = remember_lines(offer, front.project_trusted);
                front.say(lines);
            }
            front.asking = Some(question);
            return;
        }
        KeyCode::Char(key @ ('p' | 'u')) if question.remember.is_some() => {
            let Some(chosen) = question
                .remember
                .as_ref()
                .map(|offer| offer.chosen().clone())
            else {
                return;
            };
            let target = match key {
                'p' if front.project_trusted => Some((
                    chosen.project,
                    Some(crate::settings::config::project_file(&front.cwd)),
                )),
                'u' => chosen
                    .user
                    .map(|rule| (rule, crate::settings::config::user_file())),
                _ => None,
            };
            let Some((rule, file)) = target else {
                front.asking = Some(question);
                return;
            };
            match file.map(|file| (crate::setup::remember::write_rule(&file, &rule), file)) {
                Some((Ok(()), file)) => front.note(&format!(
                    "{rule} written to {}",
                    crate::view::shown::visible(&file.display().to_string())
                )),
                Some((Err(why), _)) => {
                    front.note(&format!("{why}: {rule} holds for this session only"));
                }
                None => front.note(&format!(
                    "no configuration file to write to (HOME unset): {rule} holds for this session only"
                )),
            }
            Reply::Remember(rule)
        }
        KeyCode::Char('c') if control => Answer::No.into(),
        KeyCode::Esc => {
            let draft = front.editor.take_draft();
            front.mode = Mode::Why { question, draft };
            return;
        }
        KeyCode::Char('e' | 'E') if question.tool == "bash" => {
            let draft = front.editor.take_draft();
            let command = question.arguments["command"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            front.editor.set_text(&command);
            front.mode = Mode::Edit { question, draft };
            return;
        }
        _ => {
            front.asking = Some(question);
            return;
        }
    };
    answer(front, question, reply);
}

/// Enter (or Esc) while typing why a call is refused, or the command to run instead.
pub(crate) fn finish_typing(front: &mut Front, enter: bool) {
    match std::mem::replace(&mut front.mode, Mode::Prompt) {
        Mode::Why { question, draft } => {
            let why = front.editor.take_draft();
            front.editor.set_text(&draft);
            let reply = match why.trim() {
                "" => Answer::No.into(),
                why if enter => Reply::RefusedBecause(why.to_owned()),
                _ => Answer::No.into(),
            };
            answer(front, question, reply);
        }
        Mode::Edit { question, draft } => {
            let command = front.editor.take_draft();
            front.editor.set_text(&draft);
            match (enter, command.trim().is_empty()) {
                (true, false) => answer(front, question, Reply::Edited(command)),
                // Esc (or an emptied command) goes back to the question.
                _ => front.asking = Some(question),
            }
        }
        other => front.mode = other,
    }
}

fn answer(front: &mut Front, question: Question, reply: Reply) {
    let tool = &question.tool;
    let said = match &reply {
        Reply::Answer(Answer::Yes) => "allowed".to_owned(),
        Reply::Answer(Answer::Always) => {
            format!("allowed, and every {tool} call in this session")
        }
        Reply::Answer(Answer::No) => {
            format!("refused: the model is told you did not allow this {tool} call")
        }
        Reply::Edited(command) => format!(
            "allowed as you changed it: $ {}",
            crate::view::shown::visible(command.lines().next().unwrap_or_default())
        ),
        Reply::RefusedBecause(_) => {
            format!("refused: the model is told you did not allow this {tool} call, and why")
        }
        Reply::NeverAgain => format!("refused, and every {tool} call in this session"),
        Reply::Remember(rule) => format!(
            "allowed, and every call {} allows from now on",
            crate::view::shown::visible(rule)
        ),
        Reply::Unanswered(_) => format!("not run: this {tool} call was not answered"),
    };
    front.note(&said);
    let _ = question.reply.send(reply);
    // The time a person takes to answer is not the call's.
    if let (Some(asked_at), Some(running)) = (front.asked_at.take(), &mut front.running) {
        let waited = asked_at.elapsed();
        for call in running.calls.values_mut() {
            call.began += waited;
        }
    }
}
