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
}

/// Claude Code's tools that are golato's, by the name golato gives them.
fn golato_tool(claude: &str) -> Option<&'static str> {
    match claude {
        "Bash" | "bash" => Some("bash"),
        "Read" | "read" => Some("read"),
        "Edit" | "edit" | "MultiEdit" => Some("edit"),
        "Write" | "write" => Some("write"),
        _ => None,
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
    ///     r#"{"permissions": {"allow": ["Bash(npm test:*)", "WebFetch"]},
    ///         "hooks": {"PostToolUse": [{"matcher": "Edit", "hooks": [{"type": "command", "command": "cargo fmt"}]}]}}"#,
    ///     Path::new(".claude/settings.json"),
    ///     Path::new("/srv/project"),
    /// )?;
    /// assert_eq!(policy.rules.iter().count(), 1);
    /// assert_eq!(policy.hooks.len(), 1);
    /// assert_eq!(left_out, ["WebFetch (golato has no WebFetch tool)"]);
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
        let settings: Settings = serde_json::from_str(text).map_err(|error| Error::Invalid {
            at: Source::file(path, error.line()),
            message: format!("{error}; it must be Claude Code's settings JSON"),
        })?;
        let mut left_out = Vec::new();
        let Permissions { allow, ask, deny } = settings.permissions;
        for (decision, list) in [
            (Decision::Allow, allow),
            (Decision::Ask, ask),
            (Decision::Deny, deny),
        ] {
            for text in list {
                match rule_of(&text) {
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
                let entry: HookEntry = match serde_json::from_value(entry) {
                    Ok(entry) => entry,
                    Err(error) => {
                        left_out.push(format!("a {event_name} hook ({error})"));
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
        assert!(rule_of("WebFetch(domain:example.com)").is_err());
        assert!(rule_of("mcp__github__create_issue").is_err());
        assert!(rule_of("Bash(ls").is_err());
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
