//! Approvals remembered narrowly: "yes, and don't ask again for `cargo test …`" becomes an
//! allow rule (`bash(cargo test:*)`, or `edit(src/lib.rs)` for one file), shown whole before it
//! is taken, kept for the session and written to the project's or the user's configuration.

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

/// The narrowest rule that allows this call again: for a command line of one plain command,
/// its program and first word when that word names what the program does (`cargo test`, `git
/// status`: see [`TAKE_SUBCOMMANDS`]), else its program; for an edit or a write, that one file. `None` where no rule
/// would be narrow (a line of several commands, expansions, redirections: an allow rule could
/// not hold for it anyway).
pub(crate) fn narrow_rule(tool: &str, arguments: &serde_json::Value, cwd: &Path) -> Option<String> {
    match tool {
        "bash" => {
            let command = arguments["command"].as_str()?.trim();
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
            let mut words = command.split_whitespace();
            let program = words.next()?;
            // `X=1 cargo …` sets a variable first: not a rule's business.
            if program.contains('=') {
                return None;
            }
            let base = program.rsplit('/').next().unwrap_or(program);
            let what = words
                .next()
                .filter(|_| TAKE_SUBCOMMANDS.contains(&base))
                .filter(|word| {
                    word.chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
                        && !word.starts_with('-')
                });
            Some(match what {
                Some(what) => format!("bash({program} {what}:*)"),
                None => format!("bash({program}:*)"),
            })
        }
        "edit" | "write" => {
            let path = arguments["path"].as_str()?;
            let full = golato::sandbox::resolve(cwd, Path::new(path));
            let shown = match full.strip_prefix(cwd) {
                Ok(inside) => inside.to_str()?.to_owned(),
                Err(_) => full.to_str()?.to_owned(),
            };
            // A glob's own characters in a file name would widen the rule.
            if shown.is_empty() || shown.contains(['*', '?', '[', ']', '{', '}', '(', ')']) {
                return None;
            }
            // `edit(…)` holds for write too.
            Some(format!("edit({shown})"))
        }
        _ => None,
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_plain_command_gives_its_program_and_subcommand_and_anything_else_none() {
        let cwd = Path::new("/work");
        let rule = |command: &str| narrow_rule("bash", &json!({ "command": command }), cwd);
        assert_eq!(
            rule("cargo test --all").as_deref(),
            Some("bash(cargo test:*)")
        );
        assert_eq!(rule("git status").as_deref(), Some("bash(git status:*)"));
        assert_eq!(rule("ls -la src").as_deref(), Some("bash(ls:*)"));
        assert_eq!(rule("make").as_deref(), Some("bash(make:*)"));
        assert_eq!(rule("echo hello").as_deref(), Some("bash(echo:*)"));
        for wide in [
            "cargo test && rm -rf /",
            "echo $HOME",
            "cat x > y",
            "X=1 cargo test",
            "rm -rf *",
            "echo 'a b'",
            "",
        ] {
            assert_eq!(rule(wide), None, "{wide}");
        }
        let edit = |path: &str| narrow_rule("write", &json!({ "path": path }), cwd);
        assert_eq!(edit("src/lib.rs").as_deref(), Some("edit(src/lib.rs)"));
        assert_eq!(edit("/work/./src/../a.rs").as_deref(), Some("edit(a.rs)"));
        assert_eq!(edit("/etc/hosts").as_deref(), Some("edit(/etc/hosts)"));
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
