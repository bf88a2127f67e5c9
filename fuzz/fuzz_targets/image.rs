//! read's image path: arbitrary bytes (prefixed with each supported signature in turn by the
//! first byte) decoded within the limits. Nothing may panic or allocate past the limits.
#![no_main]

use libfuzzer_sys::fuzz_target;

const SIGNATURES: [&[u8]; 4] = [
    b"\x89PNG\r\n\x1a\n",
    &[0xFF, 0xD8, 0xFF],
    b"GIF89a",
    b"RIFF\0\0\0\0WEBPVP8 ",
];

fuzz_target!(|data: &[u8]| {
    let Some((&choice, rest)) = data.split_first() else {
        return;
    };
    let mut bytes = SIGNATURES[usize::from(choice) % SIGNATURES.len()].to_vec();
    bytes.extend_from_slice(rest);
    let _ = golato::fuzzing::image(&bytes);
});
