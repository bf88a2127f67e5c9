//! Claude Code's settings files (`.claude/settings.json`, `.claude/settings.local.json`,
//! `~/.claude/settings.json`) read as they are: their `permissions` (allow, ask and deny rules
//! in the same `Tool(pattern)` form) and their command `hooks` (the same entry shape). What
//! golato has no counterpart for (a tool it does not have, an event it does not fire, a hook
//! that is not a command) is left out and named, never an error: the file is Claude Code's.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use super::{CallPolicy, Decision, Error, HookEntry, HookEvent, Source};

#[derive(Debug, Default, Deserialize)]
struct Settings {
    #[serde(default)]
    permissions: Permissions,
    #[serde(default)]
    hooks: BTreeMap<String, Vec<serde_json::Value>>,
}

#[derive(Debug, Default, Deserialize)]
struct Permissions {
    #[serde(default)]
    allow: Vec<String>,
    #[serde(default)]
    ask: Vec<String>,
    #[serde(default)]
    deny: Vec<String>,
    #[serde(default, rename = "defaultMode")]
    default_mode: Option<serde_json::Value>,
    #[serde(default, rename = "additionalDirectories")]
    additional_directories: Vec<serde_json::Value>,
}

/// A hook entry with only the fields golato reads (`matcher`, `command`, `timeout`, `hooks`,
/// and a nested hook's `type`, `command`, `timeout`), counting the others in `ignored`; the
/// nested hooks of another type than `command` are taken out and their types returned.
fn known_fields(
    entry: serde_json::Value,
    ignored: &mut BTreeMap<String, usize>,
) -> (serde_json::Value, Vec<String>) {
    let serde_json::Value::Object(mut entry) = entry else {
        return (entry, Vec::new());
    };
    let mut other_types = Vec::new();
    entry.retain(|field, _| {
        let known = matches!(field.as_str(), "matcher" | "command" | "timeout" | "hooks");
        if !known {
            *ignored.entry(field.clone()).or_default() += 1;
        }
        known
    });
    if let Some(serde_json::Value::Array(hooks)) = entry.get_mut("hooks") {
        hooks.retain_mut(|hook| {
            let Some(hook) = hook.as_object_mut() else {
                return true;
            };
            if let Some(other) = hook
                .get("type")
                .and_then(serde_json::Value::as_str)
                .filter(|kind| *kind != "command")
            {
                other_types.push(other.to_owned());
                return false;
            }
            hook.retain(|field, _| {
                let known = matches!(field.as_str(), "type" | "command" | "timeout");
                if !known {
                    *ignored.entry(field.clone()).or_default() += 1;
                }
                known
            });
            true
        });
    }
    (serde_json::Value::Object(entry), other_types)
}

/// Claude Code's tools that are golato's, by the name golato gives them.
fn golato_tool(claude: &str) -> Option<&'static str> {
    match claude {
        "Bash" | "bash" => Some("bash"),
        "Read" | "read" => Some("read"),
        "Edit" | "edit" | "MultiEdit" => Some("edit"),
        "Write" | "write" => Some("write"),
        "WebFetch" | "web_fetch" => Some("web_fetch"),
        _ => None,
    }
}

/// A Claude Code command pattern as the glob golato matches commands with, meaning what Claude
/// Code means: `prefix:*` is the prefix or it and more words; an unescaped `*` is any text
/// (`\*` a star), and a single `*` after a space at the end may match nothing (`ls *` allows
/// `ls`); every other character is itself (`[`, `]`, `{`, `}`, `?` and `,` too).
fn claude_command_glob(pattern: &str) -> String {
    // The literal text as a glob, safe inside an alternation (`{a,b}`) too.
    let literal = |text: &str| globset::escape(text).replace(',', "[,]");
    if let Some(prefix) = pattern.strip_suffix(":*") {
        let prefix = literal(prefix);
        return format!("{{{prefix},{prefix} *}}");
    }
    // The pattern cut at its unescaped stars, `\*` and `\\` read as the characters.
    let mut parts = vec![String::new()];
    let mut chars = pattern.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if matches!(chars.peek(), Some('*' | '\\')) => {
                if let (Some(escaped), Some(part)) = (chars.next(), parts.last_mut()) {
                    part.push(escaped);
                }
            }
            '*' => parts.push(String::new()),
            c => {
                if let Some(part) = parts.last_mut() {
                    part.push(c);
                }
            }
        }
    }
    let glob = parts
        .iter()
        .map(|part| literal(part))
        .collect::<Vec<_>>()
        .join("*");
    match parts.as_slice() {
        [head, tail] if tail.is_empty() && head.ends_with(' ') => {
            format!("{{{},{glob}}}", literal(head.trim_end()))
        }
        _ => glob,
    }
}

/// A Claude Code permission rule as golato writes it, or why it is left out. Claude Code's path
/// patterns say `//abs` for an absolute path and `/x` or `./x` for one from the project.
fn rule_of(text: &str) -> Result<String, String> {
    let text = text.trim();
    let (tool, pattern) = match text.split_once('(') {
        None => (text, None),
        Some((tool, rest)) => (tool, rest.strip_suffix(')')),
    };
    let Some(tool) = golato_tool(tool) else {
        return Err(format!("{text} (golato has no {tool} tool)"));
    };
    let Some(pattern) = pattern else {
        return match text.contains('(') {
            true => Err(format!("{text} (no closing parenthesis)")),
            false => Ok(tool.to_owned()),
        };
    };
    let pattern = match tool {
        "bash" => pattern.to_owned(),
        // `domain:docs.rs` is the host itself.
        "web_fetch" => pattern.trim().trim_start_matches("domain:").to_owned(),
        _ => match pattern {
            absolute if absolute.starts_with("//") => absolute[1..].to_owned(),
            relative if relative.starts_with("./") => relative[2..].to_owned(),
            relative if relative.starts_with('/') => relative[1..].to_owned(),
            other => other.to_owned(),
        },
    };
    Ok(format!("{tool}({pattern})"))
}

impl CallPolicy {
    /// Adds the `permissions` and `hooks` of a Claude Code settings file's JSON `text` (its
    /// other keys are Claude Code's own); `path` names the file, `cwd` is the workspace. Returns
    /// what was left out, each with why.
    ///
    /// ```
    /// use std::path::Path;
    /// let mut policy = golato::policy::CallPolicy::new();
    /// let left_out = policy.add_claude_settings(
    ///     r#"{"permissions": {"allow": ["Bash(npm test:*)", "WebSearch"]},
    ///         "hooks": {"PostToolUse": [{"matcher": "Edit", "hooks": [{"type": "command", "command": "cargo fmt"}]}]}}"#,
    ///     Path::new(".claude/settings.json"),
    ///     Path::new("/srv/project"),
    /// )?;
    /// assert_eq!(policy.rules.iter().count(), 1);
    /// assert_eq!(policy.hooks.len(), 1);
    /// assert_eq!(left_out, ["WebSearch (golato has no WebSearch tool)"]);
    /// # Ok::<(), golato::policy::Error>(())
    /// ```
    ///
    /// # Errors
    /// The text is not JSON of a settings file's shape, or a rule golato takes does not parse
    /// (a bad glob): named by file.
    pub fn add_claude_settings(
        &mut self,
        text: &str,
        path: &Path,
        cwd: &Path,
    ) -> Result<Vec<String>, Error> {
        let line_of = |needle: &str| {
            let offset = text.find(needle).unwrap_or(0);
            Source::file(path, super::line_at(text, offset))
        };
        // A byte-order mark first is no JSON's, and Claude Code reads past it.
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let settings: Settings = serde_json::from_str(text).map_err(|error| Error::Invalid {
            at: Source::file(path, error.line()),
            message: format!("{error}; it must be Claude Code's settings JSON"),
        })?;
        let mut left_out = Vec::new();
        let mut ignored_fields: BTreeMap<String, usize> = BTreeMap::new();
        let Permissions {
            allow,
            ask,
            deny,
            default_mode,
            additional_directories,
        } = settings.permissions;
        if let Some(mode) = default_mode {
            left_out.push(format!(
                "permissions.defaultMode {mode} (golato's approval mode is its own: --approve, or approve in .golato/config.toml)"
            ));
        }
        if !additional_directories.is_empty() {
            left_out.push(format!(
                "permissions.additionalDirectories {} (golato's are --writable, or writable in .golato/config.toml)",
                serde_json::Value::Array(additional_directories)
            ));
        }
        for (decision, list) in [
            (Decision::Allow, allow),
            (Decision::Ask, ask),
            (Decision::Deny, deny),
        ] {
            for text in list {
                match rule_of(&text) {
                    // A command pattern means what it means to Claude Code, not a glob.
                    Ok(rule) if rule.starts_with("bash(") => {
                        let pattern = &rule["bash(".len()..rule.len() - 1];
                        self.rules.add_command_glob(
                            decision,
                            &rule,
                            &claude_command_glob(pattern),
                            line_of(&text),
                        )?;
                    }
                    Ok(rule) => self.rules.add(decision, &rule, line_of(&text), cwd)?,
                    Err(why) => left_out.push(why),
                }
            }
        }
        for (event_name, entries) in settings.hooks {
            let Some(event) = HookEvent::from_name(&event_name) else {
                left_out.push(format!(
                    "the {event_name} hooks (golato fires {})",
                    HookEvent::ALL.map(HookEvent::name).join(", ")
                ));
                continue;
            };
            for entry in entries {
                let source = line_of(&format!("\"{event_name}\""));
                // Fields golato has no counterpart for are left out of the hook, not the hook
                // for them; hooks of another type than a command are named.
                let (entry, other_types) = known_fields(entry, &mut ignored_fields);
                for kind in other_types {
                    left_out.push(format!(
                        "a {event_name} hook of type {kind:?} (golato runs command hooks)"
                    ));
                }
                if entry["hooks"].as_array().is_some_and(Vec::is_empty) {
                    continue;
                }
                let count = entry["hooks"].as_array().map_or(1, Vec::len);
                let entry: HookEntry = match serde_json::from_value(entry) {
                    Ok(entry) => entry,
                    Err(error) => {
                        left_out.push(format!(
                            "{} ({error})",
                            match count {
                                1 => format!("a {event_name} hook"),
                                n => format!("{n} {event_name} hooks of one entry"),
                            }
                        ));
                        continue;
                    }
                };
                let matcher = entry.matcher.clone();
                match entry.commands(event, &source) {
                    Ok(commands) => self.add_hooks(event, matcher.as_deref(), commands, &source)?,
                    Err(error) => left_out.push(format!("a {event_name} hook ({error})")),
                }
            }
        }
        if !ignored_fields.is_empty() {
            let fields: Vec<String> = ignored_fields
                .iter()
                .map(|(field, hooks)| match hooks {
                    1 => format!("{field} (1 hook)"),
                    n => format!("{field} ({n} hooks)"),
                })
                .collect();
            left_out.push(format!(
                "the hooks' fields {} (the hooks are kept; golato has no counterpart for these)",
                fields.join(", ")
            ));
        }
        Ok(left_out)
    }

    /// Reads the Claude Code settings file at `path` as [`CallPolicy::add_claude_settings`]
    /// does; nothing when it does not exist.
    ///
    /// # Errors
    /// As [`CallPolicy::add_claude_settings`], and when the file cannot be read.
    pub fn add_claude_file(&mut self, path: &Path, cwd: &Path) -> Result<Vec<String>, Error> {
        match super::read_regular(path)? {
            Some(text) => self.add_claude_settings(&text, path, cwd),
            None => Ok(Vec::new()),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn claude_codes_rules_read_as_golatos_and_the_rest_is_named() {
        assert_eq!(
            rule_of("Bash(npm run test:*)").unwrap(),
            "bash(npm run test:*)"
        );
        assert_eq!(rule_of("Read(./.env)").unwrap(), "read(.env)");
        assert_eq!(rule_of("Edit(/src/**)").unwrap(), "edit(src/**)");
        assert_eq!(rule_of("Read(//etc/hosts)").unwrap(), "read(/etc/hosts)");
        assert_eq!(rule_of("Read(~/.ssh/**)").unwrap(), "read(~/.ssh/**)");
        assert_eq!(rule_of("MultiEdit").unwrap(), "edit");
        assert_eq!(
            rule_of("WebFetch(domain:example.com)").unwrap(),
            "web_fetch(example.com)"
        );
        assert!(rule_of("WebSearch").is_err());
        assert!(rule_of("mcp__github__create_issue").is_err());
        assert!(rule_of("Bash(ls").is_err());
    }

    /// What Claude Code's command rule `rule` decides of `command`, read from a settings file.
    fn decides(rule: &str, command: &str) -> Option<Decision> {
        let mut policy = CallPolicy::new();
        let text = serde_json::json!({"permissions": {"deny": [rule]}}).to_string();
        let cwd = Path::new("/w");
        policy
            .add_claude_settings(&text, Path::new("s.json"), cwd)
            .unwrap();
        policy
            .rules
            .decide("bash", &serde_json::json!({ "command": command }), cwd)
            .map(|verdict| verdict.decision)
    }

    #[test]
    fn command_rules_mean_what_they_mean_to_claude_code() {
        let deny = Some(Decision::Deny);
        // Brackets, braces, question marks and commas are themselves, not a glob's.
        // `Bash([:*)` is a valid rule (it was refused as a bad glob, and the file with it).
        assert_eq!(decides("Bash([:*)", "ls"), None);
        assert_eq!(decides("Bash(echo [:*)", "echo [ x"), deny);
        assert_eq!(decides("Bash(echo [x]:*)", "echo [x]"), deny);
        assert_eq!(decides("Bash(echo [x]:*)", "echo x"), None);
        assert_eq!(decides("Bash(echo {a,b}:*)", "echo {a,b} c"), deny);
        assert_eq!(decides("Bash(echo {a,b}:*)", "echo a"), None);
        assert_eq!(decides("Bash(echo a,b:*)", "echo a,b c"), deny);
        assert_eq!(decides("Bash(echo a,b:*)", "echo a"), None);
        assert_eq!(decides("Bash(cat x?)", "cat x?"), deny);
        assert_eq!(decides("Bash(cat x?)", "cat xy"), None);
        // A star is any text; `\*` a star; a lone star after a space at the end may be nothing.
        assert_eq!(decides("Bash(git * main)", "git push origin main"), deny);
        assert_eq!(decides("Bash(ls *)", "ls"), deny);
        assert_eq!(decides("Bash(ls *)", "ls -la"), deny);
        assert_eq!(decides("Bash(ls *)", "lsblk"), None);
        assert_eq!(decides("Bash(echo a\\*b)", "echo a*b"), deny);
        assert_eq!(decides("Bash(echo a\\*b)", "echo axb"), None);
        // No star: the command exactly.
        assert_eq!(decides("Bash(npm run build)", "npm run build"), deny);
        assert_eq!(decides("Bash(npm run build)", "npm run build2"), None);
        assert_eq!(decides("Bash(npm run test:*)", "npm run test -- -x"), deny);
    }

    #[test]
    fn a_hook_with_fields_golato_has_no_counterpart_for_is_kept_and_the_fields_named_once() {
        let text = r#"{
  "permissions": {"defaultMode": "acceptEdits", "additionalDirectories": ["../docs"]},
  "hooks": {
    "PostToolUse": [{"matcher": "Edit", "description": "format", "hooks": [
      {"type": "command", "command": "cargo fmt", "async": true, "statusMessage": "formatting"},
      {"type": "command", "command": "cargo check", "shell": "bash"},
      {"type": "prompt", "prompt": "all good?"}
    ]}]
  }
}"#;
        let mut policy = CallPolicy::new();
        let left_out = policy
            .add_claude_settings(text, Path::new("s.json"), Path::new("/w"))
            .unwrap();
        assert_eq!(policy.hooks.len(), 2, "{left_out:?}");
        let fields: Vec<&String> = left_out
            .iter()
            .filter(|why| why.starts_with("the hooks' fields"))
            .collect();
        assert_eq!(fields.len(), 1, "{left_out:?}");
        for field in [
            "async (1 hook)",
            "description (1 hook)",
            "shell (1 hook)",
            "statusMessage (1 hook)",
        ] {
            assert!(fields[0].contains(field), "{left_out:?}");
        }
        assert!(left_out
            .iter()
            .any(|why| why.contains("of type \"prompt\"")));
        assert!(left_out
            .iter()
            .any(|why| why.contains("defaultMode \"acceptEdits\"")));
        assert!(left_out
            .iter()
            .any(|why| why.contains("additionalDirectories")));
    }

    #[test]
    fn a_file_starting_with_a_byte_order_mark_is_read() {
        let mut policy = CallPolicy::new();
        let left_out = policy
            .add_claude_settings(
                "\u{feff}{\"permissions\": {\"allow\": [\"Bash(ls:*)\"]}}",
                Path::new("s.json"),
                Path::new("/w"),
            )
            .unwrap();
        assert!(left_out.is_empty());
        assert_eq!(policy.rules.iter().count(), 1);
    }

    #[test]
    fn a_whole_settings_file_gives_rules_and_hooks_and_names_what_it_left_out() {
        let text = r#"{
  "model": "opus",
  "permissions": {
    "allow": ["Bash(cargo test:*)", "WebSearch"],
    "deny": ["Read(./.env)"]
  },
  "hooks": {
    "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "check.sh", "timeout": 5}]}],
    "SubagentStop": [{"hooks": [{"type": "command", "command": "notify"}]}],
    "Stop": [{"hooks": [{"type": "prompt", "prompt": "are you done?"}]}]
  }
}"#;
        let mut policy = CallPolicy::new();
        let left_out = policy
            .add_claude_settings(text, Path::new("s.json"), Path::new("/w"))
            .unwrap();
        assert_eq!(policy.rules.iter().count(), 2);
        assert_eq!(policy.hooks.len(), 1);
        assert_eq!(left_out.len(), 3, "{left_out:?}");
        assert!(left_out[0].starts_with("WebSearch"), "{left_out:?}");
        assert!(left_out.iter().any(|why| why.contains("SubagentStop")));
        assert!(left_out.iter().any(|why| why.contains("a Stop hook")));
        // Where a rule is written: its line.
        let deny = policy
            .rules
            .iter()
            .find(|rule| rule.decision == Decision::Deny)
            .unwrap();
        assert!(format!("{:?}", deny).contains("line: 5"), "{deny:?}");
        assert!(policy
            .add_claude_settings("[1]", Path::new("s.json"), Path::new("/w"))
            .is_err());
    }
}
