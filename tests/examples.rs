//! The examples build with the tests (`cargo test` builds examples) and are run here.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::process::Command;

fn example(name: &str) -> PathBuf {
    // target/debug/deps/examples-HASH → target/debug/examples/NAME
    let exe = std::env::current_exe().expect("test executable path");
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target profile directory");
    profile_dir
        .join("examples")
        .join(format!("{name}{}", std::env::consts::EXE_SUFFIX))
}

#[test]
fn registering_a_tool_prints_the_lifecycle_and_the_answer() {
    let path = example("registering_a_tool");
    let output = Command::new(&path).output().unwrap_or_else(|error| {
        panic!(
            "could not run {}: {error} (build it with cargo test --all-targets)",
            path.display()
        )
    });
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert_eq!(
        stdout,
        concat!(
            "[start] lookup_customer {\"customer_id\":\"C-100\"}\n",
            "[update] lookup_customer parts=1\n",
            "[end] lookup_customer error=false result=\"Customer C-100 (Acme Corp) is on the Pro plan.\"\n",
            "C-100 uses the Pro plan.\n",
        )
    );
}
