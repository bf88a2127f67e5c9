//! OpenAI's two APIs, each a client and the decoder of its stream: [`chat`] (Chat Completions,
//! which most OpenAI-compatible servers speak: OpenAI, Ollama, vLLM, llama.cpp, LM Studio,
//! OpenRouter) and [`responses`] (the Responses API of OpenAI's newer models). Both clients are
//! also at [`generator`](crate::generator)'s top level.

pub mod chat;
pub mod responses;

pub use chat::OpenAiChat;
pub use responses::OpenAiResponses;

/// Where OpenAI's API lives when `OPENAI_BASE_URL` is not set.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
