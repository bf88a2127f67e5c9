//! A background command's life: started exactly as a foreground one, then driven by a task of
//! its own that keeps its output and settles its end (or ends it at its deadline).

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::AsyncReadExt as _;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::super::{processes, sleep_until, Caller, Settings, Started};
use super::{
    report, Ended, Entry, Log, State, DURABLE_REFUSAL, FIRST_OUTPUT_SETTLE, FIRST_OUTPUT_WAIT,
};
use crate::builtin::{Background, KILL_GRACE};
use crate::message::Content;
use crate::tool::{BoxError, ToolContext, ToolResult};

/// `bash` with `background: true`: starts the command and returns its ID and first output.
pub(in crate::builtin) async fn start(
    background: &Background,
    cwd: PathBuf,
    settings: &Settings,
    ctx: &ToolContext,
    command_line: &str,
    deadline: Option<(Instant, f64)>,
) -> Result<ToolResult, BoxError> {
    let caller = Caller::of(ctx);
    if caller.run_key.is_some() {
        return Err(DURABLE_REFUSAL.into());
    }
    let admission = background.registry.admit()?;
    let started = super::super::start(&cwd, settings, &caller, command_line, true).await?;
    let (changed, mut watch) = tokio::sync::watch::channel(0);
    let entry = Arc::new(Entry {
        id: admission.id,
        command: command_line.to_owned(),
        started: Instant::now(),
        mark: started.mark.clone(),
        state: Mutex::new(State {
            ring: VecDeque::new(),
            ring_start: 0,
            total: 0,
            read_to: 0,
            log: Log::create(settings.output_file_limit),
            ended: None,
            ended_at: None,
        }),
        changed,
        stop: CancellationToken::new(),
    });
    admission.enter(Arc::clone(&entry));
    tracing::debug!(
        id = entry.id,
        command = command_line,
        "background command started"
    );
    tokio::spawn(drive(Arc::clone(&entry), started, deadline));

    // The first output: until some came and settled, or the wait is over, or it ended.
    let first_wait = tokio::time::sleep(FIRST_OUTPUT_WAIT);
    tokio::pin!(first_wait);
    let mut settle: Option<Instant> = None;
    loop {
        if !entry.is_running() {
            break;
        }
        if settle.is_none() && entry.lock().total > 0 {
            settle = Some(Instant::now() + FIRST_OUTPUT_SETTLE);
        }
        tokio::select! {
            () = &mut first_wait => break,
            () = sleep_until(settle) => break,
            changed = watch.changed() => if changed.is_err() { break },
        }
    }
    let mut result = report(&entry, None, None);
    let lead = format!(
        "Started in the background as {}: {command_line}\n",
        entry.id
    );
    prepend(&mut result, &lead);
    // The result that started it says so: ACP keeps that call in progress until it ends.
    if let Some(background) = result
        .details
        .as_mut()
        .and_then(|details| details.get_mut("background"))
        .and_then(Value::as_object_mut)
    {
        background.insert("started".into(), json!(true));
    }
    Ok(result)
}

pub(super) fn prepend(result: &mut ToolResult, text: &str) {
    result.content.insert(0, Content::text(text));
}

/// How a background command's driving ended.
pub(super) enum Ending {
    Exited(std::process::ExitStatus),
    TimedOut(f64),
    Stopped,
}

/// Reads the command's output until it ends, then settles its end.
pub(super) async fn drive(entry: Arc<Entry>, started: Started, deadline: Option<(Instant, f64)>) {
    let Started {
        mut child,
        mut pipe,
        group,
        mark,
        capture,
        network,
    } = started;
    let mut chunk = vec![0u8; 64 * 1024];
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
                Ok(count) => entry.push(&chunk[..count]),
            },
            status = child.wait(), if exited.is_none() => match status {
                Ok(status) => {
                    exited = Some(status);
                    drain_until = Some(Instant::now() + super::super::DRAIN_AFTER_EXIT);
                }
                Err(error) => {
                    tracing::warn!(id = entry.id, %error, "could not wait for a background command");
                    break Ending::Stopped;
                }
            },
            () = sleep_until(drain_until), if drain_until.is_some() => {
                if let Some(status) = exited {
                    super::super::drain_now(&pipe, &mut chunk, |bytes| entry.push(bytes));
                    break Ending::Exited(status);
                }
            }
            () = sleep_until(deadline.map(|(at, _)| at)), if deadline.is_some() && exited.is_none() => {
                break Ending::TimedOut(deadline.map_or(0.0, |(_, seconds)| seconds));
            }
            () = entry.stop.cancelled(), if exited.is_none() => break Ending::Stopped,
        }
    };
    let mut killed = Vec::new();
    let exited = matches!(ending, Ending::Exited(_));
    if !exited {
        killed = terminate(&mark, group, &mut child).await;
        super::super::drain_now(&pipe, &mut chunk, |bytes| entry.push(bytes));
    }
    let how = match &ending {
        Ending::Exited(status) => describe_status(*status),
        Ending::TimedOut(seconds) => format!("timed out after {seconds} s and was killed"),
        Ending::Stopped => match killed.iter().any(|process| !process.internal) {
            true => format!(
                "was ended: SIGTERM, then SIGKILL after {} s ({})",
                KILL_GRACE.as_secs(),
                processes::describe(&killed)
            ),
            false => "was ended (SIGTERM)".to_owned(),
        },
    };
    let exit_code = match &ending {
        Ending::Exited(status) => status.code(),
        _ => None,
    };
    let mut settled = ToolResult::default();
    if let Some(network) = network {
        network.finish(&mut settled).await;
    }
    let gone_mark = mark.clone();
    capture
        .finish(
            move || {
                if !exited {
                    processes::wait_gone(&gone_mark);
                }
            },
            &mut settled,
        )
        .await;
    let notes = settled
        .content
        .iter()
        .filter_map(|content| match content {
            Content::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect::<String>();
    tracing::debug!(id = entry.id, how, "background command ended");
    entry.end(Ended {
        how,
        exit_code,
        notes,
        details: settled.details.unwrap_or_else(|| json!({})),
        reported: false,
    });
}

/// Ends a command's whole tree: SIGTERM to its group and every process carrying its mark, then
/// after [`KILL_GRACE`] SIGKILL to whatever is left. Returns what had to be killed.
pub(super) async fn terminate(
    mark: &str,
    group: Option<rustix::process::Pid>,
    child: &mut tokio::process::Child,
) -> Vec<processes::Killed> {
    use rustix::process::{kill_process_group, Signal};
    // A command behind the guard (no sandbox): the guard gives the grace itself, to everything
    // below it, and stays until it is over, so what it adopted is never orphaned by the
    // command's end (a daemon that cleared its environment carries no mark to be found by).
    let leader = group.map(|group| group.as_raw_nonzero().get());
    if let Some(guard) = leader.filter(|leader| golato_sandbox::Guard::is_guard(*leader)) {
        golato_sandbox::Guard::end_with_grace(guard);
        let _ = tokio::time::timeout(KILL_GRACE + Duration::from_secs(2), child.wait()).await;
    }
    // A group led by golato's own guard or helper is not sent SIGTERM as a group: they would
    // end the tree at once; the command's processes get it through their mark instead.
    let led_by_golato = leader.is_some_and(processes::is_internal);
    if let Some(group) = group.filter(|_| !led_by_golato) {
        let _ = kill_process_group(group, Signal::TERM);
    }
    let marked = mark.to_owned();
    let _ = tokio::task::spawn_blocking(move || {
        processes::signal_marked(&marked, Signal::TERM);
        processes::wait_gone_for(&marked, KILL_GRACE)
    })
    .await;
    let marked = mark.to_owned();
    let killed = tokio::task::spawn_blocking(move || processes::kill_marked(&marked))
        .await
        .unwrap_or_default();
    if let Some(group) = group {
        let _ = kill_process_group(group, Signal::KILL);
    }
    let _ = child.wait().await;
    killed
}

pub(super) fn describe_status(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt as _;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exited with code {code}"),
        (None, Some(signal)) => format!("was killed by signal {signal}"),
        (None, None) => "ended".to_owned(),
    }
}
