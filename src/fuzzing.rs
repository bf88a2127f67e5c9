//! Entry points for the fuzz targets in `fuzz/` (cargo feature `fuzzing`): the private parsers
//! and matchers, reachable without an agent. Not an API; nothing here is stable.

use serde_json::Value;

use crate::agent::validation::{prepare, Prepared, Registry};
use crate::generator::anthropic::MessagesStreamDecoder;
use crate::generator::openai::chat::ChatStreamDecoder;
use crate::generator::openai::responses::ResponsesStreamDecoder;
use crate::generator::sse::SseDecoder;
use crate::generator::{Delta, Error};
use crate::message::{AssistantMessage, ToolCall};
use crate::tool::{self, Tool, ToolResult};

/// A Chat Completions stream: decoded as `stream` (private) says.
pub fn openai_chat_stream(data: &[u8]) -> Option<AssistantMessage> {
    stream(data, ChatStreamDecoder::decode, ChatStreamDecoder::finish)
}

/// An Anthropic Messages stream: decoded as `stream` (private) says.
pub fn anthropic_stream(data: &[u8]) -> Option<AssistantMessage> {
    stream(
        data,
        MessagesStreamDecoder::decode,
        MessagesStreamDecoder::finish,
    )
}

/// A Responses API stream: decoded as `stream` (private) says.
pub fn responses_stream(data: &[u8]) -> Option<AssistantMessage> {
    stream(
        data,
        ResponsesStreamDecoder::decode,
        ResponsesStreamDecoder::finish,
    )
}

/// The SSE framing with a limit (issue 21): `data`'s first byte is the limit in bytes (at least
/// 1), its second where the body (the rest) is cut in two. Whether the limit held: no event
/// larger than it came out, and when the decoder did not overflow, it gave exactly the events
/// an unlimited one gives.
pub fn sse_limit(data: &[u8]) -> bool {
    let [limit, cut, body @ ..] = data else {
        return true;
    };
    let limit = usize::from(*limit).max(1);
    let cut = usize::from(*cut).min(body.len());
    let mut bounded = SseDecoder::with_limit(limit);
    let mut events = bounded.feed(&body[..cut]);
    events.extend(bounded.feed(&body[cut..]));
    events.extend(bounded.finish());
    if events.iter().any(|event| event.data.len() > limit) {
        return false;
    }
    if bounded.overflowed() {
        return true;
    }
    let mut unbounded = SseDecoder::default();
    let mut all = unbounded.feed(body);
    all.extend(unbounded.finish());
    events == all
}

/// A provider's server-sent events through the SSE framing and `decode`: `data`'s first byte
/// says where the body (the rest) is cut in two, as a network read would. The message the
/// stream assembled, or `None` where the decoder refused an event.
fn stream<D: Default>(
    data: &[u8],
    decode: fn(&mut D, &str) -> Result<Vec<Delta>, Error>,
    finish: fn(D) -> AssistantMessage,
) -> Option<AssistantMessage> {
    let (&cut, body) = data.split_first()?;
    let cut = usize::from(cut).min(body.len());
    let mut sse = SseDecoder::with_limit(crate::generator::MAX_EVENT_BYTES);
    let mut events = sse.feed(&body[..cut]);
    events.extend(sse.feed(&body[cut..]));
    events.extend(sse.finish());
    let mut decoder = D::default();
    for event in events {
        decode(&mut decoder, &event.data).ok()?;
    }
    Some(finish(decoder))
}

/// edit's matcher on `original`: the edited text, or the error the model would get.
pub fn edit(original: &str, edits: &[(&str, &str)]) -> Result<String, String> {
    crate::builtin::fuzz_edit(original, edits)
}

/// read's image path on `bytes`: whether they decoded and fit the limits.
pub fn image(bytes: &[u8]) -> bool {
    crate::builtin::fuzz_image(bytes)
}

/// Validation of `calls` against one tool named `tool` with `schema`: for each call, `None` if
/// it may run or its error text. `Err` when the schema does not compile.
pub fn validate(schema: &Value, calls: &[ToolCall]) -> Result<Vec<Option<String>>, String> {
    let tool = Tool::new(
        "tool",
        "A fuzzed tool.",
        schema.clone(),
        |_ctx, _args| async { Ok(ToolResult::text("ran")) },
    );
    let tools = vec![tool];
    let schemas = tool::compile(&tools).map_err(|error| error.to_string())?;
    let registry = Registry::new(tools, schemas);
    Ok(prepare(&registry, calls)
        .into_iter()
        .map(|prepared| match prepared {
            Prepared::Invalid(text) => Some(text),
            Prepared::Valid { .. } => None,
        })
        .collect())
}

/// A tunnel's first bytes as the proxy's SNI check reads them, `chunk` bytes at a time (at
/// least 1): the name a whole ClientHello gives (`Some(None)`: it names none); `None` when it
/// is refused, not TLS, or cut short. Nothing may panic, whatever the bytes.
pub fn client_hello_name(bytes: &[u8], chunk: usize) -> Option<Option<Vec<u8>>> {
    crate::proxy::hello_name(bytes, chunk)
}
