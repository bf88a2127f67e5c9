//! Allow, ask and deny rules: which tool calls run without a question, which wait for a yes,
//! and which never run.

use std::fmt;
use std::path::{Path, PathBuf};

use globset::{Candidate, Glob, GlobBuilder, GlobMatcher};
use serde_json::Value;

use super::shell;
use super::{Error, Source};

/// What a rule says of the calls it matches. Ordered: a deny beats an ask beats an allow,
/// whichever layer each rule comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// The call runs without a question.
    Allow,
    /// The call waits for a person's yes.
    Ask,
    /// The call never runs; its result names the rule.
    Deny,
}

impl Decision {
    /// `allow`, `ask` or `deny`, as the files name it.
    pub fn name(self) -> &'static str {
        match self {
            Decision::Allow => "allow",
            Decision::Ask => "ask",
            Decision::Deny => "deny",
        }
    }
}

impl fmt::Display for Decision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One rule as written, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// What it decides.
    pub decision: Decision,
    /// The rule as written: `bash(git push*)`, `edit(**/.env)`, `github_create_issue`.
    pub text: String,
    /// Where it was written.
    pub source: Source,
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} ({})", self.decision, self.text, self.source)
    }
}

/// A rule's decision on one call, and the rule that made it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verdict<'a> {
    /// What the rules decide.
    pub decision: Decision,
    /// The rule that decided (for an allow of several commands, the first command's).
    pub rule: &'a Rule,
}

/// What a rule's pattern is matched against.
#[derive(Debug, Clone)]
enum Pattern {
    /// Every call of the tool.
    Any,
    /// bash: each simple command of the line, by glob (`*` crosses spaces and slashes).
    Command(GlobMatcher),
    /// read, edit, write: the path the call names, resolved, by glob (`*` stays within a
    /// folder, `**` crosses folders).
    Path(GlobMatcher),
    /// web_fetch: the URL's host (and port), by the network policy's patterns
    /// (`docs.rs`, `*.github.com`, `host:port`).
    Domain(golato_sandbox::network::NetworkPolicy),
}

#[derive(Debug, Clone)]
struct Compiled {
    rule: Rule,
    /// The tools it applies to, by name (a glob for MCP tools: `github_*`).
    tools: GlobMatcher,
    pattern: Pattern,
}

/// Rules from every layer, judged together. Build with [`Rules::add`]; ask with
/// [`Rules::decide`].
///
/// ```
/// use golato::policy::{Decision, Rules, Source};
/// use serde_json::json;
///
/// let cwd = std::path::Path::new("/work");
/// let mut rules = Rules::new();
/// rules.add(Decision::Allow, "bash(git status*)", Source::flag("--allow"), cwd)?;
/// rules.add(Decision::Deny, "bash(rm -rf*)", Source::flag("--deny"), cwd)?;
/// let verdict = rules.decide("bash", &json!({"command": "git status"}), cwd);
/// assert_eq!(verdict.map(|v| v.decision), Some(Decision::Allow));
/// // Each part of a compound command is judged on its own.
/// let verdict = rules.decide("bash", &json!({"command": "git status && rm -rf ~"}), cwd);
/// assert_eq!(verdict.map(|v| v.decision), Some(Decision::Deny));
/// // Nothing decides `ls`: the caller's default applies.
/// assert!(rules.decide("bash", &json!({"command": "ls"}), cwd).is_none());
/// # Ok::<(), golato::policy::Error>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct Rules {
    rules: Vec<Compiled>,
}

/// What a decision is about: a call's arguments, or a path alone.
#[derive(Clone, Copy)]
enum Call<'a> {
    Arguments(&'a Value),
    Path(&'a Path),
}

/// Tool names other agents use for golato's built-ins, so rules written for them read the same.
fn built_in(name: &str) -> Option<&'static str> {
    match name {
        "bash" | "Bash" => Some("bash"),
        "read" | "Read" => Some("read"),
        "edit" | "Edit" | "MultiEdit" => Some("edit"),
        "write" | "Write" => Some("write"),
        "web_fetch" | "WebFetch" => Some("web_fetch"),
        _ => None,
    }
}

/// `folder` as it really is: absolute, links resolved (folded lexically where it does not
/// exist).
fn real_folder(folder: &Path) -> PathBuf {
    let absolute = std::path::absolute(folder).unwrap_or_else(|_| folder.to_owned());
    golato_sandbox::resolve(Path::new("/"), &absolute)
}

/// The names a path is judged by: where it really leads (links resolved), and, when its last
/// component is a link, the link's own place too, so a rule about either holds (a deny or an
/// ask on any part wins; an allow needs both).
fn path_parts(cwd: &Path, path: &Path) -> Vec<String> {
    // An absolute path needs no working directory: resolving it (file system calls) for each
    // entry of a search's walk was wasted.
    let cwd = if path.is_absolute() {
        PathBuf::from("/")
    } else {
        real_folder(cwd)
    };
    let resolved = golato_sandbox::resolve(&cwd, path);
    let mut parts = vec![resolved.to_string_lossy().into_owned()];
    let expanded = match (path.strip_prefix("~"), std::env::var_os("HOME")) {
        (Ok(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => path.to_owned(),
    };
    let lexical = golato_sandbox::fold(&cwd.join(expanded));
    if let (Some(parent), Some(name)) = (lexical.parent(), lexical.file_name()) {
        let own = golato_sandbox::resolve(&cwd, parent).join(name);
        if own != resolved {
            parts.push(own.to_string_lossy().into_owned());
        }
    }
    parts
}

impl Rules {
    /// No rules: nothing is decided.
    pub fn new() -> Rules {
        Rules::default()
    }

    /// Adds the rule `text` (`tool` or `tool(pattern)`) written at `source`; relative path
    /// patterns are taken from `cwd`, the workspace.
    ///
    /// # Errors
    /// The rule is malformed, its pattern is not a valid glob, or its tool takes no pattern
    /// (only bash, read, edit and write do); the error names `source`.
    pub fn add(
        &mut self,
        decision: Decision,
        text: &str,
        source: Source,
        cwd: &Path,
    ) -> Result<(), Error> {
        let invalid = |why: String| Error::Invalid {
            at: source.clone(),
            message: format!("the {decision} rule {text:?} {why}"),
        };
        let text = text.trim();
        let (tool, pattern) = match text.split_once('(') {
            None => (text, None),
            Some((tool, rest)) => {
                let Some(pattern) = rest.strip_suffix(')') else {
                    return Err(invalid(
                        "has no closing parenthesis: write tool(pattern), such as bash(git push*)"
                            .into(),
                    ));
                };
                if pattern.trim().is_empty() {
                    return Err(invalid(
                        "has an empty pattern: leave out the parentheses to match every call"
                            .into(),
                    ));
                }
                (tool.trim(), Some(pattern))
            }
        };
        if tool.is_empty()
            || !tool
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '*'))
        {
            return Err(invalid(
                "does not name a tool: write bash, read, edit, write or an MCP tool's name (github_*), then an optional (pattern)".into(),
            ));
        }
        let glob = |pattern: &str, separator: bool| {
            GlobBuilder::new(pattern)
                .literal_separator(separator)
                .build()
                .map(|glob| glob.compile_matcher())
                .map_err(|error| invalid(format!("has a pattern that is not a glob: {error}")))
        };
        let built_in = built_in(tool);
        let tools = match built_in {
            // `edit` rules hold for every tool that changes a file, as other agents' do.
            Some("edit") => Glob::new("{edit,write}"),
            Some(name) => Glob::new(name),
            None => Glob::new(tool),
        }
        .map_err(|error| invalid(format!("names tools by a bad glob: {error}")))?
        .compile_matcher();
        let pattern = match (built_in, pattern) {
            (_, None) => Pattern::Any,
            (Some("bash"), Some(pattern)) => {
                // `git push:*`, as Claude Code writes a prefix: the command, or it and more words.
                let pattern = match pattern.strip_suffix(":*") {
                    Some(prefix) => format!("{{{prefix},{prefix} *}}"),
                    None => pattern.to_owned(),
                };
                Pattern::Command(glob(&pattern, false)?)
            }
            (Some("web_fetch"), Some(pattern)) => {
                // Claude Code writes `WebFetch(domain:example.com)`.
                let domain = pattern.trim().strip_prefix("domain:").unwrap_or(pattern.trim());
                let policy = golato_sandbox::network::NetworkPolicy::new(
                    &[domain],
                    &[],
                    golato_sandbox::network::Methods::All,
                )
                .map_err(|error| invalid(format!("has a pattern that is not a domain: {error}")))?;
                Pattern::Domain(policy)
            }
            (Some(_), Some(pattern)) => {
                // Anchored at the folder as it really is (however it was named: `.`, a relative
                // path, a link), as every call's path is resolved before it is matched.
                // The folder is taken literally (a workspace named `proj[1]` has no character
                // class in it); only the pattern is a glob.
                let (anchor, rest) = match pattern.strip_prefix("~/") {
                    Some(rest) => (
                        std::env::var_os("HOME")
                            .map(|home| real_folder(Path::new(&home)))
                            .ok_or_else(|| invalid("starts with ~/ and HOME is not set".into()))?,
                        rest,
                    ),
                    None if Path::new(pattern).is_absolute() => (PathBuf::from("/"), pattern.trim_start_matches('/')),
                    None => (real_folder(cwd), pattern),
                };
                // `..` in the pattern climbs out of the folder: the literal part is the
                // folder's ancestor it ends in.
                let folded = golato_sandbox::fold(&anchor.join(rest));
                let literal = anchor
                    .ancestors()
                    .find(|ancestor| folded.starts_with(ancestor))
                    .unwrap_or(Path::new("/"));
                let rest = folded.strip_prefix(literal).unwrap_or(&folded);
                let literal = globset::escape(literal.to_string_lossy().trim_end_matches('/'));
                Pattern::Path(glob(&format!("{literal}/{}", rest.to_string_lossy()), true)?)
            }
            (None, Some(_)) => {
                return Err(invalid(format!(
                    "gives a pattern to {tool}: only bash (a command), read, edit, write (a path) and web_fetch (a domain) take one; write {tool} alone"
                )))
            }
        };
        self.rules.push(Compiled {
            rule: Rule {
                decision,
                text: text.to_owned(),
                source,
            },
            tools,
            pattern,
        });
        Ok(())
    }

    /// Adds a bash rule shown as `text` whose commands are matched by `glob` as it is (built
    /// by the caller from another syntax: Claude Code's, whose `[`, `{` and `?` are literal).
    pub(crate) fn add_command_glob(
        &mut self,
        decision: Decision,
        text: &str,
        glob: &str,
        source: Source,
    ) -> Result<(), Error> {
        let invalid = |error: globset::Error| Error::Invalid {
            at: source.clone(),
            message: format!("the {decision} rule {text:?} could not be read ({error})"),
        };
        let matcher = GlobBuilder::new(glob)
            .literal_separator(false)
            .build()
            .map_err(invalid)?
            .compile_matcher();
        let tools = Glob::new("bash").map_err(invalid)?.compile_matcher();
        self.rules.push(Compiled {
            rule: Rule {
                decision,
                text: text.to_owned(),
                source,
            },
            tools,
            pattern: Pattern::Command(matcher),
        });
        Ok(())
    }

    /// Every rule, in the order added.
    pub fn iter(&self) -> impl Iterator<Item = &Rule> {
        self.rules.iter().map(|compiled| &compiled.rule)
    }

    /// Keeps the rules `keep` says yes to.
    pub fn retain(&mut self, mut keep: impl FnMut(&Rule) -> bool) {
        self.rules.retain(|compiled| keep(&compiled.rule));
    }

    /// Adds `other`'s rules after these.
    pub fn extend(&mut self, other: Rules) {
        self.rules.extend(other.rules);
    }

    /// Whether there are no rules.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Checks that every rule names a tool of `known` (the agent's tools).
    ///
    /// # Errors
    /// The first rule whose tool matches none of them, named with its source.
    pub fn check_tools<'a>(&self, known: impl IntoIterator<Item = &'a str>) -> Result<(), Error> {
        let known: Vec<&str> = known.into_iter().collect();
        for compiled in &self.rules {
            if !known.iter().any(|name| compiled.tools.is_match(name)) {
                return Err(Error::Invalid {
                    at: compiled.rule.source.clone(),
                    message: format!(
                        "the {} rule {:?} matches no tool this agent has ({}); fix the tool's name or remove the rule",
                        compiled.rule.decision,
                        compiled.rule.text,
                        known.join(", ")
                    ),
                });
            }
        }
        Ok(())
    }

    /// What the rules decide about a call of `tool` with `arguments` in `cwd`: `None` when no
    /// rule does (the caller's default applies).
    ///
    /// A deny or an ask wins if a rule matches any part of the call (any command of a bash
    /// line, by any name it can be seen by: `/bin/rm` as `rm`, the command after a wrapper,
    /// the lines of `bash -c` and `eval`). An allow needs every part allowed, and a bash line
    /// plain enough to be sure of its commands: words, quotes without expansions, `;`, `&&`,
    /// `||`, `|`, redirections of descriptors or to `/dev/null`. A rule for every call of the
    /// tool (`allow bash`) allows any line.
    pub fn decide(&self, tool: &str, arguments: &Value, cwd: &Path) -> Option<Verdict<'_>> {
        self.decide_parts(tool, cwd, Call::Arguments(arguments))
    }

    /// What the rules decide about `tool` (`read`, `edit` or `write`) on `path`, as
    /// [`Rules::decide`] with `{"path": path}` would, without making the arguments: a search
    /// asks it for every entry it walks.
    ///
    /// ```
    /// use golato::policy::{Decision, Rules, Source};
    /// use std::path::Path;
    ///
    /// let mut rules = Rules::new();
    /// rules.add(Decision::Deny, "read(/srv/secret/**)", Source::flag("--deny"), Path::new("/"))?;
    /// let verdict = rules.decide_path("read", Path::new("/srv/secret/key"), Path::new("/"));
    /// assert_eq!(verdict.map(|v| v.decision), Some(Decision::Deny));
    /// # Ok::<(), golato::policy::Error>(())
    /// ```
    pub fn decide_path(&self, tool: &str, path: &Path, cwd: &Path) -> Option<Verdict<'_>> {
        self.decide_parts(tool, cwd, Call::Path(path))
    }

    fn decide_parts(&self, tool: &str, cwd: &Path, call: Call<'_>) -> Option<Verdict<'_>> {
        let for_tool: Vec<&Compiled> = self
            .rules
            .iter()
            .filter(|compiled| compiled.tools.is_match(tool))
            .collect();
        if for_tool.is_empty() {
            return None;
        }
        // The parts of the call, each judged on its own by the names it is seen by.
        let mut plain = true;
        // Per part: whether only a deny or ask rule sees it (an allow need not cover it).
        let mut seen_only: Vec<bool> = Vec::new();
        let arguments = match call {
            Call::Arguments(arguments) => arguments,
            Call::Path(_) => &Value::Null,
        };
        let parts: Vec<Vec<shell::Form>> = match (tool, call) {
            (_, Call::Path(path)) => path_parts(cwd, path)
                .into_iter()
                .map(|text| {
                    vec![shell::Form {
                        text,
                        allowable: true,
                    }]
                })
                .collect(),
            ("bash", _) => {
                let line = arguments["command"].as_str().unwrap_or_default();
                let found = shell::commands(line);
                plain = found.plain;
                seen_only = found
                    .commands
                    .iter()
                    .map(|command| command.seen_only)
                    .collect();
                found
                    .commands
                    .into_iter()
                    .map(|command| command.forms)
                    .collect()
            }
            ("web_fetch", _) => {
                // The host a URL names, with its port; none when it names none (the tool
                // refuses such a URL itself).
                let host = arguments["url"]
                    .as_str()
                    .and_then(|url| reqwest::Url::parse(url).ok())
                    .and_then(|url| {
                        let port = url.port_or_known_default()?;
                        let host = url
                            .host_str()?
                            .trim_start_matches('[')
                            .trim_end_matches(']')
                            .to_owned();
                        Some(format!("{host} {port}"))
                    })
                    .unwrap_or_default();
                vec![vec![shell::Form {
                    text: host,
                    allowable: true,
                }]]
            }
            ("read" | "edit" | "write", _) => {
                let path = arguments["path"].as_str().unwrap_or_default();
                path_parts(cwd, Path::new(path))
                    .into_iter()
                    .map(|text| {
                        vec![shell::Form {
                            text,
                            allowable: true,
                        }]
                    })
                    .collect()
            }
            _ => vec![vec![shell::Form {
                text: String::new(),
                allowable: true,
            }]],
        };
        // Each form made a glob candidate once, not once per rule. An empty command line
        // has one empty form: only a rule for every call of the tool speaks.
        let candidates: Vec<Vec<(Candidate<'_>, bool, &str)>> = if parts.is_empty() {
            vec![vec![(Candidate::new(""), false, "")]]
        } else {
            parts
                .iter()
                .map(|forms| {
                    forms
                        .iter()
                        .map(|form| {
                            (
                                Candidate::new(&form.text),
                                form.allowable,
                                form.text.as_str(),
                            )
                        })
                        .collect()
                })
                .collect()
        };
        let matching = |compiled: &Compiled, (candidate, _, text): &(Candidate<'_>, bool, &str)| {
            match &compiled.pattern {
                Pattern::Any => true,
                Pattern::Command(glob) | Pattern::Path(glob) => glob.is_match_candidate(candidate),
                Pattern::Domain(policy) => text
                    .rsplit_once(' ')
                    .and_then(|(host, port)| Some((host, port.parse::<u16>().ok()?)))
                    .is_some_and(|(host, port)| policy.judge_host(host, port).is_ok()),
            }
        };
        // A deny or ask on any form of any part.
        if let Some(rule) = for_tool
            .iter()
            .filter(|compiled| compiled.rule.decision > Decision::Allow)
            .filter(|compiled| {
                candidates
                    .iter()
                    .flatten()
                    .any(|candidate| matching(compiled, candidate))
            })
            .max_by_key(|compiled| compiled.rule.decision)
        {
            return Some(Verdict {
                decision: rule.rule.decision,
                rule: &rule.rule,
            });
        }
        let allows: Vec<&Compiled> = for_tool
            .iter()
            .copied()
            .filter(|compiled| compiled.rule.decision == Decision::Allow)
            .collect();
        fn verdict(allowing: &Compiled) -> Verdict<'_> {
            Verdict {
                decision: Decision::Allow,
                rule: &allowing.rule,
            }
        }
        if let Some(every_call) = allows
            .iter()
            .find(|compiled| matches!(compiled.pattern, Pattern::Any))
        {
            return Some(verdict(every_call));
        }
        if !plain || parts.is_empty() {
            return None;
        }
        let mut first = None;
        for (index, part) in candidates.iter().enumerate() {
            if seen_only.get(index).copied().unwrap_or(false) {
                continue;
            }
            let allowed = allows.iter().find(|compiled| {
                part.iter()
                    .any(|candidate| candidate.1 && matching(compiled, candidate))
            })?;
            first.get_or_insert(*allowed);
        }
        first.map(verdict)
    }
}

#[cfg(test)]
mod tests;
