//! The conversation behind the front end: the agent, the session it is saved in, the run
//! being worked on, and the slash commands that change them (`/model`, `/compact`, `/new`,
//! `/resume`, `/fork`, `/approve`, `/diff`, `/init`, `/cost`).

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

use golato::agent::Event;
use golato::message::UserMessage;

use super::{transcript, Front};
use crate::view::report::Tally;

/// A run being worked on.
pub(crate) struct Running {
    pub(crate) run: golato::Run,
    pub(crate) started: Instant,
    pub(crate) tally: Tally,
    /// Characters of answer and reasoning streamed so far.
    pub(crate) streamed: usize,
    /// Calls running, by index.
    pub(crate) calls: HashMap<usize, LiveCall>,
    /// The answer streaming in: what the scrollback does not have yet.
    pub(crate) streaming: super::stream::Streaming,
    /// Files its edits and writes changed.
    pub(crate) changed: std::collections::BTreeSet<String>,
    pub(crate) cancelling: bool,
}

/// A call running, as the live area shows it.
pub(crate) struct LiveCall {
    pub(crate) began: Instant,
    /// The call in one short line: its tool and arguments.
    pub(crate) label: String,
    /// The last line of output it sent so far.
    pub(crate) latest: Option<String>,
}

/// The session and what runs in it.
pub(crate) struct Chat {
    /// The conversation the front end drives.
    pub(crate) conversation: crate::conversation::Conversation,
    /// What edits and writes of this session did, by file, in order (`/diff`).
    pub(crate) changes: BTreeMap<String, Vec<String>>,
    /// The agent not in use: the plan-mode one, or the normal one while planning.
    pub(crate) parked: Option<golato::Agent>,
    /// Whether the agent in use is the plan-mode one.
    pub(crate) planning: bool,
    /// What `!command`s the person ran printed, for the model with the next prompt.
    pub(crate) ran: Vec<String>,
    /// The run is `/init`'s: its answer is AGENTS.md.
    pub(crate) initializing: bool,
}

impl Chat {
    /// The footer as the conversation stands: model, approval (or plan) and sandbox modes;
    /// `used` tokens of the context when given (an answer's), else as before.
    pub(crate) fn show_modes(&self, front: &mut Front, used: Option<u64>) {
        let conversation = &self.conversation;
        let footer = &mut front.footer;
        footer.model = conversation.agent.model().id.clone();
        footer.approve = match self.planning {
            true => "plan".to_owned(),
            false => conversation.approver.mode().to_string(),
        };
        footer.sandbox = conversation.header.sandbox.mode.to_string();
        footer.background = conversation
            .background
            .as_ref()
            .map_or(0, golato::builtin::Background::running);
        footer.window = conversation.agent.context_window();
        footer.used = match used {
            Some(used) => used,
            // `/new`: nothing of the context used.
            None if conversation.transcript.is_empty() => 0,
            None => footer.used,
        };
    }

    /// `!command`: runs it with the session's bash, if nothing else runs.
    pub(crate) fn shell(&mut self, front: &mut Front, command: &str) {
        if front.running.is_some() || front.shell.is_some() {
            front.note("! runs a command between runs: wait for this one to end, or Esc it");
            return;
        }
        match super::shell::Shell::start(
            command,
            &self.conversation.settings,
            self.conversation.background.as_ref(),
        ) {
            Ok(shell) => front.shell = Some(shell),
            Err(why) => front.note(&format!("not run: {why}")),
        }
    }

    /// A `!command` ended: shown as a call is, and kept for the model.
    pub(crate) fn shell_ended(&mut self, front: &mut Front, result: golato::tool::ToolResult) {
        let Some(shell) = front.shell.take() else {
            return;
        };
        let width = front.width();
        let seconds = shell.started.elapsed().as_secs_f64();
        let message = golato::message::ToolResultMessage {
            tool_call_id: shell.call.id.clone(),
            tool_name: shell.call.name.clone(),
            content: result.content.clone(),
            details: result.details.clone(),
            is_error: result.is_error,
            attempt: None,
        };
        front.say(transcript::call_ended(
            &shell.call,
            &message,
            seconds,
            width,
        ));
        let command = serde_json::from_str::<serde_json::Value>(&shell.call.arguments)
            .ok()
            .and_then(|arguments| arguments["command"].as_str().map(str::to_owned))
            .unwrap_or_default();
        self.ran
            .push(super::shell::for_the_model(&command, &result));
    }

    /// Starts a run of `text` (its images attached); a command or skill it names is filled
    /// first (`send_filled` goes on).
    pub(crate) async fn send(&mut self, front: &mut Front, text: String) {
        if front.filling.is_some() {
            front.note("not sent: a command's prompt is being filled (Esc stops it)");
            front.editor.set_text(&text);
            return;
        }
        match self.conversation.prepare(&text) {
            Some(Ok(pending)) => {
                front.filling = Some((self.conversation.fill(pending), text));
                return;
            }
            Some(Err(why)) => {
                front.note(&format!("not sent: {why}"));
                front.editor.set_text(&text);
                return;
            }
            None => {}
        }
        let prompt = match super::mention::prompt(&text, &self.conversation.settings.cwd) {
            Ok(prompt) => prompt,
            Err(problem) => {
                front.note(&format!("not sent: {problem}"));
                front.editor.set_text(&text);
                return;
            }
        };
        self.start(front, &text, prompt, None).await;
    }

    /// A command's prompt filled: shown (the calls that filled it, its first lines) and sent.
    pub(crate) async fn send_filled(
        &mut self,
        front: &mut Front,
        (filled, typed): (
            Result<crate::conversation::expansion::Expanded, String>,
            Option<String>,
        ),
    ) {
        let typed = typed.unwrap_or_default();
        let expanded = match filled {
            Ok(expanded) => expanded,
            Err(why) => {
                front.note(&format!("not sent: {why}"));
                if front.editor.is_empty() {
                    front.editor.set_text(&typed);
                }
                return;
            }
        };
        let prompt = match super::mention::prompt(&expanded.text, &self.conversation.settings.cwd) {
            Ok(prompt) => prompt,
            Err(problem) => {
                front.note(&format!("not sent: {problem}"));
                return;
            }
        };
        self.start(front, &typed, prompt, Some(&expanded)).await;
    }

    /// Sends `prompt` (typed as `text`; filled from a command when `expanded`).
    async fn start(
        &mut self,
        front: &mut Front,
        text: &str,
        prompt: golato::message::UserMessage,
        expanded: Option<&crate::conversation::expansion::Expanded>,
    ) {
        let width = front.width();
        self.conversation.approver.heard(text);
        let prompt = match self.conversation.submitted(prompt).await {
            Ok(prompt) => prompt,
            Err(error) => {
                front.note(&error.to_string());
                return;
            }
        };
        front.say(transcript::prompt(text, width));
        if let Some(expanded) = expanded {
            for (call, result) in &expanded.ran {
                front.say(transcript::call_ended(call, result, 0.0, width));
            }
            front.note(&format!("{} sent as:", expanded.name));
            for line in expanded.first_lines(6) {
                front.note(&format!("  {line}"));
            }
        }
        let images = prompt.content.len().saturating_sub(1);
        if images > 0 {
            front.note(&format!(
                "attached {}",
                crate::view::shown::count(images as u64, "image")
            ));
        }
        // The person's own commands since the last prompt, before it.
        let mut prompt = prompt;
        for (at, ran) in self.ran.drain(..).enumerate() {
            prompt
                .content
                .insert(at, golato::message::Content::text(ran));
        }
        let run = match expanded {
            Some(expanded) => {
                let (run, notes) = self.conversation.start_expanded(prompt, expanded);
                for note in notes {
                    front.note(&note);
                }
                run
            }
            None => self.conversation.start(prompt),
        };
        front.running = Some(Running {
            run,
            started: Instant::now(),
            tally: Tally::default(),
            streamed: 0,
            calls: HashMap::new(),
            streaming: Default::default(),
            changed: Default::default(),
            cancelling: false,
        });
    }

    /// Shows and keeps what the run did.
    pub(crate) async fn on_event(&mut self, front: &mut Front, event: Event) {
        let width = front.width();
        let cancelling = front
            .running
            .as_ref()
            .is_some_and(|running| running.cancelling);
        self.conversation.keep(&event, cancelling);
        if let Some(running) = &mut front.running {
            running.tally.observe(&event);
        }
        match &event {
            Event::MessageStart(_) => {
                if let Some(running) = &mut front.running {
                    running.streaming = Default::default();
                }
            }
            Event::MessageUpdate(update) => streamed(front, &update.deltas),
            Event::MessageEnd(end) => {
                let usage = &end.message.usage;
                self.show_modes(front, Some(usage.prompt_tokens() + usage.output_tokens));
                let reasoning = end.message.reasoning.trim();
                if !reasoning.is_empty() {
                    front.reasoning = Some(reasoning.to_owned());
                }
                let streaming = front
                    .running
                    .as_mut()
                    .map(|running| std::mem::take(&mut running.streaming))
                    .unwrap_or_default();
                let text = end.message.text();
                match streaming.rest(&text) {
                    Some(rest) if streaming.started() => {
                        front.say(super::markdown::render(rest, width));
                    }
                    _ => front.say(transcript::answer(&end.message, width)),
                }
                if let Some(search) = &end.message.web_search {
                    for line in crate::view::sources::lines(search) {
                        front.note(&line);
                    }
                }
            }
            Event::ToolExecutionStart(start) => {
                if let Some(running) = &mut front.running {
                    running.calls.insert(
                        start.index,
                        LiveCall {
                            began: Instant::now(),
                            label: crate::view::live::call_label(&start.call),
                            latest: None,
                        },
                    );
                }
            }
            // The person changed the call before it ran: named as it runs, and timed from
            // now (the wait for the person is not the call's).
            Event::ToolHook(hook) => {
                if let golato::hook::HookAction::Rewrote { arguments } = &hook.action {
                    let ran = golato::message::ToolCall {
                        arguments: arguments.to_string(),
                        ..hook.call.clone()
                    };
                    let call = front
                        .running
                        .as_mut()
                        .and_then(|running| running.calls.get_mut(&hook.index));
                    if let Some(call) = call {
                        call.label = crate::view::live::call_label(&ran);
                        call.began = Instant::now();
                    }
                }
            }
            Event::ToolExecutionUpdate(update) => {
                let text = update
                    .partial_result
                    .content
                    .iter()
                    .rev()
                    .find_map(golato::message::Content::as_text)
                    .unwrap_or_default();
                let latest = text.lines().rev().find(|line| !line.trim().is_empty());
                let call = front
                    .running
                    .as_mut()
                    .and_then(|running| running.calls.get_mut(&update.index));
                if let (Some(call), Some(latest)) = (call, latest) {
                    call.latest = Some(crate::view::shown::visible(latest.trim_end()).into_owned());
                }
            }
            Event::ToolExecutionEnd(end) => {
                let running = front.running.as_mut();
                let began = running.and_then(|running| running.calls.remove(&end.index));
                let seconds = began.map_or(0.0, |call| call.began.elapsed().as_secs_f64());
                let changed = self.changed(&end.call, &end.result);
                if let Some(running) = &mut front.running {
                    running.changed.extend(changed);
                }
                front.say(transcript::call_ended(
                    &end.call,
                    &end.result,
                    seconds,
                    width,
                ));
            }
            Event::Subagent(nested) => {
                if let Event::ToolExecutionEnd(end) = &*nested.event {
                    // A child's edits are the session's too: /diff and the end line count them.
                    let changed = self.changed(&end.call, &end.result);
                    if let Some(running) = &mut front.running {
                        running.changed.extend(changed);
                    }
                    front.say(vec![transcript::nested_call_ended(
                        &end.call,
                        &end.result,
                        nested.path.len(),
                        width,
                    )]);
                }
            }
            Event::Retry(retry) => front.note(&crate::view::report::retrying(&retry.retrying)),
            Event::Compaction(compaction) => {
                front.note(&format!(
                    "context compacted: {} summarized",
                    crate::view::shown::count(compaction.replaced as u64, "earlier message")
                ));
            }
            Event::UserMessage(joined) => {
                let what = match joined.delivery {
                    golato::agent::event::Delivery::Steer => "steering",
                    golato::agent::event::Delivery::FollowUp => "follow-up",
                };
                front.note(&format!(
                    "↳ your {what} joined the conversation; the model reads it now"
                ));
            }
            Event::RunEnd(_) => self.finish(front).await,
            _ => {}
        }
    }

    /// The files an edit, a write or a captured command changed, kept with their diffs (a
    /// command's: what became of each file) for `/diff`.
    fn changed(
        &mut self,
        call: &golato::message::ToolCall,
        result: &golato::message::ToolResultMessage,
    ) -> Vec<String> {
        if call.name == "bash" {
            return self.commands_changes(result);
        }
        self.edited(call, result).into_iter().collect()
    }

    /// The files a captured command changed (listed in its result's details).
    fn commands_changes(&mut self, result: &golato::message::ToolResultMessage) -> Vec<String> {
        let changes =
            golato::builtin::captured_changes(result.details.as_ref()).unwrap_or_default();
        let mut paths = Vec::new();
        for change in changes {
            use golato::sandbox::capture::FileState;
            let what = match (&change.before, &change.after) {
                (FileState::Absent, _) => "made by a command (golato diff shows it)\n",
                (_, FileState::Absent) => "deleted by a command (golato diff shows it)\n",
                _ => "changed by a command (golato diff shows it)\n",
            };
            let path = change
                .path
                .strip_prefix(&self.conversation.header.cwd)
                .unwrap_or(&change.path)
                .display()
                .to_string();
            self.changes
                .entry(path.clone())
                .or_default()
                .push(what.to_owned());
            paths.push(path);
        }
        paths
    }

    /// The file an edit or a write changed, with its diff.
    fn edited(
        &mut self,
        call: &golato::message::ToolCall,
        result: &golato::message::ToolResultMessage,
    ) -> Option<String> {
        if result.is_error || !matches!(call.name.as_str(), "edit" | "write") {
            return None;
        }
        let arguments: serde_json::Value = serde_json::from_str(&call.arguments).ok()?;
        let path = arguments["path"].as_str()?.to_owned();
        let what = match result.details.as_ref().and_then(|d| d["diff"].as_str()) {
            Some(diff) => diff.to_owned(),
            None => {
                let bytes = arguments["content"].as_str().map_or(0, str::len);
                format!("written whole ({bytes} bytes)\n")
            }
        };
        self.changes.entry(path.clone()).or_default().push(what);
        Some(path)
    }

    /// The run is over: its outcome in one line, its transcript kept for the next prompt.
    pub(crate) async fn finish(&mut self, front: &mut Front) {
        let Some(running) = front.running.take() else {
            return;
        };
        let width = front.width();
        let outcome = running.run.finish().await;
        let seconds = running.started.elapsed().as_secs_f64();
        let cost = self
            .conversation
            .price
            .map(|price| price.cost(&running.tally.usage));
        front.tally.turns += running.tally.turns;
        front.tally.tool_calls += running.tally.tool_calls;
        front.tally.usage.input_tokens += running.tally.usage.input_tokens;
        front.tally.usage.output_tokens += running.tally.usage.output_tokens;
        let ending = match (&outcome, running.cancelling) {
            (_, true) => "interrupted".to_owned(),
            (Ok(_), false) => "done".to_owned(),
            (Err(error), false) => {
                front.note(&format!("golato: {}", crate::view::report::describe(error)));
                "failed".to_owned()
            }
        };
        front.say(transcript::summary(
            &running.tally,
            running.changed.len(),
            seconds,
            cost,
            &ending,
            width,
        ));
        let cancelled = running.cancelling;
        self.conversation.went_on(outcome);
        if std::mem::take(&mut self.initializing) {
            let answered = self
                .conversation
                .transcript
                .last()
                .filter(|_| !cancelled)
                .and_then(|last| match last {
                    golato::message::Message::Assistant(answer) => Some(answer.text()),
                    _ => None,
                });
            slash::offer_agents_md(front, answered);
        }
    }

    /// Text typed while a run works: steering (joined at the next point the run accepts it)
    /// or a follow-up (held until it would end).
    pub(crate) fn queue(front: &mut Front, text: &str, follow_up: bool) {
        let width = front.width();
        let Some(running) = front.running.as_ref() else {
            return;
        };
        let (how, sent) = match follow_up {
            true => ("follow-up", running.run.follow_up(UserMessage::new(text))),
            false => ("steering", running.run.steer(UserMessage::new(text))),
        };
        match sent {
            Ok(()) => front.say(transcript::queued(text, how, width)),
            Err(_) => front.note("not delivered: the run has ended"),
        }
    }
}

pub(super) mod slash;

/// Streamed text and reasoning: counted, and each block the text finishes committed to the
/// scrollback (the first after the reasoning's first line).
fn streamed(front: &mut Front, deltas: &[golato::generator::Delta]) {
    let width = front.width();
    for delta in deltas {
        let Some(running) = &mut front.running else {
            return;
        };
        match delta {
            golato::generator::Delta::Reasoning(text) => {
                running.streamed += text.chars().count();
                running.streaming.reasoning.push_str(text);
            }
            golato::generator::Delta::Text(text) => {
                running.streamed += text.chars().count();
                let first = !running.streaming.started();
                let Some(finished) = running.streaming.push(text) else {
                    continue;
                };
                let mut lines = Vec::new();
                if first {
                    lines.extend(transcript::thinking(&running.streaming.reasoning, width));
                    lines.push(ratatui::text::Line::default());
                }
                lines.extend(super::markdown::render(&finished, width));
                lines.push(ratatui::text::Line::default());
                front.say(lines);
            }
            _ => {}
        }
    }
}
