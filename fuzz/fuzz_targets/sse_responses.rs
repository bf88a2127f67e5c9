//! OpenAI Responses API stream: arbitrary bytes through the SSE reader (cut where the first byte
//! says) and the decoder, then the message put together. Nothing may panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = golato::fuzzing::responses_stream(data);
});
