//! The front end's slash commands: its own, never sent to the model.

use super::editor::Editor;
use super::Front;

/// A command that needs more than the front end's own state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Command {
    New,
    Cost,
    Tools,
    Sandbox,
}

/// Every command, with what it does.
const COMMANDS: &[(&str, &str)] = &[
    ("/help", "this list"),
    ("/new", "start a new session (the current one stays saved)"),
    ("/cost", "tokens and money of this session so far"),
    ("/tools", "the tools the model has"),
    ("/sandbox", "what the tools may touch, and which calls ask"),
    ("/exit", "leave (also Ctrl-D on an empty line)"),
];

/// Commands of the design that are not built yet: said so, never sent to the model.
const LATER: &[&str] = &[
    "/model", "/compact", "/resume", "/fork", "/undo", "/diff", "/approve", "/init",
];

/// Runs the command `text` (a line starting with `/`).
pub(crate) fn run(front: &mut Front, text: &str) {
    let name = text.split_whitespace().next().unwrap_or(text);
    match name {
        "/help" => {
            let mut lines = vec!["commands:".to_owned()];
            for (command, what) in COMMANDS {
                lines.push(format!("  {command:<10} {what}"));
            }
            lines.push(
                "keys: Enter send (steer while a run works) · Tab follow-up · Alt-Enter new line · ↑↓ history · Esc interrupt · Ctrl-D quit"
                    .to_owned(),
            );
            for line in lines {
                front.note(&line);
            }
        }
        "/exit" | "/quit" => front.leaving = true,
        "/new" => front.pending = Some(Command::New),
        "/cost" => front.pending = Some(Command::Cost),
        "/tools" => front.pending = Some(Command::Tools),
        "/sandbox" => front.pending = Some(Command::Sandbox),
        later if LATER.contains(&later) => {
            front.note(&format!("{later} is not built yet; /help lists what is"));
        }
        unknown => front.note(&format!(
            "{unknown} is not a command (nothing was sent to the model); /help lists them"
        )),
    }
}

/// The command `run` left for the caller, if any.
pub(crate) fn take(front: &mut Front) -> Option<Command> {
    front.pending.take()
}

/// Completes a command being typed (Tab): the one it can only be, or as far as all agree.
pub(crate) fn complete(editor: &mut Editor) {
    let text = editor.text();
    if !text.starts_with('/') || text.contains(char::is_whitespace) {
        return;
    }
    let matching: Vec<&str> = COMMANDS
        .iter()
        .map(|(command, _)| *command)
        .filter(|command| command.starts_with(&text))
        .collect();
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
    fn tab_completes_a_command_as_far_as_it_is_known() {
        let mut editor = Editor::default();
        editor.insert("/he");
        complete(&mut editor);
        assert_eq!(editor.text(), "/help ");
        let mut editor = Editor::default();
        editor.insert("/x");
        complete(&mut editor);
        assert_eq!(editor.text(), "/x");
    }
}
