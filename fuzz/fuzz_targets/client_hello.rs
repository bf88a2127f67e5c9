//! A sandboxed command's first bytes through a tunnel, as the proxy's SNI check reads them:
//! any bytes, cut anywhere. Nothing may panic; a name is given only for a whole hello, and the
//! same however the bytes are cut.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&chunk, bytes)) = data.split_first() else {
        return;
    };
    let whole = golato::fuzzing::client_hello_name(bytes, bytes.len());
    let cut = golato::fuzzing::client_hello_name(bytes, usize::from(chunk));
    assert_eq!(whole, cut, "the name depends on how the bytes were cut");
});
