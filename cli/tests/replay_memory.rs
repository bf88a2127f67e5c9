//! A long recorded answer replayed through the binary costs a small multiple of its size, not
//! one copy per event that shows it (a 50 MB answer peaked at 335 MB with `--json`: the message
//! was copied for its message end, its turn end, the transcript and the run's result). Alone in
//! its binary: it reads the peak memory of the children this process waited for.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../../tests/support/mod.rs"]
mod support;

use std::io::Read as _;
use std::process::Stdio;

#[test]
fn a_long_replayed_answer_costs_a_small_multiple_of_its_size() {
    const ANSWER: usize = 32 * 1024 * 1024;
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("long.jsonl");
    let text = "x".repeat(ANSWER);
    std::fs::write(
        &script,
        format!("{}\n", serde_json::json!({ "text": text })),
    )
    .unwrap();
    drop(text);
    let mut child = support::cli::golato()
        .args([
            "run",
            "--sandbox",
            "off",
            "--ephemeral",
            "--json",
            "--script",
        ])
        .arg(&script)
        .args(["--cwd", dir.path().to_str().unwrap(), "go"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut written = 0usize;
    let mut buffer = vec![0u8; 1 << 20];
    loop {
        let read = stdout.read(&mut buffer).unwrap();
        if read == 0 {
            break;
        }
        written += read;
    }
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    // What --json repeats (README): the deltas, the message's end, the turn's end, the run's end.
    assert!(written >= 4 * ANSWER, "{written} bytes written");
    let peak_kib = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN)
        .unwrap()
        .max_rss();
    let peak = usize::try_from(peak_kib).unwrap() * 1024;
    // Four times the answer, plus what golato holds without it (about 20 MiB).
    let bound = 4 * ANSWER + 40 * 1024 * 1024;
    assert!(
        peak < bound,
        "peak {} MiB for a {} MiB answer (bound {} MiB)",
        peak >> 20,
        ANSWER >> 20,
        bound >> 20
    );
}
