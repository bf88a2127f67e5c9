//! Validation of one batch's calls, in the documented order: ID present and unique, name
//! non-blank, name registered, arguments a JSON object, arguments satisfy the schema.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use crate::message::ToolCall;
use crate::tool::{CompiledSchema, Tool};

/// A tool with its schema compiled at `Agent::new`.
pub(crate) struct Registered {
    pub(crate) tool: Tool,
    pub(crate) schema: CompiledSchema,
}

/// The agent's tools by name, in registration order for messages that list them.
#[derive(Clone)]
pub(crate) struct Registry {
    /// Shared with the tool actors of the calls that name them (cloning an `Arc` is one
    /// counter, a `Tool` four).
    by_name: HashMap<String, Arc<Registered>>,
    names: Vec<String>,
}

impl Registry {
    pub(crate) fn new(tools: Vec<Tool>, schemas: Vec<CompiledSchema>) -> Registry {
        let names = tools.iter().map(|tool| tool.name().to_owned()).collect();
        let by_name = tools
            .into_iter()
            .zip(schemas)
            .map(|(tool, schema)| {
                let name = tool.name().to_owned();
                (name, Arc::new(Registered { tool, schema }))
            })
            .collect();
        Registry { by_name, names }
    }

    pub(crate) fn get(&self, name: &str) -> Option<&Arc<Registered>> {
        self.by_name.get(name)
    }

    /// The tools named in `names` that it has, in its own order.
    pub(crate) fn only(&self, names: &[&str]) -> Registry {
        let names: Vec<String> = self
            .names
            .iter()
            .filter(|name| names.contains(&name.as_str()))
            .cloned()
            .collect();
        let by_name = names
            .iter()
            .filter_map(|name| Some((name.clone(), Arc::clone(self.by_name.get(name)?))))
            .collect();
        Registry { by_name, names }
    }
}

/// What validation made of a call.
pub(crate) enum Prepared {
    /// The call fails validation; the text is its error result.
    Invalid(String),
    /// The call may run. Its parsed arguments are not kept: a batch's parsed arguments would
    /// all wait together for their calls to start (a JSON object costs over 600 bytes of heap
    /// whatever its size), so each call parses its own again where it runs.
    Valid { tool: Arc<Registered> },
}

/// How much of a long argument text an error message shows.
const EXCERPT_CHARS: usize = 2_000;

pub(crate) fn excerpt(text: &str) -> String {
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
pub(crate) fn prepare(registry: &Registry, calls: &[ToolCall]) -> Vec<Prepared> {
    let id_counts = IdCounts::new(calls);
    calls
        .iter()
        .map(|call| prepare_one(registry, call, id_counts.count(&call.id)))
        .collect()
}

/// How often each ID occurs in a batch. Batches are usually small: up to
/// [`IdCounts::SMALL`] calls are compared pairwise, which needs no table.
enum IdCounts<'a> {
    Small(&'a [ToolCall]),
    Table(HashMap<&'a str, usize>),
}

impl<'a> IdCounts<'a> {
    const SMALL: usize = 32;

    fn new(calls: &'a [ToolCall]) -> IdCounts<'a> {
        if calls.len() <= Self::SMALL {
            return IdCounts::Small(calls);
        }
        let mut table: HashMap<&str, usize> = HashMap::with_capacity(calls.len());
        for call in calls {
            *table.entry(call.id.as_str()).or_default() += 1;
        }
        IdCounts::Table(table)
    }

    fn count(&self, id: &str) -> usize {
        match self {
            IdCounts::Small(calls) => calls.iter().filter(|call| call.id == id).count(),
            IdCounts::Table(table) => table.get(id).copied().unwrap_or(0),
        }
    }
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
        tool: Arc::clone(registered),
    }
}
