//! A session file as `golato run -c` reads it: any bytes (torn lines, damaged lines, steps that
//! are not messages, results without calls). Nothing may panic; after the calls a stop cut off
//! are closed, every call of the last assistant message has its result.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| golato_cli::fuzzing::session_file(data));
