//! The `golato` command line (`golato --help` lists every subcommand):
//!
//! - running agents: `run` (one prompt, live output, `--json`), `chat` (the interactive front
//!   end, or `--plain` lines), `resume`, `demo` (the bundled demo, no key or network needed),
//!   `acp` (the Agent Client Protocol for editors), `tool` (one call of a built-in tool);
//! - durable runs on Restate: `serve`, `submit`, `cancel`, `steer`, `follow-up`, `approve`;
//! - what golato keeps: `sessions`, `undo`, `diff`;
//! - what the files say: `config`, `hooks`, `skills`, `trust`, `untrust`.
//!
//! Exit status: 0 when the run ended normally (for `tool`: a successful result), 1 for an error
//! outcome (a generator failure, `--max-turns` reached; for `tool`: an error result), 2 for a
//! usage error, 130 after Ctrl-C and 143 after SIGTERM.
//!
//! This library is the binary's own, not an API: it has `main` and, with the `fuzzing`
//! feature, entry points into the parsers of golato's own files for the targets in `fuzz/`.
//! The command line writes to the terminal itself, so `eprintln!` is at home here.

// The rooms, lowest first (ARCHITECTURE.md): what a run looks like, what golato keeps, what
// the files say, what builds an agent, then the front ends and commands over them.
mod acp;
mod args;
mod bounded;
mod commands;
mod console;
mod conversation;
mod error;
mod front;
mod interrupt;
mod settings;
mod setup;
mod store;
mod view;

use commands::{chat, demo, durable, run, tool};
use settings::trust;
use setup::skills;
use view::shown;

#[cfg(feature = "fuzzing")]
pub mod fuzzing;

use std::process::ExitCode;

use args::{Cli, Command};
use error::{CliError, Exit};

/// Help and version go to stdout as clap writes them; a usage error becomes one line on stderr
/// (clap's message and its tips), exit status 2.
/// A usage error found after parsing: said on standard error, exit 2.
fn usage_error_text(error: &str) -> ExitCode {
    eprintln!("golato: {error}");
    ExitCode::from(2)
}

fn usage_error(error: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(
        error.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        let _ = error.print();
        return ExitCode::from(if error.use_stderr() { 2 } else { 0 });
    }
    let rendered = error.render().to_string();
    let mut parts: Vec<String> = Vec::new();
    // The subcommand typed, when clap's message names none ("invalid value … for --provider").
    let mut command = match std::env::args().nth(1) {
        Some(sub)
            if <Cli as clap::CommandFactory>::command()
                .find_subcommand(&sub)
                .is_some() =>
        {
            format!("golato {sub}")
        }
        _ => "golato".to_owned(),
    };
    let mut in_message = false;
    for line in rendered.lines().map(str::trim) {
        if let Some(message) = line.strip_prefix("error: ") {
            parts.push(message.trim_end_matches(':').to_owned());
            in_message = true;
        } else if line.is_empty() {
            in_message = false;
        } else if let Some(tip) = line.strip_prefix("tip: ") {
            parts.push(tip.to_owned());
        } else if let Some(usage) = line.strip_prefix("Usage: ") {
            // "golato run [OPTIONS] <PROMPT>" names the (sub)command whose help to read.
            let words = usage.split_whitespace();
            let words = words.take_while(|word| !word.starts_with(['[', '<', '-']));
            command = words.collect::<Vec<_>>().join(" ");
        } else if in_message {
            // The indented continuation of the message, such as the missing arguments.
            if let Some(last) = parts.last_mut() {
                last.push(' ');
                last.push_str(line);
            }
        }
    }
    eprintln!("golato: {}; see '{command} --help'", parts.join("; "));
    Exit::Usage.into()
}

/// The command line, with the names of the flags given on it (configuration fills the rest).
/// The arguments with the subcommand `golato` alone means: `chat` on a terminal with only
/// flags given (or none), `run` with a prompt or with standard input not a terminal.
fn with_subcommand(mut args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    use clap::CommandFactory as _;
    use std::io::IsTerminal as _;
    let first = args.get(1).and_then(|arg| arg.to_str()).map(str::to_owned);
    let named = first.as_deref().is_some_and(|first| {
        matches!(first, "-h" | "--help" | "-V" | "--version" | "help")
            || Cli::command().find_subcommand(first).is_some()
    });
    if named {
        return args;
    }
    let prompt_given = first
        .as_deref()
        .is_some_and(|first| !first.starts_with('-'));
    let sub = if prompt_given || !std::io::stdin().is_terminal() {
        "run"
    } else {
        "chat"
    };
    args.insert(1.min(args.len()), sub.into());
    args
}

fn parse() -> Result<Cli, clap::Error> {
    parse_from(std::env::args_os().collect())
}

/// The command line `args` (the program's name first), with the flags it gave noted.
fn parse_from(args: Vec<std::ffi::OsString>) -> Result<Cli, clap::Error> {
    use clap::{CommandFactory as _, FromArgMatches as _};
    let matches = Cli::command().try_get_matches_from(with_subcommand(args))?;
    let mut cli = Cli::from_arg_matches(&matches)?;
    let given: std::collections::HashSet<String> = match matches.subcommand() {
        Some((_, sub)) => sub
            .ids()
            .filter(|id| {
                sub.value_source(id.as_str()) == Some(clap::parser::ValueSource::CommandLine)
            })
            .map(|id| id.as_str().to_owned())
            .collect(),
        None => Default::default(),
    };
    if let Some(agent) = cli.command.agent_args() {
        agent.given = given;
    }
    Ok(cli)
}

/// Makes the process's host one whose actor console is served at `addr`, and says where (the
/// port chosen, for `:0`) on standard error.
fn serve_console(
    addr: &str,
    lint_after: Option<std::time::Duration>,
) -> Result<golato::Host, String> {
    use golato::host::console::{ConsoleAddr, ConsoleConfig};
    let listen: ConsoleAddr = addr
        .parse()
        .map_err(|error: golato::host::console::ServeError| format!("--console: {error}"))?;
    let mut config = ConsoleConfig {
        listen: Some(listen),
        ..ConsoleConfig::default()
    };
    if let Some(after) = lint_after {
        config.handler_threshold = after;
        config.mailbox_threshold = after;
        config.lease_threshold = after;
    }
    let host = golato::Host::new(golato::HostConfig {
        console: Some(config),
        ..golato::HostConfig::default()
    })
    .map_err(|error| format!("--console: {error}"))?;
    if let Some(served) = host.console_addr() {
        eprintln!(
            "golato: the actor console is at {served} (watch it with `golato console {served}`)"
        );
    }
    golato::Host::set_global(&host);
    Ok(host)
}

/// Runs the command line with the process's arguments and environment, as the `golato`
/// binary does, and returns its exit status.
pub fn main() -> ExitCode {
    // `golato __golato-sandbox …` is this program acting as the sandbox's helper.
    golato::sandbox::run_helper_if_asked();
    let cli = match parse() {
        Ok(cli) => cli,
        Err(error) => return usage_error(&error),
    };
    // A person at the terminal may be asked to trust the folder; `--json` output is for
    // programs, which cannot answer.
    let ask = {
        use std::io::IsTerminal as _;
        let json = match &cli.command {
            Command::Run(args) => args.view.json,
            Command::Resume(args) => args.run.view.json,
            _ => false,
        };
        let worker = matches!(&cli.command, Command::Serve(_) | Command::Acp(_));
        std::io::stdin().is_terminal() && std::io::stderr().is_terminal() && !json && !worker
    };
    // The CLI's own work (signals, reading events, drawing) is light: one thread is enough. The
    // agents run on golato's own host either way.
    // A worker serves many runs' journals at once: it gets a thread per core.
    let runtime = match &cli.command {
        Command::Serve(_) | Command::Acp(_) => tokio::runtime::Builder::new_multi_thread(),
        _ => tokio::runtime::Builder::new_current_thread(),
    }
    .enable_all()
    .build();
    let runtime = match runtime {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!(
                "golato: could not start the async runtime: {error}; check the process's limits on open files and threads (ulimit -n, ulimit -u)"
            );
            return Exit::Failure.into();
        }
    };
    // Before any agent: every one of them runs on the process's host, this one.
    let lint_after = cli.console_lint_after;
    let _console = match cli
        .console
        .as_deref()
        .map(|addr| serve_console(addr, lint_after))
    {
        Some(Ok(host)) => Some(host),
        Some(Err(error)) => return usage_error_text(&error),
        None => None,
    };
    let outcome = runtime.block_on(async move {
        match cli.command {
            Command::Console(args) => console::command(args).await,
            // An agent command's flags are resolved once, with their folder's configuration:
            // what runs below reads the settings, never the flags.
            Command::Run(mut args) => {
                if args.continue_session {
                    run::same_model_as_newest(&mut args.agent);
                }
                let mut settings = settings::resolve(args.agent.clone(), ask)?;
                setup::instructions::ask_once(&mut settings, ask)?;
                run::command(*args, settings).await
            }
            Command::Demo(args) => demo::command(args).await,
            Command::Tool(args) => tool::command(args).await,
            Command::Review(args) => {
                let settings = settings::resolve(args.agent, false)?;
                commands::review::command(settings).await
            }
            Command::Serve(args) => {
                let settings = settings::resolve(args.agent.clone(), false)?;
                durable::serve(*args, settings).await
            }
            Command::Submit(args) => durable::submit(args).await,
            Command::Cancel(args) => durable::control(args, durable::Control::Cancel).await,
            Command::Steer(args) => durable::control(args, durable::Control::Steer).await,
            Command::FollowUp(args) => durable::control(args, durable::Control::FollowUp).await,
            Command::Approve(args) => durable::approve(args).await,
            // Resolved once the session, and so its folder, is known. Without a prompt on a
            // terminal, the front end opens on the session (as `golato -c` does).
            Command::Resume(args)
                if args.run.prompt.is_none()
                    && args.run.image.is_empty()
                    && !args.run.view.json
                    && front::terminal_can_draw() =>
            {
                let ephemeral = args.run.ephemeral;
                let (_, settings, saved) = run::resumed(args, ask)?;
                let opening = conversation::Opening {
                    going_on: Some(saved),
                    ephemeral,
                    prompted: true,
                    interactive: true,
                };
                front::open(conversation::Conversation::begin(settings, opening).await?).await
            }
            Command::Resume(args) => run::resume(args, ask).await,
            Command::Sessions(args) => match args.action {
                None => commands::sessions::list((!args.all).then_some(args.cwd.as_path())),
                Some(args::SessionsAction::Repair { id }) => commands::sessions::repair(&id),
                Some(args::SessionsAction::Rm { id }) => commands::sessions::remove(&id),
                Some(args::SessionsAction::Network { id, json }) => {
                    commands::sessions::network(&id, json)
                }
            },
            Command::Undo(args) => commands::undo::undo_command(&args.session, args.to),
            Command::Diff(args) => commands::undo::diff_command(&args.session),
            Command::Acp(args) => acp::command(*args).await,
            Command::Chat(mut args) => {
                if args.continue_session {
                    run::same_model_as_newest(&mut args.agent);
                }
                let mut settings = settings::resolve(args.agent.clone(), ask)?;
                setup::instructions::ask_once(&mut settings, ask)?;
                if front::usable(&args) {
                    front::command(*args, settings).await
                } else {
                    chat::command(*args, settings).await
                }
            }
            Command::Config(args) => commands::config::show(args),
            Command::Hooks(args) => commands::config::hooks(args),
            Command::Skills(args) => skills::command(&args.cwd, args.settings.trust),
            Command::Reviews(args) => {
                commands::sessions::reviews(args.id.as_deref(), &args.cwd, args.json)
            }
            Command::Agents(args) => setup::named_agents::command(&args.cwd, args.settings.trust),
            Command::Commands(args) => {
                setup::custom_commands::command(&args.cwd, args.settings.trust)
            }
            Command::Trust(args) => trust::command(&args.dir, true),
            Command::Untrust(args) => trust::command(&args.dir, false),
        }
    });
    // A server held by an abandoned call, or by a task the exit never finishes, would
    // outlive golato otherwise.
    golato::mcp::stop_servers();
    match outcome {
        Ok(exit) => exit.into(),
        Err(error) => {
            eprintln!("golato: {}", shown::visible(&error.to_string()));
            match error {
                CliError::Usage(_) => Exit::Usage.into(),
                CliError::Failed(_) => Exit::Failure.into(),
            }
        }
    }
}
