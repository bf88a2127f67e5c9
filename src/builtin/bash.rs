//! `bash`: run a command non-interactively, keep the tail of its combined output.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use output::Output;
use schemars::JsonSchema;
use serde::Deserialize;
use tokio::io::AsyncReadExt;
use tokio::time::Instant;

use super::paths::failure;
use super::Workspace;

mod background;
mod capture;
mod network;
mod output;
mod processes;
use crate::tool::{BoxError, Tool, ToolContext, ToolResult};
pub(super) use background::{
    kill_tool as background_kill_tool, output_tool as background_output_tool,
};
pub use background::{
    Background, BackgroundCommand, DEFAULT_MAX_BACKGROUND_COMMANDS, KILL_GRACE, RING_BYTES,
};
pub(super) use capture::recover;
pub use capture::{captured_changes, Recovered};

/// Shortest time between two progress updates (at most ten per second).
const UPDATE_INTERVAL: Duration = Duration::from_millis(100);
/// How long output is still read after the shell exited, for a background child that keeps the
/// pipe open (`sleep 30 & echo done` must return promptly).
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(100);

/// Arguments of `bash`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct BashArgs {
    /// The command line, run with `bash -c` in the working directory.
    command: String,
    /// Seconds after which the command and every process it started are killed; none by default.
    #[schemars(range(min = 0))]
    timeout: Option<f64>,
    /// Run it in the background: return at once with an ID and its first output, then read it
    /// with bash_output and end it with bash_kill. For servers, watchers and long test runs.
    #[serde(default)]
    background: bool,
}

/// What a command's environment is made of: `None` inherits this process's.
type Environment = Option<Arc<Vec<(String, String)>>>;

/// How bash runs its commands, from `builtin::Config`.
#[derive(Debug, Clone)]
pub(super) struct Settings {
    pub(super) environment: Environment,
    /// Most bytes written to a command's full-output file.
    pub(super) output_file_limit: u64,
    /// The sandbox the command runs in, if any.
    pub(super) sandbox: Option<Arc<crate::sandbox::Prepared>>,
    /// Outside a sandbox: the guard that ends the command's processes with this one.
    pub(super) guard: Option<Arc<crate::sandbox::Guard>>,
    /// Where captured changes are kept, when the application asked for them.
    pub(super) checkpoints: Option<Arc<dyn super::Checkpoints>>,
    /// The proxy of a sandbox whose network goes by domain.
    pub(super) proxy: Option<crate::proxy::Proxy>,
    /// Where background commands go, when the set has `bash_output`.
    pub(super) background: Option<Background>,
    /// Whether sandboxed commands join the session's network namespace (`background`'s), once
    /// the first background command made it, so that a server one started is reachable from
    /// later commands: where the set has background commands and a namespace to share.
    pub(super) share_network: bool,
}

pub(super) fn tool(
    workspace: Arc<Workspace>,
    settings: Settings,
    recovered: Vec<Recovered>,
) -> Tool {
    let recovered = std::sync::Mutex::new(recovered);
    let report = move |call: &crate::message::ToolCall| {
        let mut recovered = recovered
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let at = recovered.iter().position(|each| each.call == call.id)?;
        Some(capture::interrupted_report(&recovered.remove(at)))
    };
    Tool::typed(
        "bash",
        "Run a bash command in the working directory, non-interactively (stdin is closed). \
         Returns the combined stdout and stderr, cut to the last 2000 lines or 50KB (the full \
         output is saved to a file named in the result), and the exit code. No timeout unless \
         given in seconds. With \"background\": true (where bash_output is offered) it returns \
         at once with an ID, for a server, a watcher or a long test run.",
        move |ctx: ToolContext, args: BashArgs| {
            let workspace = Arc::clone(&workspace);
            let settings = settings.clone();
            async move { run(workspace.cwd().to_owned(), settings, ctx, args).await }
        },
    )
    .with_interrupted_report(Arc::new(report))
}

/// The longest timeout taken (about a century): any longer is as good as none.
const MAX_TIMEOUT_SECONDS: f64 = 3.2e9;

/// How the command ended.
enum Ending {
    Exited(std::process::ExitStatus),
    TimedOut(f64),
    Aborted,
}

async fn run(
    cwd: PathBuf,
    settings: Settings,
    ctx: ToolContext,
    args: BashArgs,
) -> Result<ToolResult, BoxError> {
    let timeout = match args.timeout {
        Some(seconds) if !seconds.is_finite() || seconds <= 0.0 => {
            return Err(
                format!("timeout must be a positive number of seconds, got {seconds}").into(),
            )
        }
        other => other,
    };
    // Checked before anything starts: a deadline that cannot be represented would otherwise
    // fail with the command already running.
    let deadline = match timeout {
        Some(seconds) => Some(
            Duration::try_from_secs_f64(seconds)
                .ok()
                .filter(|_| seconds <= MAX_TIMEOUT_SECONDS)
                .and_then(|timeout| Instant::now().checked_add(timeout))
                .ok_or_else(|| {
                    format!(
                        "timeout {seconds} s is too long to wait for; give at most {MAX_TIMEOUT_SECONDS} seconds, or no timeout"
                    )
                })?,
        ),
        None => None,
    };
    if args.background {
        if ctx.run_key().is_some() {
            return Err(background::DURABLE_REFUSAL.into());
        }
        let Some(background) = &settings.background else {
            return Err("background commands are not offered here (this tool set has no bash_output to read them with); run the command in the foreground, with a timeout if it may not end".into());
        };
        return background::start(
            background,
            cwd,
            &settings,
            &ctx,
            &args.command,
            deadline.zip(timeout),
        )
        .await;
    }
    let caller = Caller::of(&ctx);
    let Started {
        mut child,
        mut pipe,
        group,
        mark,
        capture,
        network,
    } = start(&cwd, &settings, &caller, &args.command, false).await?;
    let mut output = Output::new(settings.output_file_limit);
    let mut chunk = vec![0u8; 64 * 1024];
    // The first output is published at once; later ones at most once per interval, the last
    // one in an interval once it is over.
    let mut next_update = Instant::now();
    let mut update_pending = false;
    let mut exited: Option<std::process::ExitStatus> = None;
    let mut drain_until: Option<Instant> = None;
    let mut end_of_output = false;
    let ending = loop {
        if let (true, Some(status)) = (end_of_output, exited) {
            break Ending::Exited(status);
        }
        tokio::select! {
            read = pipe.read(&mut chunk), if !end_of_output => match read {
                Ok(0) | Err(_) => end_of_output = true,
                Ok(count) => {
                    output.push(&chunk[..count]);
                    update_pending = true;
                }
            },
            () = tokio::time::sleep_until(next_update), if update_pending => {
                update_pending = false;
                next_update = Instant::now() + UPDATE_INTERVAL;
                ctx.update(ToolResult::text(output.tail_text()));
            }
            status = child.wait(), if exited.is_none() => {
                exited = Some(status.map_err(|error| {
                    failure("could not wait for the command to exit", &error)
                })?);
                drain_until = Some(Instant::now() + DRAIN_AFTER_EXIT);
            }
            () = sleep_until(drain_until), if drain_until.is_some() => {
                if let Some(status) = exited {
                    // What the shell wrote before it exited is in the pipe already, even when a
                    // loaded runtime has not yet seen the pipe become readable (a busy machine
                    // lost a command's last line that way): read it straight from the pipe.
                    drain_now(&pipe, &mut chunk, |bytes| output.push(bytes));
                    break Ending::Exited(status);
                }
            }
            () = sleep_until(deadline), if deadline.is_some() && exited.is_none() => {
                break Ending::TimedOut(timeout.unwrap_or_default());
            }
            () = ctx.cancelled(), if exited.is_none() => break Ending::Aborted,
        }
    };
    let mut killed = Vec::new();
    let exited = matches!(ending, Ending::Exited(_));
    if !exited {
        // Everything that carries the call's mark (the group and whatever left it), then the
        // group again for a process that cleared its environment; "already gone" is fine.
        let mark = mark.clone();
        killed = tokio::task::spawn_blocking(move || processes::kill_marked(&mark))
            .await
            .unwrap_or_default();
        if let Some(group) = group {
            let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
        }
        let _ = child.wait().await;
    }
    let mut result = output.finish(ending, &killed);
    if let Some(network) = network {
        network.finish(&mut result).await;
    }
    // A sandboxed command that exited took every process of its namespace with it; killed
    // ones may still be dying, and nothing is applied while one could still write.
    let gone = move || {
        if !exited {
            processes::wait_gone(&mark);
        }
    };
    capture.finish(gone, &mut result).await;
    Ok(result)
}

/// Who runs a command: the call (its ID, its attempt) and the run's key, which the command sees
/// in its environment.
#[derive(Debug, Clone)]
struct Caller {
    id: String,
    attempt: u32,
    run_key: Option<String>,
}

impl Caller {
    fn of(ctx: &ToolContext) -> Caller {
        Caller {
            id: ctx.call().id.clone(),
            attempt: ctx.attempt(),
            run_key: ctx.run_key().map(str::to_owned),
        }
    }
}

/// A command started: its process, the pipe of its combined output, and what its end settles.
struct Started {
    child: tokio::process::Child,
    pipe: tokio::net::unix::pipe::Receiver,
    /// Its process group (the command's first process leads it).
    group: Option<rustix::process::Pid>,
    /// The mark every process of it carries.
    mark: String,
    capture: capture::Capture,
    network: Option<network::CallNetwork>,
}

/// Starts `command_line` with bash in `cwd` as `settings` say: in the sandbox, or under the
/// guard, with the call's mark, capture and network.
async fn start(
    cwd: &std::path::Path,
    settings: &Settings,
    caller: &Caller,
    command_line: &str,
    background: bool,
) -> Result<Started, BoxError> {
    let pipe_failed = |error: std::io::Error| {
        failure("could not create the pipe for the command's output", &error)
    };
    let (reader, writer) = std::io::pipe().map_err(pipe_failed)?;
    // Under a sandbox the helper starts bash once it has confined itself; until then its
    // standard input is this pipe, where it says why it could not.
    let mut status = None;
    // Every process the command starts inherits the mark: found again at a timeout or a
    // cancellation, also after leaving the process group.
    let mark = processes::new_mark();
    let capture = capture::Capture::prepare(settings, &caller.id, &mark);
    let network = match (&settings.sandbox, &settings.proxy) {
        (Some(_), Some(proxy)) => Some(
            network::CallNetwork::open(proxy, &caller.id)
                .map_err(|error| failure("could not open the command's network proxy", &error))?,
        ),
        _ => None,
    };
    let mut command = match &settings.sandbox {
        Some(sandbox) => {
            let (status_reader, status_writer) = std::io::pipe().map_err(pipe_failed)?;
            status = Some(status_reader);
            let mut command = tokio::process::Command::new(sandbox.helper());
            let shared = match (&settings.background, settings.share_network) {
                (Some(set), true) => set.shared_network(sandbox, background).await?,
                _ => None,
            };
            match (capture.stage(), &network, shared) {
                (stage, Some(network), _) => {
                    command.args(sandbox.proxied_args(stage, network.socket()))
                }
                (stage, None, Some(shared)) => command.args(sandbox.joining_args(stage, shared)),
                (Some(stage), None, None) => command.args(sandbox.capturing_args(stage)),
                (None, None, None) => command.args(sandbox.helper_args()),
            };
            command.arg("bash").stdin(status_writer);
            command
        }
        None => {
            let mut command = match &settings.guard {
                Some(guard) => {
                    let mut command = tokio::process::Command::new(guard.program());
                    command.args(guard.args()).arg("bash");
                    command
                }
                None => tokio::process::Command::new("bash"),
            };
            command.stdin(Stdio::null());
            command
        }
    };
    command
        .arg("-c")
        .arg(command_line)
        .current_dir(cwd)
        .stdout(writer.try_clone().map_err(pipe_failed)?)
        .stderr(writer)
        .process_group(0)
        .kill_on_drop(true);
    if let Some(variables) = &settings.environment {
        command
            .env_clear()
            .envs(variables.iter().map(|(name, value)| (name, value)));
    }
    command.env(processes::MARK_VARIABLE, &mark);
    // Who is asking, so that a command with a side effect that must happen once can key it:
    // the call, its attempt (more than 1 when a durable run retries it), the run's key.
    command
        .env("GOLATO_TOOL_CALL_ID", &caller.id)
        .env("GOLATO_TOOL_ATTEMPT", caller.attempt.to_string());
    match &caller.run_key {
        Some(key) => command.env("GOLATO_RUN_KEY", key),
        None => command.env_remove("GOLATO_RUN_KEY"),
    };
    let mut child = command.spawn().map_err(|error| match error.kind() {
        std::io::ErrorKind::NotFound => format!(
            "bash was not found on PATH (or the working directory {} is gone)",
            cwd.display()
        ),
        _ => failure(
            format_args!("could not start bash in {}", cwd.display()),
            &error,
        ),
    })?;
    // The command keeps copies of the pipe's write end; the pipe reaches end-of-file only once
    // every writer is gone.
    drop(command);
    if let Some(status) = status {
        if let Some(refusal) = sandbox_refusal(status).await {
            let _ = child.wait().await;
            return Err(refusal.into());
        }
    }
    let group = child
        .id()
        .and_then(|pid| rustix::process::Pid::from_raw(pid as i32));
    let pipe = tokio::net::unix::pipe::Receiver::from_owned_fd(reader.into())
        .map_err(|error| failure("could not watch the command's output pipe", &error))?;
    Ok(Started {
        child,
        pipe,
        group,
        mark,
        capture,
        network,
    })
}

/// What the sandbox's helper said on its status pipe before the command started: nothing when
/// it started bash (which closed the pipe), else why it could not.
async fn sandbox_refusal(status: std::io::PipeReader) -> Option<String> {
    let said = tokio::task::spawn_blocking(move || {
        use std::io::Read as _;
        let mut said = String::new();
        std::io::Read::take(status, 64 * 1024)
            .read_to_string(&mut said)
            .map(|_| said)
    })
    .await;
    let said = match said {
        Ok(Ok(said)) => said,
        Ok(Err(error)) => {
            return Some(failure(
                "could not read the sandbox helper's status",
                &error,
            ))
        }
        Err(error) => {
            return Some(format!(
                "could not read the sandbox helper's status: {error}"
            ))
        }
    };
    if said.is_empty() {
        return None;
    }
    let reason = said
        .split_once(' ')
        .map_or(said.as_str(), |(_, reason)| reason)
        .trim();
    Some(format!(
        "the sandbox could not confine the command, so it did not run: {reason}"
    ))
}

/// Reads what `pipe` holds now, without waiting, and gives it to `take`.
fn drain_now(
    pipe: &tokio::net::unix::pipe::Receiver,
    chunk: &mut [u8],
    mut take: impl FnMut(&[u8]),
) {
    use std::os::fd::AsFd as _;
    while let Ok(count) = rustix::io::read(pipe.as_fd(), &mut *chunk) {
        if count == 0 {
            break;
        }
        take(&chunk[..count]);
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// The line of a result that names what a timeout or a cancellation killed (ending in a line
/// break), or nothing.
fn killed_line(killed: &[processes::Killed]) -> String {
    if killed.iter().all(|process| process.internal) {
        return String::new();
    }
    format!(
        "Killed everything it had started: {}\n",
        processes::describe(killed)
    )
}
