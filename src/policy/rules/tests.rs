#![allow(clippy::unwrap_used)]

use super::*;
use serde_json::json;

fn rules(list: &[(Decision, &str)]) -> Rules {
    let mut rules = Rules::new();
    for (decision, text) in list {
        rules
            .add(*decision, text, Source::flag("test"), Path::new("/work"))
            .unwrap();
    }
    rules
}

fn bash(rules: &Rules, command: &str) -> Option<Decision> {
    rules
        .decide("bash", &json!({ "command": command }), Path::new("/work"))
        .map(|verdict| verdict.decision)
}

/// `web_fetch(pattern)` judges the URL's host as the network policy does; a URL with no
/// host is matched by no domain rule (the tool refuses it).
#[test]
fn web_fetch_rules_judge_the_urls_host() {
    let rules = rules(&[
        (Decision::Allow, "web_fetch(docs.rs)"),
        (Decision::Allow, "WebFetch(domain:*.github.com)"),
        (Decision::Deny, "web_fetch(evil.github.com)"),
    ]);
    let fetch = |url: &str| {
        rules
            .decide("web_fetch", &json!({ "url": url }), Path::new("/work"))
            .map(|verdict| verdict.decision)
    };
    assert_eq!(fetch("https://docs.rs/tokio"), Some(Decision::Allow));
    assert_eq!(fetch("https://api.github.com/repos"), Some(Decision::Allow));
    assert_eq!(fetch("https://evil.github.com/"), Some(Decision::Deny));
    assert_eq!(fetch("https://docs.rs.evil.com/"), None);
    assert_eq!(fetch("http://[::1]:8080/"), None);
    assert_eq!(fetch("not a url"), None);
    let mut bad = Rules::new();
    assert!(bad
        .add(
            Decision::Allow,
            "web_fetch(a b)",
            Source::flag("test"),
            Path::new("/")
        )
        .is_err());
}

/// The workspace's own name is literal (`proj[1]` is no character class, `{a,b}` no
/// alternation), and `..` in a pattern climbs out of it.
#[test]
fn a_workspace_named_like_a_glob_is_taken_literally() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("proj[1]{a,b}");
    std::fs::create_dir_all(work.join("secret")).unwrap();
    std::fs::create_dir_all(dir.path().join("shared")).unwrap();
    let mut rules = Rules::new();
    for rule in ["read(secret/**)", "read(../shared/*.key)"] {
        rules
            .add(Decision::Deny, rule, Source::flag("test"), &work)
            .unwrap();
    }
    let read = |path: &str| {
        rules
            .decide("read", &json!({ "path": path }), &work)
            .map(|verdict| verdict.decision)
    };
    assert_eq!(read("secret/x"), Some(Decision::Deny));
    assert_eq!(read("../shared/a.key"), Some(Decision::Deny));
    assert_eq!(read("other"), None);
    assert_eq!(read("../shared/a.txt"), None);
}

#[test]
fn a_compound_command_is_allowed_only_when_each_part_is() {
    let rules = rules(&[(Decision::Allow, "bash(git status*)")]);
    assert_eq!(bash(&rules, "git status"), Some(Decision::Allow));
    assert_eq!(bash(&rules, "git status --short"), Some(Decision::Allow));
    assert_eq!(bash(&rules, "git status && rm -rf ~"), None);
    assert_eq!(bash(&rules, "git status; `rm -rf ~`"), None);
    assert_eq!(bash(&rules, "git status $(rm -rf ~)"), None);
    assert_eq!(bash(&rules, "git status 'unclosed"), None);
}

#[test]
fn deny_beats_ask_beats_allow() {
    let rules = rules(&[
        (Decision::Allow, "bash"),
        (Decision::Ask, "bash(git push:*)"),
        (Decision::Deny, "bash(rm -rf*)"),
    ]);
    assert_eq!(bash(&rules, "ls"), Some(Decision::Allow));
    assert_eq!(bash(&rules, "git push origin"), Some(Decision::Ask));
    assert_eq!(bash(&rules, "git pushy"), Some(Decision::Allow));
    assert_eq!(
        bash(&rules, "git push && sudo rm -rf /"),
        Some(Decision::Deny)
    );
    assert_eq!(bash(&rules, "bash -c 'rm -rf /'"), Some(Decision::Deny));
}

#[test]
fn path_rules_take_relative_patterns_from_the_workspace() {
    let rules = rules(&[
        (Decision::Deny, "edit(**/.env)"),
        (Decision::Allow, "read(src/**)"),
        (Decision::Deny, "read(/etc/*)"),
    ]);
    let decide = |tool: &str, path: &str| {
        rules
            .decide(tool, &json!({ "path": path }), Path::new("/work"))
            .map(|verdict| verdict.decision)
    };
    assert_eq!(decide("write", ".env"), Some(Decision::Deny));
    assert_eq!(decide("edit", "config/.env"), Some(Decision::Deny));
    assert_eq!(decide("read", ".env"), None);
    assert_eq!(decide("read", "src/a/b.rs"), Some(Decision::Allow));
    assert_eq!(decide("read", "src/../secret"), None);
    assert_eq!(decide("read", "/etc/passwd"), Some(Decision::Deny));
    assert_eq!(decide("read", "/etc/ssl/x"), None);
}

#[test]
fn a_malformed_rule_is_refused_naming_where_it_was_written() {
    let mut rules = Rules::new();
    let source = Source::file("/home/me/.config/golato/config.toml", 7);
    for (text, why) in [
        ("bash(git push", "no closing parenthesis"),
        ("bash()", "empty pattern"),
        ("github_issue(x)", "only bash"),
        ("rm -rf", "does not name a tool"),
        ("bash([)", "not a glob"),
    ] {
        let error = rules
            .add(Decision::Deny, text, source.clone(), Path::new("/w"))
            .unwrap_err()
            .to_string();
        assert!(error.contains("config.toml line 7"), "{error}");
        assert!(error.contains(why), "{text}: {error}");
    }
}

#[test]
fn a_rule_for_no_tool_the_agent_has_is_an_error() {
    let rules = rules(&[(Decision::Deny, "Bash(rm*)"), (Decision::Ask, "githb_*")]);
    let error = rules
        .check_tools(["bash", "read", "github_create_issue"])
        .unwrap_err()
        .to_string();
    assert!(error.contains("githb_*"), "{error}");
    assert!(rules.check_tools(["bash", "githb_x"]).is_ok());
}
