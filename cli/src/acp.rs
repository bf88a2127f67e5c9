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
mod prompt;
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
use crate::settings::Settings;
use crate::{CliError, Exit};

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
/// the first byte that was not UTF-8.
fn stdio_lines() -> agent_client_protocol::Lines<
    impl futures::Sink<String, Error = std::io::Error> + Send + 'static,
    impl futures::Stream<Item = std::io::Result<String>> + Send + 'static,
> {
    use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _};
    let reader = tokio::io::BufReader::new(tokio::io::stdin());
    let incoming = futures::stream::unfold(Some(reader), |reader| async move {
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
                    // The rest of the line is read and dropped, piece by piece.
                    let mut rest = Vec::new();
                    loop {
                        rest.clear();
                        match (&mut reader)
                            .take(MAX_LINE)
                            .read_until(b'\n', &mut rest)
                            .await
                        {
                            Ok(0) => break,
                            Ok(_) if rest.last() == Some(&b'\n') => break,
                            Ok(_) => {}
                            Err(error) => return Some((Err(error), None)),
                        }
                    }
                    return Some((Ok(UNREADABLE_LINE.to_owned()), Some(reader)));
                }
                while matches!(line.last(), Some(b'\n' | b'\r')) {
                    line.pop();
                }
                let text = String::from_utf8(line).unwrap_or_else(|_| UNREADABLE_LINE.to_owned());
                Some((Ok(text), Some(reader)))
            }
            Err(error) => Some((Err(error), None)),
        }
    });
    let outgoing = futures::sink::unfold(tokio::io::stdout(), |mut out, line: String| async move {
        out.write_all(line.as_bytes()).await?;
        out.write_all(b"\n").await?;
        out.flush().await?;
        Ok::<_, std::io::Error>(out)
    });
    agent_client_protocol::Lines::new(Box::pin(outgoing), Box::pin(incoming))
}

/// The modes a session offers: what its tools may touch.
const MODES: [(&str, &str, &str); 4] = [
    (
        "read-only",
        "Read only",
        "Tools read the workspace; nothing is written, no network.",
    ),
    (
        "workspace-write",
        "Workspace write",
        "Tools write the working directory (and /tmp), no network: the default.",
    ),
    (
        "full-access",
        "Full access",
        "No sandbox: tools reach everything the user can.",
    ),
    (
        "plan",
        "Plan",
        "Read only, no edits: the model looks and sends a plan. Switch to another mode to carry it out.",
    ),
];

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

/// The settings of a session in `cwd`: the flags, the directory's configuration (as trusted),
/// and the client's MCP servers besides the configuration's.
fn session_settings(
    state: &State,
    cwd: &Path,
    mcp_servers: &[McpServer],
) -> Result<Settings, CliError> {
    let mut args = state.defaults.clone();
    args.cwd = cwd.to_owned();
    let mut settings = crate::settings::resolve(args, false)?;
    for server in mcp_servers {
        match server {
            McpServer::Stdio(stdio) => settings.mcp_commands.push(McpCommand {
                program: stdio.command.display().to_string(),
                args: stdio.args.clone(),
                env: stdio
                    .env
                    .iter()
                    .map(|variable| (variable.name.clone(), variable.value.clone()))
                    .collect(),
            }),
            McpServer::Http(http) => settings.mcp_url.push(http.url.clone()),
            _ => {
                return Err(CliError::usage(
                    "an MCP server of a transport golato does not speak (it takes stdio and HTTP)",
                ))
            }
        }
    }
    Ok(settings)
}

/// The settings a session mode asks for.
fn with_mode(mut settings: Settings, mode: &str) -> Settings {
    // Plan mode's own sandbox and tools are applied when the agent is built.
    settings.plan = mode == "plan";
    if settings.plan {
        return settings;
    }
    settings.sandbox.mode = match mode {
        "read-only" => golato::sandbox::Mode::ReadOnly,
        "full-access" => golato::sandbox::Mode::Off,
        _ => golato::sandbox::Mode::WorkspaceWrite,
    };
    settings
}

/// The mode a session starts in: the one its flags ask for.
fn mode_of(settings: &Settings) -> &'static str {
    if settings.plan {
        return "plan";
    }
    match settings.sandbox.mode {
        golato::sandbox::Mode::ReadOnly => "read-only",
        golato::sandbox::Mode::Off => "full-access",
        _ => "workspace-write",
    }
}

fn modes(current: &str) -> SessionModeState {
    SessionModeState::new(
        current.to_owned(),
        MODES
            .iter()
            .map(|(id, name, what)| SessionMode::new(*id, *name).description(*what))
            .collect(),
    )
}

/// The session's settings a client may change: the model, among the ones golato knows of the
/// session's provider (a model named with `--model` is offered too).
fn config_options(session: &Session) -> Vec<SessionConfigOption> {
    let current = session.conversation.agent.model().id.clone();
    let family = match session.provider {
        "anthropic" => Some("claude-"),
        "openai" | "openai-responses" => Some("gpt-"),
        _ => None,
    };
    let mut models: Vec<String> = vec![current.clone()];
    for known in golato::generator::known_models() {
        if family.is_some_and(|family| known.starts_with(family)) && known != current {
            models.push(known.to_owned());
        }
    }
    let options: Vec<SessionConfigSelectOption> = models
        .into_iter()
        .map(|id| {
            let name = if id.is_empty() {
                "(recorded script)".to_owned()
            } else {
                id.clone()
            };
            SessionConfigSelectOption::new(id, name)
        })
        .collect();
    vec![
        SessionConfigOption::select("model", "Model", current, options)
            .category(SessionConfigOptionCategory::Model)
            .description("The model the next turn asks".to_owned()),
    ]
}

async fn set_config_option(
    state: &State,
    request: SetSessionConfigOptionRequest,
) -> Result<SetSessionConfigOptionResponse, agent_client_protocol::Error> {
    let id = request.session_id.0.to_string();
    let session = state.session(&id)?;
    if &*request.config_id.0 != "model" {
        return Err(invalid_params(format!(
            "no setting {}; the one setting is model",
            request.config_id.0
        )));
    }
    let Some(model) = request.value.as_value_id().map(|value| value.0.to_string()) else {
        return Err(invalid_params("model takes a model's ID"));
    };
    state.idle(&id, "model")?;
    let mut session = session.lock().await;
    let chosen = crate::setup::provider::model_named(&session.conversation.settings, &model);
    session.conversation.price = chosen.price;
    session.conversation.agent = session.conversation.agent.with_model(chosen);
    session.conversation.settings.model = Some(model);
    Ok(SetSessionConfigOptionResponse::new(config_options(
        &session,
    )))
}

/// Builds a session's agent: its approvals go to the client (never to a terminal).
async fn build(settings: &Settings) -> Result<crate::setup::agent::Built, CliError> {
    crate::setup::agent::build_agent(settings, None, true).await
}

fn to_protocol(error: CliError) -> agent_client_protocol::Error {
    agent_client_protocol::Error::new(
        -32603,
        crate::view::shown::visible(&crate::view::shown::echoed(&error.to_string())).into_owned(),
    )
}

async fn new_session(
    state: &State,
    request: NewSessionRequest,
    cx: &Connection,
) -> Result<NewSessionResponse, agent_client_protocol::Error> {
    if !request.cwd.is_absolute() {
        return Err(invalid_params(format!(
            "cwd must be an absolute path; got {}",
            crate::view::shown::echoed(&request.cwd.display().to_string())
        )));
    }
    let mut settings =
        session_settings(state, &request.cwd, &request.mcp_servers).map_err(to_protocol)?;
    let mode = mode_of(&settings);
    let opened = crate::store::session::open(None, &settings.cwd, state.ephemeral, true)
        .map_err(to_protocol)?;
    let id = match &opened.saving {
        Some(saving) => saving.id(),
        None => format!("ephemeral-{}", uuid_like()),
    };
    settings.text_files = client_files(state, cx, &id);
    let built = build(&settings).await.map_err(to_protocol)?;
    let options = keep(state, id.clone(), settings, built, opened).await;
    Ok(NewSessionResponse::new(id)
        .modes(modes(mode))
        .config_options(options))
}

/// Keeps the session `id`: its agent as built from `settings`, its conversation as opened;
/// the SessionStart hooks fire.
async fn keep(
    state: &State,
    id: String,
    settings: Settings,
    built: crate::setup::agent::Built,
    opened: crate::store::session::Opened,
) -> Vec<SessionConfigOption> {
    let provider = built.header.provider;
    let mut conversation =
        crate::conversation::Conversation::assemble(settings, built, opened, state.ephemeral);
    conversation.start_session().await;
    let session = Session {
        id: id.clone(),
        cwd: conversation.settings.cwd.clone(),
        mode: mode_of(&conversation.settings),
        conversation,
        spent: 0.0,
        provider,
    };
    let options = config_options(&session);
    state
        .sessions
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(id, Arc::new(tokio::sync::Mutex::new(session)));
    options
}

/// The client's files for session `id`, when it offered them at `initialize`.
fn client_files(
    state: &State,
    cx: &Connection,
    id: &str,
) -> Option<Arc<dyn golato::builtin::TextFiles>> {
    let offered = state
        .client_files
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    client_files::ClientFiles::offered(cx, id, offered.as_ref())
        .map(|files| Arc::new(files) as Arc<dyn golato::builtin::TextFiles>)
}

/// A name no other session of this process has.
fn uuid_like() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!(
        "{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

async fn load_session(
    state: &State,
    request: LoadSessionRequest,
    cx: &Connection,
) -> Result<LoadSessionResponse, agent_client_protocol::Error> {
    let id = request.session_id.0.to_string();
    if state
        .sessions
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .contains_key(&id)
    {
        return Err(invalid_params(format!(
            "the session {id} is open in this connection already"
        )));
    }
    let saved = crate::store::session::find(Some(&id), None).map_err(to_protocol)?;
    let id = saved.header.id.clone();
    let cwd = saved.header.cwd.clone();
    let mut settings = session_settings(state, &cwd, &request.mcp_servers).map_err(to_protocol)?;
    settings.text_files = client_files(state, cx, &id);
    let mode = mode_of(&settings);
    let built = build(&settings).await.map_err(to_protocol)?;
    let opened = crate::store::session::open(Some(saved), &cwd, state.ephemeral, true)
        .map_err(to_protocol)?;
    // The conversation so far, as the client shows it, before the answer.
    for update in updates::replay(&opened.transcript, &cwd) {
        cx.send_notification(agent_client_protocol::v1::schema::SessionNotification::new(
            id.clone(),
            update,
        ))?;
    }
    let options = keep(state, id, settings, built, opened).await;
    Ok(LoadSessionResponse::new()
        .modes(modes(mode))
        .config_options(options))
}

fn list_sessions(
    request: &ListSessionsRequest,
) -> Result<ListSessionsResponse, agent_client_protocol::Error> {
    let (saved, _) = crate::store::session::all().map_err(to_protocol)?;
    let sessions = saved
        .iter()
        .filter(|saved| {
            request
                .cwd
                .as_ref()
                .is_none_or(|cwd| saved.header.cwd == *cwd)
        })
        .map(|saved| {
            let title = saved.first_prompt();
            let title = title.lines().next().unwrap_or_default();
            let updated = saved
                .modified
                .duration_since(std::time::UNIX_EPOCH)
                .map(|since| since.as_secs())
                .unwrap_or_default();
            SessionInfo::new(saved.header.id.clone(), saved.header.cwd.clone())
                .title(crate::view::live::clip(title))
                .updated_at(crate::view::shown::utc_time(updated))
        })
        .collect();
    Ok(ListSessionsResponse::new(sessions))
}

async fn set_mode(
    state: &State,
    request: SetSessionModeRequest,
) -> Result<SetSessionModeResponse, agent_client_protocol::Error> {
    let id = request.session_id.0.to_string();
    let session = state.session(&id)?;
    let wanted = request.mode_id.0.to_string();
    let Some((mode, _, _)) = MODES.iter().find(|(mode, _, _)| *mode == wanted) else {
        return Err(invalid_params(format!(
            "no mode {wanted}; the modes are read-only, workspace-write, full-access and plan"
        )));
    };
    state.idle(&id, "mode")?;
    let mut session = session.lock().await;
    let settings = with_mode(session.conversation.settings.clone(), mode);
    let built = build(&settings).await.map_err(to_protocol)?;
    session.conversation.rebuilt(settings, built);
    session.mode = mode;
    Ok(SetSessionModeResponse::new())
}

/// `golato acp`.
pub(crate) async fn command(args: AcpArgs) -> Result<Exit, CliError> {
    let state = Arc::new(State {
        defaults: args.agent,
        ephemeral: args.ephemeral,
        permission_timeout: args.permission_timeout,
        sessions: Mutex::default(),
        busy: Mutex::default(),
        drivers: Mutex::default(),
        client_files: Mutex::default(),
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
                    responder.respond(
                        InitializeResponse::new(initialize.protocol_version)
                            .agent_capabilities(
                                AgentCapabilities::new()
                                    .load_session(true)
                                    .prompt_capabilities(
                                        PromptCapabilities::new()
                                            .image(true)
                                            .embedded_context(true),
                                    )
                                    .mcp_capabilities(McpCapabilities::new().http(true))
                                    .session_capabilities(
                                        SessionCapabilities::new()
                                            .list(SessionListCapabilities::new()),
                                    ),
                            )
                            .agent_info(Implementation::new("golato", env!("CARGO_PKG_VERSION"))),
                    )
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |request: NewSessionRequest, responder, cx| {
                    responder.respond_with_result(new_session(&s1, request, &cx).await)
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |request: LoadSessionRequest, responder, cx| {
                    responder.respond_with_result(load_session(&s2, request, &cx).await)
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
    // The client went away (or the connection failed): every prompt is cancelled as Ctrl-C
    // cancels a run, and waited for, so no tool outlives the connection.
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
    match served {
        Ok(()) => Ok(Exit::Success),
        Err(error) => Err(CliError::Failed(format!(
            "the ACP connection failed: {error}"
        ))),
    }
}
