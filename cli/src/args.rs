//! The command line's shape (clap derive).

use std::num::NonZeroUsize;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// A coding agent for your terminal: a model with read, bash, edit and write, in a sandbox.
///
/// `golato run` confines the tools by default (--sandbox workspace-write: the working directory,
/// /tmp and TMPDIR writable, no network); `--sandbox off` gives them this process's file,
/// process, environment and network permissions.
#[derive(Debug, Parser)]
#[command(name = "golato", version)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Runs an agent with the built-in tools in a directory, showing what happens live.
    Run(Box<RunArgs>),
    /// Copies the bundled demo project to a fresh directory and replays a recorded session that
    /// fixes its bug there (no key or network needed).
    Demo(DemoArgs),
    /// Calls one built-in tool through the validation pipeline and prints the result as JSON.
    Tool(ToolArgs),
    /// Starts a worker for durable runs: a Restate endpoint running each submitted run with the
    /// agent these flags describe (in the default build; not with --no-default-features).
    Serve(Box<ServeArgs>),
    /// Submits a durable run to a Restate server and prints its outcome; the same --id again
    /// gives the same outcome (in the default build; not with --no-default-features).
    Submit(SubmitArgs),
    /// Cancels a durable run: its running tools are stopped, its transcript kept.
    Cancel(ControlArgs),
    /// Steers a durable run: the text joins after the batch of tool calls that is running.
    Steer(ControlArgs),
    /// Queues a follow-up for a durable run: when it would end, it goes on with the text.
    #[command(name = "follow-up")]
    FollowUp(ControlArgs),
    /// Goes on with a saved session (the newest one without ID), with a new prompt or none.
    Resume(ResumeArgs),
    /// Talks with the agent on the terminal: each line a prompt in one session; a line typed
    /// while it works steers it (`+` first: a follow-up); Ctrl-C cancels the run; Ctrl-D
    /// leaves.
    Chat(Box<ChatArgs>),
    /// Serves the Agent Client Protocol on standard input and output, for editors (Zed,
    /// JetBrains, Neovim) and other programs: many sessions at once, approvals asked of the
    /// client, sessions saved as the command line saves them.
    Acp(Box<AcpArgs>),
    /// Shows the settings in effect from the configuration files (and --profile, --config),
    /// each with where it comes from.
    Config(ConfigArgs),
    /// Trusts a folder (default: this one): its .golato/config.toml then takes full effect
    /// there: sandbox, approvals, network, MCP servers, rules and hooks.
    Trust(TrustArgs),
    /// Stops trusting a folder (default: this one): its .golato/config.toml may then not loosen
    /// safety, start commands or run hooks.
    Untrust(TrustArgs),
    /// Lists the command hooks in effect here, each with where it is configured.
    Hooks(ConfigArgs),
    /// Lists the skills a run here offers the model (.agents/skills/ and .claude/skills/ of a
    /// trusted project, ~/.agents/skills/), and the ones left out, with why.
    Skills(ConfigArgs),
    /// Takes back what a session's last prompt (or every prompt from --to N on) did: the files
    /// its edits and writes changed are put back and the session is cut back to before that
    /// prompt. A file changed since by anything else stops it, naming the file.
    Undo(UndoArgs),
    /// Shows what a session's edits and writes changed, prompt by prompt, as unified diffs.
    Diff(DiffArgs),
    /// Lists this directory's saved sessions (--all: every directory's), newest first: ID, last
    /// activity, turns, directory, first prompt; `sessions repair ID` mends a damaged one,
    /// `sessions rm ID` removes one.
    Sessions(SessionsArgs),
}

#[derive(Debug, Args)]
pub(crate) struct UndoArgs {
    #[command(flatten)]
    pub(crate) session: SessionChoice,
    /// Undo every prompt from this one on (1-based, as `golato diff` numbers them) [default:
    /// the last].
    #[arg(long, value_name = "PROMPT")]
    pub(crate) to: Option<usize>,
}

#[derive(Debug, Args)]
pub(crate) struct DiffArgs {
    #[command(flatten)]
    pub(crate) session: SessionChoice,
}

/// Which saved session a command means.
#[derive(Debug, Args)]
pub(crate) struct SessionChoice {
    /// The session (its ID or a unique start of it) [default: this directory's newest].
    pub(crate) id: Option<String>,
    /// The directory whose newest session is meant.
    #[arg(
        short = 'C',
        long,
        visible_alias = "cd",
        default_value = ".",
        value_name = "DIR"
    )]
    pub(crate) cwd: PathBuf,
}

#[derive(Debug, Args)]
pub(crate) struct SessionsArgs {
    #[command(subcommand)]
    pub(crate) action: Option<SessionsAction>,
    /// List the sessions of this directory.
    #[arg(
        short = 'C',
        long,
        visible_alias = "cd",
        default_value = ".",
        value_name = "DIR"
    )]
    pub(crate) cwd: PathBuf,
    /// List the sessions of every directory.
    #[arg(long, conflicts_with = "cwd")]
    pub(crate) all: bool,
}

/// What `golato sessions` does besides listing.
#[derive(Debug, Subcommand)]
pub(crate) enum SessionsAction {
    /// Mends a session damaged in the middle: keeps the steps before the damage and moves the
    /// rest to ID.jsonl.damaged beside it (a torn last line goes to ID.torn).
    Repair {
        /// The session's ID, as `golato sessions` lists it, or any unique start of it.
        id: String,
    },
    /// Removes a saved session (and what repairs set aside beside it).
    Rm {
        /// The session's ID, as `golato sessions` lists it, or any unique start of it.
        id: String,
    },
}

#[derive(Debug, Args)]
pub(crate) struct ChatArgs {
    #[command(flatten)]
    pub(crate) agent: AgentArgs,
    /// Go on with the newest session of this directory.
    #[arg(short = 'c', long = "continue")]
    pub(crate) continue_session: bool,
    /// Save no session.
    #[arg(long)]
    pub(crate) ephemeral: bool,
    /// A plain line-by-line chat instead of the full-screen input area (also when TERM=dumb).
    #[arg(long)]
    pub(crate) plain: bool,
}

#[derive(Debug, Args)]
pub(crate) struct AcpArgs {
    /// Each session's defaults; a session's `cwd` (from the client) is its working directory.
    #[command(flatten)]
    pub(crate) agent: AgentArgs,
    /// Save no sessions.
    #[arg(long)]
    pub(crate) ephemeral: bool,
    /// How long a permission request may wait for the client before the call is refused.
    #[arg(long, value_name = "SECONDS", default_value = "300", value_parser = positive_seconds)]
    pub(crate) permission_timeout: std::time::Duration,
}

#[derive(Debug, Args)]
pub(crate) struct ResumeArgs {
    /// The session's ID, as `golato sessions` lists it [default: the newest].
    pub(crate) id: Option<String>,
    #[command(flatten)]
    pub(crate) run: Box<RunArgs>,
}

/// Which API a real model is reached through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ProviderKind {
    /// OpenAI Chat Completions, or any compatible server (Ollama, vLLM, llama.cpp, LM Studio).
    Openai,
    /// Anthropic's Messages API.
    Anthropic,
    /// OpenAI's Responses API (OPENAI_BASE_URL, OPENAI_API_KEY, OPENAI_MODEL as for openai).
    OpenaiResponses,
}

#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// What to ask the agent: the text, @FILE for a file's contents, or - to read it from
    /// standard input (also read from there when no PROMPT is given and standard input is not
    /// a terminal).
    pub(crate) prompt: Option<String>,
    /// Attach an image (PNG, JPEG, GIF or WebP) to the prompt; repeatable.
    #[arg(long, value_name = "FILE", help_heading = "Input")]
    pub(crate) image: Vec<PathBuf>,
    /// Also write the final answer to FILE.
    #[arg(short = 'o', long, value_name = "FILE", help_heading = "Output")]
    pub(crate) output_last_message: Option<PathBuf>,
    /// Print only the final answer: no live view, no summary (errors still go to stderr).
    #[arg(short, long, conflicts_with = "json", help_heading = "Output")]
    pub(crate) quiet: bool,
    /// Go on with the newest session of this directory, with a new prompt or none.
    #[arg(short = 'c', long = "continue", help_heading = "Sessions")]
    pub(crate) continue_session: bool,
    /// Save no session.
    #[arg(long, help_heading = "Sessions")]
    pub(crate) ephemeral: bool,
    /// With --script: any difference from the recording (a tool result, the prompt) makes the
    /// run fail (exit 1), for CI.
    #[arg(long, requires = "script", help_heading = "Output")]
    pub(crate) strict_replay: bool,
    #[command(flatten)]
    pub(crate) agent: AgentArgs,
    /// Write what the model said, turn by turn, as a script that --script replays.
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    pub(crate) record: Option<PathBuf>,
    /// Journal every turn and call result in FILE, synced as it goes; run again with the same
    /// FILE and prompt (after a crash, a kill, a cancel), the run asks for no turn and runs no
    /// call that FILE records, and goes on from there.
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    pub(crate) journal: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) view: ViewArgs,
}

/// The agent a run uses: model, tools and limits (`golato run` and `golato serve`).
#[derive(Debug, Clone, Args)]
pub(crate) struct AgentArgs {
    /// Directory the tools work in; relative paths resolve against it.
    #[arg(
        help_heading = "Input",
        short = 'C',
        long,
        visible_alias = "cd",
        default_value = ".",
        value_name = "DIR"
    )]
    pub(crate) cwd: PathBuf,
    /// The model's API [default: openai with --base-url or OPENAI_BASE_URL; anthropic with
    /// ANTHROPIC_BASE_URL, or with ANTHROPIC_API_KEY and no OPENAI_API_KEY; else openai].
    #[arg(long, value_enum, help_heading = "Model")]
    pub(crate) provider: Option<ProviderKind>,
    /// The model ID [default: OPENAI_MODEL or ANTHROPIC_MODEL, else gpt-4o-mini or
    /// claude-sonnet-4-5].
    #[arg(short, long, help_heading = "Model")]
    pub(crate) model: Option<String>,
    /// The API's base URL, e.g. http://localhost:11434/v1 for Ollama [default: OPENAI_BASE_URL or
    /// ANTHROPIC_BASE_URL, else the provider's own].
    #[arg(long, value_name = "URL", help_heading = "Model")]
    pub(crate) base_url: Option<String>,
    /// Sampling temperature (0 to 2) [default: the provider's].
    #[arg(long, value_name = "T", value_parser = temperature, help_heading = "Model")]
    pub(crate) temperature: Option<f64>,
    /// The most tokens one answer may have [default: the provider's; Anthropic 4096].
    #[arg(long, value_name = "N", help_heading = "Model")]
    pub(crate) max_output_tokens: Option<std::num::NonZeroU32>,
    /// How hard a reasoning model thinks: OpenAI's reasoning effort; on Anthropic, extended
    /// thinking with a budget of 2,048, 8,192 or 24,576 tokens.
    #[arg(long, value_enum, value_name = "EFFORT", help_heading = "Model")]
    pub(crate) reasoning_effort: Option<ReasoningEffort>,
    /// Instructions sent before the conversation: the text itself, or @FILE to read them from a
    /// file.
    #[arg(long, value_name = "TEXT|@FILE", help_heading = "Model")]
    pub(crate) system: Option<String>,
    /// Tell the model nothing of its environment (directory, OS, date, git, sandbox) and read
    /// no AGENTS.md or CLAUDE.md.
    #[arg(long, help_heading = "Model")]
    pub(crate) no_project_instructions: bool,
    /// Only these tools, comma-separated (e.g. read,bash) [default: read,bash,edit,write];
    /// grep, find and ls (search) and task (subagents) only when named.
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "NAMES",
        help_heading = "Tools"
    )]
    pub(crate) tools: Option<Vec<String>>,
    /// Plan mode: the model looks (read-only sandbox; read, bash, grep, find, ls) and sends a
    /// plan with update_plan; nothing is changed. In the front end, /plan enters it and
    /// /accept carries the plan out.
    #[arg(long, help_heading = "Tools")]
    pub(crate) plan: bool,
    /// Leave these tools out, comma-separated; wins over --tools.
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "NAMES",
        help_heading = "Tools"
    )]
    pub(crate) exclude: Vec<String>,
    /// With the task tool: how deep subagents may nest (1: children only; 2: children and
    /// grandchildren) [default: 2].
    #[arg(long, value_name = "N", help_heading = "Tools")]
    pub(crate) task_depth: Option<NonZeroUsize>,
    /// Run the calls of each batch one after another instead of in parallel.
    #[arg(long, help_heading = "Tools")]
    pub(crate) sequential: bool,
    /// Run at most N calls of a batch at once (the others start as running ones end).
    #[arg(long, value_name = "N", help_heading = "Tools")]
    pub(crate) max_parallel: Option<NonZeroUsize>,
    /// Cancel a tool call that runs longer than this many seconds; its result says it timed
    /// out (bash's own `timeout` argument still applies inside it).
    #[arg(long, value_name = "SECONDS", value_parser = positive_seconds, help_heading = "Tools")]
    pub(crate) tool_timeout: Option<std::time::Duration>,
    /// End the run (exit 1) once it has used this many tokens (input, output, cached), after
    /// the batch it is in.
    #[arg(long, value_name = "N", help_heading = "Limits")]
    pub(crate) max_tokens: Option<std::num::NonZeroU64>,
    /// End the run (exit 1) once it has cost this many US dollars at the model's price (a model
    /// golato knows the price of), after the batch it is in.
    #[arg(long, value_name = "USD", value_parser = dollars, help_heading = "Limits")]
    pub(crate) max_cost: Option<f64>,
    /// The model's context window in tokens (golato knows it for the models it has prices
    /// for); past 80% of it, the oldest turns are summarized so the run can go on.
    #[arg(long, value_name = "TOKENS", help_heading = "Limits")]
    pub(crate) context_window: Option<std::num::NonZeroU64>,
    /// Never summarize older turns: a run that outgrows the context window fails with the
    /// provider's error.
    #[arg(long, help_heading = "Limits")]
    pub(crate) no_compact: bool,
    /// The final answer must be JSON valid against the JSON Schema in FILE; it is printed as
    /// that JSON (an invalid answer gets one more turn, then the run fails).
    #[arg(long, value_name = "FILE", help_heading = "Model")]
    pub(crate) output_schema: Option<PathBuf>,
    /// Stop with an error (exit 1) when the run needs more model requests than this.
    #[arg(long, value_name = "N", help_heading = "Limits")]
    pub(crate) max_turns: Option<NonZeroUsize>,
    /// Add the tools of an MCP server started by this command line, named `{server}_{tool}`;
    /// repeatable. Split as a shell would (quote arguments with spaces); leading NAME=value
    /// words set its environment. E.g. --mcp 'TOKEN=x npx -y @modelcontextprotocol/server-everything'.
    #[arg(long, value_name = "COMMAND", help_heading = "Tools")]
    pub(crate) mcp: Vec<String>,
    /// Add the tools of an MCP server at this streamable HTTP URL; repeatable.
    #[arg(long, value_name = "URL", help_heading = "Tools")]
    pub(crate) mcp_url: Vec<String>,
    /// How long each MCP server may take to start and answer MCP's handshake [default: 20].
    #[arg(long, value_name = "SECONDS", value_parser = positive_seconds, help_heading = "Tools")]
    pub(crate) mcp_timeout: Option<std::time::Duration>,
    /// Replay a recorded model (a script written by --record, or by hand) instead of calling
    /// one; differences between the recorded and the replayed tool results are reported.
    #[arg(long, value_name = "FILE", help_heading = "Model")]
    pub(crate) script: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) sandbox: SandboxArgs,
    #[command(flatten)]
    pub(crate) settings: SettingsArgs,
    /// The flags given on the command line (by their names), which configuration never
    /// overrides.
    #[arg(skip)]
    pub(crate) given: std::collections::HashSet<String>,
    /// MCP servers of the configuration given as a program, arguments and environment.
    #[arg(skip)]
    pub(crate) mcp_commands: Vec<McpCommand>,
    /// Which calls wait for your yes on the terminal: ask (every bash, write and edit), edits
    /// (writes and edits in the working and --writable directories go through; bash asks) or
    /// never. A call that needs a yes when no terminal can answer is refused, never left
    /// waiting. [default: never when sandboxed or without a terminal, else ask]
    #[arg(long, value_enum, value_name = "MODE", help_heading = "Safety")]
    pub(crate) approve: Option<crate::args::Approve>,
    /// Run the calls RULE matches without a question, such as 'bash(git status*)' or
    /// 'read(src/**)'; repeatable. A deny beats an ask beats an allow (README "Policy").
    #[arg(long = "allow", value_name = "RULE", help_heading = "Safety")]
    pub(crate) allow_rules: Vec<String>,
    /// Ask before the calls RULE matches, such as 'bash(git push:*)'; repeatable.
    #[arg(long = "ask", value_name = "RULE", help_heading = "Safety")]
    pub(crate) ask_rules: Vec<String>,
    /// Never run the calls RULE matches, such as 'bash(rm -rf*)' or 'edit(**/.env)';
    /// repeatable.
    #[arg(long = "deny", value_name = "RULE", help_heading = "Safety")]
    pub(crate) deny_rules: Vec<String>,
}

/// What the tools may touch (`golato run`, `golato serve`, `golato tool`).
#[derive(Debug, Clone, Args)]
pub(crate) struct SandboxArgs {
    /// Confine the tools: read-only (nothing writable), workspace-write (the working directory,
    /// /tmp, TMPDIR and --writable directories writable) or off. No network unless
    /// --allow-network; credential directories (~/.ssh, ~/.aws, …) unreadable. [default:
    /// workspace-write for run and serve, off for tool]
    #[arg(long, value_name = "MODE", value_parser = sandbox_mode, help_heading = "Safety")]
    pub(crate) sandbox: Option<golato::sandbox::Mode>,
    /// Let sandboxed commands use the network (and local sockets).
    #[arg(long, help_heading = "Safety")]
    pub(crate) allow_network: bool,
    /// Another directory a workspace-write sandbox leaves writable; repeatable.
    #[arg(long, value_name = "DIR", help_heading = "Safety")]
    pub(crate) writable: Vec<PathBuf>,
    /// Another path a sandbox makes unreadable; repeatable.
    #[arg(long, value_name = "PATH", help_heading = "Safety")]
    pub(crate) deny_read: Vec<PathBuf>,
    /// Give sandboxed commands this variable although it is named like a secret (*KEY*,
    /// *TOKEN*, *SECRET*, *PASSWORD*, …), which they otherwise do not see; repeatable.
    #[arg(long, value_name = "NAME", help_heading = "Safety")]
    pub(crate) pass_env: Vec<String>,
    /// Let a sandboxed write or edit change a file with several hard links (one of which may be
    /// outside the writable directories).
    #[arg(long, help_heading = "Safety")]
    pub(crate) allow_hard_links: bool,
    /// Let sandboxed commands change the working directory directly instead of through a
    /// capturing overlay: undo cannot take their changes back. For a workspace with files
    /// owned by another user or group, which a captured command cannot change.
    #[arg(long, help_heading = "Safety")]
    pub(crate) no_bash_checkpoints: bool,
}

impl Command {
    /// The agent flags of the command, if it has them.
    pub(crate) fn agent_args(&mut self) -> Option<&mut AgentArgs> {
        match self {
            Command::Run(args) => Some(&mut args.agent),
            Command::Resume(args) => Some(&mut args.run.agent),
            Command::Chat(args) => Some(&mut args.agent),
            Command::Serve(args) => Some(&mut args.agent),
            _ => None,
        }
    }
}

impl SandboxArgs {
    /// The policy these flags ask for, `default` when --sandbox is not given.
    pub(crate) fn policy(&self, default: golato::sandbox::Mode) -> golato::sandbox::Policy {
        let mut policy = golato::sandbox::Policy::off();
        policy.mode = self.sandbox.unwrap_or(default);
        policy.allow_network = self.allow_network;
        policy.writable_roots = self.writable.clone();
        policy.pass_env = self.pass_env.clone();
        policy.helper = small_helper();
        // With the sandbox off, commands still end with golato (a killed worker's commands
        // must not run on beside their retries).
        policy.guard = true;
        policy.allow_hard_links = self.allow_hard_links;
        policy.denied_paths = golato::sandbox::CREDENTIAL_PATHS
            .iter()
            .map(PathBuf::from)
            .chain(self.deny_read.iter().cloned())
            .collect();
        policy
    }
}

/// The small `golato-sandbox` helper when it is installed beside this binary (it starts faster
/// than this one); else `None`, and this binary is the helper.
fn small_helper() -> Option<PathBuf> {
    let small = std::env::current_exe()
        .ok()?
        .with_file_name("golato-sandbox");
    small.is_file().then_some(small)
}

fn sandbox_mode(text: &str) -> Result<golato::sandbox::Mode, String> {
    text.parse()
        .map_err(|error: golato::sandbox::UnknownMode| error.to_string())
}

/// An MCP server as the configuration gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct McpCommand {
    pub(crate) program: String,
    pub(crate) args: Vec<String>,
    pub(crate) env: Vec<(String, String)>,
}

#[derive(Debug, Args)]
pub(crate) struct TrustArgs {
    /// The folder.
    #[arg(default_value = ".", value_name = "DIR")]
    pub(crate) dir: PathBuf,
}

#[derive(Debug, Args)]
pub(crate) struct ConfigArgs {
    /// The project directory whose .golato/config.toml counts.
    #[arg(
        short = 'C',
        long,
        visible_alias = "cd",
        default_value = ".",
        value_name = "DIR"
    )]
    pub(crate) cwd: PathBuf,
    #[command(flatten)]
    pub(crate) settings: SettingsArgs,
}

/// Which settings of the configuration files apply.
#[derive(Debug, Clone, Args)]
pub(crate) struct SettingsArgs {
    /// Use the settings of this profile of the configuration files ([profiles.NAME]).
    #[arg(long, value_name = "NAME", help_heading = "Configuration")]
    pub(crate) profile: Option<String>,
    /// Override a setting of the configuration files, such as model=gpt-4o; repeatable.
    #[arg(
        long = "config",
        value_name = "KEY=VALUE",
        help_heading = "Configuration"
    )]
    pub(crate) config: Vec<String>,
    /// Trust the folder for this run: its .golato/config.toml may set the sandbox, approvals,
    /// network, MCP servers, rules and hooks (nothing is remembered; `golato trust` remembers).
    #[arg(long, help_heading = "Safety")]
    pub(crate) trust: bool,
}

/// How hard a reasoning model thinks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ReasoningEffort {
    Low,
    Medium,
    High,
}

pub(crate) fn dollars(text: &str) -> Result<f64, String> {
    match text.trim_start_matches('$').parse::<f64>() {
        Ok(value) if value.is_finite() && value > 0.0 => Ok(value),
        _ => Err(format!(
            "{text:?} is not an amount of US dollars above 0, such as 0.50"
        )),
    }
}

pub(crate) fn temperature(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(value) if (0.0..=2.0).contains(&value) => Ok(value),
        _ => Err(format!("{text:?} is not a temperature between 0 and 2")),
    }
}

/// The longest duration the command line takes: 100 years, well inside what a timer holds.
const MAX_SECONDS: std::time::Duration = std::time::Duration::from_secs(100 * 365 * 24 * 3600);

/// A positive number of seconds, such as 30 or 0.5.
pub(crate) fn positive_seconds(text: &str) -> Result<std::time::Duration, String> {
    let seconds: f64 = text
        .parse()
        .map_err(|_| format!("{text:?} is not a number of seconds"))?;
    if seconds.is_finite() && seconds > 0.0 {
        std::time::Duration::try_from_secs_f64(seconds)
            .ok()
            .filter(|duration| *duration <= MAX_SECONDS)
            .ok_or_else(|| {
                format!(
                    "{text} seconds is longer than golato waits (at most {} seconds, 100 years)",
                    MAX_SECONDS.as_secs()
                )
            })
    } else {
        Err(format!("{text} is not a positive number of seconds"))
    }
}

#[derive(Debug, Args)]
pub(crate) struct DemoArgs {
    /// Where to put the demo project and run it (a new or empty directory) [default: a fresh
    /// temporary directory].
    #[arg(short = 'C', long, visible_alias = "cwd", value_name = "DIR")]
    pub(crate) dir: Option<PathBuf>,
    /// Write the replayed session as a script, as `golato run --record` does.
    #[arg(long, value_name = "FILE")]
    pub(crate) record: Option<PathBuf>,
    /// Play at full speed on a terminal too (piped or with --json it always does).
    #[arg(long)]
    pub(crate) fast: bool,
    #[command(flatten)]
    pub(crate) view: ViewArgs,
}

/// How a run is shown.
#[derive(Debug, Clone, Copy, Args)]
pub(crate) struct ViewArgs {
    /// Print one JSON object per event, one per line, the last line the outcome (see the
    /// README's "JSON lines" section for the schema).
    #[arg(long, help_heading = "Output")]
    pub(crate) json: bool,
    /// Show every actor message on stderr (span, mailbox wait, queue depth), nested run → turn
    /// → batch → call; RUST_LOG filters it [default: golato=debug].
    #[arg(long, help_heading = "Output")]
    pub(crate) trace: bool,
}

#[derive(Debug, Args)]
pub(crate) struct ToolArgs {
    /// The tool: read, bash, edit or write.
    pub(crate) name: String,
    /// The arguments, a JSON object, e.g. '{"path": "README.md"}'; `-` reads them from
    /// standard input (for arguments longer than a command line may be).
    pub(crate) json_args: String,
    /// Directory relative paths resolve against.
    #[arg(
        short = 'C',
        long,
        visible_alias = "cd",
        default_value = ".",
        value_name = "DIR"
    )]
    pub(crate) cwd: PathBuf,
    #[command(flatten)]
    pub(crate) sandbox: SandboxArgs,
}

#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// Address to serve Restate's requests on, e.g. 127.0.0.1:9080.
    #[arg(long, value_name = "ADDR")]
    pub(crate) listen: std::net::SocketAddr,
    /// Register the worker with the Restate admin API at this URL (e.g. http://127.0.0.1:9070)
    /// once it listens.
    #[arg(long, value_name = "URL")]
    pub(crate) restate_admin: Option<String>,
    /// The Restate server's ingress (e.g. http://127.0.0.1:8080): runs publish their events
    /// through it (what `golato submit` shows live), and write and edit lock each file through
    /// it, so that workers sharing a file system never interleave their writes of one file.
    /// Without it a run's events stay in the worker and the lock is this worker's own.
    #[arg(long, value_name = "URL")]
    pub(crate) restate: Option<String>,
    /// How long a file lock taken through --restate lasts at most: a worker that dies holding
    /// one holds its file that long.
    #[arg(long, value_name = "SECONDS", value_parser = positive_seconds, default_value = "30")]
    pub(crate) lock_ttl: std::time::Duration,
    /// The address to register instead of http://LISTEN: the load balancer in front of several
    /// workers, or the name other machines reach this one by.
    #[arg(long, value_name = "URL")]
    pub(crate) advertise: Option<String>,
    #[command(flatten)]
    pub(crate) agent: AgentArgs,
}

#[derive(Debug, Args)]
pub(crate) struct ControlArgs {
    /// The run's ID, as submitted.
    pub(crate) id: String,
    /// What to tell the run (steer, follow-up): the text, @FILE, or - for standard input.
    pub(crate) text: Option<String>,
    /// The Restate server's ingress, e.g. http://127.0.0.1:8080.
    #[arg(long, value_name = "URL")]
    pub(crate) restate: String,
    /// The server's admin API, which cancelling needs, e.g. http://127.0.0.1:9070.
    #[arg(long, value_name = "URL")]
    pub(crate) restate_admin: Option<String>,
}

#[derive(Debug, Args)]
pub(crate) struct SubmitArgs {
    /// What to ask the agent: the text, @FILE for a file's contents, or - for standard input
    /// (also, without --id, when it is piped and nothing is given). With --id and no prompt,
    /// golato attaches to that run.
    pub(crate) prompt: Option<String>,
    /// The Restate server's ingress, e.g. http://127.0.0.1:8080.
    #[arg(long, value_name = "URL")]
    pub(crate) restate: String,
    /// The run's ID: submitting an ID again gives that run's outcome instead of a second run;
    /// with no prompt, attaches to the run and shows its events from the start (or --from)
    /// [default: a new random ID].
    #[arg(long)]
    pub(crate) id: Option<String>,
    /// Show the run's events from this number on (each JSON line's "seq"); the events before
    /// are left out.
    #[arg(long, value_name = "SEQ", default_value = "0")]
    pub(crate) from: u64,
    /// Print JSON lines: durable_run, then the run's events as `golato run --json` prints them
    /// (each with its "seq"), then the outcome.
    #[arg(long)]
    pub(crate) json: bool,
    /// How long to keep trying while the server cannot be reached (down, restarting); the run
    /// goes on on the server meanwhile.
    #[arg(long, value_name = "SECONDS", value_parser = positive_seconds, default_value = "60")]
    pub(crate) reconnect_for: std::time::Duration,
}

/// Which calls ask first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Approve {
    /// Every bash, write and edit call asks: yes, no, or always for that tool in this run.
    Ask,
    /// Writes and edits inside the working directory and the --writable directories go
    /// through; bash and anything else that changes files asks.
    Edits,
    /// Nothing asks.
    Never,
}

impl Approve {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Approve::Ask => "ask",
            Approve::Edits => "edits",
            Approve::Never => "never",
        }
    }

    /// The mode when `--approve` is not given. A run the sandbox confines asks nothing: the
    /// kernel holds the line, and a question for every command inside it teaches people to
    /// answer yes unread. An unconfined run on a terminal asks before every bash, write and
    /// edit: nothing else stands between the model and the machine. Without a terminal nobody
    /// can answer, so nothing asks (the choice of `--sandbox off` was the person's own).
    pub(crate) fn default_for(sandboxed: bool, interactive: bool) -> Approve {
        if !sandboxed && interactive {
            Approve::Ask
        } else {
            Approve::Never
        }
    }
}

impl std::fmt::Display for Approve {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
