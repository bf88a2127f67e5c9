//! Which interrupted calls of a journaled run run again: each tool's [`Replay`] class, and the
//! agent's rules that make single calls of a `once` tool `safe`.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::policy::{Decision, Error, Rules, Source};
use crate::tool::Replay;

/// Calls of `once` tools that may run again anyway, by rule: `bash(cargo test *)`,
/// `mcp_search_*`, `edit(docs/**)`. The rules are golato's allow rules in form
/// ([`Rules`]): a compound command is covered only when each of its commands is. Set it in
/// [`agent::Config::safe_to_replay`](crate::agent::Config::safe_to_replay); empty by default.
///
/// ```
/// use golato::journal::SafeToReplay;
/// use golato::policy::Source;
/// use golato::tool::Replay;
/// use serde_json::json;
///
/// let cwd = std::path::Path::new("/work");
/// let mut safe = SafeToReplay::new(cwd);
/// safe.add("bash(cargo test *)", Source::flag("[durable] safe"))?;
/// let test = json!({"command": "cargo test --workspace"});
/// assert_eq!(safe.class("bash", Replay::Once, &test), Replay::Safe);
/// // Each part of a compound command must be covered.
/// let more = json!({"command": "cargo test && git push"});
/// assert_eq!(safe.class("bash", Replay::Once, &more), Replay::Once);
/// # Ok::<(), golato::policy::Error>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct SafeToReplay {
    rules: Rules,
    cwd: PathBuf,
}

impl SafeToReplay {
    /// No rules yet; relative path patterns are taken from `cwd`, the workspace.
    pub fn new(cwd: impl Into<PathBuf>) -> SafeToReplay {
        SafeToReplay {
            rules: Rules::new(),
            cwd: cwd.into(),
        }
    }

    /// These allow rules (a [`CallPolicy::replay_safe`](crate::policy::CallPolicy::replay_safe),
    /// as `[durable] safe` in a policy file gives them), whose relative path patterns were
    /// taken from `cwd`.
    pub fn with_rules(rules: Rules, cwd: impl Into<PathBuf>) -> SafeToReplay {
        SafeToReplay {
            rules,
            cwd: cwd.into(),
        }
    }

    /// Adds the rule `text` (`tool` or `tool(pattern)`), written at `source`.
    ///
    /// # Errors
    /// The rule is malformed or its pattern is not a valid glob; the error names `source`.
    pub fn add(&mut self, text: &str, source: Source) -> Result<(), Error> {
        self.rules.add(Decision::Allow, text, source, &self.cwd)
    }

    /// The rules, as written.
    pub fn rules(&self) -> &Rules {
        &self.rules
    }

    /// Whether there are no rules.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The class of a call of `tool` (whose own class is `own`) with `arguments`: `Safe` when
    /// the tool says so or a rule covers the call, else `Once`.
    pub fn class(&self, tool: &str, own: Replay, arguments: &Value) -> Replay {
        match own {
            Replay::Safe => Replay::Safe,
            Replay::Once if self.covers(tool, arguments, &self.cwd) => Replay::Safe,
            Replay::Once => Replay::Once,
        }
    }

    fn covers(&self, tool: &str, arguments: &Value, cwd: &Path) -> bool {
        !self.rules.is_empty()
            && self
                .rules
                .decide(tool, arguments, cwd)
                .is_some_and(|verdict| verdict.decision == Decision::Allow)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use serde_json::json;

    #[test]
    fn a_rule_naming_a_script_run_by_its_shell_covers_its_calls() {
        let mut safe = SafeToReplay::new("/work");
        safe.add("bash(bash x.sh *)", Source::flag("test")).unwrap();
        safe.add("bash(./y.sh *)", Source::flag("test")).unwrap();
        for command in ["bash x.sh a", "bash x.sh a b", "./y.sh a"] {
            assert_eq!(
                safe.class("bash", Replay::Once, &json!({ "command": command })),
                Replay::Safe,
                "{command}"
            );
        }
        for command in ["bash x.sh", "bash other.sh a", "bash x.sh a; rm -rf /"] {
            assert_eq!(
                safe.class("bash", Replay::Once, &json!({ "command": command })),
                Replay::Once,
                "{command}"
            );
        }
    }
}
