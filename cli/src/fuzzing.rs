//! Entry points for the fuzz targets in `fuzz/` (the `fuzzing` feature): the parsers of the
//! files golato reads of its own, which anyone who can write to the data directory or a
//! cloned repository controls. Each panics when a promise is broken, as a fuzz target should.
#![allow(clippy::panic)]

use std::path::Path;
use std::time::UNIX_EPOCH;

use golato::message::Message;

use crate::store::session::Saved;

/// Reads `bytes` as a session file, then does what `golato run -c` does with it: closes the
/// calls a stop cut off. Every call of the last assistant message must then have its result.
pub fn session_file(bytes: &[u8]) {
    let Ok(mut saved) = Saved::from_bytes(Path::new("fuzzed.jsonl"), bytes, UNIX_EPOCH) else {
        return;
    };
    let _ = (saved.first_prompt(), saved.turns(), saved.answered());
    saved.close_cut_off_calls();
    let Some(last) = saved
        .transcript
        .iter()
        .rposition(|message| matches!(message, Message::Assistant(_)))
    else {
        return;
    };
    let Message::Assistant(assistant) = &saved.transcript[last] else {
        return;
    };
    for call in &assistant.tool_calls {
        let answered = saved.transcript[last..].iter().any(|message| {
            matches!(message, Message::ToolResult(result) if result.tool_call_id == call.id)
        });
        if !answered {
            panic!(
                "call {:?} has no result after closing cut-off calls",
                call.id
            );
        }
    }
}

/// Parses `text` as a configuration file, as `golato config` shows it and as a project's file
/// is judged: once the untrusted settings are taken out, none is left.
pub fn config_file(text: &str) {
    let Ok((settings, profiles)) = crate::settings::file_settings::parse(text) else {
        return;
    };
    for mut settings in std::iter::once(settings).chain(profiles.into_values()) {
        let _ = crate::settings::file_settings::entries(&settings);
        crate::settings::config::untrusted(&mut settings);
        let left = crate::settings::config::untrusted(&mut settings);
        if !left.is_empty() {
            panic!("untrusted settings left after taking them out: {left:?}");
        }
    }
}
