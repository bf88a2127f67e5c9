//! Reading near the end of a 1 GB file streams it with a bounded window (its own test binary,
//! so that the process's peak resident memory measures this test alone).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::io::{Seek, SeekFrom, Write};

use golato::builtin;
use support::*;

#[test]
fn reading_the_end_of_a_sparse_gigabyte_file_keeps_memory_low() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("huge.log");
    let mut file = std::fs::File::create(&path).unwrap();
    // 1 GiB of sparse newlines-free zeros would be one giant line; give it lines: a newline every
    // 4 KiB for the first megabyte, then a hole, then the interesting tail.
    for _ in 0..256 {
        file.write_all(&[b'.'; 4095]).unwrap();
        file.write_all(b"\n").unwrap();
    }
    file.seek(SeekFrom::Start(1 << 30)).unwrap();
    file.write_all(b"\nsecond to last\nlast line\n").unwrap();
    drop(file);
    let tools = builtin::new(builtin::Config {
        working_directory: dir.path().into(),
        allowed_tool_names: Some(vec!["read".into()]),
        ..Default::default()
    })
    .unwrap();
    let before = peak_rss_kib();
    // Lines: 256 short ones, the hole (one ~1 GiB line), then the two at the end.
    let result = call_tool(&tools, "read", r#"{"path": "huge.log", "offset": 258}"#);
    let after = peak_rss_kib();
    assert!(!result.is_error, "{}", result.text());
    assert_eq!(result.text(), "second to last\nlast line");
    let grown_mib = after.saturating_sub(before) / 1024;
    assert!(
        grown_mib < 32,
        "peak resident memory grew by {grown_mib} MiB reading a 1 GiB file"
    );
}
