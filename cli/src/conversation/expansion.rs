//! A prompt that names what people keep: `/NAME ARGS` a command file's prompt (or a skill's
//! instructions), `$NAME` a skill's inside any prompt. A command's `` !`command` `` and
//! `@path` are filled by the session's own `bash` and `read`: one run of the session's agent
//! answering with those calls (`setup/one_call.rs`), so the rules, the hooks, the sandbox and
//! the person's approvals judge them as they judge the model's. A call refused stops the
//! prompt (nothing is sent, the line says which and why); a command that ran and failed is
//! sent with what it printed, as a shell would show it.

use std::ops::Range;
use std::path::Path;

use golato::agent::Event;
use golato::message::{AssistantMessage, ToolCall, ToolResultMessage, UserMessage};
use tokio_util::sync::CancellationToken;

use crate::setup::custom_commands::{self, CustomCommand};
use crate::setup::skills::Skill;

/// What a session offers by name: command files and skills.
#[derive(Debug, Default, Clone)]
pub(crate) struct Offered {
    pub(crate) commands: custom_commands::Found,
    pub(crate) skills: Vec<Skill>,
}

/// One entry of a palette: `/NAME`, what it does, its arguments.
pub(crate) struct Entry {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) hint: Option<String>,
}

impl Offered {
    /// What a session in `cwd` offers (a project's only when `trusted`).
    pub(crate) fn gather(cwd: &Path, trusted: bool) -> Offered {
        let home = crate::setup::skills::home();
        Offered {
            commands: custom_commands::gather(cwd, trusted),
            skills: crate::setup::skills::gather(cwd, home.as_deref(), trusted).skills,
        }
    }

    /// Commands, then the skills no command's name hides.
    pub(crate) fn entries(&self) -> Vec<Entry> {
        let mut entries: Vec<Entry> = self
            .commands
            .commands
            .iter()
            .map(|command| Entry {
                name: format!("/{}", command.name),
                description: command
                    .description
                    .clone()
                    .unwrap_or_else(|| format!("{}", command.path.display())),
                hint: command.hint.clone(),
            })
            .collect();
        for skill in &self.skills {
            if self.commands.get(&skill.name).is_none() {
                entries.push(Entry {
                    name: format!("/{}", skill.name),
                    description: format!("(skill) {}", skill.description.replace('\n', " ")),
                    hint: None,
                });
            }
        }
        entries
    }

    /// Whether `/name` is one of them.
    pub(crate) fn offers(&self, name: &str) -> bool {
        self.commands.get(name).is_some() || self.skill(name).is_some()
    }

    fn skill(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|skill| skill.name == name)
    }
}

/// A prompt that names a command or skill, before its `!` and `@` pieces are filled.
#[derive(Debug, Clone)]
pub(crate) struct Pending {
    /// The command's name (`/review`), or the skills named.
    pub(crate) name: String,
    pub(crate) text: String,
    shell: Vec<(Range<usize>, String)>,
    files: Vec<String>,
    /// The tools its prompt may use, when its file narrows them.
    pub(crate) tools: Option<Vec<String>>,
    /// The model its prompt asks, when its file names one.
    pub(crate) model: Option<String>,
}

/// What `text` names: `None` when it is a plain prompt; why not, when it names a command
/// that cannot be used.
pub(crate) fn prepare(
    offered: &Offered,
    text: &str,
    cwd: &Path,
) -> Option<Result<Pending, String>> {
    let trimmed = text.trim_start();
    let named = trimmed.strip_prefix('/').and_then(|rest| {
        let name = rest.split_whitespace().next()?;
        let arguments = rest[name.len()..].trim();
        offered.offers(name).then_some((name, arguments))
    });
    let mut pending = match named {
        Some((name, arguments)) => match offered.commands.get(name) {
            Some(command) => from_command(command, arguments, cwd),
            None => {
                let skill = offered.skill(name)?;
                let instructions = match crate::setup::skills::instructions(skill) {
                    Ok(instructions) => instructions,
                    Err(why) => return Some(Err(why)),
                };
                let text = match arguments.is_empty() {
                    true => instructions,
                    false => format!("{instructions}\n\n{arguments}"),
                };
                plain(format!("/{name}"), text)
            }
        },
        None => plain(String::new(), text.to_owned()),
    };
    let named_skills = skills_named(offered, &pending.text);
    if named_skills.is_empty() && named.is_none() {
        return None;
    }
    for skill in named_skills {
        match crate::setup::skills::instructions(skill) {
            Ok(instructions) => pending.text.push_str(&format!("\n\n{instructions}")),
            Err(why) => return Some(Err(why)),
        }
        if pending.name.is_empty() {
            pending.name = format!("${}", skill.name);
        }
    }
    Some(Ok(pending))
}

fn plain(name: String, text: String) -> Pending {
    Pending {
        name,
        text,
        shell: Vec::new(),
        files: Vec::new(),
        tools: None,
        model: None,
    }
}

fn from_command(command: &CustomCommand, arguments: &str, cwd: &Path) -> Pending {
    let text = custom_commands::with_arguments(&command.body, arguments);
    Pending {
        name: format!("/{}", command.name),
        shell: custom_commands::shell_pieces(&text),
        files: custom_commands::mentioned_files(&text, cwd),
        text,
        tools: command.tools.clone(),
        model: command.model.clone(),
    }
}

/// The skills `text` names as `$NAME` (a word of its own), each once.
fn skills_named<'a>(offered: &'a Offered, text: &str) -> Vec<&'a Skill> {
    let mut named: Vec<&Skill> = Vec::new();
    for word in text.split_whitespace() {
        let Some(name) = word.strip_prefix('$') else {
            continue;
        };
        let name =
            name.trim_end_matches(|c: char| c.is_ascii_punctuation() && c != '-' && c != '_');
        if let Some(skill) = offered.skill(name) {
            if !named.iter().any(|known| known.name == skill.name) {
                named.push(skill);
            }
        }
    }
    named
}

/// The model a command file names, as this session can ask it: `None` for the session's own
/// (`inherit`); a note when it is Claude Code's alias or another provider's model.
pub(crate) fn model_for(
    settings: &crate::settings::Settings,
    name: &str,
) -> Result<Option<String>, String> {
    let name = name.trim();
    if name.is_empty() || name == "inherit" {
        return Ok(None);
    }
    if matches!(name, "haiku" | "sonnet" | "opus" | "opusplan") {
        return Err(format!(
            "model `{name}` is Claude Code's alias; the session's model answers (name the model itself)"
        ));
    }
    let anthropic = matches!(
        settings.provider,
        Some(crate::args::ProviderKind::Anthropic)
    );
    if name.starts_with("claude") && !anthropic && settings.script.is_none() {
        return Err(format!(
            "model `{name}` is Anthropic's and this session asks another provider; the session's model answers"
        ));
    }
    Ok(Some(name.to_owned()))
}

/// A prompt filled: the text the model gets, the calls that filled it.
#[derive(Debug)]
pub(crate) struct Expanded {
    pub(crate) name: String,
    pub(crate) text: String,
    /// The `bash` and `read` calls that filled it, with their results.
    pub(crate) ran: Vec<(ToolCall, ToolResultMessage)>,
    pub(crate) tools: Option<Vec<String>>,
    pub(crate) model: Option<String>,
}

impl Expanded {
    /// The prompt's first lines, as a front end shows what was sent.
    pub(crate) fn first_lines(&self, count: usize) -> Vec<String> {
        let mut lines: Vec<String> = self
            .text
            .lines()
            .take(count)
            .map(|line| crate::view::shown::visible(line).into_owned())
            .collect();
        let total = self.text.lines().count();
        if total > count {
            lines.push(format!("… {} more lines", total - count));
        }
        lines
    }

    /// `agent` as this prompt uses it: the tools and model its file names; what could not be
    /// honoured, as lines to show.
    pub(crate) fn agent(
        &self,
        settings: &crate::settings::Settings,
        agent: &golato::Agent,
    ) -> (golato::Agent, Vec<String>) {
        let mut notes = Vec::new();
        let mut agent = agent.clone();
        if let Some(model) = self.model.as_deref() {
            match model_for(settings, model) {
                Ok(Some(name)) => {
                    agent = agent.with_model(crate::setup::provider::model_named(settings, &name));
                }
                Ok(None) => {}
                Err(note) => notes.push(format!("{}: {note}", self.name)),
            }
        }
        if let Some(tools) = &self.tools {
            let names: Vec<&str> = tools.iter().map(String::as_str).collect();
            let (narrowed, missing) = agent.with_tools_only(&names);
            agent = narrowed;
            notes.push(format!(
                "{}: this prompt's tools are {}",
                self.name,
                match agent.tool_definitions().is_empty() {
                    true => "none".to_owned(),
                    false => agent
                        .tool_definitions()
                        .iter()
                        .map(|definition| definition.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                }
            ));
            if !missing.is_empty() {
                notes.push(format!(
                    "{}: {} not among this session's tools",
                    self.name,
                    missing.join(", ")
                ));
            }
        }
        (agent, notes)
    }

    /// The prompt as a user message.
    pub(crate) fn message(&self) -> UserMessage {
        UserMessage::new(self.text.clone())
    }
}

/// A prompt being filled; [`Filling::cancel`] stops its calls.
pub(crate) struct Filling {
    pub(crate) cancel: CancellationToken,
    task: tokio::task::JoinHandle<Result<Expanded, String>>,
}

impl Filling {
    /// Fills `pending` with `agent`'s tools and hooks, on a task of its own.
    pub(crate) fn start(agent: &golato::Agent, pending: Pending) -> Filling {
        let cancel = CancellationToken::new();
        let task = tokio::spawn(fill(agent.clone(), pending, cancel.clone()));
        Filling { cancel, task }
    }

    /// The prompt filled with what was kept beside it (the text typed), or why it was not.
    pub(crate) async fn finished_with<T>(
        filling: &mut Option<(Filling, T)>,
    ) -> (Result<Expanded, String>, Option<T>) {
        let Some((running, _)) = filling else {
            return std::future::pending().await;
        };
        let outcome = (&mut running.task).await;
        let kept = filling.take().map(|(_, kept)| kept);
        (
            outcome.unwrap_or_else(|error| Err(format!("filling the prompt failed: {error}"))),
            kept,
        )
    }

    /// The prompt filled, or why it was not.
    pub(crate) async fn finished(filling: &mut Option<Filling>) -> Result<Expanded, String> {
        let Some(running) = filling else {
            return std::future::pending().await;
        };
        let outcome = (&mut running.task).await;
        *filling = None;
        outcome.unwrap_or_else(|error| Err(format!("filling the prompt failed: {error}")))
    }
}

/// Runs `pending`'s pieces as calls of `agent` and puts what they gave in their places.
async fn fill(
    agent: golato::Agent,
    pending: Pending,
    cancel: CancellationToken,
) -> Result<Expanded, String> {
    let Pending {
        name,
        mut text,
        shell,
        files,
        tools,
        model,
    } = pending;
    let mut calls = Vec::new();
    for (index, (_, command)) in shell.iter().enumerate() {
        let arguments = serde_json::json!({ "command": command });
        calls.push(ToolCall::new(
            format!("expand-{index}"),
            "bash",
            arguments.to_string(),
        ));
    }
    for (index, path) in files.iter().enumerate() {
        let arguments = serde_json::json!({ "path": path });
        calls.push(ToolCall::new(
            format!("include-{index}"),
            "read",
            arguments.to_string(),
        ));
    }
    if calls.is_empty() {
        return Ok(Expanded {
            name,
            text,
            ran: Vec::new(),
            tools,
            model,
        });
    }
    let script = crate::setup::one_call::OneCall::new(AssistantMessage::with_tool_calls(calls));
    let run = agent
        .with_generator(std::sync::Arc::new(script))
        .start(UserMessage::new(format!("(golato fills {name})")));
    let mut blocked: Vec<(usize, String)> = Vec::new();
    let mut ended: Vec<(usize, ToolCall, ToolResultMessage)> = Vec::new();
    loop {
        tokio::select! {
            () = cancel.cancelled() => {
                run.cancel();
                let _ = run.finish().await;
                return Err(format!("{name} was not sent: stopped while its commands ran"));
            }
            event = run.next_event() => match event {
                Some(Event::ToolHook(hook)) => {
                    if let golato::hook::HookAction::Blocked { reason } = &hook.action {
                        blocked.push((hook.index, reason.clone()));
                    }
                }
                Some(Event::ToolExecutionEnd(end)) => ended.push((end.index, end.call, end.result)),
                Some(_) => {}
                None => break,
            }
        }
    }
    let _ = run.finish().await;
    if let Some((index, reason)) = blocked.first() {
        let what = match shell.get(*index) {
            Some((_, command)) => format!("!`{command}`"),
            None => format!(
                "@{}",
                files.get(index - shell.len()).map_or("", String::as_str)
            ),
        };
        return Err(format!(
            "{name} was not sent: {} was refused ({})",
            crate::view::shown::visible(&what),
            crate::view::shown::visible(reason.trim())
        ));
    }
    ended.sort_by_key(|(index, _, _)| *index);
    // The `!` pieces from the last back, so the earlier ranges still hold.
    for (index, (range, _)) in shell.iter().enumerate().rev() {
        let output = ended
            .iter()
            .find(|(at, _, _)| *at == index)
            .map(|(_, _, result)| result.text())
            .unwrap_or_default();
        text.replace_range(range.clone(), output.trim_end());
    }
    if !files.is_empty() {
        text.truncate(text.trim_end().len());
    }
    for (offset, path) in files.iter().enumerate() {
        let Some((_, _, result)) = ended.iter().find(|(at, _, _)| *at == shell.len() + offset)
        else {
            continue;
        };
        let content = result.text();
        match result.is_error {
            true => text.push_str(&format!(
                "\n\n@{path} could not be read: {}",
                content.trim()
            )),
            false => text.push_str(&format!("\n\nThe file {path}:\n{}", content.trim_end())),
        }
    }
    Ok(Expanded {
        name,
        text,
        ran: ended
            .into_iter()
            .map(|(_, call, result)| (call, result))
            .collect(),
        tools,
        model,
    })
}
