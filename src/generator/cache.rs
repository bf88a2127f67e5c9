//! Prompt caching: every turn of a run resends the whole transcript, and providers bill a
//! prefix they have cached at a fraction of the price when the request lets them.
//!
//! Anthropic caches only up to breakpoints the request marks (`cache_control`): golato marks
//! the system prompt, the last tool definition and the newest message's last block (three of
//! the four the API allows), so each turn reads the prefix the previous one wrote. OpenAI caches
//! by itself and takes a `prompt_cache_key` that keeps one conversation on one cache: golato
//! derives it from what starts the conversation (model, system prompt, first message), which
//! stays the same for every turn of a run and for a session that goes on later.

use serde_json::{json, Value};

use super::Request;
use crate::message::Message;

/// Whether and how requests ask providers to cache their prefix (on by default).
///
/// ```
/// use golato::generator::{Model, PromptCache};
///
/// // A key of your own (for example, one per user of a shared agent), or none at all:
/// let keyed = Model::new("gpt-4.1").with_prompt_cache(PromptCache::keyed("user-42"));
/// let uncached = Model::new("gpt-4.1").with_prompt_cache(PromptCache::off());
/// assert!(!uncached.prompt_cache.enabled);
/// # let _ = keyed;
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PromptCache {
    /// Ask for caching at all: Anthropic's breakpoints, OpenAI's key.
    pub enabled: bool,
    /// The key OpenAI's APIs get; `None` derives one from the conversation.
    pub key: Option<String>,
}

impl Default for PromptCache {
    fn default() -> Self {
        PromptCache {
            enabled: true,
            key: None,
        }
    }
}

impl PromptCache {
    /// No caching asked for (the provider may still cache on its own).
    pub fn off() -> PromptCache {
        PromptCache {
            enabled: false,
            key: None,
        }
    }

    /// Caching with this key for OpenAI's APIs.
    pub fn keyed(key: impl Into<String>) -> PromptCache {
        PromptCache {
            enabled: true,
            key: Some(key.into()),
        }
    }
}

/// The `prompt_cache_key` of `request`, if caching is on.
pub(crate) fn openai_key(request: &Request) -> Option<String> {
    let cache = &request.model.prompt_cache;
    if !cache.enabled {
        return None;
    }
    if let Some(key) = &cache.key {
        return Some(key.clone());
    }
    // What starts the conversation, which no later turn changes.
    let first = request
        .messages
        .iter()
        .find(|message| matches!(message, Message::User(_)))
        .and_then(|message| serde_json::to_string(message).ok())
        .unwrap_or_default();
    let mut hash = Fnv::default();
    hash.write(request.model.id.as_bytes());
    hash.write(&[0]);
    hash.write(
        request
            .system_prompt
            .as_deref()
            .unwrap_or_default()
            .as_bytes(),
    );
    hash.write(&[0]);
    hash.write(first.as_bytes());
    Some(format!("golato-{:016x}", hash.0))
}

/// Marks Anthropic's breakpoints in `body`, if caching is on: the system prompt, the last
/// tool, the newest message's last block.
pub(crate) fn mark_anthropic(request: &Request, body: &mut Value) {
    if !request.model.prompt_cache.enabled {
        return;
    }
    let breakpoint = || json!({"type": "ephemeral"});
    if let Some(system) = body
        .get("system")
        .and_then(Value::as_str)
        .map(str::to_owned)
    {
        body["system"] = json!([{"type": "text", "text": system, "cache_control": breakpoint()}]);
    }
    if let Some(last) = body
        .get_mut("tools")
        .and_then(Value::as_array_mut)
        .and_then(|tools| tools.last_mut())
    {
        last["cache_control"] = breakpoint();
    }
    let Some(last) = body
        .get_mut("messages")
        .and_then(Value::as_array_mut)
        .and_then(|messages| messages.last_mut())
    else {
        return;
    };
    if let Some(text) = last["content"].as_str().map(str::to_owned) {
        last["content"] = json!([{"type": "text", "text": text}]);
    }
    if let Some(block) = last["content"]
        .as_array_mut()
        .and_then(|blocks| blocks.last_mut())
        // Thinking blocks take no breakpoint.
        .filter(|block| {
            !matches!(
                block["type"].as_str(),
                Some("thinking" | "redacted_thinking")
            )
        })
    {
        block["cache_control"] = breakpoint();
    }
}

/// FNV-1a (64 bits): stable across processes and versions, unlike std's hasher, so a session
/// that goes on tomorrow keeps its key.
struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 ^= u64::from(*byte);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
}
