//! One batch's calls: validation (in the documented order) and the jobs that run valid calls.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use futures::FutureExt;
use golato_actors::batch::{Job, Work};
use golato_actors::Mailbox;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::run_actor::{CallUpdate, RunActor};
use crate::message::{ToolCall, ToolResultMessage};
use crate::tool::{
    check_result, BoxError, CompiledSchema, Function, Tool, ToolContext, ToolResult, UpdateSink,
};

/// A tool with its schema compiled at `Agent::new`.
pub(crate) struct Registered {
    pub(crate) tool: Tool,
    pub(crate) schema: CompiledSchema,
}

/// The agent's tools by name, in registration order for messages that list them.
pub(crate) struct Registry {
    by_name: HashMap<String, Registered>,
    names: Vec<String>,
}

impl Registry {
    pub(crate) fn new(tools: Vec<Tool>, schemas: Vec<CompiledSchema>) -> Registry {
        let names = tools.iter().map(|tool| tool.name().to_owned()).collect();
        let by_name = tools
            .into_iter()
            .zip(schemas)
            .map(|(tool, schema)| (tool.name().to_owned(), Registered { tool, schema }))
            .collect();
        Registry { by_name, names }
    }

    pub(crate) fn get(&self, name: &str) -> Option<&Registered> {
        self.by_name.get(name)
    }
}

/// What validation made of a call.
pub(crate) enum Prepared {
    /// The call fails validation; the text is its error result.
    Invalid(String),
    /// The call may run.
    Valid { tool: Tool, arguments: Value },
}

/// How much of a long argument text an error message shows.
const EXCERPT_CHARS: usize = 2_000;

fn excerpt(text: &str) -> String {
    match text.char_indices().nth(EXCERPT_CHARS) {
        Some((cut, _)) => format!("{}… ({} bytes in all)", &text[..cut], text.len()),
        None => text.to_owned(),
    }
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Validates every call of a batch: ID present and unique, name non-blank, name registered,
/// arguments a JSON object, arguments satisfy the schema. The first failure wins.
pub(crate) fn prepare(registry: &Registry, calls: &[Arc<ToolCall>]) -> Vec<Prepared> {
    let mut id_counts: HashMap<&str, usize> = HashMap::with_capacity(calls.len());
    for call in calls {
        *id_counts.entry(call.id.as_str()).or_default() += 1;
    }
    calls
        .iter()
        .map(|call| {
            prepare_one(
                registry,
                call,
                id_counts.get(call.id.as_str()).copied().unwrap_or(0),
            )
        })
        .collect()
}

fn prepare_one(registry: &Registry, call: &ToolCall, id_count: usize) -> Prepared {
    let name = &call.name;
    if call.id.is_empty() {
        return Prepared::Invalid(format!(
            "The call to {name:?} has no ID; every tool call needs a non-empty ID that is unique within the response. Re-issue it with an ID."
        ));
    }
    if id_count > 1 {
        return Prepared::Invalid(format!(
            "The tool call ID {:?} appears {id_count} times in this response; IDs must be unique, so none of those calls ran. Re-issue them with distinct IDs.",
            call.id
        ));
    }
    if name.trim().is_empty() {
        return Prepared::Invalid(format!(
            "Tool call {:?} has a blank tool name. Call one of: {}.",
            call.id,
            registry.names.join(", ")
        ));
    }
    let Some(registered) = registry.get(name) else {
        return Prepared::Invalid(format!(
            "Tool {name:?} not found. Available tools: {}.",
            if registry.names.is_empty() {
                "none".to_owned()
            } else {
                registry.names.join(", ")
            }
        ));
    };
    let arguments: Value = match serde_json::from_str(&call.arguments) {
        Ok(arguments) => arguments,
        Err(error) => {
            return Prepared::Invalid(format!(
                "The arguments of {name} are not valid JSON ({error}); send a JSON object. Received: {}",
                excerpt(&call.arguments)
            ))
        }
    };
    if !arguments.is_object() {
        return Prepared::Invalid(format!(
            "The arguments of {name} must be a JSON object, but they are {}: {}",
            json_kind(&arguments),
            excerpt(&call.arguments)
        ));
    }
    if let Err(report) = registered.schema.check(&arguments) {
        return Prepared::Invalid(format!("Invalid arguments for {name}. {report}"));
    }
    Prepared::Valid {
        tool: registered.tool.clone(),
        arguments,
    }
}

/// A call's final result and whether it asked to end the run.
#[derive(Debug)]
pub(crate) struct CallOutcome {
    pub(crate) message: ToolResultMessage,
    pub(crate) terminate: bool,
}

impl CallOutcome {
    pub(crate) fn error(call: &ToolCall, text: impl Into<String>) -> CallOutcome {
        CallOutcome {
            message: ToolResultMessage {
                tool_call_id: call.id.clone(),
                tool_name: call.name.clone(),
                content: vec![crate::message::Content::text(text)],
                details: None,
                is_error: true,
            },
            terminate: false,
        }
    }

    fn from_result(call: &ToolCall, result: ToolResult) -> CallOutcome {
        CallOutcome {
            message: ToolResultMessage {
                tool_call_id: call.id.clone(),
                tool_name: call.name.clone(),
                content: result.content,
                details: result.details,
                is_error: result.is_error,
            },
            terminate: result.terminate,
        }
    }
}

/// Where a running call's partial results go: checked, then forwarded to the run actor.
pub(crate) struct CallSink {
    mailbox: Mailbox<RunActor>,
    batch: u64,
    index: usize,
    cancel: CancellationToken,
    returned: AtomicBool,
    invalid_update: Mutex<Option<String>>,
}

impl UpdateSink for CallSink {
    fn publish(&self, partial: ToolResult) {
        if self.returned.load(Ordering::Acquire) {
            return;
        }
        match check_result(&partial) {
            Ok(()) => self.mailbox.do_send(CallUpdate {
                batch: self.batch,
                index: self.index,
                partial,
            }),
            Err(reason) => {
                self.invalid_update
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .get_or_insert(reason);
                self.cancel.cancel();
            }
        }
    }
}

impl CallSink {
    /// Marks the function as returned and turns what it returned into the call's outcome.
    fn conclude(&self, call: &ToolCall, returned: Result<ToolResult, BoxError>) -> CallOutcome {
        self.returned.store(true, Ordering::Release);
        let invalid_update = self
            .invalid_update
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(reason) = invalid_update {
            return CallOutcome::error(
                call,
                format!(
                    "Tool {} published an invalid partial result, so it was stopped: {reason}",
                    call.name
                ),
            );
        }
        match returned {
            Ok(result) => match check_result(&result) {
                Ok(()) => CallOutcome::from_result(call, result),
                Err(reason) => CallOutcome::error(
                    call,
                    format!("Tool {} returned an invalid result: {reason}", call.name),
                ),
            },
            Err(error) => CallOutcome::error(call, error.to_string()),
        }
    }
}

/// Everything a valid call's job needs besides the tool and its arguments.
pub(crate) struct JobSetup {
    pub(crate) mailbox: Mailbox<RunActor>,
    pub(crate) batch: u64,
    pub(crate) index: usize,
    pub(crate) call: Arc<ToolCall>,
    pub(crate) cancel: CancellationToken,
    pub(crate) span: tracing::Span,
}

/// The job that runs a valid call's function on the host runtime.
pub(crate) fn job(setup: JobSetup, tool: Tool, arguments: Value) -> Job<CallOutcome> {
    let sink = Arc::new(CallSink {
        mailbox: setup.mailbox,
        batch: setup.batch,
        index: setup.index,
        cancel: setup.cancel.clone(),
        returned: AtomicBool::new(false),
        invalid_update: Mutex::new(None),
    });
    let updates: Arc<dyn UpdateSink> = sink.clone();
    let context = ToolContext::new(Arc::clone(&setup.call), setup.cancel, updates);
    let call = setup.call;
    let work = match tool.function().clone() {
        Function::Async(function) => Work::Async(Box::new(move || {
            async move {
                let returned = function(context, arguments).await;
                sink.conclude(&call, returned)
            }
            .boxed()
        })),
        Function::Blocking(function) => Work::Blocking(Box::new(move || {
            let returned = function(context, arguments);
            sink.conclude(&call, returned)
        })),
    };
    Job {
        index: setup.index,
        work,
        span: setup.span,
    }
}
