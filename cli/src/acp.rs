//! `golato acp`: golato as an Agent Client Protocol agent on standard input and output, for
//! editors and other programs that drive agents two-way.
//!
//! Each `session/new` builds an agent for the session's working directory (the flags of
//! `golato acp` are every session's defaults, the directory's configuration applies as it does
//! for `golato run`); each `session/prompt` is a run of its own, driven by a task of its own,
//! so prompts to different sessions run at once. A run's events become `session/update`
//! notifications; a call the rules or the approval mode ask about becomes a
//! `session/request_permission` request; `session/cancel` cancels the run as Ctrl-C does.
//! Sessions are saved in the same files as the command line's (`golato sessions` lists them,
//! `session/load` and `session/list` read them).

mod client_files;
#[cfg(feature = "durable")]
mod durable;
mod oversized;
mod permission;
mod prompt;
mod sessions;
mod updates;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use agent_client_protocol::v1::schema::{
    AgentCapabilities, CancelNotification, Implementation, InitializeRequest, InitializeResponse,
    ListSessionsRequest, ListSessionsResponse, LoadSessionRequest, LoadSessionResponse,
    McpCapabilities, McpServer, NewSessionRequest, NewSessionResponse, PromptCapabilities,
    PromptRequest, SessionCapabilities, SessionConfigOption, SessionConfigOptionCategory,
    SessionConfigSelectOption, SessionInfo, SessionListCapabilities, SessionMode, SessionModeState,
    SetSessionConfigOptionRequest, SetSessionConfigOptionResponse, SetSessionModeRequest,
    SetSessionModeResponse,
};
use agent_client_protocol::Agent;
use tokio_util::sync::CancellationToken;

use crate::args::{AcpArgs, AgentArgs, McpCommand};
use crate::error::{CliError, Exit};
use crate::settings::Settings;
use sessions::{list_sessions, load_session, new_session, set_config_option, set_mode};

/// The connection to the client, as handlers and drivers use it.
type Connection = agent_client_protocol::v1::ConnectionTo<agent_client_protocol::Client>;

/// The longest line read from the client; past it the line is answered as unreadable.
const MAX_LINE: u64 = 64 * 1024 * 1024;

/// What a line that cannot be a message becomes: not JSON, so the SDK answers it with a parse
/// error (-32700) and reads on.
const UNREADABLE_LINE: &str = "\u{FFFD} (a line that is not UTF-8 or is too long)";

/// Standard input and output as the connection's lines. A line that is not UTF-8, or longer
/// than [`MAX_LINE`], is handed on as an unreadable line rather than as an error of the
/// stream: the SDK's own standard input ended the connection, and every session with it, at
/// the first byte that was not UTF-8. A request too long to read (a prompt with a 100 MB
/// image) is answered at once with an error under its own ID, found at the line's head, so the
/// client is not left waiting; the rest of it is read and dropped, never held.
fn stdio_lines() -> agent_client_protocol::Lines<
    impl futures::Sink<String, Error = std::io::Error> + Send + 'static,
    impl futures::Stream<Item = std::io::Result<String>> + Send + 'static,
> {
    use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _};
    // Written a whole line at a time, by the SDK and by the reader's own answers.
    let stdout = Arc::new(tokio::sync::Mutex::new(tokio::io::stdout()));
    let answers = Arc::clone(&stdout);
    let reader = tokio::io::BufReader::new(tokio::io::stdin());
    let incoming = futures::stream::unfold(Some(reader), move |reader| {
        let answers = Arc::clone(&answers);
        async move {
            let mut reader = reader?;
            let mut line = Vec::new();
            match (&mut reader)
                .take(MAX_LINE + 1)
                .read_until(b'\n', &mut line)
                .await
            {
                Ok(0) => None,
                Ok(_) => {
                    let ended = line.last() == Some(&b'\n');
                    if !ended && line.len() as u64 > MAX_LINE {
                        let id = oversized::request_id(&line);
                        let head_length = line.len() as u64;
                        drop(line);
                        let rest = match oversized::drop_rest_of_line(&mut reader).await {
                            Ok(rest) => rest,
                            Err(error) => return Some((Err(error), None)),
                        };
                        if let Some(id) = id {
                            let answer = oversized::refusal(&id, head_length + rest);
                            if let Err(error) = write_line(&answers, answer).await {
                                return Some((Err(error), None));
                            }
                        }
                        return Some((Ok(UNREADABLE_LINE.to_owned()), Some(reader)));
                    }
                    while matches!(line.last(), Some(b'\n' | b'\r')) {
                        line.pop();
                    }
                    let text =
                        String::from_utf8(line).unwrap_or_else(|_| UNREADABLE_LINE.to_owned());
                    Some((Ok(text), Some(reader)))
                }
                Err(error) => Some((Err(error), None)),
            }
        }
    });
    let outgoing = futures::sink::unfold(stdout, |out, line: String| async move {
        write_line(&out, line).await?;
        Ok::<_, std::io::Error>(out)
    });
    agent_client_protocol::Lines::new(Box::pin(outgoing), Box::pin(incoming))
}

/// Writes `line` and a newline to standard output, whole, and flushes.
async fn write_line(
    out: &tokio::sync::Mutex<tokio::io::Stdout>,
    mut line: String,
) -> std::io::Result<()> {
    use tokio::io::AsyncWriteExt as _;
    line.push('\n');
    let mut out = out.lock().await;
    out.write_all(line.as_bytes()).await?;
    out.flush().await
}

/// A session: its conversation, and what the client is told of it.
pub(crate) struct Session {
    pub(crate) id: String,
    pub(crate) cwd: PathBuf,
    /// The agent, transcript, session file, approvals and hooks (a mode change builds the agent
    /// again from its settings).
    pub(crate) conversation: crate::conversation::Conversation,
    pub(crate) mode: &'static str,
    /// What the session's turns have cost so far, in dollars (where the price is known).
    pub(crate) spent: f64,
    /// Which API the session's model is reached through (`openai`, `anthropic`, `script`…).
    provider: &'static str,
    /// What the session's folder being untrusted left out (settings, instruction files): told
    /// the client with the first prompt's answer, since editors hide an agent's stderr.
    pub(crate) notice: Option<String>,
    /// With `--restate`: how many durable runs the session's prompts were (its next is one
    /// more).
    #[cfg_attr(not(feature = "durable"), allow(dead_code))]
    pub(crate) durable_runs: usize,
}

/// What every handler shares.
pub(crate) struct State {
    /// The flags as given, before any directory's configuration.
    defaults: AgentArgs,
    ephemeral: bool,
    pub(crate) permission_timeout: std::time::Duration,
    sessions: Mutex<HashMap<String, Arc<tokio::sync::Mutex<Session>>>>,
    /// The prompt each busy session works on: cancelled by `session/cancel`.
    busy: Mutex<HashMap<String, CancellationToken>>,
    /// Prompts being driven, to cancel and wait for when the client goes away.
    drivers: Mutex<Vec<tokio::task::JoinHandle<()>>>,
    /// What the client said of its files at `initialize`.
    client_files: Mutex<Option<agent_client_protocol::v1::schema::FileSystemCapabilities>>,
    /// With `--restate`: prompts are durable runs on that server.
    #[cfg(feature = "durable")]
    durable: Option<Arc<durable::Durable>>,
}

impl State {
    fn session(
        &self,
        id: &str,
    ) -> Result<Arc<tokio::sync::Mutex<Session>>, agent_client_protocol::Error> {
        self.sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(id)
            .cloned()
            .ok_or_else(|| {
                invalid_params(format!(
                    "no session {id} in this connection; create one with session/new or load a saved one with session/load"
                ))
            })
    }

    /// Marks `id` busy with a new prompt, or says it already is.
    pub(crate) fn begin_prompt(&self, id: &str) -> Option<CancellationToken> {
        let mut busy = self.busy.lock().unwrap_or_else(PoisonError::into_inner);
        if busy.contains_key(id) {
            return None;
        }
        let token = CancellationToken::new();
        busy.insert(id.to_owned(), token.clone());
        Some(token)
    }

    /// Refuses to change `what` of session `id` while it works on a prompt.
    fn idle(&self, id: &str, what: &str) -> Result<(), agent_client_protocol::Error> {
        let busy = self
            .busy
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains_key(id);
        match busy {
            true => Err(invalid_params(format!(
                "the session is working on a prompt; change its {what} once the prompt has ended (or cancel it)"
            ))),
            false => Ok(()),
        }
    }

    pub(crate) fn end_prompt(&self, id: &str) {
        self.busy
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id);
    }
}

/// An error answer naming what was wrong with the request.
pub(crate) fn invalid_params(message: impl Into<String>) -> agent_client_protocol::Error {
    // Whatever it echoes of the request is bounded.
    let message = crate::view::shown::cut(&message.into(), 4 * crate::view::shown::ECHOED_CHARS);
    agent_client_protocol::Error::new(-32602, message)
}

/// What golato tells a client at `initialize`: it loads and lists sessions, takes images and
/// embedded context in prompts, and HTTP MCP servers.
fn initialized(initialize: InitializeRequest) -> InitializeResponse {
    InitializeResponse::new(initialize.protocol_version)
        .agent_capabilities(
            AgentCapabilities::new()
                .load_session(true)
                .prompt_capabilities(PromptCapabilities::new().image(true).embedded_context(true))
                .mcp_capabilities(McpCapabilities::new().http(true))
                .session_capabilities(
                    SessionCapabilities::new().list(SessionListCapabilities::new()),
                ),
        )
        .agent_info(Implementation::new("golato", env!("CARGO_PKG_VERSION")))
}

/// The client went away (or the connection failed): every prompt is cancelled as Ctrl-C
/// cancels a run, and waited for, so no tool outlives the connection; then each session ends.
async fn wind_down(state: &State) {
    for token in state
        .busy
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .values()
    {
        token.cancel();
    }
    let drivers =
        std::mem::take(&mut *state.drivers.lock().unwrap_or_else(PoisonError::into_inner));
    for driver in drivers {
        let _ = driver.await;
    }
    // Each session ends as a front end's does: its SessionEnd hooks fire.
    let sessions: Vec<_> = std::mem::take(
        &mut *state
            .sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner),
    )
    .into_values()
    .collect();
    for session in sessions {
        session.lock().await.conversation.close().await;
    }
}

/// `golato acp`.
pub(crate) async fn command(args: AcpArgs) -> Result<Exit, CliError> {
    #[cfg(feature = "durable")]
    let durable = match &args.restate {
        Some(ingress) => Some(Arc::new(durable::Durable::new(
            ingress,
            args.restate_admin.as_deref(),
        )?)),
        None => None,
    };
    #[cfg(not(feature = "durable"))]
    if args.restate.is_some() {
        return Err(CliError::usage(
            "--restate needs durable runs, which this golato was built without; build it with its default features",
        ));
    }
    let state = Arc::new(State {
        defaults: args.agent,
        ephemeral: args.ephemeral,
        permission_timeout: args.permission_timeout,
        sessions: Mutex::default(),
        busy: Mutex::default(),
        drivers: Mutex::default(),
        client_files: Mutex::default(),
        #[cfg(feature = "durable")]
        durable,
    });
    let served = {
        let (s0, s1, s2, s3, s4, s5, s6, s7) = (
            Arc::clone(&state),
            Arc::clone(&state),
            Arc::clone(&state),
            Arc::clone(&state),
            Arc::clone(&state),
            Arc::clone(&state),
            Arc::clone(&state),
            Arc::clone(&state),
        );
        Agent
            .v1()
            .name("golato")
            .on_receive_request(
                async move |initialize: InitializeRequest, responder, _cx| {
                    *s0.client_files
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner) =
                        Some(initialize.client_capabilities.fs.clone());
                    responder.respond(initialized(initialize))
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |request: NewSessionRequest, responder, cx| {
                    let created = new_session(&s1, request, &cx).await;
                    let id = created
                        .as_ref()
                        .ok()
                        .map(|made| made.session_id.0.to_string());
                    let responded = responder.respond_with_result(created);
                    // The client knows the session once it has the answer: then its commands.
                    if let Some(id) = id {
                        sessions::announce_commands(&s1, &id, &cx).await;
                    }
                    responded
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |request: LoadSessionRequest, responder, cx| {
                    let loaded = load_session(&s2, request, &cx).await;
                    // A durable session's last run is followed once the client has the
                    // conversation before it.
                    #[cfg(feature = "durable")]
                    if let Ok((_, id)) = &loaded {
                        sessions::follow_last_run(&s2, id, &cx);
                    }
                    let id = loaded.as_ref().ok().map(|(_, id)| id.clone());
                    let responded =
                        responder.respond_with_result(loaded.map(|(response, _)| response));
                    if let Some(id) = id {
                        sessions::announce_commands(&s2, &id, &cx).await;
                    }
                    responded
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |request: ListSessionsRequest, responder, _cx| {
                    let _ = &s3;
                    responder.respond_with_result(list_sessions(&request))
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |request: SetSessionModeRequest, responder, _cx| {
                    responder.respond_with_result(set_mode(&s4, request).await)
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |request: SetSessionConfigOptionRequest, responder, _cx| {
                    responder.respond_with_result(set_config_option(&s7, request).await)
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |request: PromptRequest, responder, cx| {
                    prompt::start(Arc::clone(&s5), request, responder, cx).await
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_notification(
                async move |cancel: CancelNotification, _cx| {
                    let id = cancel.session_id.0.to_string();
                    if let Some(token) = s6
                        .busy
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .get(&id)
                    {
                        token.cancel();
                    }
                    Ok(())
                },
                agent_client_protocol::on_receive_notification!(),
            )
            .connect_to(stdio_lines())
            .await
    };
    wind_down(&state).await;
    match served {
        Ok(()) => Ok(Exit::Success),
        Err(error) => Err(CliError::Failed(format!(
            "the ACP connection failed: {error}"
        ))),
    }
}
