use super::*;
use crate::args::Command;
use crate::settings::file_settings::{self, FileSettings};
use crate::settings::resolved::fill::fill;

/// Each key a configuration file takes: a TOML value, and the flag of the same name with a
/// value for it (`None`: a switch).
const KEYS: &[(&str, &str, Option<&str>)] = &[
    ("provider", "\"anthropic\"", Some("openai")),
    ("model", "\"m\"", Some("n")),
    (
        "base_url",
        "\"http://127.0.0.1:1/v1\"",
        Some("http://127.0.0.1:2/v1"),
    ),
    ("system", "\"be brief\"", Some("be long")),
    ("tools", "[\"read\"]", Some("bash")),
    ("exclude", "[\"bash\"]", Some("read")),
    ("sequential", "true", None),
    ("max_parallel", "3", Some("4")),
    ("max_background", "3", Some("4")),
    ("tool_timeout", "5.0", Some("6")),
    ("max_turns", "3", Some("4")),
    ("context_window", "1000", Some("2000")),
    ("no_compact", "true", None),
    ("web_search", "true", None),
    ("reviewer_policy", "\"no force pushes\"", Some("x")),
    ("max_tokens", "100", Some("200")),
    ("max_cost", "1.5", Some("2.5")),
    ("mcp", "[\"server --stdio\"]", Some("other")),
    (
        "mcp_url",
        "[\"http://127.0.0.1:3/mcp\"]",
        Some("http://127.0.0.1:4/mcp"),
    ),
    ("sandbox", "\"read-only\"", Some("off")),
    ("allow_network", "true", None),
    ("allow_domain", "[\"@crates\"]", Some("@npm")),
    ("deny_domain", "[\"a.test\"]", Some("b.test")),
    ("network_methods", "\"read\"", Some("all")),
    ("network_log", "\"/tmp/n.jsonl\"", Some("/tmp/m.jsonl")),
    ("writable", "[\"/srv\"]", Some("/opt")),
    ("deny_read", "[\"/srv\"]", Some("/opt")),
    ("no_bash_checkpoints", "true", None),
    ("approve", "\"edits\"", Some("never")),
    ("temperature", "0.5", Some("0.7")),
    ("max_output_tokens", "100", Some("200")),
    ("reasoning_effort", "\"high\"", Some("low")),
    // `lsp = false` is the flag --no-lsp (`[lsp.NAME]` tables add servers, no flag).
    ("lsp", "false", None),
    // Tables of linters: no flag.
    (
        "lint",
        "{ ruff = { command = [\"ruff\"], extensions = [\"py\"], format = \"gcc\" } }",
        None,
    ),
];

fn run_flags(extra: &[&str]) -> AgentArgs {
    let line = ["golato", "run", "prompt"]
        .iter()
        .chain(extra)
        .map(Into::into)
        .collect();
    match crate::parse_from(line).map(|cli| cli.command) {
        Ok(Command::Run(run)) => run.agent,
        other => panic!("not a run: {other:?}"),
    }
}

fn file_setting(key: &str, value: &str) -> FileSettings {
    file_settings::parse(&format!("{key} = {value}"))
        .unwrap_or_else(|error| panic!("{key} = {value}: {error}"))
        .0
}

/// A renamed flag or key cannot silently stop being settable from a file: every key a file
/// takes is listed above, sets its flag when the flag is not given, and yields to it when
/// it is.
#[test]
fn every_file_key_sets_the_flag_of_its_name_unless_the_flag_is_given() {
    let mut listed: Vec<&str> = KEYS.iter().map(|(key, ..)| *key).collect();
    listed.sort_unstable();
    let mut fields = crate::settings::file_settings::setting_names().to_vec();
    fields.sort_unstable();
    assert_eq!(listed, fields, "KEYS lists every key of FileSettings");
    for (key, value, flag_value) in KEYS {
        let settings = file_setting(key, value);
        let mut args = run_flags(&[]);
        let before = format!("{args:?}");
        fill(&mut args, &settings, "a test").unwrap();
        assert_ne!(before, format!("{args:?}"), "{key} = {value} set nothing");
        if *key == "lint" {
            continue;
        }

        let (flag, field) = match *key {
            "lsp" => ("--no-lsp".to_owned(), "no_lsp"),
            key => (format!("--{}", key.replace('_', "-")), key),
        };
        let mut given = vec![flag.as_str()];
        given.extend(flag_value);
        let mut args = run_flags(&given);
        assert!(
            args.given.contains(field),
            "{flag} is noted as given under {field}"
        );
        let before = format!("{args:?}");
        fill(&mut args, &settings, "a test").unwrap();
        if *key == "deny_read" || *key == "deny_domain" {
            // Denials add up: a file's join the flag's.
            assert_ne!(before, format!("{args:?}"), "deny_read adds up");
        } else {
            assert_eq!(before, format!("{args:?}"), "{flag} given lost to the file");
        }
    }
}
