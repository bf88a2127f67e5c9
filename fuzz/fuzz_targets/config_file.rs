//! A configuration file (the user's or a cloned project's `.golato/config.toml`) as golato
//! reads it: any text. Nothing may panic (a wrong key is named by its line); once a project's
//! untrusted settings are taken out, none is left.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        golato_cli::fuzzing::config_file(text);
    }
});
