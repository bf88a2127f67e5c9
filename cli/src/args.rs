//! The command line's shape (clap derive).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

mod agent;
mod values;

pub(crate) use agent::{
    AgentArgs, Approve, McpCommand, ProviderKind, ReasoningEffort, SandboxArgs, SettingsArgs,
};
pub(crate) use values::{dollars, positive_seconds, temperature};

/// A coding agent for your terminal: a model with read, bash, edit and write, in a sandbox.
///
/// `golato` alone (on a terminal) opens the interactive front end in this folder; `golato
/// PROMPT` runs one task (as `golato run PROMPT`); `golato -c` goes on with this folder's last
/// session.
///
/// `golato run` confines the tools by default (--sandbox workspace-write: the working directory,
/// /tmp and TMPDIR writable, no network); `--sandbox off` gives them this process's file,
/// process, environment and network permissions.
#[derive(Debug, Parser)]
#[command(name = "golato", version, after_help = CHAT_FLAGS)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
    /// Serves the actor console at ADDR while the command runs (HOST:PORT on loopback, or a
    /// Unix socket's path): watch it with `golato console ADDR`.
    #[arg(long, global = true, env = "GOLATO_CONSOLE", value_name = "ADDR")]
    pub(crate) console: Option<String>,
    /// The console flags a handler or tool running, a mailbox not drained, or a lease held
    /// while others wait, past SECS seconds (default 10, 5 for a mailbox).
    #[arg(long, global = true, value_name = "SECS", value_parser = values::positive_seconds, requires = "console")]
    pub(crate) console_lint_after: Option<std::time::Duration>,
}

/// The flags a person starting the front end reaches for, under the commands: `golato` alone
/// takes `chat`'s flags.
const CHAT_FLAGS: &str = "\
Usage: golato [OPTIONS] [PROMPT]    (the front end, or one task with a PROMPT: `chat`'s and `run`'s flags)

Options most used with `golato` alone (every one: golato chat --help):
  -c, --continue            Go on with this folder's last session (its model and server too)
  -m, --model <MODEL>       The model ID
      --provider <PROVIDER> The model's API: openai, anthropic, openai-responses
      --base-url <URL>      The API's base URL (an OpenAI-compatible server: Ollama, vLLM, …)
      --sandbox <MODE>      read-only, workspace-write (default) or off
      --approve <MODE>      When to ask before a call: never, edits or ask
  -C, --cwd <DIR>           The folder the tools work in
      --plain               A line chat instead of the full-screen input";

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Runs an agent with the built-in tools in a directory, showing what happens live.
    Run(Box<RunArgs>),
    /// Watches the actors of a golato started with --console ADDR: every run, batch, call and
    /// path lock, what each does and waits on, and what looks wrong.
    Console(ConsoleArgs),
    /// Copies the bundled demo project to a fresh directory and replays a recorded session that
    /// fixes its bug there (no key or network needed).
    Demo(DemoArgs),
    /// Calls one built-in tool through the validation pipeline and prints the result as JSON.
    Tool(ToolArgs),
    /// Asks --approve auto's reviewer about calls without running them: one JSON object per
    /// line of standard input ({"intent": [the person's messages], "tool", "arguments", "why"}),
    /// one review per line of standard output. What benches/review_eval.py measures.
    Review(Box<ReviewArgs>),
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
    /// Answers a durable run's question: whether the call CALL_ID may run (the worker was
    /// started with --approve ask, or a rule asks).
    Approve(ApproveArgs),
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
    /// Lists the commands a session here offers as /NAME (.golato/commands/ and
    /// .claude/commands/ of a trusted project, ~/.config/golato/commands/, ~/.claude/commands/,
    /// codex's ~/.codex/prompts/ as /prompts:NAME), where each came from, and what was left
    /// out, with why.
    Commands(ConfigArgs),
    /// Lists what --approve auto's reviewer decided in a session (default: this folder's
    /// newest): each call, allowed, refused or asked, its risk and rationale, latency, tokens.
    Reviews(ReviewsArgs),
    /// Lists the agents the task tool may run by name (.golato/agents/ and .claude/agents/ of
    /// a trusted project, ~/.config/golato/agents/, ~/.claude/agents/), where each came from,
    /// its tools and model, and what was left out, with why.
    Agents(ConfigArgs),
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

/// `golato console`'s flags.
#[derive(Debug, Args)]
pub(crate) struct ConsoleArgs {
    /// Where the console is served: HOST:PORT or a Unix socket's path, as given to --console.
    pub(crate) addr: String,
    /// Print the stream as it comes, one JSON object a line (a hello, a snapshot, then
    /// deltas), instead of the viewer.
    #[arg(long)]
    pub(crate) json: bool,
    /// Stop after this many updates (with --json; for scripts).
    #[arg(long, value_name = "N", requires = "json")]
    pub(crate) updates: Option<u64>,
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
    /// Lists every connection the session's sandboxed commands made through golato's proxy
    /// (--allow-domain): host, allowed or blocked and why, bytes each way, the call.
    Network {
        /// The session's ID, as `golato sessions` lists it, or any unique start of it.
        id: String,
        /// One JSON object a line, as --network-log writes them.
        #[arg(long)]
        json: bool,
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
    /// Run each prompt as a durable run on the Restate server whose ingress this is (e.g.
    /// http://127.0.0.1:8080), served by `golato serve` workers: a session outlives this
    /// process (session/load attaches to a run still going), and questions wait on the server.
    #[arg(long, value_name = "URL")]
    pub(crate) restate: Option<String>,
    /// The server's admin API (e.g. http://127.0.0.1:9070), which session/cancel needs with
    /// --restate.
    #[arg(long, value_name = "URL", requires = "restate")]
    pub(crate) restate_admin: Option<String>,
}

#[derive(Debug, Args)]
pub(crate) struct ResumeArgs {
    /// The session's ID, as `golato sessions` lists it [default: the newest].
    pub(crate) id: Option<String>,
    #[command(flatten)]
    pub(crate) run: Box<RunArgs>,
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
pub(crate) struct ReviewsArgs {
    /// The session's ID, as `golato sessions` lists it, or any unique start of it [default:
    /// the newest of the folder].
    pub(crate) id: Option<String>,
    /// The folder whose newest session is meant.
    #[arg(
        short = 'C',
        long,
        visible_alias = "cd",
        default_value = ".",
        value_name = "DIR"
    )]
    pub(crate) cwd: PathBuf,
    /// One JSON object a line, as the session keeps them.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct ReviewArgs {
    /// The reviewer (--reviewer-…), and the sandbox and folder the calls would run in.
    #[command(flatten)]
    pub(crate) agent: AgentArgs,
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
    /// How long a call that needs a person's yes (--approve ask, an ask rule) waits for an
    /// answer (`golato approve`, or `golato submit` on a terminal) before it is refused. The
    /// question waits on the Restate server, not in this worker. Needs --restate.
    #[arg(long, value_name = "SECONDS", value_parser = positive_seconds, default_value = "86400")]
    pub(crate) answer_within: std::time::Duration,
    #[command(flatten)]
    pub(crate) agent: AgentArgs,
}

#[derive(Debug, Args)]
pub(crate) struct ApproveArgs {
    /// The run's ID, as submitted.
    pub(crate) id: String,
    /// The call waiting for an answer, as `golato submit` names it.
    pub(crate) call_id: String,
    /// The answer.
    pub(crate) answer: YesNo,
    /// Why not, told to the model (with `no`).
    #[arg(long, value_name = "TEXT")]
    pub(crate) reason: Option<String>,
    /// The Restate server's ingress, e.g. http://127.0.0.1:8080.
    #[arg(long, value_name = "URL")]
    pub(crate) restate: String,
}

/// An answer to a durable run's question.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum YesNo {
    /// The call runs.
    Yes,
    /// The call does not run.
    No,
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
