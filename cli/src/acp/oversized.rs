//! A message from the client too long to read ([`MAX_LINE`](super::MAX_LINE)): its ID found
//! in the part read, the rest dropped as it comes, and the request answered with an error
//! under that ID (a JSON-RPC parse error has no ID, and a client waits on its request's).

use tokio::io::{AsyncBufRead, AsyncBufReadExt as _};

/// How much of an oversized line's head is searched for its ID: clients write `id` before
/// `params`, where a large prompt's bulk is.
const HEAD: usize = 64 * 1024;

/// The ID of the request `head` begins (a top-level `"id"` in its first [`HEAD`] bytes), when
/// one is there.
pub(super) fn request_id(head: &[u8]) -> Option<serde_json::Value> {
    let head = &head[..head.len().min(HEAD)];
    let text = match std::str::from_utf8(head) {
        Ok(text) => text,
        Err(error) => std::str::from_utf8(&head[..error.valid_up_to()]).ok()?,
    };
    let bytes = text.as_bytes();
    let (mut depth, mut at) = (0usize, 0usize);
    while at < bytes.len() {
        match bytes[at] {
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.saturating_sub(1),
            b'"' => {
                let end = string_end(bytes, at)?;
                if depth == 1 && &text[at..=end] == "\"id\"" {
                    let after = text[end + 1..].trim_start();
                    if let Some(value) = after.strip_prefix(':') {
                        let mut values = serde_json::Deserializer::from_str(value)
                            .into_iter::<serde_json::Value>();
                        return match values.next() {
                            Some(Ok(id)) if id.is_number() || id.is_string() => Some(id),
                            _ => None,
                        };
                    }
                }
                at = end;
            }
            _ => {}
        }
        at += 1;
    }
    None
}

/// Where the string starting at `start` (its opening quote) ends: its closing quote.
fn string_end(bytes: &[u8], start: usize) -> Option<usize> {
    let mut at = start + 1;
    while at < bytes.len() {
        match bytes[at] {
            b'\\' => at += 2,
            b'"' => return Some(at),
            _ => at += 1,
        }
    }
    None
}

/// Reads the rest of the line and drops it, a buffer at a time; how many bytes it held.
pub(super) async fn drop_rest_of_line(
    reader: &mut (impl AsyncBufRead + Unpin),
) -> std::io::Result<u64> {
    let mut dropped = 0u64;
    loop {
        let buffer = reader.fill_buf().await?;
        if buffer.is_empty() {
            return Ok(dropped);
        }
        match buffer.iter().position(|byte| *byte == b'\n') {
            Some(end) => {
                reader.consume(end + 1);
                return Ok(dropped + end as u64 + 1);
            }
            None => {
                let length = buffer.len();
                reader.consume(length);
                dropped += length as u64;
            }
        }
    }
}

/// The error answering request `id`, `length` bytes long.
pub(super) fn refusal(id: &serde_json::Value, length: u64) -> String {
    serde_json::json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {
            "code": -32600,
            "message": format!(
                "golato reads messages of at most {} MiB and this one was {:.1} MiB: nothing of it was read; send a smaller image or file (a model takes images of a few MB at most)",
                super::MAX_LINE / (1024 * 1024),
                length as f64 / (1024.0 * 1024.0)
            ),
        },
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_id_is_the_top_levels_only() {
        let id = |text: &str| request_id(text.as_bytes());
        assert_eq!(
            id(r#"{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"id":9,"x":"#),
            Some(serde_json::json!(7))
        );
        assert_eq!(
            id(r#"{"params":{"id":9,"a":"\"id\":3"},"id" : "req-1","#),
            Some(serde_json::json!("req-1"))
        );
        assert_eq!(id(r#"{"method":"x","params":{"id":9,"data":"AAAA"#), None);
        assert_eq!(id(r#"{"id":{"nested":1}}"#), None);
    }
}
