//! Approvals remembered narrowly: "yes, and don't ask again for `cargo test …`" becomes an
//! allow rule (`bash(cargo test:*)`, `bash(python3 -m pytest:*)`, or `edit(src/lib.rs)` for one
//! file), shown whole before it is taken, widened only when the person asks, kept for the
//! session and written to the project's or the user's configuration.

use std::path::Path;

/// Programs whose first word says what they do (`cargo test`, `git status`): a rule for them
/// names it. Any other program's words are its data (`echo hello`): its rule is the program.
const TAKE_SUBCOMMANDS: &[&str] = &[
    "apt",
    "bazel",
    "brew",
    "bun",
    "cargo",
    "deno",
    "docker",
    "dotnet",
    "gh",
    "git",
    "go",
    "gradle",
    "just",
    "kubectl",
    "make",
    "mvn",
    "nix",
    "npm",
    "npx",
    "pip",
    "pnpm",
    "podman",
    "poetry",
    "rustup",
    "systemctl",
    "terraform",
    "uv",
    "yarn",
];

/// Interpreters whose next word says what runs: a module (`python3 -m pytest`) or a script
/// file (`node build.js`). Code given inline (`-c`, `-e`) is anything: no rule is offered.
const INTERPRETERS: &[&str] = &[
    "bash", "deno", "node", "perl", "php", "pypy", "pypy3", "python", "python2", "python3", "ruby",
    "sh", "zsh",
];

/// Subcommands that run another program named by the next word (`uv run pytest`): a rule
/// names that program too, else `uv run:*` would allow any.
const RUNNERS: &[&str] = &["dlx", "exec", "run", "x"];

/// The rules a "yes, and don't ask again" may remember for one call, narrowest first: the
/// person sees the first and may widen it deliberately (`w`), one step at a time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Offer {
    pub(crate) steps: Vec<Scoped>,
    /// The step offered now (an index in `steps`).
    pub(crate) at: usize,
}

/// One rule, as written where it would hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Scoped {
    /// For the project's `.golato/config.toml`: paths as the project names them.
    pub(crate) project: String,
    /// For the user's configuration, which holds in every project: an edit's absolute path.
    /// `None` where the rule would mean another file in each project (`./run.sh`,
    /// `python3 tests.py`): such a rule is offered for the project only.
    pub(crate) user: Option<String>,
}

impl Offer {
    /// The rule offered now.
    pub(crate) fn chosen(&self) -> &Scoped {
        // `at` only ever moves within `steps`, which is never empty.
        &self.steps[self.at.min(self.steps.len() - 1)]
    }

    /// Whether a wider rule can be offered.
    pub(crate) fn can_widen(&self) -> bool {
        self.at + 1 < self.steps.len()
    }

    /// The next wider rule (after the widest, the narrowest again).
    pub(crate) fn widen(&mut self) {
        self.at = (self.at + 1) % self.steps.len();
    }

    fn of(steps: Vec<Scoped>) -> Option<Offer> {
        let mut unique: Vec<Scoped> = Vec::new();
        for step in steps {
            if !unique.contains(&step) {
                unique.push(step);
            }
        }
        (!unique.is_empty()).then_some(Offer {
            steps: unique,
            at: 0,
        })
    }
}

/// The rules that allow this call again, narrowest first. For a command line of one plain
/// command: its program with what it runs (`cargo test`, `python3 -m pytest`, `node build.js`,
/// `uv run pytest`), then the program alone. For an edit or a write: that one file (by its
/// absolute path in the user's configuration, which every project reads), then its folder.
/// `None` where no rule would be narrow (a line of several commands, expansions,
/// redirections, inline code: an allow rule could not hold for it anyway).
pub(crate) fn offer(tool: &str, arguments: &serde_json::Value, cwd: &Path) -> Option<Offer> {
    match tool {
        "bash" => command_steps(arguments["command"].as_str()?.trim()),
        "edit" | "write" => path_steps(arguments["path"].as_str()?, cwd),
        "web_fetch" => domain_steps(&web_host(arguments)?),
        _ => None,
    }
}

/// `web_fetch(docs.rs)`, then the domain's parent (`web_fetch(*.github.com)` for
/// `api.github.com`): a domain is the same in every project.
fn domain_steps(host: &str) -> Option<Offer> {
    let everywhere = |rule: String| Scoped {
        project: rule.clone(),
        user: Some(rule),
    };
    let mut steps = vec![everywhere(format!("web_fetch({host})"))];
    let labels: Vec<&str> = host.split('.').collect();
    if labels.len() >= 3 && host.parse::<std::net::IpAddr>().is_err() {
        steps.push(everywhere(format!(
            "web_fetch(*.{})",
            labels[1..].join(".")
        )));
    }
    Some(Offer { steps, at: 0 })
}

fn command_steps(command: &str) -> Option<Offer> {
    let plain = !command.is_empty()
        && !command.contains(|c: char| {
            matches!(
                c,
                ';' | '&'
                    | '|'
                    | '$'
                    | '`'
                    | '<'
                    | '>'
                    | '('
                    | ')'
                    | '{'
                    | '}'
                    | '\n'
                    | '\\'
                    | '"'
                    | '\''
                    | '*'
                    | '?'
                    | '['
                    | '~'
            )
        });
    if !plain {
        return None;
    }
    let words: Vec<&str> = command.split_whitespace().collect();
    let program = *words.first()?;
    // `X=1 cargo …` sets a variable first: not a rule's business.
    if program.contains('=') {
        return None;
    }
    let base = program.rsplit('/').next().unwrap_or(program);
    // A program named by a relative path is this project's file: another project's file of
    // that name is another program.
    let here = |word: &str| word.contains('/') && !word.starts_with('/');
    let everywhere = !here(program);
    let named = |word: &&str| {
        !word.starts_with('-')
            && word.chars().all(|c| {
                c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/' | ':' | '@')
            })
    };
    let scoped = |words: &[&str], everywhere: bool| {
        let rule = format!("bash({}:*)", words.join(" "));
        Scoped {
            user: everywhere.then(|| rule.clone()),
            project: rule,
        }
    };
    let mut steps = Vec::new();
    let version = base.trim_start_matches(|c: char| c.is_ascii_alphabetic());
    let interpreter = INTERPRETERS.contains(&base)
        || (base.starts_with("python") && version.chars().all(|c| c.is_ascii_digit() || c == '.'));
    if interpreter {
        match words.get(1).copied() {
            Some("-c" | "-e" | "--eval" | "-p" | "--print") => return None,
            Some("-m") => {
                let module = words.get(2).copied().filter(named)?;
                steps.push(scoped(&[program, "-m", module], everywhere));
            }
            Some(script) if named(&script) => {
                // A script is a file: named relatively, it is this project's.
                let script_everywhere = everywhere && script.starts_with('/');
                steps.push(scoped(&[program, script], script_everywhere));
            }
            // Flags first (`python3 -u x.py`), or nothing: the program is what is known.
            _ => {}
        }
    } else if TAKE_SUBCOMMANDS.contains(&base) {
        let what = words
            .get(1)
            .copied()
            .filter(|word| named(word) && !word.contains(['/', '.', ':', '@']));
        if let Some(what) = what {
            if RUNNERS.contains(&what) {
                if let Some(ran) = words.get(2).copied().filter(named) {
                    steps.push(scoped(&[program, what, ran], everywhere && !here(ran)));
                }
            }
            steps.push(scoped(&[program, what], everywhere));
        }
    }
    steps.push(scoped(&[program], everywhere));
    Offer::of(steps)
}

fn path_steps(path: &str, cwd: &Path) -> Option<Offer> {
    let full = golato::sandbox::resolve(cwd, Path::new(path));
    // A glob's own characters in a file name would widen the rule.
    let safe =
        |text: &str| !text.is_empty() && !text.contains(['*', '?', '[', ']', '{', '}', '(', ')']);
    let absolute = full.to_str().filter(|text| safe(text))?.to_owned();
    let inside = full
        .strip_prefix(cwd)
        .ok()
        .and_then(Path::to_str)
        .filter(|text| safe(text))
        .map(str::to_owned);
    let folder = |text: &str| {
        Path::new(text)
            .parent()
            .and_then(Path::to_str)
            .filter(|parent| safe(parent) && *parent != "/")
            .map(|parent| format!("edit({parent}/**)"))
    };
    // `edit(…)` holds for write too.
    let mut steps = vec![Scoped {
        project: format!("edit({})", inside.as_deref().unwrap_or(&absolute)),
        user: Some(format!("edit({absolute})")),
    }];
    let project_folder = match inside.as_deref() {
        Some(inside) => folder(inside).or_else(|| Some("edit(**)".to_owned())),
        None => folder(&absolute),
    };
    if let (Some(project), Some(user)) = (project_folder, folder(&absolute)) {
        steps.push(Scoped {
            project,
            user: Some(user),
        });
    }
    Offer::of(steps)
}

/// Adds `rule` to the `allow` list of `[rules]` in the configuration file `path` (made when
/// missing), keeping the file's comments and layout.
/// A file that is a symbolic link is not written: replacing it would break a user's
/// dotfiles link, and following it would write wherever a repository's link points.
pub(crate) fn write_rule(path: &Path, rule: &str) -> Result<(), String> {
    if std::fs::symlink_metadata(path).is_ok_and(|metadata| metadata.file_type().is_symlink()) {
        return Err(format!(
            "{} is a symbolic link; golato writes only a regular file: add {rule:?} to `allow` under [rules] by hand",
            path.display()
        ));
    }
    let text = match crate::bounded::read_text(path, crate::bounded::CONFIG_LIMIT) {
        Ok(text) => text,
        Err(crate::bounded::Unreadable::Missing) => String::new(),
        Err(error) => return Err(format!("cannot read {}: {error}", path.display())),
    };
    let mut document: toml_edit::DocumentMut = text
        .parse()
        .map_err(|error| format!("{} is not valid TOML: {error}", path.display()))?;
    let rules = document
        .entry("rules")
        .or_insert_with(|| toml_edit::Item::Table(toml_edit::Table::new()))
        .as_table_like_mut()
        .ok_or_else(|| format!("`rules` in {} is not a table", path.display()))?;
    let allow = rules
        .entry("allow")
        .or_insert(toml_edit::value(toml_edit::Array::new()))
        .as_array_mut()
        .ok_or_else(|| format!("`rules.allow` in {} is not a list", path.display()))?;
    if !allow.iter().any(|written| written.as_str() == Some(rule)) {
        allow.push(rule);
    }
    if let Some(folder) = path.parent() {
        std::fs::create_dir_all(folder)
            .map_err(|error| format!("cannot make {}: {error}", folder.display()))?;
    }
    // Written whole to a new file of a random name beside it (made exclusively: a link planted
    // at a known name is never followed), then renamed: a crash leaves the old file or the new.
    let folder = path.parent().unwrap_or(Path::new("."));
    let mut temporary = tempfile::Builder::new()
        .prefix(".config.toml.golato-")
        .tempfile_in(folder)
        .map_err(|error| format!("cannot write beside {}: {error}", path.display()))?;
    std::io::Write::write_all(&mut temporary, document.to_string().as_bytes())
        .and_then(|()| temporary.as_file().sync_all())
        .map_err(|error| format!("cannot write {}: {error}", path.display()))?;
    temporary
        .persist(path)
        .map(drop)
        .map_err(|error| format!("cannot write {}: {}", path.display(), error.error))
}

/// The host of a web_fetch call's URL, as its question and its "always" name it.
pub(crate) fn web_host(arguments: &serde_json::Value) -> Option<String> {
    let url = reqwest::Url::parse(arguments["url"].as_str()?).ok()?;
    let host = url
        .host_str()?
        .trim_start_matches('[')
        .trim_end_matches(']');
    Some(host.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A page's domain, then its parent; the same rule in every project, and none for a URL
    /// with no host.
    #[test]
    fn a_web_fetch_offers_its_domain_then_the_domains_parent() {
        let offer = |url: &str| {
            offer("web_fetch", &json!({ "url": url }), Path::new("/work")).map(|offer| {
                offer
                    .steps
                    .into_iter()
                    .map(|step| (step.project, step.user))
                    .collect::<Vec<_>>()
            })
        };
        let scoped = |rule: &str| (rule.to_owned(), Some(rule.to_owned()));
        assert_eq!(
            offer("https://api.github.com/repos/x").unwrap(),
            [
                scoped("web_fetch(api.github.com)"),
                scoped("web_fetch(*.github.com)")
            ]
        );
        assert_eq!(
            offer("https://docs.rs/tokio").unwrap(),
            [scoped("web_fetch(docs.rs)")]
        );
        assert_eq!(
            offer("http://10.0.0.1:8080/").unwrap(),
            [scoped("web_fetch(10.0.0.1)")]
        );
        assert!(offer("not a url").is_none());
    }

    /// The first rule offered, for the project's file and for the user's, and the widest.
    fn offered(tool: &str, key: &str, value: &str) -> Option<(String, Option<String>, String)> {
        let offer = offer(tool, &json!({ key: value }), Path::new("/work"))?;
        let widest = offer.steps.last().unwrap().project.clone();
        let first = offer.chosen().clone();
        Some((first.project, first.user, widest))
    }

    #[test]
    fn a_plain_command_gives_what_it_runs_first_and_anything_else_none() {
        let rule = |command: &str| offered("bash", "command", command);
        let both = |rule: &str, widest: &str| {
            Some((rule.to_owned(), Some(rule.to_owned()), widest.to_owned()))
        };
        assert_eq!(
            rule("cargo test --all"),
            both("bash(cargo test:*)", "bash(cargo:*)")
        );
        assert_eq!(
            rule("git status"),
            both("bash(git status:*)", "bash(git:*)")
        );
        assert_eq!(rule("ls -la src"), both("bash(ls:*)", "bash(ls:*)"));
        assert_eq!(rule("make"), both("bash(make:*)", "bash(make:*)"));
        assert_eq!(rule("echo hello"), both("bash(echo:*)", "bash(echo:*)"));
        // What an interpreter or a runner runs is named: not every Python program.
        assert_eq!(
            rule("python3 -m pytest -q tests"),
            both("bash(python3 -m pytest:*)", "bash(python3:*)")
        );
        assert_eq!(
            rule("python3.12 -m pip list"),
            both("bash(python3.12 -m pip:*)", "bash(python3.12:*)")
        );
        assert_eq!(
            rule("uv run pytest -x"),
            both("bash(uv run pytest:*)", "bash(uv:*)")
        );
        // A file of this project: remembered for the project only.
        assert_eq!(
            rule("python3 tests.py -v"),
            Some((
                "bash(python3 tests.py:*)".to_owned(),
                None,
                "bash(python3:*)".to_owned()
            ))
        );
        assert_eq!(
            rule("./run.sh fast"),
            Some((
                "bash(./run.sh:*)".to_owned(),
                None,
                "bash(./run.sh:*)".to_owned()
            ))
        );
        for wide in [
            "cargo test && rm -rf /",
            "echo $HOME",
            "cat x > y",
            "X=1 cargo test",
            "rm -rf *",
            "echo 'a b'",
            "python3 -c print(1)",
            "node -e process.exit()",
            "",
        ] {
            assert_eq!(rule(wide), None, "{wide}");
        }
    }

    #[test]
    fn an_edit_is_one_file_by_its_absolute_path_for_every_project_then_its_folder() {
        let edit = |path: &str| offered("write", "path", path);
        assert_eq!(
            edit("src/lib.rs"),
            Some((
                "edit(src/lib.rs)".to_owned(),
                Some("edit(/work/src/lib.rs)".to_owned()),
                "edit(src/**)".to_owned()
            ))
        );
        assert_eq!(
            edit("/work/./src/../calc.py"),
            Some((
                "edit(calc.py)".to_owned(),
                Some("edit(/work/calc.py)".to_owned()),
                "edit(**)".to_owned()
            ))
        );
        assert_eq!(
            edit("/etc/hosts"),
            Some((
                "edit(/etc/hosts)".to_owned(),
                Some("edit(/etc/hosts)".to_owned()),
                "edit(/etc/**)".to_owned()
            ))
        );
        assert_eq!(edit("src/*.rs"), None);
    }

    #[test]
    fn a_rule_joins_the_files_allow_list_keeping_what_is_there() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/config.toml");
        write_rule(&path, "bash(cargo test:*)").unwrap();
        write_rule(&path, "bash(cargo test:*)").unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.matches("cargo test").count(), 1, "{text}");

        std::fs::write(
            &path,
            "# mine\nmodel = \"m\"\n\n[rules]\n# keep\ndeny = [\"bash(rm*)\"]\nallow = [\"bash(ls:*)\"]\n",
        )
        .unwrap();
        write_rule(&path, "edit(src/lib.rs)").unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("# mine\nmodel = \"m\"\n"), "{text}");
        assert!(text.contains("# keep"), "{text}");
        let read: toml::Table = toml::from_str(&text).unwrap();
        assert_eq!(
            read["rules"]["allow"].as_array().unwrap().len(),
            2,
            "{text}"
        );

        std::fs::write(&path, "rules = 3\n").unwrap();
        assert!(write_rule(&path, "bash(ls:*)")
            .unwrap_err()
            .contains("not a table"));
        // A link planted where the old fixed temporary name was, and a link as the file.
        let target = dir.path().join("target.txt");
        std::fs::write(&target, "kept").unwrap();
        std::os::unix::fs::symlink(&target, dir.path().join("sub/config.toml.golato-new")).unwrap();
        std::fs::write(&path, "").unwrap();
        write_rule(&path, "bash(ls:*)").unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "kept");
        let linked = dir.path().join("sub/linked.toml");
        std::os::unix::fs::symlink(&target, &linked).unwrap();
        assert!(write_rule(&linked, "bash(ls:*)")
            .unwrap_err()
            .contains("symbolic link"));
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "kept");
        let left: Vec<_> = std::fs::read_dir(dir.path().join("sub"))
            .unwrap()
            .map(|entry| entry.unwrap().file_name().into_string().unwrap())
            .filter(|name| name.starts_with(".config.toml.golato-"))
            .collect();
        assert!(left.is_empty(), "{left:?}");

        std::fs::write(&path, "[rules\n").unwrap();
        assert!(write_rule(&path, "bash(ls:*)")
            .unwrap_err()
            .contains("not valid TOML"));
    }
}
