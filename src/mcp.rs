//! Tools from MCP servers: connect to a server over stdio (a child process golato owns and
//! reaps) or streamable HTTP, list its tools, and register each as a golato [`Tool`].
//!
//! A call of an MCP tool goes through golato's whole pipeline like any tool: its arguments are
//! validated against the server's input schema before anything is sent, it runs in its own
//! tool actor, MCP progress notifications become partial updates, and cancelling the call sends
//! MCP's cancel notification. Text, image, resource and resource-link content map to golato
//! content; a result with `isError` is an error result. When the server dies during a call, that
//! call gets an error result and the next call starts (or reconnects to) the server again.
//!
//! ```no_run
//! use golato::mcp::{McpServer, McpServerConfig};
//!
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! let server = McpServer::connect(McpServerConfig::command_line(
//!     "npx -y @modelcontextprotocol/server-everything",
//! )?)
//! .await?;
//! // Named `{prefix}_{tool}` (the prefix defaults to the server's name): `everything_echo`.
//! let tools = server.tools().await?;
//! # Ok(())
//! # }
//! ```

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use adapter::{progress_text, sanitize, to_tool_result, tool_name};
use futures::StreamExt;
use golato_actors::Host;
use rmcp::handler::client::progress::ProgressDispatcher;
use rmcp::model::{
    CallToolRequestParams, CancelledNotificationParam, ClientRequest, ProgressNotificationParam,
    Request, ServerResult,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RunningService};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::Value;

use crate::tool::{BoxError, Tool, ToolContext, ToolResult};

mod adapter;
mod config;
mod process;

pub use config::{McpServerConfig, McpTransport, DEFAULT_CONNECT_TIMEOUT, DEFAULT_REQUEST_TIMEOUT};
pub use process::stop_servers;
use process::{BoundedLines, Diagnosis, ServerProcess};

/// Why an MCP server could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The command line of a stdio server is blank.
    #[error("the MCP server's command line is empty; give the program to run, such as `npx -y @modelcontextprotocol/server-everything`")]
    EmptyCommand,
    /// A command line whose quotes do not close.
    #[error("the MCP server's command line {0:?} has a quote that does not close; quote each argument with spaces in '…' or \"…\"")]
    Quoting(String),
    /// The server could not be started or reached, or did not complete MCP's handshake.
    #[error("could not connect to the MCP server `{server}`: {reason}; check the command (is it installed?) or the URL")]
    Connect {
        /// The command line or URL.
        server: String,
        /// What went wrong.
        reason: String,
    },
    /// The server did not list its tools.
    #[error("the MCP server `{server}` did not list its tools: {reason}")]
    ListTools {
        /// The command line or URL.
        server: String,
        /// What went wrong.
        reason: String,
    },
    /// The actor host is not running.
    #[error(transparent)]
    Host(#[from] golato_actors::HostError),
}

/// The client side of one connection: forwards progress, remembers a changed tool list.
struct Handler {
    progress: ProgressDispatcher,
    tools_changed: Arc<AtomicBool>,
}

impl ClientHandler for Handler {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress.handle_notification(params).await;
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.tools_changed.store(true, Ordering::SeqCst);
    }
}

/// One live connection: the MCP session, and for a stdio server its process (whose group is
/// killed when the last holder of the connection lets go) and what it did wrong.
struct Connection {
    service: RunningService<RoleClient, Handler>,
    _process: Option<ServerProcess>,
    diagnosis: Diagnosis,
}

impl std::ops::Deref for Connection {
    type Target = RunningService<RoleClient, Handler>;

    fn deref(&self) -> &Self::Target {
        &self.service
    }
}

/// A connection to one MCP server, shared by the tools it gave. Cheap to clone. Dropping the
/// last clone (and the last of its tools) closes the connection; a stdio server's process is
/// killed and reaped.
#[derive(Clone)]
pub struct McpServer {
    inner: Arc<Inner>,
}

struct Inner {
    config: McpServerConfig,
    host: Host,
    prefix: String,
    connection: tokio::sync::Mutex<Option<Arc<Connection>>>,
    tools_changed: Arc<AtomicBool>,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("server", &self.inner.config.describe())
            .field("prefix", &self.inner.prefix)
            .finish_non_exhaustive()
    }
}

impl McpServer {
    /// Starts (stdio) or reaches (HTTP) the server and completes MCP's handshake.
    ///
    /// # Errors
    /// [`Error::Connect`] when the server cannot be started or reached or does not speak MCP.
    pub async fn connect(config: McpServerConfig) -> Result<McpServer, Error> {
        let host = match &config.host {
            Some(host) => host.clone(),
            None => Host::global()?,
        };
        let tools_changed = Arc::new(AtomicBool::new(false));
        let connection = open(&config, &host, Arc::clone(&tools_changed)).await?;
        let prefix = match &config.prefix {
            Some(prefix) => sanitize(prefix),
            None => {
                let name = connection
                    .peer_info()
                    .and_then(|info| info.server_info.as_ref().map(|server| server.name.clone()))
                    .unwrap_or_else(|| "mcp".to_owned());
                // "mcp-servers/everything" → "everything".
                sanitize(name.rsplit('/').next().unwrap_or("mcp"))
            }
        };
        Ok(McpServer {
            inner: Arc::new(Inner {
                config,
                host,
                prefix,
                connection: tokio::sync::Mutex::new(Some(Arc::new(connection))),
                tools_changed,
            }),
        })
    }

    /// What this server's tool names start with.
    pub fn prefix(&self) -> &str {
        &self.inner.prefix
    }

    /// Whether the server said its tool list changed since [`McpServer::tools`] last read it:
    /// call `tools` again and build the agent anew to use the new list.
    pub fn tools_changed(&self) -> bool {
        self.inner.tools_changed.load(Ordering::SeqCst)
    }

    /// The server's tools as golato tools, named `{prefix}_{name}`, with the server's input
    /// schemas (compiled and checked by `Agent::new` like any tool's).
    ///
    /// # Errors
    /// [`Error::ListTools`] when the server does not answer; [`Error::Connect`] when it had
    /// gone and cannot be started again.
    pub async fn tools(&self) -> Result<Vec<Tool>, Error> {
        self.inner.tools_changed.store(false, Ordering::SeqCst);
        let connection = self.connection().await.map_err(|reason| Error::Connect {
            server: self.inner.config.describe(),
            reason,
        })?;
        let timeout = self.inner.config.request_timeout;
        let listed = match tokio::time::timeout(timeout, connection.list_all_tools()).await {
            Ok(listed) => listed.map_err(|error| Error::ListTools {
                server: self.inner.config.describe(),
                reason: format!("{error}{}", connection.diagnosis.suffix()),
            })?,
            Err(_) => {
                self.forget(&connection).await;
                return Err(Error::ListTools {
                    server: self.inner.config.describe(),
                    reason: format!(
                        "no answer within {} s{}",
                        timeout.as_secs_f64(),
                        connection.diagnosis.suffix()
                    ),
                });
            }
        };
        Ok(listed
            .into_iter()
            .map(|tool| {
                let name = tool.name.to_string();
                let schema = Value::Object(tool.input_schema.as_ref().clone());
                let description = tool
                    .description
                    .map(|text| text.to_string())
                    .unwrap_or_default();
                // The server's own word that the tool changes nothing: a durable run may
                // run an interrupted call of it again.
                let replay = match tool
                    .annotations
                    .as_ref()
                    .and_then(|annotations| annotations.read_only_hint)
                {
                    Some(true) => crate::tool::Replay::Safe,
                    _ => crate::tool::Replay::Once,
                };
                let server = self.clone();
                Tool::new(
                    tool_name(&self.inner.prefix, &name),
                    description,
                    schema,
                    move |ctx: ToolContext, arguments: Value| {
                        let (server, name) = (server.clone(), name.clone());
                        async move { server.call(&name, arguments, ctx).await }
                    },
                )
                .with_replay(replay)
            })
            .collect())
    }

    /// The live connection, started again when the last one ended.
    async fn connection(&self) -> Result<Arc<Connection>, String> {
        let mut slot = self.inner.connection.lock().await;
        if let Some(connection) = slot.as_ref().filter(|connection| !connection.is_closed()) {
            return Ok(Arc::clone(connection));
        }
        tracing::info!(server = %self.inner.config.describe(), "connecting to the MCP server again");
        let connection = Arc::new(
            open(
                &self.inner.config,
                &self.inner.host,
                Arc::clone(&self.inner.tools_changed),
            )
            .await
            .map_err(|error| error.to_string())?,
        );
        *slot = Some(Arc::clone(&connection));
        Ok(connection)
    }

    /// Forgets `connection` if it is still the current one (it broke).
    async fn forget(&self, connection: &Arc<Connection>) {
        let mut slot = self.inner.connection.lock().await;
        if slot
            .as_ref()
            .is_some_and(|current| Arc::ptr_eq(current, connection))
        {
            *slot = None;
        }
    }

    async fn call(
        &self,
        name: &str,
        arguments: Value,
        ctx: ToolContext,
    ) -> Result<ToolResult, BoxError> {
        let prefix = &self.inner.prefix;
        let connection = self.connection().await.map_err(|reason| {
            format!("the MCP server {prefix} is gone and could not be started again: {reason}")
        })?;
        let mut params = CallToolRequestParams::new(name.to_owned());
        params.arguments = arguments.as_object().cloned();
        let handle = connection
            .send_cancellable_request(
                ClientRequest::CallToolRequest(Request::new(params)),
                PeerRequestOptions::no_options(),
            )
            .await;
        let handle = match handle {
            Ok(handle) => handle,
            Err(error) => {
                self.forget(&connection).await;
                return Err(format!(
                    "the MCP server {prefix} could not be sent the call ({error}); the next call starts it again"
                )
                .into());
            }
        };
        let request_id = handle.id.clone();
        let mut progress = connection
            .service()
            .progress
            .subscribe(handle.progress_token.clone())
            .await;
        let response = handle.await_response();
        tokio::pin!(response);
        let timeout = self.inner.config.request_timeout;
        let deadline = tokio::time::sleep(timeout);
        tokio::pin!(deadline);
        let cancel = |reason: &'static str| {
            let notice =
                CancelledNotificationParam::new(Some(request_id.clone()), Some(reason.to_owned()));
            let connection = Arc::clone(&connection);
            async move {
                if let Err(error) = connection.notify_cancelled(notice).await {
                    tracing::debug!(%error, "could not tell the MCP server the call was cancelled");
                }
            }
        };
        let outcome = loop {
            tokio::select! {
                outcome = &mut response => break outcome,
                Some(step) = progress.next() => {
                    deadline.as_mut().reset(tokio::time::Instant::now() + timeout);
                    ctx.update(ToolResult::text(progress_text(&step)));
                }
                () = &mut deadline => {
                    cancel("no answer within the client's request timeout").await;
                    return Err(format!(
                        "the MCP server {prefix} did not answer the call of {name} within {} s (nor sent progress){}; the call was cancelled",
                        timeout.as_secs_f64(),
                        connection.diagnosis.suffix()
                    )
                    .into());
                }
                () = ctx.cancelled() => {
                    cancel("cancelled by the agent").await;
                    return Err(format!("the call of {name} on the MCP server {prefix} was cancelled").into());
                }
            }
        };
        match outcome {
            Ok(ServerResult::CallToolResult(result)) => {
                let value = serde_json::to_value(&result).map_err(|error| error.to_string())?;
                Ok(to_tool_result(&value))
            }
            Ok(other) => Err(format!(
                "the MCP server {prefix} answered the call of {name} with something else: {}",
                crate::tool::shown(serde_json::to_string(&other).unwrap_or_default())
            )
            .into()),
            Err(error) => {
                self.forget(&connection).await;
                Err(format!(
                    "the MCP server {prefix} failed during the call of {name} ({error}){}; the next call starts it again",
                    connection.diagnosis.suffix()
                )
                .into())
            }
        }
    }
}

/// Opens a connection on the host's runtime (the connection's tasks live there, not on the
/// caller's runtime, which may be gone by the time a tool is called), within the config's
/// connect timeout. A stdio server that does not finish the handshake in time is stopped.
async fn open(
    config: &McpServerConfig,
    host: &Host,
    tools_changed: Arc<AtomicBool>,
) -> Result<Connection, Error> {
    let handler = Handler {
        progress: ProgressDispatcher::new(),
        tools_changed,
    };
    let server = config.describe();
    let transport = config.transport.clone();
    let timeout = config.connect_timeout;
    let diagnosis = Diagnosis::default();
    let seen = diagnosis.clone();
    let opened = host.runtime().spawn(async move {
        match transport {
            McpTransport::Stdio { program, args, env } => {
                let (process, stdout, stdin) = ServerProcess::start(&program, &args, &env)
                    .map_err(|error| format!("could not start {program}: {error}"))?;
                tracing::debug!(pid = ?process.id(), %program, "started an MCP server");
                // rmcp's own line limit is set past golato's, so that golato's check (which
                // says why) always comes first.
                let transport = rmcp::transport::async_rw::AsyncRwTransport::new_client(
                    BoundedLines::new(stdout, seen.clone()),
                    stdin,
                )
                .with_max_line_length(process::MAX_MESSAGE_BYTES + 1024 * 1024);
                match tokio::time::timeout(timeout, handler.serve(transport)).await {
                    Ok(Ok(service)) => Ok((service, Some(process))),
                    Ok(Err(error)) => Err(format!("{error}{}", seen.suffix())),
                    Err(_) => Err(format!(
                        "it did not complete MCP's handshake within {} s{}; it was stopped (a server that needs longer to start, such as a first `npx -y` download, needs a longer connect timeout)",
                        timeout.as_secs_f64(),
                        seen.suffix()
                    )),
                }
            }
            McpTransport::Http { url } => {
                let transport = rmcp::transport::StreamableHttpClientTransport::from_uri(url);
                match tokio::time::timeout(timeout, handler.serve(transport)).await {
                    Ok(Ok(service)) => Ok((service, None)),
                    Ok(Err(error)) => Err(error.to_string()),
                    Err(_) => Err(format!(
                        "it did not complete MCP's handshake within {} s (a server that needs longer needs a longer connect timeout)",
                        timeout.as_secs_f64()
                    )),
                }
            }
        }
    });
    match opened.await {
        Ok(Ok((service, process))) => Ok(Connection {
            service,
            _process: process,
            diagnosis,
        }),
        Ok(Err(reason)) => Err(Error::Connect { server, reason }),
        Err(error) => Err(Error::Connect {
            server,
            reason: format!("the connecting task ended: {error}"),
        }),
    }
}

#[cfg(test)]
mod tests;
