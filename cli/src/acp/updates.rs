//! A run's events as the protocol's session updates: streamed text and reasoning as chunks,
//! each call as a `tool_call` (kind, title, locations, arguments) and `tool_call_update`s
//! (running, then completed or failed with its output, an edit's or a write's diff).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use agent_client_protocol::v1::schema::{
    Content, ContentBlock, ContentChunk, Cost, Diff, SessionUpdate, TextContent, ToolCall,
    ToolCallContent, ToolCallLocation, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields,
    ToolKind, UsageUpdate,
};
use golato::agent::Event;
use golato::message::{Message, ToolCall as GolatoCall, ToolResultMessage};

/// The most of a file read to show an edit's or a write's diff.
const DIFF_LIMIT: u64 = 4 * 1024 * 1024;

fn text(text: impl Into<String>) -> ContentBlock {
    ContentBlock::Text(TextContent::new(text))
}

fn kind(tool: &str) -> ToolKind {
    match tool {
        "read" => ToolKind::Read,
        "edit" | "write" => ToolKind::Edit,
        "bash" => ToolKind::Execute,
        "grep" | "find" | "ls" => ToolKind::Search,
        _ => ToolKind::Other,
    }
}

fn arguments(call: &GolatoCall) -> serde_json::Value {
    serde_json::from_str(&call.arguments).unwrap_or(serde_json::Value::Null)
}

/// The call as the client first sees it: what it is, where, with what.
fn announced(call: &GolatoCall, cwd: &Path, status: ToolCallStatus) -> ToolCall {
    let arguments = arguments(call);
    let mut announced = ToolCall::new(call.id.clone(), crate::view::live::call_label(call))
        .kind(kind(&call.name))
        .status(status)
        .raw_input(arguments.clone());
    if let Some(path) = arguments["path"].as_str() {
        announced = announced.locations(vec![ToolCallLocation::new(cwd.join(path))]);
    }
    announced
}

/// A file's text for a diff (up to `DIFF_LIMIT`; empty when it cannot be read), read where
/// blocking is allowed: a file of megabytes must not hold a runtime thread that other
/// sessions' prompts need.
fn text_of(path: &Path) -> String {
    let read = || {
        crate::bounded::read(path, DIFF_LIMIT)
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
            .unwrap_or_default()
    };
    match tokio::runtime::Handle::try_current().map(|handle| handle.runtime_flavor()) {
        Ok(tokio::runtime::RuntimeFlavor::MultiThread) => tokio::task::block_in_place(read),
        _ => read(),
    }
}

/// Turns one run's events into updates; it remembers what a diff needs between a call's start
/// and end.
pub(crate) struct Updates {
    cwd: PathBuf,
    /// Files as they were when an edit or a write started, by call ID.
    before: HashMap<String, (PathBuf, String)>,
    /// The context window, for `usage` updates (none are sent without it).
    window: Option<u64>,
    price: Option<golato::generator::Price>,
    /// What the session has cost so far, in dollars.
    pub(crate) spent: f64,
}

impl Updates {
    pub(crate) fn new(
        cwd: &Path,
        window: Option<u64>,
        price: Option<golato::generator::Price>,
        spent: f64,
    ) -> Updates {
        Updates {
            cwd: cwd.to_owned(),
            before: HashMap::new(),
            window,
            price,
            spent,
        }
    }

    /// After an answer: how full the context is (what the request sent and the answer), and
    /// what the session has cost, where the model's price is known.
    fn usage(&mut self, usage: &golato::message::Usage) -> Option<SessionUpdate> {
        if let Some(price) = self.price {
            self.spent += price.cost(usage);
        }
        let window = self.window?;
        let used = usage.prompt_tokens() + usage.output_tokens;
        if used == 0 {
            return None;
        }
        let update = UsageUpdate::new(used, window);
        Some(SessionUpdate::UsageUpdate(match self.price {
            Some(_) => update.cost(Cost::new(self.spent, "USD")),
            None => update,
        }))
    }

    /// The updates `event` makes, in order.
    pub(crate) fn of(&mut self, event: &Event) -> Vec<SessionUpdate> {
        match event {
            Event::MessageUpdate(update) => update
                .deltas
                .iter()
                .filter_map(|delta| match delta {
                    golato::generator::Delta::Text(chunk) if !chunk.is_empty() => Some(
                        SessionUpdate::AgentMessageChunk(ContentChunk::new(text(chunk.clone()))),
                    ),
                    golato::generator::Delta::Reasoning(chunk) if !chunk.is_empty() => Some(
                        SessionUpdate::AgentThoughtChunk(ContentChunk::new(text(chunk.clone()))),
                    ),
                    _ => None,
                })
                .collect(),
            // Announced as soon as the model has made them, before any runs.
            Event::MessageEnd(end) => {
                let mut updates: Vec<SessionUpdate> = end
                    .message
                    .tool_calls
                    .iter()
                    .map(|call| {
                        SessionUpdate::ToolCall(announced(call, &self.cwd, ToolCallStatus::Pending))
                    })
                    .collect();
                if let Some(search) = &end.message.web_search {
                    let sources = crate::view::sources::markdown(search);
                    updates.push(SessionUpdate::AgentMessageChunk(ContentChunk::new(text(
                        sources,
                    ))));
                }
                updates.extend(self.usage(&end.message.usage));
                updates
            }
            Event::ToolExecutionStart(start) => {
                let call = &start.call;
                if matches!(call.name.as_str(), "edit" | "write") {
                    if let Some(path) = arguments(call)["path"].as_str() {
                        let full = self.cwd.join(path);
                        let old = text_of(&full);
                        self.before.insert(call.id.clone(), (full, old));
                    }
                }
                vec![SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                    call.id.clone(),
                    ToolCallUpdateFields::new().status(ToolCallStatus::InProgress),
                ))]
            }
            // A subagent's calls, as calls of their own under an ID naming the path to them
            // (the protocol has no nesting); the task call itself carries the answer.
            Event::Subagent(nested) => match &*nested.event {
                Event::ToolExecutionStart(start) => {
                    let mut call = start.call.clone();
                    call.id = format!("{}/{}", nested.path.join("/"), call.id);
                    let mut announced = announced(&call, &self.cwd, ToolCallStatus::InProgress);
                    announced.title = format!("↳ {}", announced.title);
                    vec![SessionUpdate::ToolCall(announced)]
                }
                Event::ToolExecutionEnd(end) => {
                    let mut call = end.call.clone();
                    call.id = format!("{}/{}", nested.path.join("/"), call.id);
                    vec![self.ended(&call, &end.result)]
                }
                _ => Vec::new(),
            },
            Event::ToolExecutionEnd(end) => {
                let mut updates = vec![self.ended(&end.call, &end.result)];
                // The plan, whole, as the client shows plans.
                if let Some(plan) = golato::builtin::plan_of(&end.result) {
                    updates.push(SessionUpdate::Plan(plan_update(&plan)));
                }
                updates
            }
            _ => Vec::new(),
        }
    }

    fn ended(&mut self, call: &GolatoCall, result: &ToolResultMessage) -> SessionUpdate {
        let status = match (result.is_error, background_started(result)) {
            (true, _) => ToolCallStatus::Failed,
            // A background command's call stays in progress until the command ends.
            (false, Some(_)) => ToolCallStatus::InProgress,
            (false, None) => ToolCallStatus::Completed,
        };
        let mut content = Vec::new();
        if let (Some((path, old)), false) = (self.before.remove(&call.id), result.is_error) {
            let new = text_of(&path);
            content.push(ToolCallContent::Diff(Diff::new(path, new).old_text(old)));
        }
        let output = result.text();
        if !output.is_empty() {
            content.push(ToolCallContent::Content(Content::new(text(output))));
        }
        SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
            call.id.clone(),
            ToolCallUpdateFields::new()
                .status(status)
                .content(content)
                .raw_output(result.details.clone()),
        ))
    }
}

/// The ID of the background command `result` started and left running, if it did.
pub(crate) fn background_started(result: &ToolResultMessage) -> Option<u64> {
    let background = result.details.as_ref()?.get("background")?;
    let running = background.get("running")?.as_bool()?;
    let started = background.get("started")?.as_bool()?;
    (running && started).then(|| background.get("id")?.as_u64())?
}

/// The update that ends a background command's call, once the command has ended `how`.
pub(crate) fn background_ended(call_id: &str, how: &str) -> SessionUpdate {
    let status = match how.starts_with("exited with code 0") {
        true => ToolCallStatus::Completed,
        false => ToolCallStatus::Failed,
    };
    SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
        call_id.to_owned(),
        ToolCallUpdateFields::new()
            .status(status)
            .content(vec![ToolCallContent::Content(Content::new(text(format!(
                "The background command {how}."
            ))))]),
    ))
}

/// A saved conversation as updates, for `session/load`: prompts, answers, reasoning, and
/// each call with its outcome.
pub(crate) fn replay(transcript: &[Message], cwd: &Path) -> Vec<SessionUpdate> {
    let mut updates = Vec::new();
    for message in transcript {
        match message {
            Message::User(user) => {
                let said = user.text();
                if !said.is_empty() {
                    updates.push(SessionUpdate::UserMessageChunk(ContentChunk::new(text(
                        said,
                    ))));
                }
            }
            Message::Assistant(answer) => {
                if !answer.reasoning.is_empty() {
                    updates.push(SessionUpdate::AgentThoughtChunk(ContentChunk::new(text(
                        answer.reasoning.to_string(),
                    ))));
                }
                let said = answer.text();
                if !said.is_empty() {
                    updates.push(SessionUpdate::AgentMessageChunk(ContentChunk::new(text(
                        said,
                    ))));
                }
                for call in &answer.tool_calls {
                    updates.push(SessionUpdate::ToolCall(announced(
                        call,
                        cwd,
                        ToolCallStatus::Pending,
                    )));
                }
            }
            Message::ToolResult(result) => {
                let status = match result.is_error {
                    true => ToolCallStatus::Failed,
                    false => ToolCallStatus::Completed,
                };
                updates.push(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                    result.tool_call_id.clone(),
                    ToolCallUpdateFields::new().status(status).content(vec![
                        ToolCallContent::Content(Content::new(text(result.text()))),
                    ]),
                )));
            }
        }
    }
    updates
}

/// An `update_plan` call's plan as ACP's.
fn plan_update(plan: &[golato::builtin::PlanStep]) -> agent_client_protocol::v1::schema::Plan {
    use agent_client_protocol::v1::schema::{Plan, PlanEntry, PlanEntryPriority, PlanEntryStatus};
    use golato::builtin::StepStatus;
    Plan::new(
        plan.iter()
            .map(|step| {
                let status = match step.status {
                    StepStatus::Completed => PlanEntryStatus::Completed,
                    StepStatus::InProgress => PlanEntryStatus::InProgress,
                    _ => PlanEntryStatus::Pending,
                };
                PlanEntry::new(step.step.clone(), PlanEntryPriority::Medium, status)
            })
            .collect(),
    )
}
