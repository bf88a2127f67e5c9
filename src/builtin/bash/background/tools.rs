//! `bash_output` and `bash_kill`: the model's two tools over a session's background commands.

use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use tokio::time::Instant;

use super::driver::prepend;
use super::{report, DEFAULT_PATTERN_WAIT_SECONDS, MAX_WAIT_SECONDS, RESCAN_INTERVAL};
use crate::builtin::Background;
use crate::tool::{BoxError, Tool, ToolContext, ToolResult};

/// Arguments of `bash_output`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct OutputArgs {
    /// The background command's ID, as `bash` returned it.
    id: u64,
    /// Read from this byte offset of its output instead of where the last read ended.
    since: Option<u64>,
    /// A regular expression to wait for in its new output (or until it ends, or `wait` passes);
    /// `^` and `$` match at each line's start and end.
    pattern: Option<String>,
    /// Seconds to wait: for `pattern` (30 by default), else for the command to end (none by
    /// default). At most 600.
    #[schemars(range(min = 0, max = 600))]
    wait: Option<f64>,
}

/// Arguments of `bash_kill`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct KillArgs {
    /// The background command's ID, as `bash` returned it.
    id: u64,
}

pub(super) fn unknown(background: &Background, id: u64) -> BoxError {
    let known: Vec<String> = background
        .list()
        .iter()
        .map(|command| {
            format!(
                "{} ({})",
                command.id,
                command.ended.as_deref().unwrap_or("running")
            )
        })
        .collect();
    match known.is_empty() {
        true => format!("there is no background command {id}: none was started in this session (bash with \"background\": true starts one)").into(),
        false => format!("there is no background command {id}; this session's are: {}", known.join(", ")).into(),
    }
}

pub(in crate::builtin) fn output_tool(background: Background) -> Tool {
    Tool::typed(
        "bash_output",
        "Read what a background command (bash with \"background\": true) printed since the last \
         read, whether it still runs, and how it ended. Optionally wait (at most 600 s) for a \
         regular expression to appear in its new output, or, without one, for it to end.",
        move |ctx: ToolContext, args: OutputArgs| {
            let background = background.clone();
            async move { read_output(&background, &ctx, args).await }
        },
    )
    .with_replay(crate::tool::Replay::Safe)
}

pub(super) async fn read_output(
    background: &Background,
    ctx: &ToolContext,
    args: OutputArgs,
) -> Result<ToolResult, BoxError> {
    let entry = background
        .registry
        .entry(args.id)
        .ok_or_else(|| unknown(background, args.id))?;
    let pattern = match &args.pattern {
        Some(pattern) => Some(
            regex::RegexBuilder::new(pattern)
                .multi_line(true)
                .build()
                .map_err(|error| {
                    format!("pattern {pattern:?} is not a regular expression: {error}")
                })?,
        ),
        None => None,
    };
    let wait = match (args.wait, &pattern) {
        (Some(seconds), _) if !seconds.is_finite() || seconds < 0.0 => {
            return Err(format!(
                "wait must be a number of seconds from 0 to {MAX_WAIT_SECONDS}, got {seconds}"
            )
            .into())
        }
        (Some(seconds), _) => seconds.min(MAX_WAIT_SECONDS),
        (None, Some(_)) => DEFAULT_PATTERN_WAIT_SECONDS,
        (None, None) => 0.0,
    };
    let deadline = Instant::now() + Duration::from_secs_f64(wait);
    let from = args.since.unwrap_or_else(|| entry.lock().read_to);
    let mut watch = entry.changed.subscribe();
    let waited = loop {
        let (seen, running) = {
            let state = entry.lock();
            let seen = match &pattern {
                Some(pattern) => {
                    let start = from.max(state.ring_start) - state.ring_start;
                    let bytes: Vec<u8> = state.ring.iter().skip(start as usize).copied().collect();
                    pattern.is_match(&String::from_utf8_lossy(&bytes))
                }
                None => false,
            };
            (seen, state.ended.is_none())
        };
        if seen || !running {
            break None;
        }
        if Instant::now() >= deadline {
            break match (&args.pattern, wait > 0.0) {
                (Some(pattern), _) => Some(format!("{pattern:?} did not appear within {wait} s")),
                (None, true) => Some(format!("still running after waiting {wait} s")),
                (None, false) => None,
            };
        }
        tokio::select! {
            () = tokio::time::sleep_until(deadline) => {}
            _ = watch.changed() => {
                // A flood changes the output thousands of times a second: the pattern is
                // looked for at most every RESCAN_INTERVAL, each time in at most the ring.
                if pattern.is_some() {
                    tokio::time::sleep_until(deadline.min(Instant::now() + RESCAN_INTERVAL)).await;
                }
            }
            () = ctx.cancelled() => return Err("the read was cancelled".into()),
        }
    };
    Ok(report(&entry, Some(from), waited))
}

pub(in crate::builtin) fn kill_tool(background: Background) -> Tool {
    Tool::typed(
        "bash_kill",
        "End a background command and every process it started (SIGTERM, then SIGKILL after 3 \
         s). Returns its output since the last read and how it ended.",
        move |_ctx: ToolContext, args: KillArgs| {
            let background = background.clone();
            async move {
                let entry = background
                    .registry
                    .entry(args.id)
                    .ok_or_else(|| unknown(&background, args.id))?;
                let was_running = entry.is_running();
                entry.stop.cancel();
                let mut watch = entry.changed.subscribe();
                while entry.is_running() {
                    if watch.changed().await.is_err() {
                        break;
                    }
                }
                let mut result = report(&entry, None, None);
                if !was_running {
                    prepend(&mut result, &format!("{} had already ended.\n", args.id));
                }
                Ok(result)
            }
        },
    )
}
