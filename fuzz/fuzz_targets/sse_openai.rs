//! OpenAI Chat Completions stream: arbitrary bytes through the SSE reader (cut where the first
//! byte says) and the chunk decoder, then the message put together. Nothing may panic.
#![no_main]

use golato::generator::openai::ChatStreamDecoder;
use golato::generator::sse::SseDecoder;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&cut, body)) = data.split_first() else {
        return;
    };
    let cut = usize::from(cut).min(body.len());
    let mut sse = SseDecoder::default();
    let mut decoder = ChatStreamDecoder::default();
    let mut events = sse.feed(&body[..cut]);
    events.extend(sse.feed(&body[cut..]));
    events.extend(sse.finish());
    for event in events {
        if decoder.decode(&event.data).is_err() {
            return;
        }
    }
    let _ = decoder.is_done();
    let _ = decoder.finish();
});
