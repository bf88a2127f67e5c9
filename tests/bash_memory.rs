//! However much a command prints, `bash` keeps memory bounded (its own test binary, so that the
//! process's peak resident memory measures this test alone).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use golato::builtin;
use serde_json::json;
use support::*;

#[test]
fn printing_200_megabytes_keeps_resident_memory_low() {
    let dir = tempfile::tempdir().unwrap();
    let tools = builtin::new(builtin::Config {
        working_directory: dir.path().into(),
        allowed_tool_names: Some(vec!["bash".into()]),
        ..Default::default()
    })
    .unwrap();
    let before = peak_rss_kib();
    let command = "yes 0123456789012345678901234567890123456789012345678 | head -c 200000000";
    let result = call_tool(&tools, "bash", &json!({"command": command}).to_string());
    let after = peak_rss_kib();
    assert!(
        !result.is_error,
        "{}",
        &result.text()[..200.min(result.text().len())]
    );
    let details = result.details.unwrap();
    assert_eq!(details["total_bytes"], 200_000_000);
    let path = details["full_output_path"].as_str().unwrap().to_owned();
    // The full-output file stops at its limit (64 MiB by default).
    assert_eq!(
        std::fs::metadata(&path).unwrap().len(),
        builtin::DEFAULT_BASH_OUTPUT_FILE_LIMIT
    );
    assert_eq!(details["full_output_cut"], true);
    std::fs::remove_file(&path).unwrap();
    let grown_mib = (after.saturating_sub(before)) / 1024;
    assert!(
        grown_mib < 32,
        "peak resident memory grew by {grown_mib} MiB while 200 MB were printed"
    );
}
