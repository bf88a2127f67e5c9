//! The tools a session offers: the built-ins its flags name (with background commands and
//! diagnostics), its MCP servers' tools, and whether the `task` tool is wanted.

use std::sync::Arc;

use golato::builtin;
use golato::diagnostics::Diagnostics;
use golato::subagent::TOOL_NAME;

use crate::error::CliError;
use crate::settings::Settings;

/// The session's background commands, unless `--max-background 0` turned them off.
pub(crate) fn background(settings: &Settings) -> Option<builtin::Background> {
    let most = settings
        .max_background
        .unwrap_or(builtin::DEFAULT_MAX_BACKGROUND_COMMANDS);
    (most > 0).then(|| builtin::Background::new(most))
}

/// The tools' names as the header lists them, `task` included when it will be added.
pub(crate) fn tool_names(settings: &Settings, tools: &[golato::Tool]) -> Vec<String> {
    tools
        .iter()
        .map(|tool| tool.name().to_owned())
        .chain(wanted(settings).then(|| golato::subagent::TOOL_NAME.to_owned()))
        .collect()
}

/// The tools of every `--mcp` and `--mcp-url` server, each server connected once.
pub(crate) async fn mcp_tools(settings: &Settings) -> Result<Vec<golato::Tool>, CliError> {
    use golato::mcp::{McpServer, McpServerConfig};
    let mut configs = Vec::new();
    for line in &settings.mcp {
        configs.push(
            McpServerConfig::command_line(line)
                .map_err(|error| CliError::usage(format!("--mcp: {error}")))?,
        );
    }
    for server in &settings.mcp_commands {
        let mut config = McpServerConfig::stdio(&server.program, &server.args);
        for (name, value) in &server.env {
            config = config.with_env(name, value);
        }
        configs.push(config);
    }
    configs.extend(settings.mcp_url.iter().map(McpServerConfig::http));
    if configs.is_empty() {
        return Ok(Vec::new());
    }
    // Ctrl-C while a server starts stops it too (it runs in a process group of its own).
    let mut signals = crate::interrupt::Signals::listen()?;
    let mut tools = Vec::new();
    for mut config in configs {
        if let Some(timeout) = settings.mcp_timeout {
            config = config.with_connect_timeout(timeout);
        }
        let connected = tokio::select! {
            connected = McpServer::connect(config) => connected,
            signal = signals.next() => {
                golato::mcp::stop_servers();
                eprintln!("golato: {} received while an MCP server started; it was stopped", signal.name());
                std::process::exit(i32::from(signal.exit_code()));
            }
        };
        let server = connected.map_err(|error| {
            let hint = match error.to_string().contains("handshake within") {
                true => "; give it longer with --mcp-timeout SECONDS",
                false => "",
            };
            CliError::Failed(format!("{error}{hint}"))
        })?;
        tools.extend(
            server
                .tools()
                .await
                .map_err(|error| CliError::Failed(error.to_string()))?,
        );
    }
    Ok(tools)
}

pub(crate) fn builtin_tools(
    settings: &Settings,
    custom_tools: Vec<golato::Tool>,
    shared_lock: Option<Arc<dyn builtin::SharedLock>>,
    bash_checkpoints: Option<Arc<dyn builtin::Checkpoints>>,
    background: Option<&builtin::Background>,
    recovered: Vec<builtin::Recovered>,
) -> Result<Vec<golato::Tool>, CliError> {
    builtin::new(builtin::Config {
        working_directory: settings.cwd.clone(),
        allowed_tool_names: tool_selection(settings, background.is_some(), &custom_tools),
        background: background.cloned(),
        excluded_tool_names: without_task(&settings.exclude),
        custom_tools,
        shared_lock,
        sandbox: settings.sandbox.clone(),
        text_files: settings.text_files.clone(),
        bash_checkpoints,
        network_log: settings
            .network_log
            .as_deref()
            .map(crate::setup::network_log::open)
            .transpose()?,
        // What a rule keeps from `read` stays out of grep, find and ls too.
        read_rules: (!settings.policy.rules.is_empty())
            .then(|| Arc::new(settings.policy.rules.clone())),
        recovered,
        // The sandbox's allowed and denied domains; a domain neither lists runs only once the
        // policy hook (always there with web_fetch) approved the call: a rule, or a person.
        web_fetch: builtin::WebFetch {
            domains: settings.sandbox.domains.clone().unwrap_or_default(),
            unlisted: builtin::Unlisted::AfterApproval,
            ..Default::default()
        },
        ..Default::default()
    })
    .map_err(builtin_error)
}

/// The language servers of `settings` (none with `--no-lsp`), confined read-only when the
/// session is sandboxed: its denied paths hidden, its network only if it allows the network.
pub(crate) fn diagnostics(settings: &Settings) -> Result<Option<Diagnostics>, CliError> {
    if settings.lsp.is_none() && settings.linters.is_empty() {
        return Ok(None);
    }
    let mut config = golato::diagnostics::Config::new(&settings.cwd);
    config.servers = settings.lsp.clone().unwrap_or_default();
    config.linters = settings.linters.clone();
    if settings.sandboxed() {
        let session = &settings.sandbox;
        let mut policy = golato::sandbox::Policy::read_only().with_network(session.allow_network);
        policy.denied_paths = session.denied_paths.clone();
        policy.helper = session.helper.clone();
        policy.pass_env = session.pass_env.clone();
        let prepared = golato::sandbox::Prepared::new(&policy, &settings.cwd).map_err(|error| {
            CliError::Failed(format!(
                "{error} (the language servers run confined read-only; --no-lsp starts none)"
            ))
        })?;
        config.sandbox = prepared.map(Arc::new);
    }
    Ok(Some(Diagnostics::new(config)))
}

/// The built-ins `--tools` names, exactly; without it the four, and `bash_output` and
/// `bash_kill` when bash may run commands in the background (unless `--exclude` takes bash),
/// and every `custom` tool (an MCP server's).
pub(crate) fn tool_selection(
    settings: &Settings,
    background: bool,
    custom: &[golato::Tool],
) -> Option<Vec<String>> {
    if let Some(names) = &settings.tools {
        return Some(without_task(names));
    }
    let bash_excluded = settings.exclude.iter().any(|name| name == "bash");
    if !background || bash_excluded {
        return None;
    }
    Some(
        builtin::TOOL_NAMES
            .iter()
            .chain(&["bash_output", "bash_kill"])
            .map(|name| (*name).to_owned())
            .chain(custom.iter().map(|tool| tool.name().to_owned()))
            .collect(),
    )
}

/// Why the tools could not be built, in the command line's words.
pub(crate) fn builtin_error(error: builtin::Error) -> CliError {
    match error {
        builtin::Error::Sandbox(error) => {
            CliError::Failed(format!("{error} (--sandbox, --writable, --deny-read)"))
        }
        builtin::Error::WorkingDirectory { path, source } => CliError::usage(format!(
            "-C/--cwd {}: cannot work there ({source}); give an existing directory",
            path.display()
        )),
        builtin::Error::UnknownToolName { name, known } => CliError::usage(format!(
            "--tools or --exclude names the tool {name:?}, which does not exist; the tools are: {known}"
        )),
        error => CliError::Failed(error.to_string()),
    }
}

/// Whether `--tools` names `task` (and `--exclude` does not): subagents are opt-in.
pub(crate) fn wanted(settings: &Settings) -> bool {
    settings
        .tools
        .as_ref()
        .is_some_and(|names| names.iter().any(|name| name == TOOL_NAME))
        && !settings.exclude.iter().any(|name| name == TOOL_NAME)
}

/// `names` without `task`, which is not a built-in.
pub(crate) fn without_task(names: &[String]) -> Vec<String> {
    names
        .iter()
        .filter(|name| *name != TOOL_NAME)
        .cloned()
        .collect()
}
