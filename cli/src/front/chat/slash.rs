//! The slash commands that need the conversation: `/new`, `/model`, `/approve`, `/resume`,
//! `/compact`, `/fork`, `/diff`, `/init`, `/plan` and `/accept`, `/undo`.

use super::Chat;
use crate::args::Approve;
use crate::front::commands::Command;
use crate::front::{transcript, Front};

impl Chat {
    /// Carries out a command that needs the conversation.
    pub(crate) async fn command(
        &mut self,
        front: &mut Front,
        command: Command,
    ) -> Result<(), crate::error::CliError> {
        match command {
            Command::New => self.start_over(front)?,
            Command::Cost => {
                let usage = &front.tally.usage;
                let cost = self.conversation.price.map(|price| price.cost(usage));
                front.note(&format!(
                    "this session: {}, {} in, {} out{}",
                    crate::view::shown::count(front.tally.turns as u64, "turn"),
                    crate::view::shown::count(usage.input_tokens, "token"),
                    usage.output_tokens,
                    cost.map_or_else(String::new, |cost| format!(", ${cost:.4}"))
                ));
                if let Some(reviewer) = self.conversation.approver.reviewer() {
                    front.note(&reviewer.cost_line());
                }
            }
            Command::Processes => self.list_background(front),
            Command::Diagnostics(path) => match &self.conversation.diagnostics {
                None => front.note("no language server runs in this session (--no-lsp)"),
                Some(diagnostics) => {
                    let listed = diagnostics.listing(path.as_deref(), true).await;
                    for line in listed.unwrap_or_else(|why| why).lines() {
                        front.note(line);
                    }
                }
            },
            Command::Kill(id) => self.kill_background(front, id.as_deref()),
            Command::Agents => {
                let settings = &self.conversation.settings;
                let found = crate::setup::named_agents::gather(&settings.cwd, settings.trusted);
                let task_on = crate::setup::tools::wanted(settings);
                for line in crate::setup::named_agents::lines(&found, Some(task_on)) {
                    front.note(&line);
                }
                for warning in &found.warnings {
                    front.note(warning);
                }
            }
            Command::Tools => front.note(&format!(
                "tools: {}",
                self.conversation.header.tools.join(", ")
            )),
            Command::Sandbox => front.note(&format!(
                "sandbox: {}; approve: {}",
                self.conversation.header.sandbox.mode,
                self.conversation.approver.mode()
            )),
            Command::Model(None) => {
                let current = self.conversation.agent.model().id.clone();
                // An OpenAI-compatible server's own models, else the ones golato knows.
                let offered = match crate::setup::provider::server_models(
                    &self.conversation.settings,
                )
                .await
                {
                    Some(Ok(mut listed)) => {
                        listed.retain(|id| *id != current);
                        listed.insert(0, current.clone());
                        listed
                    }
                    Some(Err(why)) => {
                        front.note(&format!("/model: {why}"));
                        vec![current.clone()]
                    }
                    None => crate::setup::provider::offered_models(
                        self.conversation.header.provider,
                        &current,
                    ),
                };
                match offered.len() {
                    0 | 1 => front.note(&format!(
                        "model: {current} (/model NAME switches; the next turn uses it)"
                    )),
                    _ => front.pick(
                        offered
                            .into_iter()
                            .map(|id| crate::front::Pick {
                                label: match id == current {
                                    true => format!("{id} (now)"),
                                    false => id.clone(),
                                },
                                id,
                            })
                            .collect(),
                        crate::front::Picking::Model,
                    ),
                }
            }
            Command::Model(Some(name)) => self.switch_model(front, name),
            Command::Approve(None) => front.note(&format!(
                "approve: {} (/approve ask|edits|never changes it)",
                self.conversation.approver.mode()
            )),
            Command::Approve(Some(mode)) => self.set_approval(front, mode),
            Command::NextMode => self.next_mode(front)?,
            Command::Shell(command) => self.shell(front, &command),
            Command::Compact => self.compact(front).await,
            Command::Fork => self.fork(front),
            Command::Resume(None) => self.pick_session(front)?,
            Command::Resume(Some(id)) => {
                self.conversation.go_on_with(&id)?;
                self.changes.clear();
                let width = front.width();
                front.say(transcript::earlier(&self.conversation.transcript, width));
                front.note(&format!("going on with the session {id}"));
            }
            Command::Diff => self.diff(front),
            Command::Init => self.init(front).await,
            Command::Plan => self.plan(front)?,
            Command::Undo => self.undo(front)?,
            Command::Accept => {
                if !self.planning {
                    front.note("not in plan mode: /plan enters it");
                } else if front.running.is_some() {
                    front.note("the plan is still being made: accept it once the run ends");
                } else {
                    self.switch_agent();
                    front.planning = self.planning;
                    front.note("plan accepted: edits are back; the model carries the plan out");
                    self.send(front, crate::setup::plan_mode::ACCEPTED.to_owned())
                        .await;
                }
            }
        }
        Ok(())
    }

    /// `/plan`: into plan mode (the read-only agent that plans), or back out of it.
    /// Shift-Tab: never → edits → ask → plan (between runs) → never.
    fn next_mode(&mut self, front: &mut Front) -> Result<(), crate::error::CliError> {
        let next = match (self.planning, self.conversation.approver.mode()) {
            (true, _) => Approve::Never,
            (false, Approve::Never) => Approve::Edits,
            (false, Approve::Edits) => Approve::Ask,
            (false, Approve::Ask) if self.conversation.approver.reviewer().is_some() => {
                Approve::Auto
            }
            (false, Approve::Ask | Approve::Auto)
                if self.conversation.plan_mode.is_some() && front.running.is_none() =>
            {
                return self.plan(front);
            }
            (false, Approve::Ask | Approve::Auto) => Approve::Never,
        };
        if self.planning {
            self.plan(front)?;
        }
        self.set_approval(front, next);
        Ok(())
    }

    fn set_approval(&mut self, front: &mut Front, mode: Approve) {
        self.conversation.approver.set_mode(mode);
        self.conversation.header.approve = mode;
        let what = match mode {
            Approve::Ask => "every bash, write and edit call asks first",
            Approve::Edits => "edits inside the workspace go through; bash asks",
            Approve::Never => "nothing asks (the sandbox still holds)",
            Approve::Auto => "a reviewer model decides what would ask; the person what it cannot",
        };
        front.note(&format!("approve: {mode}: {what}"));
    }

    fn plan(&mut self, front: &mut Front) -> Result<(), crate::error::CliError> {
        if front.running.is_some() {
            front.note("/plan switches between runs: wait for this one to end, or Esc it");
            return Ok(());
        }
        if self.planning {
            self.switch_agent();
            front.planning = self.planning;
            front.note("plan mode left: the tools are as before; nothing was accepted");
            return Ok(());
        }
        if self.parked.is_none() {
            let Some(plan_mode) = &self.conversation.plan_mode else {
                front.note("plan mode is not available here");
                return Ok(());
            };
            self.parked = Some(plan_mode.agent(self.conversation.agent.model().clone())?);
        }
        self.switch_agent();
        front.planning = self.planning;
        front.note("plan mode: read-only sandbox, no edits; the model looks and sends a plan. /accept carries it out, /plan leaves");
        Ok(())
    }

    /// `/undo`: this session's last prompt taken back (its edits and writes), and the
    /// conversation cut back to before it.
    fn undo(&mut self, front: &mut Front) -> Result<(), crate::error::CliError> {
        if front.running.is_some() {
            front.note("/undo works between runs: wait for this one to end, or Esc it");
            return Ok(());
        }
        match self.conversation.undo() {
            Ok(done) => {
                self.changes.clear();
                front.note(&format!("undone: {done}"));
            }
            Err(error) => front.note(&error.to_string()),
        }
        Ok(())
    }

    /// Swaps the agent in use with the parked one.
    fn switch_agent(&mut self) {
        if let Some(parked) = &mut self.parked {
            std::mem::swap(&mut self.conversation.agent, parked);
            self.planning = !self.planning;
        }
    }

    /// `/compact`: the conversation summarized now, its recent messages kept.
    async fn compact(&mut self, front: &mut Front) {
        if self.conversation.transcript.is_empty() {
            front.note("nothing to compact yet");
            return;
        }
        front.note("compacting: the model summarizes the conversation…");
        front.draw();
        match self.conversation.compact().await {
            Ok(None) => front.note("nothing to compact: the conversation is all recent"),
            Ok(Some(compacted)) => {
                front.tally.usage.input_tokens += compacted.usage.input_tokens;
                front.tally.usage.output_tokens += compacted.usage.output_tokens;
                front.note(&format!(
                    "compacted: {} summarized, about {} → {} tokens",
                    crate::view::shown::count(compacted.replaced as u64, "earlier message"),
                    compacted.tokens_before,
                    compacted.tokens_after
                ));
            }
            Err(error) => front.note(&format!("could not compact: {error}")),
        }
    }

    /// `/fork`: a new session holding this conversation; the old one stays as it is.
    fn fork(&mut self, front: &mut Front) {
        front.note(&match self.conversation.fork() {
            Ok((Some(old), new)) => {
                format!("forked: this is now session {new}; {old} is kept as it was")
            }
            Ok((None, new)) => format!("forked: this is now session {new}"),
            Err(error) => format!("could not fork: {error}"),
        });
    }

    /// `/diff`: what this session's edits and writes changed, file by file.
    fn diff(&self, front: &mut Front) {
        if self.changes.is_empty() {
            front.note("no file changed by an edit, a write or a sandboxed command in this session (commands outside the sandbox are not tracked)");
            return;
        }
        let width = front.width();
        let mut lines = Vec::new();
        for (path, diffs) in &self.changes {
            lines.extend(transcript::diff(path, diffs, width));
        }
        front.say(lines);
        front.note("(commands outside the sandbox are not tracked)");
    }

    /// `/new`: a new session; the conversation starts over.
    fn start_over(&mut self, front: &mut Front) -> Result<(), crate::error::CliError> {
        self.conversation.start_over()?;
        self.changes.clear();
        front.note("a new session: the conversation starts over");
        Ok(())
    }

    /// `/model NAME`: the next turn asks another model of the same provider.
    fn switch_model(&mut self, front: &mut Front, name: String) {
        let model = self.conversation.switch_model(&name);
        if let Some(parked) = &mut self.parked {
            *parked = parked.with_model(model);
        }
        let when = match front.running {
            Some(_) => "the next prompt",
            None => "the next turn",
        };
        front.note(&format!("model: {name}; {when} asks it"));
    }

    /// `/resume`: the other sessions of this directory to pick from.
    fn pick_session(&mut self, front: &mut Front) -> Result<(), crate::error::CliError> {
        let (sessions, _) = crate::store::session::all()?;
        let cwd = self.conversation.header.cwd.clone();
        let current = self
            .conversation
            .saving
            .as_ref()
            .map(crate::store::session::Writer::id);
        let choices: Vec<crate::front::Pick> = sessions
            .iter()
            .filter(|saved| saved.header.cwd == cwd)
            .filter(|saved| Some(&saved.header.id) != current.as_ref())
            .map(|saved| crate::front::Pick {
                id: saved.header.id.clone(),
                label: format!(
                    "{} · {} · {} · {}",
                    saved.modified.elapsed().map_or_else(
                        |_| "now".to_owned(),
                        |since| crate::view::shown::ago(since.as_secs())
                    ),
                    crate::view::shown::count(saved.turns() as u64, "turn"),
                    saved.header.id,
                    crate::view::shown::visible(
                        saved.first_prompt().lines().next().unwrap_or_default()
                    )
                ),
            })
            .collect();
        if choices.is_empty() {
            front.note("no other session saved in this directory");
        } else {
            front.pick(choices, crate::front::Picking::Session);
        }
        Ok(())
    }
}

/// What `/init` asks the model. It answers with the file, which golato writes: the sandbox
/// keeps instruction files from the model's tools (they steer every later run).
const INIT_PROMPT: &str = "Draft AGENTS.md for this repository: what a coding agent working \
here must know. First read the repository (its README, build files, CI configuration, the \
layout of its sources and tests). Then answer with the file's content alone, in one ```markdown \
block: briefly, and only what you found: how to build, test, lint and format; the layout; the \
conventions the code keeps; anything surprising. Do not invent commands, and do not write the \
file yourself: golato writes your answer to AGENTS.md.";

impl Chat {
    /// `/ps`: the background commands, running ones first.
    fn list_background(&self, front: &mut Front) {
        let Some(background) = &self.conversation.background else {
            front.note("background commands are off (--max-background 0)");
            return;
        };
        let mut listed = background.list();
        if listed.is_empty() {
            front.note("no background commands in this session");
            return;
        }
        listed.sort_by_key(|command| (command.ended.is_some(), command.id));
        for command in listed {
            let state = match &command.ended {
                None => "running".to_owned(),
                Some(how) => how.clone(),
            };
            // What a command printed may hold escape sequences: shown, never obeyed.
            let shorter = |text: &str, most: usize| {
                let text = crate::view::shown::visible(text);
                match text.chars().count() > most {
                    true => format!("{}…", text.chars().take(most - 1).collect::<String>()),
                    false => text.into_owned(),
                }
            };
            let shown = shorter(&command.command, 60);
            let last = match command.last_line.is_empty() {
                true => String::new(),
                false => format!(" · {}", shorter(&command.last_line, 80)),
            };
            front.note(&format!(
                "{} {shown} · {:.0} s · {state}{last}",
                command.id,
                command.runtime.as_secs_f64(),
            ));
        }
        front.note("/kill ID ends one");
    }

    /// `/kill ID`: ends background command ID and everything it started.
    fn kill_background(&self, front: &mut Front, id: Option<&str>) {
        let Some(background) = &self.conversation.background else {
            front.note("background commands are off (--max-background 0)");
            return;
        };
        let Some(id) = id.and_then(|id| id.parse::<u64>().ok()) else {
            front.note("/kill takes the ID /ps shows: /kill 1");
            return;
        };
        match background.kill(id) {
            true => front.note(&format!(
                "{id} is being ended (SIGTERM, then SIGKILL after {} s); the model reads how at its next look",
                golato::builtin::KILL_GRACE.as_secs()
            )),
            false => front.note(&format!("{id} is not running; /ps lists the commands")),
        }
    }

    /// `/init`: the model reads the repository and drafts AGENTS.md; golato writes the draft
    /// when the run ends, never over an existing file.
    async fn init(&mut self, front: &mut Front) {
        let path = self.conversation.header.cwd.join("AGENTS.md");
        if std::fs::symlink_metadata(&path).is_ok() {
            front.note(&format!(
                "{} exists already; nothing was written",
                path.display()
            ));
            return;
        }
        if front.running.is_some() {
            front.note("/init works between runs: wait for this one to end, or Esc it");
            return;
        }
        front.note("/init: the model reads the repository and drafts AGENTS.md");
        self.send(front, INIT_PROMPT.to_owned()).await;
        self.initializing = front.running.is_some();
    }
}

/// Shows `/init`'s draft (the markdown block of its answer, else all of it) whole, as it would
/// be written, and asks whether to write it to AGENTS.md (`y`) or not.
pub(super) fn offer_agents_md(front: &mut Front, answer: Option<String>) {
    let Some(answer) = answer.filter(|answer| !answer.trim().is_empty()) else {
        front.note("/init: the model gave no draft; nothing was written");
        return;
    };
    let draft = fenced(&answer).unwrap_or(&answer).trim().to_owned();
    let width = front.width();
    let mut lines = vec![
        ratatui::text::Line::default(),
        ratatui::text::Line::styled(
            format!(
                "AGENTS.md as it would be written ({} lines):",
                draft.lines().count()
            ),
            ratatui::style::Style::default().add_modifier(ratatui::style::Modifier::BOLD),
        ),
    ];
    let room = width.saturating_sub(4).max(1);
    let shown: Vec<String> = crate::view::shown::visible(&draft)
        .lines()
        .map(str::to_owned)
        .collect();
    for (_, row) in super::super::draw::soft_wrapped(&shown, (0, 0), room).0 {
        lines.push(ratatui::text::Line::raw(format!("  │ {row}")));
    }
    front.say(lines);
    front.mode = super::super::Mode::Confirm { draft };
}

/// `y` on `/init`'s draft: AGENTS.md written in `cwd`, never over an existing file.
pub(crate) fn write_agents_md(front: &mut Front, cwd: &std::path::Path, draft: &str) {
    use std::io::Write as _;
    let path = cwd.join("AGENTS.md");
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
        .and_then(|mut file| file.write_all(format!("{draft}\n").as_bytes()));
    match written {
        Ok(()) => front.note(&format!(
            "wrote {} ({} lines): read it through, it steers every later run here",
            path.display(),
            draft.lines().count()
        )),
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => front.note(&format!(
            "{} appeared meanwhile; the draft was not written over it",
            path.display()
        )),
        Err(error) => front.note(&format!("could not write {}: {error}", path.display())),
    }
}

/// The inside of the first fenced block of `text` (its opening fence's info string dropped).
fn fenced(text: &str) -> Option<&str> {
    let start = text.find("```")?;
    let body = &text[start + 3..];
    let body = &body[body.find('\n')? + 1..];
    // The closing fence is the last one: a draft may quote commands in fences of its own.
    let end = body.rfind("```")?;
    Some(&body[..end])
}
