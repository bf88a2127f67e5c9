//! The front end's slash commands: its own, never sent to the model.

use super::editor::Editor;
use super::Front;

/// A command that needs the conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Command {
    New,
    Cost,
    Tools,
    /// `/agents`: the agents the task tool may run by name.
    Agents,
    Sandbox,
    /// `/model [NAME]`: show, or switch for the next turn.
    Model(Option<String>),
    /// `/approve [MODE]`: show, or change.
    Approve(Option<crate::args::Approve>),
    Compact,
    Fork,
    /// `/resume [ID]`: a picker, or that session.
    Resume(Option<String>),
    Diff,
    Init,
    /// `/plan`: into plan mode, or out of it.
    Plan,
    /// `/accept`: the plan is carried out.
    Accept,
    /// `/undo`: the last prompt's edits and writes taken back.
    Undo,
    /// Shift-Tab: the next mode of never → edits → ask → plan → never.
    NextMode,
    /// `!command`: the person's own command, run with the session's bash.
    Shell(String),
    /// `/ps`: the background commands.
    Processes,
    /// `/kill ID`: end a background command.
    Kill(Option<String>),
    /// `/diagnostics [PATH]`: what the language servers report.
    Diagnostics(Option<String>),
}

/// Every command, with what it does.
const COMMANDS: &[(&str, &str)] = &[
    ("/help", "this list"),
    (
        "/model",
        "pick the model, or /model NAME to switch (the next turn uses it)",
    ),
    (
        "/compact",
        "summarize the conversation now, keeping the recent part",
    ),
    ("/new", "start a new session (the current one stays saved)"),
    (
        "/resume",
        "go on with another session of this directory (a picker, or /resume ID)",
    ),
    (
        "/fork",
        "a new session from here; the current one is kept as it is",
    ),
    (
        "/undo",
        "take back the last prompt: its edits and writes, and the conversation since",
    ),
    ("/diff", "what this session's edits and writes changed"),
    (
        "/plan",
        "plan mode: the model looks (read-only) and sends a plan; again to leave",
    ),
    (
        "/accept",
        "accept the plan: edits are back and the model carries it out",
    ),
    ("/cost", "tokens and money of this session so far"),
    ("/tools", "the tools the model has"),
    (
        "/agents",
        "the agents the task tool may run by name (.claude/agents/, ~/.claude/agents/ …)",
    ),
    (
        "/ps",
        "the model's background commands: ID, command, runtime, last line",
    ),
    (
        "/kill",
        "end a background command: /kill ID (its whole process tree)",
    ),
    (
        "/diagnostics",
        "what the language servers report: of the files checked so far, or /diagnostics PATH",
    ),
    (
        "/approve",
        "show which calls ask, or /approve ask|edits|never",
    ),
    ("/sandbox", "what the tools may touch, and which calls ask"),
    (
        "/init",
        "the model reads the repository and drafts AGENTS.md; golato writes it (never over one)",
    ),
    ("/exit", "leave (also Ctrl-D on an empty line)"),
];

/// Whether `text` is a slash command: it starts with `/`, and its first word is not a path that
/// exists (`/etc/hosts looks odd` and a dragged-in image's path are prompts), resolved against
/// `cwd` when relative.
pub(crate) fn is_command(text: &str, cwd: &std::path::Path) -> bool {
    let text = text.trim_start();
    if !text.starts_with('/') {
        return false;
    }
    let first = text.split_whitespace().next().unwrap_or(text);
    // A known command is one even where a file of its name exists (`/tmp` is no command).
    if COMMANDS.iter().any(|(command, _)| *command == first) {
        return true;
    }
    let unquoted = first.trim_matches(|c| c == '\'' || c == '"');
    std::fs::symlink_metadata(cwd.join(unquoted)).is_err()
}

/// Runs the command `text` (a line starting with `/`).
pub(crate) fn run(front: &mut Front, text: &str) {
    let mut words = text.split_whitespace();
    let name = words.next().unwrap_or(text);
    let argument = words.next().map(str::to_owned);
    if words.next().is_some() {
        front.note(&format!(
            "{name} takes at most one word; /help lists the commands"
        ));
        return;
    }
    let command = match name {
        "/help" => {
            let mut lines = vec!["commands:".to_owned()];
            for (command, what) in COMMANDS {
                lines.push(format!("  {command:<10} {what}"));
            }
            lines.push(
                "keys: Enter send (steer while a run works) · Tab follow-up · Shift-Enter, \\+Enter, Alt-Enter or Ctrl-J new line · ↑↓ history · Ctrl-R search history · @ a file (Tab completes) · Ctrl-O last reasoning · Ctrl-L clear the screen · Esc interrupt · Ctrl-D quit"
                    .to_owned(),
            );
            for line in lines {
                front.note(&line);
            }
            return;
        }
        "/exit" | "/quit" => {
            front.leaving = true;
            return;
        }
        "/undo" => Command::Undo,
        "/new" => Command::New,
        "/cost" => Command::Cost,
        "/tools" => Command::Tools,
        "/agents" => Command::Agents,
        "/ps" => Command::Processes,
        "/kill" => Command::Kill(argument.clone()),
        "/diagnostics" => Command::Diagnostics(argument.clone()),
        "/sandbox" => Command::Sandbox,
        "/compact" => Command::Compact,
        "/fork" => Command::Fork,
        "/diff" => Command::Diff,
        "/init" => Command::Init,
        "/plan" => Command::Plan,
        "/accept" => Command::Accept,
        "/model" => Command::Model(argument.clone()),
        "/resume" => Command::Resume(argument.clone()),
        "/approve" => match argument
            .as_deref()
            .map(|mode| <crate::args::Approve as clap::ValueEnum>::from_str(mode, true))
        {
            None => Command::Approve(None),
            Some(Ok(mode)) => Command::Approve(Some(mode)),
            Some(Err(_)) => {
                front.note("/approve takes ask, edits or never");
                return;
            }
        },
        unknown => {
            front.note(&format!(
                "{unknown} is not a command (nothing was sent to the model); /help lists them"
            ));
            return;
        }
    };
    let takes_argument = matches!(
        command,
        Command::Model(_) | Command::Resume(_) | Command::Approve(_) | Command::Kill(_)
    );
    if argument.is_some() && !takes_argument {
        front.note(&format!(
            "{name} takes no argument; /help lists the commands"
        ));
        return;
    }
    front.pending = Some(command);
}

/// The command `run` left for the caller, if any.
pub(crate) fn take(front: &mut Front) -> Option<Command> {
    front.pending.take()
}

/// The commands that start with what is typed, for the line above the input.
pub(crate) fn matching(typed: &str) -> Vec<&'static str> {
    if !typed.starts_with('/') || typed.contains(char::is_whitespace) {
        return Vec::new();
    }
    // `/` alone: every command.
    COMMANDS
        .iter()
        .map(|(command, _)| *command)
        .filter(|command| command.starts_with(typed))
        .collect()
}

/// The commands the name being typed (`/`, `/mo`) may become, with what each does, for the
/// list above the input: golato's own, then the commands and skills `kept` offers; none once
/// the line is more than a command's name.
pub(crate) fn menu(typed: &str, kept: &[(String, String)]) -> Vec<(String, String)> {
    if !typed.starts_with('/') || typed.contains(char::is_whitespace) {
        return Vec::new();
    }
    COMMANDS
        .iter()
        .map(|(command, what)| ((*command).to_owned(), (*what).to_owned()))
        .chain(kept.iter().cloned())
        .filter(|(command, _)| command.starts_with(typed))
        .collect()
}

/// The commands and skills a session offers, as the `/` list shows them: the name, and what it
/// does with its arguments' hint.
pub(crate) fn kept(offered: &crate::conversation::expansion::Offered) -> Vec<(String, String)> {
    offered
        .entries()
        .into_iter()
        .map(|entry| {
            let what = match entry.hint {
                Some(hint) => format!("{hint} · {}", entry.description),
                None => entry.description,
            };
            (
                crate::view::shown::visible(&entry.name).into_owned(),
                crate::view::shown::visible(&what.replace('\n', " ")).into_owned(),
            )
        })
        .collect()
}

/// Whether `text` names one of the commands or skills the session offers (sent, filled first).
pub(crate) fn is_kept(front: &Front, text: &str) -> bool {
    let first = text.split_whitespace().next().unwrap_or_default();
    front.kept.iter().any(|(name, _)| name == first)
}

/// Completes a command being typed (Tab): the one it can only be, or as far as all agree.
pub(crate) fn complete(editor: &mut Editor) {
    let text = editor.text();
    let matching = matching(&text);
    let Some(first) = matching.first() else {
        return;
    };
    let common = matching.iter().fold(first.to_string(), |common, command| {
        common
            .chars()
            .zip(command.chars())
            .take_while(|(a, b)| a == b)
            .map(|(a, _)| a)
            .collect()
    });
    let completed = if matching.len() == 1 {
        format!("{common} ")
    } else {
        common
    };
    editor.end();
    editor.insert(&completed[text.len()..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_file_can_never_take_the_name_of_one_of_golatos_own() {
        for (command, _) in COMMANDS {
            let name = command.trim_start_matches('/');
            assert!(
                crate::setup::custom_commands::RESERVED.contains(&name),
                "{name} is not reserved"
            );
        }
    }

    #[test]
    fn tab_completes_a_command_as_far_as_it_is_known() {
        let mut editor = Editor::default();
        editor.insert("/he");
        complete(&mut editor);
        assert_eq!(editor.text(), "/help ");
        let mut editor = Editor::default();
        editor.insert("/c");
        complete(&mut editor);
        assert_eq!(editor.text(), "/co");
        assert_eq!(matching("/co"), ["/compact", "/cost"]);
        let mut editor = Editor::default();
        editor.insert("/x");
        complete(&mut editor);
        assert_eq!(editor.text(), "/x");
    }
}
