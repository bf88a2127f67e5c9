//! `web_fetch` through the binary: a domain nobody allowed is refused in a run with no person
//! (naming what would allow it) and asked about on a terminal (`always` covering that domain
//! only); `--allow-domain` lets it through unasked; rules `web_fetch(DOMAIN)` decide; a name
//! resolving to a loopback address is fetched only where it is named exactly.

use crate::support;

use std::path::Path;
use std::process::Stdio;

use serde_json::json;
use support::cli::{golato, script_file, Terminal};
use support::pages::{serve, Answer};

fn script(dir: &Path, urls: &[String]) -> std::path::PathBuf {
    let mut entries: Vec<serde_json::Value> = urls
        .iter()
        .enumerate()
        .map(|(index, url)| {
            json!({"tool_calls": [{"id": format!("f{index}"), "name": "web_fetch", "arguments": {"url": url}}]})
        })
        .collect();
    entries.push(json!({"text": "Read them."}));
    script_file(dir, "script.jsonl", &entries)
}

fn results(output: &std::process::Output) -> Vec<(bool, String)> {
    support::cli::json_lines(output)
        .into_iter()
        .filter(|line| line["type"] == "tool_end")
        .map(|line| {
            (
                line["result"]["is_error"].as_bool().unwrap_or(false),
                line["result"]["content"].to_string(),
            )
        })
        .collect()
}

fn run(dir: &Path, urls: &[String], flags: &[&str]) -> Vec<(bool, String)> {
    let script = script(dir, urls);
    let output = golato()
        .args(["run", "--json", "--ephemeral", "--tools", "read,web_fetch"])
        .args(flags)
        .arg("--cwd")
        .arg(dir)
        .arg("--script")
        .arg(&script)
        .arg("go")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    results(&output)
}

#[test]
fn without_a_person_an_unlisted_domain_is_refused_and_allowed_domains_and_rules_decide() {
    let server = serve(|_| Answer::Page("text/html", b"<h1>Served page</h1>".to_vec()));
    let dir = tempfile::tempdir().unwrap();
    let url = format!("http://localhost:{}/", server.port());
    let refused = run(dir.path(), std::slice::from_ref(&url), &[]);
    assert!(refused[0].0);
    assert!(
        refused[0].1.contains("localhost is not among the allowed domains and nobody can answer here. The person can allow it with --allow-domain localhost, or a rule web_fetch(localhost)."),
        "{refused:?}"
    );
    // Named exactly: fetched, unasked, its loopback address too.
    let allowed = run(
        dir.path(),
        std::slice::from_ref(&url),
        &["--allow-domain", "localhost"],
    );
    assert!(
        !allowed[0].0 && allowed[0].1.contains("# Served page"),
        "{allowed:?}"
    );
    // Read mode reads.
    let reading = run(
        dir.path(),
        std::slice::from_ref(&url),
        &["--allow-domain", "localhost", "--network-methods", "read"],
    );
    assert!(reading[0].1.contains("# Served page"), "{reading:?}");
    // A rule lets the domain through the approvals; its loopback address is still judged.
    let ruled = run(
        dir.path(),
        std::slice::from_ref(&url),
        &["--allow", "web_fetch(localhost)"],
    );
    assert!(
        ruled[0].1.contains("resolves to the local address"),
        "{ruled:?}"
    );
    // A deny rule wins over the allowed domains.
    let denied = run(
        dir.path(),
        std::slice::from_ref(&url),
        &[
            "--allow-domain",
            "localhost",
            "--deny",
            "web_fetch(localhost)",
        ],
    );
    assert!(
        denied[0].0 && !denied[0].1.contains("Served page"),
        "{denied:?}"
    );
    assert!(denied[0].1.contains("web_fetch(localhost)"), "{denied:?}");
}

#[test]
fn on_a_terminal_each_new_domain_is_asked_and_always_covers_that_domain_only() {
    let server = serve(|path| Answer::Page("text/plain", format!("page {path}").into_bytes()));
    let dir = tempfile::tempdir().unwrap();
    let port = server.port();
    let urls = [
        format!("http://localhost:{port}/one"),
        format!("http://localhost:{port}/two"),
        format!("http://127.0.0.1:{port}/three"),
    ];
    let script = script(dir.path(), &urls);
    let mut command = golato();
    command
        .args([
            "run",
            "--ephemeral",
            "--tools",
            "read,web_fetch",
            "--approve",
            "never",
        ])
        .arg("--cwd")
        .arg(dir.path())
        .arg("--script")
        .arg(&script)
        .arg("go");
    let mut terminal = Terminal::start(command);
    terminal.wait_for(&format!("web_fetch http://localhost:{port}/one"), 1);
    terminal.wait_for("localhost is a new domain", 1);
    terminal.type_line("always");
    terminal.wait_for(&format!("web_fetch http://127.0.0.1:{port}/three"), 1);
    terminal.type_line("n");
    let (code, screen) = terminal.finish();
    assert_eq!(code, Some(0), "{screen}");
    assert_eq!(
        screen.matches("localhost is a new domain").count(),
        1,
        "{screen}"
    );
    assert!(
        screen.contains("The user did not allow this web_fetch call"),
        "{screen}"
    );
    // The approved domain's loopback address is judged all the same: named nowhere, refused.
    assert!(screen.contains("resolves to the local address"), "{screen}");
}
