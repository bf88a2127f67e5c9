//! `golato run`: builds the agent from the flags, then drives one run to its end while a view
//! shows it, a recorder writes it down and a recording it replays is checked against it.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use golato::agent::{self, Agent, Event, Input};
use golato::builtin;
use golato::generator::{Generator, Model, Scripted};
use golato::tool::Execution;
use indicatif::MultiProgress;
use tokio::sync::mpsc;

use crate::args::{AgentArgs, ResumeArgs, RunArgs, ViewArgs};
use crate::setup::approve::{Approve, Approver, Questions};
use crate::setup::interrupt::Signals;
use crate::setup::trace;
use crate::store::record::{Recorder, Recording};
use crate::store::session::Saved;
use crate::view::header::Header;
use crate::view::json::JsonLines;
use crate::view::live::{Live, Target};
use crate::view::report::{Answer, Ending, Tally, View};
use crate::{CliError, Exit};

/// Sent when `--system` is not given and a real model is asked.
const DEFAULT_SYSTEM_PROMPT: &str = "You are a careful coding agent working in a project directory. Use the tools to look before you change anything, make the smallest change that does the job, and check the result (run the tests) before you answer. Answer briefly with what you did.";

pub(crate) async fn command(args: RunArgs) -> Result<Exit, CliError> {
    let going_on = match args.continue_session {
        true => Some(crate::store::session::find(None, Some(&args.agent.cwd))?),
        false => None,
    };
    start(args, going_on).await
}

/// `golato resume [ID]`: a saved session goes on, in its own directory unless `-C` says
/// otherwise.
pub(crate) async fn resume(args: ResumeArgs) -> Result<Exit, CliError> {
    let saved = crate::store::session::find(args.id.as_deref(), None)?;
    let mut run = *args.run;
    if run.agent.cwd == Path::new(".") {
        run.agent.cwd = saved.header.cwd.clone();
    }
    start(run, Some(saved)).await
}

/// Runs the flags' agent on the prompt, going on with `going_on` when given.
async fn start(args: RunArgs, going_on: Option<Saved>) -> Result<Exit, CliError> {
    // Everything a usage error can come from is checked before anything runs.
    let recorded = match &args.agent.script {
        Some(path) => load_script(path)?.1.prompt,
        None => None,
    };
    let mut prompt_differs = false;
    let prompt = match &going_on {
        // A recording made with --record carries its prompt: a replay needs none.
        None if args.prompt.is_none() && recorded.is_some() => Some(
            crate::setup::prompt::user_message(recorded.clone(), &args.image)?,
        ),
        None => {
            let prompt = crate::setup::prompt::user_message(args.prompt, &args.image)?;
            if let Some(recorded) = &recorded {
                if prompt.text() != *recorded {
                    prompt_differs = true;
                    eprintln!(
                        "golato: the prompt differs from the one the script was recorded with ({}); the replay may differ too",
                        crate::view::live::clip(recorded)
                    );
                }
            }
            Some(prompt)
        }
        Some(saved) => {
            let prompt = crate::setup::prompt::optional_user_message(args.prompt, &args.image)?;
            if prompt.is_none() && saved.answered() {
                return Err(CliError::usage(format!(
                    "the session {} ended with the model's answer; give a prompt to go on (golato resume {} \"and now …\")",
                    saved.header.id, saved.header.id
                )));
            }
            prompt
        }
    };
    let interactive = std::io::stdin().is_terminal() && !args.view.json;
    let Built {
        agent,
        recording,
        mut header,
        questions,
        price,
        session: hook_session,
        ..
    } = build_agent(&args.agent, None, interactive).await?;
    let recorder = match &args.record {
        Some(path) => Some(Recorder::create(
            path,
            prompt.as_ref().map(golato::message::UserMessage::text),
        )?),
        None => None,
    };
    let journal = match &args.journal {
        Some(path) => Some(Arc::new(
            golato::journal::FileJournal::open(path)
                .map_err(|error| CliError::usage(format!("--journal: {error}")))?,
        )),
        None => None,
    };
    let crate::store::session::Opened {
        transcript,
        summary,
        saving,
    } = crate::store::session::open(going_on, &args.agent.cwd, args.ephemeral, prompt.is_some())?;
    header.session = saving.as_ref().map(crate::store::session::Writer::id);
    hook_session.send_modify(|session| {
        if let Some(saving) = &saving {
            session.session_id = saving.id();
            session.transcript_path = saving.path().to_owned();
        }
    });
    let resumed = !transcript.is_empty();
    let told = hook_session.borrow().clone();
    let context =
        crate::setup::session_hooks::session_start(&args.agent.policy, &told, resumed).await;
    let prompt = match prompt {
        Some(prompt) => Some(crate::setup::session_hooks::with_context(
            crate::setup::session_hooks::prompt_submit(&args.agent.policy, &told, prompt).await?,
            context,
        )),
        None => None,
    };
    // As `codex exec` does: piped, standard output carries the final answer and nothing else.
    let story = if args.quiet {
        Target::Nowhere
    } else if std::io::stdout().is_terminal() {
        Target::Stdout
    } else {
        Target::Stderr
    };
    let policy = args.agent.policy.clone();
    let ended = drive(Session {
        agent,
        policy: policy.clone(),
        hook_session: told.clone(),
        input: Input {
            prompts: prompt.into_iter().collect(),
            transcript,
            summary,
        },
        saving,
        view: args.view,
        story,
        last_message: args.output_last_message,
        recorder,
        recording,
        workspace: None,
        journal: journal.map(|journal| journal as Arc<dyn golato::journal::Journal>),
        header: Some(header),
        questions,
        strict_replay: args.strict_replay.then_some(prompt_differs),
        price,
    })
    .await;
    crate::setup::session_hooks::session_end(&policy, &told).await;
    ended
}

/// The hook that applies the rules, the command hooks and `--approve`: none when nothing
/// would ever stop or change a call.
fn policy_hooks(
    args: &AgentArgs,
    approve: Approve,
    approver: Arc<Approver>,
    session: &tokio::sync::watch::Receiver<golato::policy::HookSession>,
    interactive: bool,
) -> Result<Vec<Arc<dyn golato::hook::Hook>>, CliError> {
    // Interactive, the mode may change mid-session (`/approve`): the hook is always there.
    if !interactive
        && approve == Approve::Never
        && args.policy.rules.is_empty()
        && args.policy.hooks.is_empty()
    {
        return Ok(Vec::new());
    }
    let policy = Arc::new(args.policy.clone());
    Ok(vec![policy.hook(
        Some(approver as Arc<dyn golato::policy::Approver>),
        session.clone(),
    )])
}

/// What the flags build.
pub(crate) struct Built {
    pub(crate) agent: Agent,
    /// How to make the plan-mode agent (`/plan`), for a person at a terminal.
    pub(crate) plan_mode: Option<crate::setup::plan::PlanMode>,
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
    pub(crate) approver: Arc<Approver>,
    /// What the `task` tool's children are made of, when it has one.
    pub(crate) subagents: Option<golato::subagent::Config>,
}

/// What a durable worker's agent adds to the flags' (`golato serve`).
#[derive(Default)]
pub(crate) struct WorkerParts {
    /// Serializes writes of a file with other processes.
    pub(crate) shared_lock: Option<Arc<dyn builtin::SharedLock>>,
    /// Runs the `task` tool's children as durable runs of their own.
    pub(crate) children: Option<Arc<dyn golato::subagent::Runner>>,
}

/// The agent the flags describe. `worker` is what a durable worker adds; `interactive` says
/// whether a person can answer questions.
pub(crate) async fn build_agent(
    args: &AgentArgs,
    worker: Option<WorkerParts>,
    interactive: bool,
) -> Result<Built, CliError> {
    // Durable workers save no session, so keep no checkpoints.
    let durable_worker = worker.is_some();
    let WorkerParts {
        shared_lock,
        children,
    } = worker.unwrap_or_default();
    let planned = args.plan.then(|| crate::setup::plan::planning(args));
    let args = planned.as_ref().unwrap_or(args);
    let mcp_tools = mcp_tools(args).await?;
    let (session, hook_session) = tokio::sync::watch::channel(golato::policy::HookSession {
        cwd: args.cwd.canonicalize().unwrap_or_else(|_| args.cwd.clone()),
        ..Default::default()
    });
    let recorder = (!durable_worker)
        .then(|| crate::store::checkpoints::Recorder::new(&args.cwd, hook_session.clone()));
    let checkpoints = recorder
        .clone()
        .filter(|_| !args.sandbox.no_bash_checkpoints)
        .map(|recorder| recorder as Arc<dyn builtin::Checkpoints>);
    if checkpoints.is_some() {
        // Off the runtime's threads: it may wait for a dead golato's command to be gone.
        let cwd = args.cwd.clone();
        let _ = tokio::task::spawn_blocking(move || crate::store::checkpoints::recover(&cwd)).await;
    }
    let tools = builtin_tools(args, mcp_tools, shared_lock, checkpoints)?;
    let (generator, model, recording, provider, endpoint) = match &args.script {
        Some(path) => {
            let (scripted, recording) = load_script(path)?;
            let generator: Arc<dyn Generator> = Arc::new(scripted);
            let shown = path.display().to_string();
            (
                generator,
                Model::default(),
                Some(recording),
                "script",
                shown,
            )
        }
        None => {
            let (generator, model, endpoint) = crate::setup::provider::from_args(args)?;
            (generator, model, None, endpoint.provider, endpoint.host)
        }
    };
    let sandboxed = args.sandbox.policy(DEFAULT_SANDBOX).mode != golato::sandbox::Mode::Off;
    let approve = args
        .approve
        .unwrap_or_else(|| Approve::default_for(sandboxed, interactive));
    let (approver, questions) =
        Approver::new(approve, &args.cwd, &args.sandbox.writable, interactive);
    args.policy
        .rules
        .check_tools(
            tools.iter().map(|tool| tool.name()).chain(
                crate::setup::subagents::wanted(args).then_some(golato::subagent::TOOL_NAME),
            ),
        )
        .map_err(|error| CliError::usage(error.to_string()))?;
    let header = Header {
        provider,
        model: args.script.is_none().then(|| model.id.clone()),
        endpoint,
        cwd: args.cwd.canonicalize().unwrap_or_else(|_| args.cwd.clone()),
        tools: tools
            .iter()
            .map(|tool| tool.name().to_owned())
            .chain(
                crate::setup::subagents::wanted(args)
                    .then(|| golato::subagent::TOOL_NAME.to_owned()),
            )
            .collect(),
        sandbox: args.sandbox.policy(DEFAULT_SANDBOX),
        approve,
        session: None,
    };
    let system_prompt = match &args.system {
        Some(system) => Some(system_text(system)?),
        None if args.script.is_none() => Some(DEFAULT_SYSTEM_PROMPT.to_owned()),
        None => None,
    };
    let system_prompt = match args.no_project_instructions {
        true => system_prompt,
        false => {
            Some(crate::setup::instructions::system_prompt(system_prompt, args, &header).await)
        }
    };
    // In the front end, /plan makes the plan-mode agent from the same pieces when asked.
    let plan_mode = (interactive && !args.plan).then(|| crate::setup::plan::PlanMode {
        generator: Arc::clone(&generator),
        hooks: Vec::new(),
        system_prompt: system_prompt.clone(),
        args: crate::setup::plan::planning(args),
    });
    let system_prompt = match args.plan {
        true => Some(crate::setup::plan::with_instructions(
            system_prompt.as_deref(),
        )),
        false => system_prompt,
    };
    let price = model.price;
    let mut hooks = policy_hooks(
        args,
        approve,
        Arc::clone(&approver),
        &hook_session,
        interactive,
    )?;
    // Last: it keeps a file as it was only once every other hook let the call run.
    if let Some(recorder) = recorder {
        hooks.push(recorder);
    }
    let plan_mode = plan_mode.map(|plan_mode| crate::setup::plan::PlanMode {
        hooks: hooks.clone(),
        ..plan_mode
    });
    let mut tools = tools;
    let subagents = crate::setup::subagents::wanted(args).then(|| {
        crate::setup::subagents::config(
            args,
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
    let agent = Agent::new(agent::Config {
        generator: Some(generator),
        model,
        tools,
        tool_execution: if args.sequential {
            Execution::Sequential
        } else {
            Execution::Parallel
        },
        system_prompt,
        max_turns: args.max_turns.map(usize::from),
        budget: budget(args),
        context_window: args.context_window.map(std::num::NonZeroU64::get),
        compaction: if args.no_compact {
            agent::compaction::Compaction::off()
        } else {
            agent::compaction::Compaction::default()
        },
        output_schema: match &args.output_schema {
            Some(path) => Some(schema_file(path)?),
            None => None,
        },
        max_parallel_calls: args.max_parallel,
        tool_timeout: args.tool_timeout,
        hooks,
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
    })?;
    let asks = interactive
        || approve != Approve::Never
        || !args.policy.rules.is_empty()
        || !args.policy.hooks.is_empty();
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
    })
}

/// The sandbox of `golato run` and `golato serve` when `--sandbox` is not given: the model's
/// commands may change the project and temporary files, nothing else, and reach no network.
pub(crate) const DEFAULT_SANDBOX: golato::sandbox::Mode = golato::sandbox::Mode::WorkspaceWrite;

/// `--output-schema FILE`: the schema, read and parsed.
fn schema_file(path: &Path) -> Result<serde_json::Value, CliError> {
    let text = crate::store::bounded::read_text(path, crate::store::bounded::SCHEMA_LIMIT)
        .map_err(|error| {
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

/// `--max-tokens` and `--max-cost`.
pub(crate) fn budget(args: &AgentArgs) -> Option<agent::Budget> {
    let mut budget = agent::Budget::default();
    if let Some(tokens) = args.max_tokens {
        budget = budget.with_max_tokens(tokens.get());
    }
    if let Some(dollars) = args.max_cost {
        budget = budget.with_max_cost(dollars);
    }
    (budget != agent::Budget::default()).then_some(budget)
}

/// The tools of every `--mcp` and `--mcp-url` server, each server connected once.
async fn mcp_tools(args: &AgentArgs) -> Result<Vec<golato::Tool>, CliError> {
    use golato::mcp::{McpServer, McpServerConfig};
    let mut configs = Vec::new();
    for line in &args.mcp {
        configs.push(
            McpServerConfig::command_line(line)
                .map_err(|error| CliError::usage(format!("--mcp: {error}")))?,
        );
    }
    for server in &args.mcp_commands {
        let mut config = McpServerConfig::stdio(&server.program, &server.args);
        for (name, value) in &server.env {
            config = config.with_env(name, value);
        }
        configs.push(config);
    }
    configs.extend(args.mcp_url.iter().map(McpServerConfig::http));
    if configs.is_empty() {
        return Ok(Vec::new());
    }
    // Ctrl-C while a server starts stops it too (it runs in a process group of its own).
    let mut signals = crate::setup::interrupt::Signals::listen()?;
    let mut tools = Vec::new();
    for mut config in configs {
        if let Some(timeout) = args.mcp_timeout {
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
    args: &AgentArgs,
    custom_tools: Vec<golato::Tool>,
    shared_lock: Option<Arc<dyn builtin::SharedLock>>,
    bash_checkpoints: Option<Arc<dyn builtin::Checkpoints>>,
) -> Result<Vec<golato::Tool>, CliError> {
    builtin::new(builtin::Config {
        working_directory: args.cwd.clone(),
        allowed_tool_names: args
            .tools
            .as_deref()
            .map(crate::setup::subagents::without_task),
        excluded_tool_names: crate::setup::subagents::without_task(&args.exclude),
        custom_tools,
        shared_lock,
        sandbox: args.sandbox.policy(DEFAULT_SANDBOX),
        text_files: args.text_files.clone(),
        bash_checkpoints,
        // What a rule keeps from `read` stays out of grep, find and ls too.
        read_rules: (!args.policy.rules.is_empty()).then(|| Arc::new(args.policy.rules.clone())),
        ..Default::default()
    })
    .map_err(builtin_error)
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

/// The script as a generator, and the results it recorded.
pub(crate) fn load_script(path: &Path) -> Result<(Scripted, Recording), CliError> {
    let text = crate::store::bounded::read_text(path, golato::generator::MAX_SCRIPT_BYTES).map_err(|error| {
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

/// One run to drive.
pub(crate) struct Session {
    pub(crate) agent: Agent,
    /// The rules and hooks in effect (the `Stop` hooks are fired here).
    pub(crate) policy: golato::policy::Policy,
    /// What hooks are told of the session.
    pub(crate) hook_session: golato::policy::HookSession,
    /// The prompt, after a saved transcript when going on with a session.
    pub(crate) input: Input,
    /// Where the session is saved as it goes (none with `--ephemeral`, or for the demo).
    pub(crate) saving: Option<crate::store::session::Writer>,
    pub(crate) view: ViewArgs,
    /// Where the live view writes; unless it is standard output, the final answer goes there
    /// alone at the end.
    pub(crate) story: Target,
    /// Where the final answer is also written (`-o`).
    pub(crate) last_message: Option<PathBuf>,
    pub(crate) recorder: Option<Recorder>,
    pub(crate) recording: Option<Recording>,
    /// Shown at the end (the demo's project directory).
    pub(crate) workspace: Option<PathBuf>,
    /// Where the run's steps are journaled (`--journal`).
    pub(crate) journal: Option<Arc<dyn golato::journal::Journal>>,
    /// What the run uses, shown before it starts (stderr, or `run_start` in `--json`).
    pub(crate) header: Option<Header>,
    /// Calls waiting for a yes on the terminal (`--approve`).
    pub(crate) questions: Option<Questions>,
    /// The model's price, for the cost in the summary.
    pub(crate) price: Option<golato::generator::Price>,
    /// `--strict-replay`: any difference from the recording fails the run; whether the prompt
    /// already differs.
    pub(crate) strict_replay: Option<bool>,
}

/// Runs the session to its end: events to the view as they arrive, each finished turn to the
/// recorder and compared with the recording, and the first Ctrl-C or SIGTERM cancels the run
/// (started tools are waited for); a second one exits at once.
pub(crate) async fn drive(mut session: Session) -> Result<Exit, CliError> {
    let mut signals = Signals::listen()?;
    let bars = spinners(&session.view, session.story);
    if session.view.trace {
        trace::install(bars.clone())?;
    }
    let mut view: Box<dyn View> = if session.view.json {
        Box::new(JsonLines::with_header(session.header.as_ref()))
    } else {
        if let (Some(header), false) = (&session.header, session.story == Target::Nowhere) {
            eprintln!("{header}");
        }
        Box::new(Live::new(session.story, bars))
    };
    let started = Instant::now();
    if let Some(saving) = &mut session.saving {
        for prompt in &session.input.prompts {
            saving.step(&golato::message::Message::User(prompt.clone()));
        }
    }
    let mut input = session.input;
    let mut tally = Tally::default();
    let mut interrupted = None;
    let mut record_error = None;
    let mut answers: Option<mpsc::UnboundedReceiver<crate::setup::approve::Typed>> = None;
    let mut sent_on = 0;
    let outcome = loop {
        let run = match session.journal.clone() {
            Some(journal) => session.agent.start_journaled(input, journal),
            None => session.agent.start(input),
        };
        loop {
            tokio::select! {
                Some(mut question) = crate::setup::approve::next_question(&mut session.questions) => {
                    // A run being cancelled asks nothing more (its calls are refused anyway).
                    if interrupted.is_some() || question.reply.is_closed() {
                        let _ = question.reply.send(Answer::No.into());
                        continue;
                    }
                    let lines = answers.get_or_insert_with(crate::setup::approve::terminal_lines);
                    match crate::setup::approve::ask(&mut *view, &mut question, lines, &mut signals).await {
                        Ok(answer) => {
                            let _ = question.reply.send(answer.into());
                        }
                        Err(signal) => {
                            let _ = question.reply.send(Answer::No.into());
                            interrupted = Some(signal);
                            view.interrupted(signal);
                            run.cancel();
                        }
                    }
                }
                event = run.next_event() => {
                    let Some(event) = event else { break };
                    tally.observe(&event);
                    if let Some(saving) = &mut session.saving {
                        saving.save_event(&event, interrupted.is_some());
                    }
                    view.event(&event);
                    let Event::TurnEnd(turn) = &event else { continue };
                    if let Some(recording) = &session.recording {
                        for mismatch in recording.compare(turn) {
                            tally.replay_mismatches += 1;
                            view.mismatch(&mismatch);
                        }
                    }
                    if let (Some(recorder), None) = (&mut session.recorder, &record_error) {
                        record_error = recorder.record(turn).err();
                    }
                }
                signal = signals.next() => {
                    if interrupted.is_some() {
                        view.abandon();
                        golato::mcp::stop_servers();
                        std::process::exit(i32::from(signal.exit_code()));
                    }
                    interrupted = Some(signal);
                    view.interrupted(signal);
                    run.cancel();
                }
            }
        }
        let outcome = run.finish().await;
        // A Stop hook may send the model on (exit 2): its reason becomes the next prompt.
        // A journaled run is one run of one prompt: its journal records no continuation.
        let (Ok(result), None, None) = (&outcome, interrupted, &session.journal) else {
            break outcome;
        };
        let Some(reason) =
            crate::setup::session_hooks::stop(&session.policy, &session.hook_session, sent_on)
                .await
        else {
            break outcome;
        };
        sent_on += 1;
        let prompt = golato::message::UserMessage::new(format!("[Stop hook] {reason}"));
        if let Some(saving) = &mut session.saving {
            saving.step(&golato::message::Message::User(prompt.clone()));
        }
        input = Input {
            prompts: vec![prompt],
            transcript: result.messages.clone(),
            summary: result.summary.clone(),
        };
    };
    let (exit, error, final_text) = match (&outcome, interrupted) {
        (_, Some(signal)) => (Exit::Interrupted(signal), None, None),
        // With --output-schema, the answer is the JSON value.
        (Ok(result), None) => match &result.output {
            Some(value) => (
                Exit::Success,
                None,
                Some(std::borrow::Cow::Owned(
                    serde_json::to_string_pretty(value).unwrap_or_default(),
                )),
            ),
            None => (
                Exit::Success,
                None,
                Some(answer_text(&result.final_message)),
            ),
        },
        (Err(error), None) => (Exit::Failure, Some(describe(error)), None),
    };
    let (exit, error) = match (record_error, error) {
        (Some(record_error), None) if exit == Exit::Success => {
            (Exit::Failure, Some(record_error.to_string()))
        }
        (_, error) => (exit, error),
    };
    let (exit, error) = match session.strict_replay {
        Some(prompt_differs)
            if exit == Exit::Success && (prompt_differs || tally.replay_mismatches > 0) =>
        {
            (
                Exit::Failure,
                Some(format!(
                    "the replay differs from the recording ({}{}); --strict-replay makes that a failure",
                    crate::view::shown::count(tally.replay_mismatches as u64, "tool result"),
                    if prompt_differs { ", and the prompt" } else { "" }
                )),
            )
        }
        _ => (exit, error),
    };
    // The error first, then the summary that counts it.
    if let Some(error) = &error {
        eprintln!("golato: {}", crate::view::shown::visible(error));
    }
    view.end(&Ending {
        exit,
        error,
        final_text: final_text.as_deref(),
        tally: &tally,
        wall: started.elapsed(),
        workspace: session.workspace,
        cost: session.price.map(|price| price.cost(&tally.usage)),
    });
    if let Some(text) = &final_text {
        if session.story != Target::Stdout && !session.view.json {
            use std::io::IsTerminal as _;
            use std::io::Write as _;
            let mut out = std::io::stdout().lock();
            // On a terminal the answer is shown; into a pipe or a file it is data, exact.
            let text = match out.is_terminal() {
                true => crate::view::shown::visible(text),
                false => std::borrow::Cow::Borrowed(text.as_ref()),
            };
            let _ = writeln!(out, "{text}").and_then(|()| out.flush());
        }
        if let Some(path) = &session.last_message {
            std::fs::write(path, text.as_bytes()).map_err(|error| {
                CliError::Failed(format!(
                    "the run ended but its answer could not be written to {} (-o): {error}",
                    path.display()
                ))
            })?;
        }
    }
    Ok(exit)
}

/// The error in the command line's terms.
pub(crate) fn describe(error: &agent::Error) -> String {
    match error {
        agent::Error::MaxTurns { limit, .. } => format!(
            "the run reached its limit of {} and the model asked for another; raise --max-turns",
            crate::view::shown::count(*limit as u64, "turn")
        ),
        agent::Error::Budget { reached, .. } => format!(
            "the run reached its budget ({reached}) and was ended after its last batch; raise --max-tokens or --max-cost, or go on with golato run -c"
        ),
        agent::Error::Generator { source, .. } => {
            let hint = match source {
                golato::generator::Error::Provider {
                    status: Some(404), ..
                } => "; a 404 from an OpenAI-compatible server often means the base URL lacks /v1 at its end (--base-url http://HOST:PORT/v1)",
                _ => "",
            };
            one_line(&format!("the model's API failed: {source}{hint}"))
        }
        other => one_line(&other.to_string()),
    }
}

/// `text` on one line (a provider's HTML error page has many), cut at 600 characters.
fn one_line(text: &str) -> String {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match joined.char_indices().nth(600) {
        Some((cut, _)) => format!("{} …", &joined[..cut]),
        None => joined,
    }
}

/// Spinners are drawn only on a terminal that can show them, and never with `--json`.
pub(crate) fn spinners(view: &ViewArgs, story: Target) -> Option<MultiProgress> {
    let dumb = std::env::var("TERM").is_ok_and(|term| term == "dumb");
    (!view.json && !dumb && story.is_terminal())
        .then(|| MultiProgress::with_draw_target(story.draw_target()))
}

/// The text of `message`: borrowed when it is one part (an answer can be large), joined
/// otherwise.
pub(crate) fn answer_text(
    message: &golato::message::AssistantMessage,
) -> std::borrow::Cow<'_, str> {
    match message.content.as_slice() {
        [part] => match part.as_text() {
            Some(text) => std::borrow::Cow::Borrowed(text),
            None => std::borrow::Cow::Owned(message.text()),
        },
        _ => std::borrow::Cow::Owned(message.text()),
    }
}
