//! The agent a front end's flags describe: tools (built-in, MCP, `task`), provider and model,
//! instructions and skills, the rules' and hooks' hook, approvals, the budget, the recorder of
//! checkpoints. Every front end builds its agent here (`golato run`, the front end, the line
//! chat, ACP, the durable worker).

use std::path::Path;
use std::sync::Arc;

use golato::diagnostics::Diagnostics;

use golato::agent::{self, Agent};
use golato::builtin;
use golato::generator::{Generator, Model, Scripted};
use golato::tool::Execution;

use crate::args::Approve;
use crate::error::CliError;
use crate::settings::Settings;
use crate::setup::approve::Approvals;
use crate::setup::tools::{background, builtin_tools, diagnostics, mcp_tools, tool_names};
use crate::store::record::Recording;
use crate::view::header::Header;

/// Sent when `--system` is not given and a real model is asked.
const DEFAULT_SYSTEM_PROMPT: &str = "You are a careful coding agent working in a project directory. Use the tools to look before you change anything, make the smallest change that does the job, and check the result (run the tests) before you answer. Answer briefly with what you did.";

/// The hook that applies the rules, the command hooks and `--approve`: none when nothing
/// would ever stop or change a call.
fn policy_hooks(
    settings: &Settings,
    approve: Approve,
    approver: Arc<dyn golato::policy::Approver>,
    session: &tokio::sync::watch::Receiver<golato::policy::HookSession>,
    interactive: bool,
) -> Result<Vec<Arc<dyn golato::hook::Hook>>, CliError> {
    // Interactive, the mode may change mid-session (`/approve`): the hook is always there.
    // With web_fetch it is too: it is what stops a domain nobody allowed.
    let web_fetch = settings
        .tools
        .as_ref()
        .is_some_and(|tools| tools.iter().any(|tool| tool == "web_fetch"));
    if !interactive
        && !web_fetch
        && approve == Approve::Never
        && settings.policy.rules.is_empty()
        && settings.policy.hooks.is_empty()
    {
        return Ok(Vec::new());
    }
    let policy = Arc::new(settings.policy.clone());
    Ok(vec![policy.hook(Some(approver), session.clone())])
}

/// What the flags build.
pub(crate) struct Built {
    pub(crate) agent: Agent,
    /// How to make the plan-mode agent (`/plan`), for a person at a terminal.
    pub(crate) plan_mode: Option<crate::setup::plan_mode::PlanMode>,
    /// The recording `--script` replays, if any.
    pub(crate) recording: Option<Recording>,
    pub(crate) header: Header,
    /// The calls waiting for a yes, when someone at a terminal can answer.
    pub(crate) questions: Option<crate::setup::approve::Questions>,
    /// The model's price, when golato knows it.
    pub(crate) price: Option<golato::generator::Price>,
    /// What the command hooks are told of the session (its ID once it is saved).
    pub(crate) session: tokio::sync::watch::Sender<golato::policy::HookSession>,
    /// Who answers for calls that ask (`/approve` changes its mode).
    pub(crate) approver: Arc<Approvals>,
    /// What the `task` tool's children are made of, when it has one.
    #[cfg_attr(not(feature = "durable"), allow(dead_code))]
    pub(crate) subagents: Option<golato::subagent::Config>,
    /// The session's background commands, when bash may start them.
    pub(crate) background: Option<builtin::Background>,
    /// The language servers (`/diagnostics`), unless `--no-lsp`.
    pub(crate) diagnostics: Option<Diagnostics>,
}

/// Makes the approver that asks a durable run's questions from the one the flags make.
pub(crate) type WrapApprover =
    Box<dyn FnOnce(Arc<dyn golato::policy::Approver>) -> Arc<dyn golato::policy::Approver> + Send>;

/// What a durable worker's agent adds to the flags' (`golato serve`).
#[derive(Default)]
pub(crate) struct WorkerParts {
    /// Serializes writes of a file with other processes.
    pub(crate) shared_lock: Option<Arc<dyn builtin::SharedLock>>,
    /// Runs the `task` tool's children as durable runs of their own.
    pub(crate) children: Option<Arc<dyn golato::subagent::Runner>>,
    /// Asks questions through the durable engine (nobody is at a worker's terminal).
    pub(crate) approver: Option<WrapApprover>,
}

/// The agent the flags describe. `worker` is what a durable worker adds; `interactive` says
/// whether a person can answer questions.
pub(crate) async fn build_agent(
    settings: &Settings,
    worker: Option<WorkerParts>,
    interactive: bool,
) -> Result<Built, CliError> {
    build_agent_keeping(settings, worker, interactive, None).await
}

/// As [`build_agent`], with the background commands of the agent it replaces (an editor's
/// mode change), so that those still running stay the session's.
pub(crate) async fn build_agent_keeping(
    settings: &Settings,
    worker: Option<WorkerParts>,
    interactive: bool,
    kept_background: Option<builtin::Background>,
) -> Result<Built, CliError> {
    // Durable workers save no session, so keep no checkpoints.
    let durable_worker = worker.is_some();
    let WorkerParts {
        shared_lock,
        children,
        approver: durable_approver,
    } = worker.unwrap_or_default();
    let planned = settings
        .plan
        .then(|| crate::setup::plan_mode::planning(settings));
    let settings = planned.as_ref().unwrap_or(settings);
    let mcp_tools = mcp_tools(settings).await?;
    let (session, hook_session) = tokio::sync::watch::channel(golato::policy::HookSession {
        cwd: settings.cwd.clone(),
        ..Default::default()
    });
    let (recorder, checkpoints, recovered) =
        checkpoints(settings, durable_worker, &hook_session).await;
    // A durable run refuses background commands (a process cannot outlive its worker): its
    // bash is offered without them.
    let background = match kept_background {
        Some(kept) if !durable_worker => Some(kept),
        _ => (!durable_worker).then(|| background(settings)).flatten(),
    };
    let diagnostics = diagnostics(settings)?;
    let mut custom_tools = mcp_tools;
    // The tool is offered when asked for (`--tools …,diagnostics`), as the other optional
    // tools are; the hook after edits needs no asking.
    let tool_asked = settings
        .tools
        .as_ref()
        .is_some_and(|names| names.iter().any(|name| name == "diagnostics"));
    custom_tools.extend(
        diagnostics
            .as_ref()
            .filter(|_| tool_asked)
            .map(Diagnostics::tool),
    );
    let tools = builtin_tools(
        settings,
        custom_tools,
        shared_lock,
        checkpoints,
        background.as_ref(),
        recovered,
    )?;
    let Source {
        generator,
        model,
        recording,
        provider,
        endpoint,
    } = source(settings)?;
    let sandboxed = settings.sandboxed();
    let approve = settings
        .approve
        .unwrap_or_else(|| Approve::default_for(sandboxed, interactive));
    let (approver, questions) = Approvals::new(
        approve,
        &settings.cwd,
        &settings.sandbox.writable_roots,
        interactive,
        settings.sandbox.domains.clone().unwrap_or_default(),
        sandboxed,
    );
    // `--approve auto` needs its reviewer; a person at a terminal may switch to it later
    // (Shift-Tab), so one is made there too when it can be.
    match crate::setup::reviewer_source::reviewer(settings) {
        // Its reviews count against --max-cost: at no known price they would leave the run's
        // cost unknown, and the limit unenforced.
        Ok(reviewer) if settings.max_cost.is_some() && !reviewer.model().1 => {
            if approve == Approve::Auto {
                return Err(CliError::usage(format!(
                    "--max-cost counts the reviewer's calls too, and golato knows no price for its model {:?}: name a priced --reviewer-model, or limit tokens with --max-tokens instead",
                    reviewer.model().0
                )));
            }
        }
        Ok(reviewer) => approver.set_reviewer(Arc::new(reviewer)),
        Err(error) if approve == Approve::Auto => return Err(error),
        Err(_) => {}
    }
    settings
        .policy
        .rules
        // A rule about a built-in that is off this run (web_fetch, grep…) is no mistake: it
        // holds whenever the tool is on.
        .check_tools(
            tools
                .iter()
                .map(|tool| tool.name())
                .chain(builtin::OPTIONAL_TOOL_NAMES)
                .chain(settings.lsp.is_some().then_some("diagnostics"))
                .chain(
                    crate::setup::tools::wanted(settings).then_some(golato::subagent::TOOL_NAME),
                ),
        )
        .map_err(|error| CliError::usage(error.to_string()))?;
    let header = Header {
        provider,
        model: settings.script.is_none().then(|| model.id.clone()),
        endpoint,
        cwd: settings.cwd.clone(),
        tools: tool_names(settings, &tools),
        sandbox: settings.sandbox.clone(),
        approve,
        session: None,
    };
    let system_prompt = system_prompt(settings, &header).await?;
    // In the front end, /plan makes the plan-mode agent from the same pieces when asked.
    let plan_mode = (interactive && !settings.plan).then(|| crate::setup::plan_mode::PlanMode {
        generator: Arc::clone(&generator),
        hooks: Vec::new(),
        system_prompt: system_prompt.clone(),
        settings: crate::setup::plan_mode::planning(settings),
    });
    let system_prompt = match settings.plan {
        true => Some(crate::setup::plan_mode::with_instructions(
            system_prompt.as_deref(),
        )),
        false => system_prompt,
    };
    let price = model.price;
    let asking: Arc<dyn golato::policy::Approver> = Arc::clone(&approver) as _;
    let asking = match durable_approver {
        // Under --approve auto the reviewer decides first and the durable question is the
        // person's path after it: the approvals stay outermost, so the gate journals their
        // final answer once. (A durable run is always journaled: the wrap's own fallback for
        // a run without a key is never taken.)
        Some(wrap) if approve == Approve::Auto => {
            approver.set_person(wrap(Arc::new(crate::setup::approve::NobodyHere)));
            asking
        }
        Some(wrap) => wrap(asking),
        None => asking,
    };
    let mut hooks = policy_hooks(settings, approve, asking, &hook_session, interactive)?;
    // After the policy: a call it refuses is never checked.
    hooks.extend(diagnostics.as_ref().map(Diagnostics::hook));
    // Last: it keeps a file as it was only once every other hook let the call run.
    if let Some(recorder) = recorder {
        hooks.push(recorder);
    }
    let plan_mode = plan_mode.map(|plan_mode| crate::setup::plan_mode::PlanMode {
        hooks: hooks.clone(),
        ..plan_mode
    });
    let mut tools = tools;
    let subagents = crate::setup::tools::wanted(settings).then(|| {
        crate::setup::subagents::config(
            settings,
            crate::setup::subagents::Parent {
                generator: Arc::clone(&generator),
                model: model.clone(),
                tools: &tools,
                system_prompt: system_prompt.clone(),
                hooks: hooks.clone(),
            },
            children,
        )
    });
    if let Some(subagents) = &subagents {
        tools.push(crate::setup::subagents::tool(subagents.clone())?);
    }
    let agent = new_agent(settings, generator, model, tools, system_prompt, hooks)?;
    let asks = interactive
        || approve != Approve::Never
        || !settings.policy.rules.is_empty()
        || !settings.policy.hooks.is_empty();
    Ok(Built {
        agent,
        plan_mode,
        recording,
        header,
        questions: questions.filter(|_| asks),
        price,
        session,
        approver,
        subagents,
        background,
        diagnostics,
    })
}

/// The recorder of a session's changes (none for a durable worker, which saves no session),
/// and the store sandboxed commands' captured changes go to (unless `--no-bash-checkpoints`);
/// what a dead golato's command left staged is recovered first (and given).
async fn checkpoints(
    settings: &Settings,
    durable_worker: bool,
    hook_session: &tokio::sync::watch::Receiver<golato::policy::HookSession>,
) -> (
    Option<Arc<crate::store::checkpoints::Recorder>>,
    Option<Arc<dyn builtin::Checkpoints>>,
    Vec<builtin::Recovered>,
) {
    let recorder = (!durable_worker)
        .then(|| crate::store::checkpoints::Recorder::new(&settings.cwd, hook_session.clone()));
    let checkpoints = recorder
        .clone()
        .filter(|_| settings.bash_checkpoints)
        .map(|recorder| recorder as Arc<dyn builtin::Checkpoints>);
    let mut recovered = Vec::new();
    if checkpoints.is_some() {
        // Off the runtime's threads: it may wait for a dead golato's command to be gone.
        let cwd = settings.cwd.clone();
        recovered = tokio::task::spawn_blocking(move || crate::store::checkpoints::recover(&cwd))
            .await
            .unwrap_or_default();
    }
    (recorder, checkpoints, recovered)
}

/// Where the model's messages come from: a recording (`--script`) or a provider.
struct Source {
    generator: Arc<dyn Generator>,
    model: Model,
    recording: Option<Recording>,
    /// The provider's name for the header (`script` for a recording).
    provider: &'static str,
    /// The host (or the recording's file) for the header.
    endpoint: String,
}

fn source(settings: &Settings) -> Result<Source, CliError> {
    if settings.model_elsewhere && settings.script.is_none() {
        // Never asked: every prompt is a run the durable workers serve.
        return Ok(Source {
            generator: Arc::new(golato::generator::Scripted::new(Vec::new())),
            model: Model::new(settings.model.clone().unwrap_or_default()),
            recording: None,
            provider: "durable",
            endpoint: String::from("the durable workers"),
        });
    }
    match &settings.script {
        Some(path) => {
            let (scripted, recording) = load_script(path)?;
            Ok(Source {
                generator: Arc::new(scripted),
                model: Model::default(),
                recording: Some(recording),
                provider: "script",
                endpoint: path.display().to_string(),
            })
        }
        None => {
            let (generator, model, endpoint) = crate::setup::provider::from_args(settings)?;
            Ok(Source {
                generator,
                model,
                recording: None,
                provider: endpoint.provider,
                endpoint: endpoint.host,
            })
        }
    }
}

/// The system prompt: `--system`'s (or golato's own, unless a recording replays), then the
/// environment and the instruction files unless `--no-project-instructions`.
async fn system_prompt(settings: &Settings, header: &Header) -> Result<Option<String>, CliError> {
    let base = match &settings.system {
        Some(system) => Some(system_text(system)?),
        None if settings.script.is_none() => Some(DEFAULT_SYSTEM_PROMPT.to_owned()),
        None => None,
    };
    Ok(match settings.no_project_instructions {
        true => base,
        false => Some(crate::setup::instructions::system_prompt(base, settings, header).await),
    })
}

/// The agent of `settings` with these parts; an invalid schema or a budget without a price is
/// a usage error saying what to change.
fn new_agent(
    settings: &Settings,
    generator: Arc<dyn Generator>,
    model: Model,
    tools: Vec<golato::Tool>,
    system_prompt: Option<String>,
    hooks: Vec<Arc<dyn golato::hook::Hook>>,
) -> Result<Agent, CliError> {
    Agent::new(agent::Config {
        generator: Some(generator),
        model,
        tools,
        tool_execution: if settings.sequential {
            Execution::Sequential
        } else {
            Execution::Parallel
        },
        system_prompt,
        max_turns: settings.max_turns.map(usize::from),
        budget: settings.budget(),
        context_window: settings.context_window.map(std::num::NonZeroU64::get),
        compaction: if settings.no_compact {
            agent::compaction::Compaction::off()
        } else {
            agent::compaction::Compaction::default()
        },
        output_schema: match &settings.output_schema {
            Some(path) => Some(schema_file(path)?),
            None => None,
        },
        max_parallel_calls: settings.max_parallel,
        tool_timeout: settings.tool_timeout,
        hooks,
        safe_to_replay: golato::journal::SafeToReplay::with_rules(
            settings.policy.replay_safe.clone(),
            settings.cwd.clone(),
        ),
        ..Default::default()
    })
    .map_err(|error| match error {
        agent::Error::InvalidOutputSchema { reason } => {
            CliError::usage(format!("--output-schema: not a valid JSON Schema: {reason}"))
        }
        agent::Error::UnpricedBudget { model } => CliError::usage(format!(
            "--max-cost needs the model's price, and golato knows none for {model:?}; limit tokens with --max-tokens instead"
        )),
        error => CliError::Failed(error.to_string()),
    })
}

/// `--output-schema FILE`: the schema, read and parsed.
fn schema_file(path: &Path) -> Result<serde_json::Value, CliError> {
    let text = crate::bounded::read_text(path, crate::bounded::SCHEMA_LIMIT).map_err(|error| {
        CliError::usage(format!(
            "cannot read --output-schema {}: {error}",
            path.display()
        ))
    })?;
    serde_json::from_str(&text).map_err(|error| {
        CliError::usage(format!(
            "--output-schema {} is not JSON ({error}); give a JSON Schema file",
            path.display()
        ))
    })
}

/// The script as a generator, and the results it recorded.
pub(crate) fn load_script(path: &Path) -> Result<(Scripted, Recording), CliError> {
    let text = crate::bounded::read_text(path, golato::generator::MAX_SCRIPT_BYTES).map_err(|error| {
        CliError::usage(format!(
            "cannot read the script {}: {error}; give --script a JSON or JSONL file written by --record",
            path.display()
        ))
    })?;
    let recording = Recording::parse(&text, path)?;
    // Not held while the script is read again: a long recorded answer would be twice in memory.
    drop(text);
    let scripted = Scripted::from_file(path).map_err(|error| CliError::usage(error.to_string()))?;
    Ok((scripted, recording))
}

/// The largest system prompt read from a file: 16 MiB.
const MAX_SYSTEM_PROMPT_BYTES: u64 = 16 * 1024 * 1024;

/// `--system TEXT`, or `--system @FILE` for a file's contents.
fn system_text(value: &str) -> Result<String, CliError> {
    match value.strip_prefix('@') {
        Some(path) => crate::setup::prompt::read_bounded(Path::new(path), MAX_SYSTEM_PROMPT_BYTES).map_err(|error| {
            CliError::usage(format!(
                "cannot read the system prompt from {path}: {error}; --system takes the text itself or @FILE"
            ))
        }),
        None => Ok(value.to_owned()),
    }
}
