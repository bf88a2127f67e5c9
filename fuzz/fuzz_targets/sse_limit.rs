//! The SSE reader with a limit (issue 21): however a body is cut, no event larger than the
//! limit comes out, and below it nothing is dropped.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    assert!(golato::fuzzing::sse_limit(data), "the SSE limit did not hold");
});
