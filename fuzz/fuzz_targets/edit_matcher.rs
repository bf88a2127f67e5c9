//! edit's matcher: an arbitrary file and edits (split from the input at 0xFF bytes, which UTF-8
//! never has: file, then oldText/newText pairs). Nothing may panic; a success must keep the
//! text outside the replaced regions (checked loosely: the result is valid UTF-8 by type, and
//! an edit of a file to itself never succeeds).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let parts: Vec<&str> = data
        .split(|&byte| byte == 0xFF)
        .map(|part| std::str::from_utf8(part).unwrap_or(""))
        .collect();
    let Some((original, rest)) = parts.split_first() else {
        return;
    };
    let edits: Vec<(&str, &str)> = rest
        .chunks_exact(2)
        .map(|pair| (pair[0], pair[1]))
        .collect();
    if let Ok(edited) = golato::fuzzing::edit(original, &edits) {
        assert!(
            edits.iter().all(|(old, new)| old != new),
            "an edit that changes nothing succeeded"
        );
        let _ = edited;
    }
});
