//! Tools: what the model may call.
//!
//! A [`Tool`] has a name, a description, a JSON schema for its arguments, an [`Execution`] mode
//! and a function. The function receives a [`ToolContext`] (the call, the run's cancellation, a
//! way to publish partial results) and the arguments, already checked against the schema, and
//! returns a [`ToolResult`] (also reachable as `tool::Result`) or an error. An error, like a
//! panic, becomes an error result the model sees; it does not fail the run.
//!
//! ```
//! use golato::tool::{Tool, ToolResult};
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//!
//! /// Arguments of `lookup_customer`.
//! #[derive(Deserialize, JsonSchema)]
//! struct Lookup {
//!     /// The customer ID, such as C-100.
//!     customer_id: String,
//! }
//!
//! let lookup = Tool::typed("lookup_customer", "Looks up a customer's plan.", |_ctx, args: Lookup| async move {
//!     match args.customer_id.as_str() {
//!         "C-100" => Ok(ToolResult::text("C-100 is on the Pro plan.")),
//!         other => Err(format!("no customer {other}").into()),
//!     }
//! });
//! golato::tool::validate(&[lookup])?;
//! # Ok::<(), golato::tool::Error>(())
//! ```

mod context;
mod schema;

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;
use futures::FutureExt;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::message::{joined_text, Content};

pub(crate) use context::CallHost;
pub use context::ToolContext;
#[cfg(feature = "mcp")]
pub(crate) use schema::IMAGE_TYPES;
pub(crate) use schema::{check_result, shown, CompiledSchema};

/// The error type tool functions return; anything that converts into it (`String`, `&str`,
/// `std::io::Error`, any `std::error::Error`) works with `?` and `.into()`.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// `tool::Result`: the page's name for [`ToolResult`].
pub type Result = ToolResult;

/// How a tool's calls may run within one batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Execution {
    /// Calls of one batch run concurrently (the default).
    #[default]
    Parallel,
    /// Calls run one after another; a batch that contains a call of such a tool runs wholly
    /// sequentially. The built-in `edit` and `write` tools use this mode.
    Sequential,
}

/// Whether a call of a journaled (durable) run runs again when the process running it died
/// before its result was recorded. Nothing can make a side effect happen exactly once; each
/// tool says which way an interruption errs.
///
/// Only a run with a journal retries calls (`golato serve`'s durable runs, `golato run
/// --journal`, [`Agent::start_journaled`](crate::agent::Agent::start_journaled)); a rule of the
/// agent's ([`SafeToReplay`](crate::journal::SafeToReplay)) can make single calls of a `Once`
/// tool `Safe`, never the other way.
///
/// ```
/// use golato::tool::{Replay, Tool, ToolResult};
///
/// let lookup = Tool::new("lookup", "Looks a word up.", serde_json::json!({"type": "object"}),
///     |_ctx, _args| async { Ok(ToolResult::text("found")) })
///     .with_replay(Replay::Safe);
/// assert_eq!(lookup.replay(), Replay::Safe);
/// ```
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Replay {
    /// Runs again, told its attempt ([`ToolContext::attempt`]): for calls that change nothing
    /// (golato's read, grep, find, ls) or whose repeat does no harm.
    Safe,
    /// Never runs again (the default for a tool, and for bash, edit, write and MCP tools that
    /// do not say they only read): the retry's result, an error, tells the model the call was
    /// interrupted and may have partly run, and to check before repeating it.
    #[default]
    Once,
}

impl Replay {
    /// `safe` or `once`.
    pub fn name(self) -> &'static str {
        match self {
            Replay::Safe => "safe",
            Replay::Once => "once",
        }
    }
}

/// What a tool adds to the result of a call it will not run again (see [`Replay::Once`]): what
/// it knows of the interrupted attempt (for bash, the changes its capture kept).
pub(crate) type InterruptedReport =
    dyn Fn(&crate::message::ToolCall) -> Option<ToolResult> + Send + Sync;

/// What a tool function returns: content for the model, details for the application.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct ToolResult {
    /// Text and image parts for the model. Empty is valid.
    pub content: Vec<Content>,
    /// Structured data for the application; not sent to the model.
    pub details: Option<Value>,
    /// Marks the result as a failure the model should react to.
    pub is_error: bool,
    /// Asks the agent to stop after this batch; honoured only when every call of the batch
    /// returns a successful result with `terminate` set.
    pub terminate: bool,
}

impl ToolResult {
    /// A successful result with one text part.
    pub fn text(text: impl Into<String>) -> Self {
        ToolResult {
            content: vec![Content::text(text)],
            ..ToolResult::default()
        }
    }

    /// An error result with one text part.
    pub fn error(text: impl Into<String>) -> Self {
        ToolResult {
            content: vec![Content::text(text)],
            is_error: true,
            ..ToolResult::default()
        }
    }

    /// Sets the details.
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    /// Asks the agent to stop after this batch (see [`ToolResult::terminate`]).
    pub fn with_terminate(mut self) -> Self {
        self.terminate = true;
        self
    }

    /// The text parts joined with newlines.
    pub fn text_content(&self) -> String {
        joined_text(&self.content)
    }
}

type AsyncFunction = dyn Fn(ToolContext, Value) -> BoxFuture<'static, std::result::Result<ToolResult, BoxError>>
    + Send
    + Sync;
type BlockingFunction =
    dyn Fn(ToolContext, Value) -> std::result::Result<ToolResult, BoxError> + Send + Sync;

#[derive(Clone)]
pub(crate) enum Function {
    /// Runs on its run's actor thread or the runtime's workers (`HostConfig::tool_tasks`).
    Async(Arc<AsyncFunction>),
    /// Runs on the runtime's blocking pool.
    Blocking(Arc<BlockingFunction>),
}

/// A tool the model may call. Cheap to clone.
#[derive(Clone)]
pub struct Tool {
    name: Arc<str>,
    description: Arc<str>,
    parameters: Arc<Value>,
    execution: Execution,
    timeout: Option<std::time::Duration>,
    replay: Replay,
    interrupted: Option<Arc<InterruptedReport>>,
    function: Function,
}

pub use crate::message::ToolDefinition;

impl fmt::Debug for Tool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tool")
            .field("name", &self.name)
            .field("execution", &self.execution)
            .field("replay", &self.replay)
            .finish_non_exhaustive()
    }
}

impl Tool {
    /// A tool from a JSON schema and an async function. The function's future runs on its
    /// run's actor thread (or on the host runtime's workers, as
    /// [`HostConfig::tool_tasks`](crate::HostConfig::tool_tasks) says): it must not block that
    /// thread, or every run on it waits. Do blocking or CPU-heavy work inside
    /// `tokio::task::spawn_blocking`, or build the tool with [`Tool::blocking`].
    ///
    /// The schema is compiled by `Agent::new` (or [`validate`]); its root must be
    /// `{"type": "object", ...}`.
    pub fn new<F, Fut>(
        name: impl Into<String>,
        description: impl Into<String>,
        parameters: Value,
        function: F,
    ) -> Tool
    where
        F: Fn(ToolContext, Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = std::result::Result<ToolResult, BoxError>> + Send + 'static,
    {
        let function: Arc<AsyncFunction> = Arc::new(move |ctx, args| function(ctx, args).boxed());
        Tool::with_function(name, description, parameters, Function::Async(function))
    }

    /// A tool whose function blocks (file I/O, CPU-heavy work); it runs on the host runtime's
    /// blocking pool, never on an actor or worker thread.
    pub fn blocking<F>(
        name: impl Into<String>,
        description: impl Into<String>,
        parameters: Value,
        function: F,
    ) -> Tool
    where
        F: Fn(ToolContext, Value) -> std::result::Result<ToolResult, BoxError>
            + Send
            + Sync
            + 'static,
    {
        Tool::with_function(
            name,
            description,
            parameters,
            Function::Blocking(Arc::new(function)),
        )
    }

    /// A tool whose schema derives from the argument type `A` (with `schemars`), and whose
    /// function receives the arguments deserialized into `A`.
    pub fn typed<A, F, Fut>(
        name: impl Into<String>,
        description: impl Into<String>,
        function: F,
    ) -> Tool
    where
        A: JsonSchema + DeserializeOwned + Send + 'static,
        F: Fn(ToolContext, A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = std::result::Result<ToolResult, BoxError>> + Send + 'static,
    {
        let name = name.into();
        let parameters = Value::from(schemars::schema_for!(A));
        let tool_name = name.clone();
        let function: Arc<AsyncFunction> =
            Arc::new(move |ctx, args| match serde_json::from_value::<A>(args) {
                Ok(args) => function(ctx, args).boxed(),
                Err(error) => {
                    let message = format!(
                        "the arguments of {tool_name} do not fit its parameter type: {error}"
                    );
                    async move { Err(message.into()) }.boxed()
                }
            });
        Tool::with_function(name, description, parameters, Function::Async(function))
    }

    fn with_function(
        name: impl Into<String>,
        description: impl Into<String>,
        parameters: Value,
        function: Function,
    ) -> Tool {
        Tool {
            name: Arc::from(name.into()),
            description: Arc::from(description.into()),
            parameters: Arc::new(parameters),
            execution: Execution::Parallel,
            timeout: None,
            replay: Replay::Once,
            interrupted: None,
            function,
        }
    }

    /// Sets whether a journaled run runs an interrupted call of this tool again (see
    /// [`Replay`]; `Once` unless set).
    pub fn with_replay(mut self, replay: Replay) -> Tool {
        self.replay = replay;
        self
    }

    /// Whether a journaled run runs an interrupted call of this tool again.
    pub fn replay(&self) -> Replay {
        self.replay
    }

    /// Gives the result of an interrupted call that is not run again what `report` knows of
    /// the attempt that was cut short.
    pub(crate) fn with_interrupted_report(mut self, report: Arc<InterruptedReport>) -> Tool {
        self.interrupted = Some(report);
        self
    }

    pub(crate) fn interrupted_report(&self) -> Option<&Arc<InterruptedReport>> {
        self.interrupted.as_ref()
    }

    /// Sets how this tool's calls run within a batch.
    pub fn with_execution(mut self, execution: Execution) -> Tool {
        self.execution = execution;
        self
    }

    /// Sets how long one call of this tool may run (overriding `agent::Config::tool_timeout`).
    /// A call past it is cancelled through its [`ToolContext`], and its result is an error
    /// saying it timed out; a function that ignores the cancellation is abandoned after the
    /// agent's grace period (`agent::Config::tool_timeout_grace`).
    pub fn with_timeout(mut self, timeout: std::time::Duration) -> Tool {
        self.timeout = Some(timeout);
        self
    }

    /// The timeout set by [`Tool::with_timeout`], if any.
    pub fn timeout(&self) -> Option<std::time::Duration> {
        self.timeout
    }

    /// The name the model calls it by.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What the tool does, for the model.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// JSON schema of the arguments.
    pub fn parameters(&self) -> &Value {
        &self.parameters
    }

    /// How its calls run within a batch.
    pub fn execution(&self) -> Execution {
        self.execution
    }

    /// Name, description and schema, as sent to a model.
    pub fn definition(&self) -> ToolDefinition {
        ToolDefinition {
            name: self.name.to_string(),
            description: self.description.to_string(),
            parameters: Value::clone(&self.parameters),
        }
    }

    /// Calls the tool's function directly, without validation, events or the actor runtime
    /// (tests, benchmarks, one-off calls). `arguments` are not checked against the schema; a
    /// typed tool still reports arguments that do not deserialize. A blocking function runs on
    /// the current tokio runtime's blocking pool when there is one, else on this thread.
    ///
    /// # Errors
    /// What the function returned as an error; a panic of a blocking function run on the
    /// blocking pool is reported as an error too.
    pub async fn invoke(
        &self,
        context: ToolContext,
        arguments: Value,
    ) -> std::result::Result<ToolResult, BoxError> {
        match &self.function {
            Function::Async(function) => function(context, arguments).await,
            Function::Blocking(function) => match tokio::runtime::Handle::try_current() {
                Ok(runtime) => {
                    let function = Arc::clone(function);
                    runtime
                        .spawn_blocking(move || function(context, arguments))
                        .await
                        .unwrap_or_else(|error| Err(format!("tool panicked: {error}").into()))
                }
                Err(_) => function(context, arguments),
            },
        }
    }

    pub(crate) fn function(&self) -> &Function {
        &self.function
    }
}

/// Why a set of tools cannot be registered.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Error {
    /// A tool's name is empty or only whitespace.
    #[error("tool #{index} has a blank name; give every tool a non-empty name")]
    BlankName {
        /// Position of the tool in the list.
        index: usize,
    },
    /// Two tools share a name.
    #[error("two tools are named {name:?}; tool names must be unique, so rename or drop one")]
    DuplicateName {
        /// The shared name.
        name: String,
    },
    /// A tool's schema is not a valid JSON schema.
    #[error(
        "the parameter schema of tool {name:?} does not compile: {reason}; fix the JSON schema"
    )]
    InvalidSchema {
        /// The tool.
        name: String,
        /// What the schema compiler said.
        reason: String,
    },
    /// A tool's schema does not describe an object.
    #[error(
        "the parameter schema of tool {name:?} must have \"type\": \"object\" at its root (found {found}); \
         describe the arguments as an object with properties"
    )]
    SchemaRootNotObject {
        /// The tool.
        name: String,
        /// What the root's `type` was.
        found: String,
    },
}

/// Checks that `tools` can be registered together: no blank or duplicate names, and every
/// schema compiles with an object root. `Agent::new` runs the same checks.
///
/// # Errors
/// The first problem found, as an [`Error`] naming the tool.
pub fn validate(tools: &[Tool]) -> std::result::Result<(), Error> {
    compile(tools).map(|_| ())
}

/// Compiles every tool's schema once, checking names as well.
pub(crate) fn compile(tools: &[Tool]) -> std::result::Result<Vec<CompiledSchema>, Error> {
    let mut seen = std::collections::HashSet::with_capacity(tools.len());
    tools
        .iter()
        .enumerate()
        .map(|(index, tool)| {
            if tool.name().trim().is_empty() {
                return Err(Error::BlankName { index });
            }
            if !seen.insert(tool.name()) {
                return Err(Error::DuplicateName {
                    name: tool.name().to_owned(),
                });
            }
            CompiledSchema::compile(tool.name(), tool.parameters())
        })
        .collect()
}
