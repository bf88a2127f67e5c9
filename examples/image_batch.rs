//! A batch of `read` calls on images just under the pixel cap: the memory they take together
//! stays within the process's decode budget (512 MiB) instead of adding up per call.
//!
//! ```text
//! cargo run --release -p golato --example image_batch -- [CALLS] [SIDE]
//! ```
//!
//! Writes one SIDE × SIDE PNG (default 6920, just under 48 million pixels), reads it with CALLS
//! (default 8) parallel `read` calls in one batch, checks every result is a resized image, and
//! prints one JSON line with the peak RSS and the wall time.

use std::process::ExitCode;
use std::sync::Arc;

use golato::agent::{self, Agent};
use golato::generator::Scripted;
use golato::message::{AssistantMessage, Content, Message, ToolCall, UserMessage};
use serde_json::json;

fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let mut number = |default: u32| match args.next().map(|a| a.parse::<u32>()) {
        None => Some(default),
        Some(Ok(n)) if n > 0 => Some(n),
        Some(_) => None,
    };
    let (Some(calls), Some(side)) = (number(8), number(6920)) else {
        eprintln!("usage: image_batch [CALLS] [SIDE]");
        return ExitCode::FAILURE;
    };
    let dir = match tempfile::tempdir() {
        Ok(dir) => dir,
        Err(error) => {
            eprintln!("no temporary directory: {error}");
            return ExitCode::FAILURE;
        }
    };
    let image = image::GrayImage::from_fn(side, side, |x, y| image::Luma([((x ^ y) & 0xff) as u8]));
    if let Err(error) = image.save(dir.path().join("big.png")) {
        eprintln!("could not write the image: {error}");
        return ExitCode::FAILURE;
    }
    let before = peak_rss_kib();
    let tools = match golato::builtin::new(golato::builtin::Config {
        working_directory: dir.path().into(),
        ..Default::default()
    }) {
        Ok(tools) => tools,
        Err(error) => {
            eprintln!("{error}");
            return ExitCode::FAILURE;
        }
    };
    let batch: Vec<ToolCall> = (0..calls)
        .map(|n| {
            ToolCall::new(
                format!("r{n}"),
                "read",
                json!({"path": "big.png"}).to_string(),
            )
        })
        .collect();
    let agent = Agent::new(agent::Config {
        generator: Some(Arc::new(Scripted::new([
            AssistantMessage::with_tool_calls(batch),
            AssistantMessage::with_text("done"),
        ]))),
        tools,
        ..Default::default()
    });
    let agent = match agent {
        Ok(agent) => agent,
        Err(error) => {
            eprintln!("{error}");
            return ExitCode::FAILURE;
        }
    };
    let started = std::time::Instant::now();
    let result = agent.start(UserMessage::new("read them")).wait();
    let wall = started.elapsed();
    let Ok(result) = result else {
        eprintln!("the run failed");
        return ExitCode::FAILURE;
    };
    let images = result
        .messages
        .iter()
        .filter_map(|message| match message {
            Message::ToolResult(result) => Some(result),
            _ => None,
        })
        .filter(|result| {
            result
                .content
                .iter()
                .any(|content| matches!(content, Content::Image { .. }))
        })
        .count();
    println!(
        "{}",
        json!({
            "calls": calls,
            "side": side,
            "images_returned": images,
            "rss_before_mib": before / 1024,
            "peak_rss_mib": peak_rss_kib() / 1024,
            "wall_s": wall.as_secs_f64(),
        })
    );
    if images != calls as usize {
        eprintln!("only {images} of {calls} reads returned an image");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
