//! The built-in tools against a real OpenAI-compatible endpoint (OpenAI, Ollama, vLLM,
//! llama.cpp server, LM Studio, OpenRouter), configured by environment variables:
//!
//! ```text
//! OPENAI_BASE_URL=http://localhost:11434/v1 OPENAI_MODEL=qwen2.5-coder \
//!     cargo run -p golato --example openai_compatible -- "What files are in this project?"
//! ```
//!
//! `OPENAI_API_KEY` is required for OpenAI's own URL (the default). Set `ANTHROPIC_API_KEY` (and
//! optionally `ANTHROPIC_MODEL`) instead to use Anthropic. Tool events print as they happen.
//!
//! These tools are not a sandbox: `bash` runs with this process's permissions and environment.

use std::sync::Arc;

use golato::agent::{self, Agent, Event, Input};
use golato::builtin;
use golato::generator::{Anthropic, Generator, Model, OpenAiChat};
use golato::message::UserMessage;

fn generator() -> anyhow::Result<(Arc<dyn Generator>, Model)> {
    if std::env::var_os("ANTHROPIC_API_KEY").is_some() {
        let model =
            std::env::var("ANTHROPIC_MODEL").unwrap_or_else(|_| "claude-sonnet-4-5".to_owned());
        return Ok((Arc::new(Anthropic::from_env()?), Model::new(model)));
    }
    let model = std::env::var("OPENAI_MODEL").unwrap_or_else(|_| "gpt-4o-mini".to_owned());
    Ok((Arc::new(OpenAiChat::from_env()?), Model::new(model)))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let prompt = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "What files are in this project?".to_owned());
    let (generator, model) = generator()?;
    let assistant = Agent::new(agent::Config {
        generator: Some(generator),
        model,
        tools: builtin::new(builtin::Config::default())?,
        system_prompt: Some(
            "You are a careful coding assistant. Use the tools to answer.".to_owned(),
        ),
        max_turns: Some(20),
        ..Default::default()
    })?;
    let run = assistant.start(Input::from(UserMessage::new(prompt)));
    while let Some(event) = run.next_event().await {
        match event {
            Event::ToolExecutionStart(event) => {
                eprintln!("[start] {} {}", event.call.name, event.call.arguments)
            }
            Event::ToolExecutionEnd(event) => {
                eprintln!("[end] {} error={}", event.call.name, event.result.is_error)
            }
            _ => {}
        }
    }
    let result = run.finish().await?;
    println!("{}", result.final_message.text());
    Ok(())
}
