//! Sessions as a client opens and changes them: `session/new`, `session/load`,
//! `session/list`, the modes (`session/set_mode`) and the model (`session/set_config_option`).

use super::*;

/// The modes a session offers: what its tools may touch.
const MODES: [(&str, &str, &str); 5] = [
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
    (
        "auto",
        "Auto review",
        "Workspace write, and a reviewer model decides what would ask (a write outside the workspace, an ask rule): you are asked only when it asks.",
    ),
];

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
    // A durable session's model is the workers' to ask.
    #[cfg(feature = "durable")]
    {
        settings.model_elsewhere = state.durable.is_some();
    }
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
    settings.approve = match mode {
        "auto" => Some(crate::args::Approve::Auto),
        _ if settings.approve == Some(crate::args::Approve::Auto) => None,
        _ => settings.approve,
    };
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
    if settings.approve == Some(crate::args::Approve::Auto) {
        return "auto";
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
    let models = crate::setup::provider::offered_models(session.provider, &current);
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

pub(super) async fn set_config_option(
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
    session.conversation.switch_model(&model);
    Ok(SetSessionConfigOptionResponse::new(config_options(
        &session,
    )))
}

/// Tells the client the commands and skills the session `id` offers by name
/// (`available_commands_update`); nothing when it offers none.
pub(super) async fn announce_commands(state: &State, id: &str, cx: &Connection) {
    use agent_client_protocol::v1::schema::{
        AvailableCommand, AvailableCommandInput, AvailableCommandsUpdate, SessionNotification,
        SessionUpdate, UnstructuredCommandInput,
    };
    let Ok(session) = state.session(id) else {
        return;
    };
    let entries = session.lock().await.conversation.offered.entries();
    if entries.is_empty() {
        return;
    }
    let commands = entries
        .into_iter()
        .map(|entry| {
            let name = entry.name.trim_start_matches('/').to_owned();
            let command = AvailableCommand::new(name, entry.description);
            match entry.hint {
                Some(hint) => command.input(AvailableCommandInput::Unstructured(
                    UnstructuredCommandInput::new(hint),
                )),
                None => command,
            }
        })
        .collect();
    let update = SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(commands));
    let _ = cx.send_notification(SessionNotification::new(id.to_owned(), update));
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

pub(super) async fn new_session(
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
    let mut notes = settings.notes.clone();
    notes.extend(crate::setup::instructions::unread(
        &settings.cwd,
        settings.trusted,
    ));
    let notice = (!notes.is_empty()).then(|| {
        notes
            .iter()
            .map(|note| format!("golato: {}\n", crate::view::shown::visible(note)))
            .collect::<String>()
    });
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
        notice,
        durable_runs: 0,
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

/// A durable session's last run, followed by a task of its own as a prompt's would be (a
/// prompt sent meanwhile steers it, `session/cancel` cancels it).
#[cfg(feature = "durable")]
pub(super) fn follow_last_run(state: &Arc<State>, id: &str, cx: &Connection) {
    let (Some(durable), Ok(session)) = (state.durable.clone(), state.session(id)) else {
        return;
    };
    let Some(cancel) = state.begin_prompt(id) else {
        return;
    };
    let (state, cx) = (Arc::clone(state), cx.clone());
    let driver = tokio::spawn({
        let state = Arc::clone(&state);
        async move {
            let mut session = session.lock().await;
            if let Err(error) =
                super::durable::attach(&durable, &state, &mut session, &cancel, &cx).await
            {
                tracing::warn!(session = %session.id, error = %error.message, "the session's last durable run could not be followed");
            }
            state.end_prompt(&session.id);
        }
    });
    state
        .drivers
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(driver);
}

/// `session/load`: the session's conversation replayed to the client, and its ID.
pub(super) async fn load_session(
    state: &State,
    request: LoadSessionRequest,
    cx: &Connection,
) -> Result<(LoadSessionResponse, String), agent_client_protocol::Error> {
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
    // The conversation so far, as the client shows it, before the answer. A durable session's
    // last run is shown from its own events, followed after the answer.
    let replayed = match () {
        #[cfg(feature = "durable")]
        () if state.durable.is_some() => super::durable::before_last_run(&opened.transcript),
        () => &opened.transcript[..],
    };
    for update in updates::replay(replayed, &cwd) {
        cx.send_notification(agent_client_protocol::v1::schema::SessionNotification::new(
            id.clone(),
            update,
        ))?;
    }
    let options = keep(state, id.clone(), settings, built, opened).await;
    Ok((
        LoadSessionResponse::new()
            .modes(modes(mode))
            .config_options(options),
        id,
    ))
}

pub(super) fn list_sessions(
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
                .title(crate::view::label::clip(title))
                .updated_at(crate::view::shown::utc_time(updated))
        })
        .collect();
    Ok(ListSessionsResponse::new(sessions))
}

pub(super) async fn set_mode(
    state: &State,
    request: SetSessionModeRequest,
) -> Result<SetSessionModeResponse, agent_client_protocol::Error> {
    let id = request.session_id.0.to_string();
    let session = state.session(&id)?;
    let wanted = request.mode_id.0.to_string();
    let Some((mode, _, _)) = MODES.iter().find(|(mode, _, _)| *mode == wanted) else {
        return Err(invalid_params(format!(
            "no mode {wanted}; the modes are read-only, workspace-write, full-access, plan and auto"
        )));
    };
    state.idle(&id, "mode")?;
    let mut session = session.lock().await;
    let settings = with_mode(session.conversation.settings.clone(), mode);
    let built = crate::setup::agent::build_agent_keeping(
        &settings,
        None,
        true,
        session.conversation.background.clone(),
    )
    .await
    .map_err(to_protocol)?;
    session.conversation.rebuilt(settings, built);
    session.mode = mode;
    Ok(SetSessionModeResponse::new())
}
