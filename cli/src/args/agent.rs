//! The flags that describe an agent (`golato run`, `chat`, `resume`, `serve`, `acp`): model,
//! tools, limits, sandbox, approvals and rules, and the values they take.

use std::num::NonZeroUsize;
use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::values::{dollars, positive_seconds, temperature};

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

impl ProviderKind {
    /// The name `--provider` takes for it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            ProviderKind::Openai => "openai",
            ProviderKind::Anthropic => "anthropic",
            ProviderKind::OpenaiResponses => "openai-responses",
        }
    }

    /// The API `--provider NAME` names.
    pub(crate) fn named(name: &str) -> Option<ProviderKind> {
        <ProviderKind as ValueEnum>::from_str(name, false).ok()
    }
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
    /// Offer the model its provider's own web search (Anthropic's, the Responses API's),
    /// limited to the --allow-domain hosts when there are any; what it searched and cites is
    /// shown and kept. OpenAI's Chat Completions has none.
    #[arg(long, help_heading = "Model")]
    pub(crate) web_search: bool,
    /// The model that reviews calls under --approve auto [default: a small model of the
    /// session's provider; the session's own with --base-url].
    #[arg(long, value_name = "ID", help_heading = "Safety")]
    pub(crate) reviewer_model: Option<String>,
    /// The reviewer's API [default: the session's].
    #[arg(long, value_enum, value_name = "API", help_heading = "Safety")]
    pub(crate) reviewer_provider: Option<ProviderKind>,
    /// The reviewer's server [default: the session's].
    #[arg(long, value_name = "URL", help_heading = "Safety")]
    pub(crate) reviewer_base_url: Option<String>,
    /// How long one review may take before the person decides (or the call is refused).
    #[arg(long, value_name = "SECONDS", default_value = "30", value_parser = crate::args::values::positive_seconds, help_heading = "Safety")]
    pub(crate) reviewer_timeout: std::time::Duration,
    /// Your policy for the reviewer, the text itself or @FILE: what it should allow or refuse
    /// beyond golato's own instructions (a project's file can set it only when trusted).
    #[arg(long, value_name = "TEXT|@FILE", help_heading = "Safety")]
    pub(crate) reviewer_policy: Option<String>,
    /// The reviewer's budget for the session, in tokens; past it the person decides.
    #[arg(
        long,
        value_name = "TOKENS",
        default_value = "500000",
        help_heading = "Safety"
    )]
    pub(crate) reviewer_max_tokens: u64,
    /// Instructions sent before the conversation: the text itself, or @FILE to read them from a
    /// file.
    #[arg(long, value_name = "TEXT|@FILE", help_heading = "Model")]
    pub(crate) system: Option<String>,
    /// Tell the model nothing of its environment (directory, OS, date, git, sandbox) and read
    /// no AGENTS.md or CLAUDE.md.
    #[arg(long, help_heading = "Model")]
    pub(crate) no_project_instructions: bool,
    /// Only these tools, comma-separated (e.g. read,bash) [default: read,bash,edit,write, and
    /// bash_output,bash_kill for background commands]; grep, find and ls (search) and task
    /// (subagents) only when named.
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
    /// Let bash run at most N commands in the background at once (servers, watchers, long
    /// test runs; read with bash_output, ended with bash_kill, all killed when golato ends);
    /// 0 turns background commands off [default: 8].
    #[arg(long, value_name = "N", help_heading = "Tools")]
    pub(crate) max_background: Option<usize>,
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
    /// Start no language server: edits and writes get no diagnostics, and there is no
    /// diagnostics tool (config `lsp = false`).
    #[arg(long, help_heading = "Tools")]
    pub(crate) no_lsp: bool,
    /// Language servers of the configuration (`[lsp.NAME]`), before golato's own.
    #[arg(skip)]
    pub(crate) lsp_servers: Vec<golato::diagnostics::ServerSpec>,
    /// Linters of the configuration (`[lint.NAME]`).
    #[arg(skip)]
    pub(crate) linters: Vec<golato::diagnostics::LinterSpec>,
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
    /// Let sandboxed commands use the network (and local sockets), all of it: wins over
    /// --allow-domain.
    #[arg(long, help_heading = "Safety")]
    pub(crate) allow_network: bool,
    /// Let sandboxed commands reach these hosts, through golato's proxy only: a host, `*.`
    /// a domain, host:port, or a preset (@crates, @npm, @pypi, @go, @github); repeatable.
    #[arg(long, value_name = "PATTERN", help_heading = "Safety")]
    pub(crate) allow_domain: Vec<String>,
    /// Never let sandboxed commands reach these hosts, even when allowed; repeatable.
    #[arg(long, value_name = "PATTERN", help_heading = "Safety")]
    pub(crate) deny_domain: Vec<String>,
    /// Which plain HTTP methods the allowed hosts get: all, or read (GET, HEAD, OPTIONS only;
    /// no tunnels, whose requests cannot be seen).
    #[arg(long, value_name = "METHODS", value_parser = ["all", "read"], help_heading = "Safety")]
    pub(crate) network_methods: Option<String>,
    /// Append every connection sandboxed commands make (allowed or blocked) to FILE, one
    /// JSON object a line.
    #[arg(long, value_name = "FILE", help_heading = "Safety")]
    pub(crate) network_log: Option<PathBuf>,
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

impl SandboxArgs {
    /// The policy these flags ask for, `default` when --sandbox is not given.
    ///
    /// # Errors
    /// A domain pattern that is none, named with what to give instead.
    pub(crate) fn policy(
        &self,
        default: golato::sandbox::Mode,
    ) -> Result<golato::sandbox::Policy, golato::sandbox::network::PatternError> {
        let mut policy = golato::sandbox::Policy::off();
        policy.mode = self.sandbox.unwrap_or(default);
        policy.allow_network = self.allow_network;
        if !self.allow_domain.is_empty() || !self.deny_domain.is_empty() {
            let methods = match self.network_methods.as_deref() {
                Some("read") => golato::sandbox::network::Methods::Read,
                _ => golato::sandbox::network::Methods::All,
            };
            let allow: Vec<&str> = self.allow_domain.iter().map(String::as_str).collect();
            let deny: Vec<&str> = self.deny_domain.iter().map(String::as_str).collect();
            policy.domains = Some(golato::sandbox::network::NetworkPolicy::new(
                &allow, &deny, methods,
            )?);
        }
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
        Ok(policy)
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
    /// A reviewer model decides what would ask (`--reviewer-model`): allowed, refused with
    /// its reason, or asked of the person; the person decides whatever it cannot.
    Auto,
}

impl Approve {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Approve::Ask => "ask",
            Approve::Edits => "edits",
            Approve::Never => "never",
            Approve::Auto => "auto",
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
