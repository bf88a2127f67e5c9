//! Commands people keep as Markdown files: Claude Code's `.claude/commands/`, golato's
//! `.golato/commands/` (a trusted project's; an untrusted one's are named, never offered),
//! the user's `~/.config/golato/commands/` and `~/.claude/commands/`, and codex's prompts
//! (`~/.codex/prompts/`, offered as `/prompts:NAME` as codex does). A subfolder is a namespace
//! (`frontend/review.md` is `/frontend:review`). The file's front matter describes it
//! (`description`, `argument-hint`), narrows the tools of its prompt (`allowed-tools`) and
//! picks its model (`model`); the body is the prompt, with `$ARGUMENTS` and `$1`…`$9`
//! replaced here, and `@path` and `` !`command` `` filled by the session's tools
//! (`conversation/expansion.rs`).

use std::path::{Path, PathBuf};

use crate::setup::kept_files::{self, bad_name, shown, Folder};

/// The largest command file read.
pub(crate) const MAX_COMMAND_BYTES: u64 = 64 * 1024;
/// The most command files looked at, across every folder.
const MAX_COMMANDS: usize = 500;
/// How deep namespaces go (`a/b/c.md` is `/a:b:c`).
const MAX_DEPTH: usize = 3;

/// The front end's own slash commands: a file of one of these names is refused.
pub(crate) const RESERVED: &[&str] = &[
    "help",
    "model",
    "compact",
    "new",
    "resume",
    "fork",
    "undo",
    "diff",
    "plan",
    "accept",
    "cost",
    "tools",
    "ps",
    "kill",
    "approve",
    "sandbox",
    "init",
    "exit",
    "quit",
    "clear",
    "agents",
    "diagnostics",
];

/// A command found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CustomCommand {
    /// As typed after `/`: `review`, `frontend:review`, `prompts:draft`.
    pub(crate) name: String,
    pub(crate) description: Option<String>,
    /// What its arguments are (`argument-hint`).
    pub(crate) hint: Option<String>,
    /// The tools its prompt may use (golato's names), when it names any.
    pub(crate) tools: Option<Vec<String>>,
    /// The model its prompt asks, when it names one.
    pub(crate) model: Option<String>,
    /// The prompt, before its arguments are put in.
    pub(crate) body: String,
    pub(crate) path: PathBuf,
}

/// The commands found, and what was left out (each with why).
#[derive(Debug, Default, Clone)]
pub(crate) struct Found {
    pub(crate) commands: Vec<CustomCommand>,
    /// Files refused, keys ignored, names shadowed: one line each.
    pub(crate) warnings: Vec<String>,
    /// The project's folders not read because the folder is not trusted.
    pub(crate) untrusted: Vec<PathBuf>,
}

impl Found {
    /// The command `name` (without its `/`).
    pub(crate) fn get(&self, name: &str) -> Option<&CustomCommand> {
        self.commands.iter().find(|command| command.name == name)
    }
}

/// The folders commands come from: a trusted project's and the user's, then codex's prompts.
fn folders(cwd: &Path, trusted: bool, found: &mut Found) -> Vec<Folder> {
    let mut folders = kept_files::folders(cwd, trusted, "commands", &mut found.untrusted);
    let codex = std::env::var_os("CODEX_HOME")
        .filter(|dir| !dir.is_empty())
        .map(PathBuf::from)
        .or_else(|| crate::setup::skills::home().map(|home| home.join(".codex")));
    if let Some(codex) = codex {
        folders.push(Folder {
            dir: codex.join("prompts"),
            project: None,
            prefix: "prompts:",
        });
    }
    folders
}

/// The commands a session in `cwd` offers: a trusted project's, then the user's; a name found
/// twice keeps its first, and the other is named.
pub(crate) fn gather(cwd: &Path, trusted: bool) -> Found {
    let mut found = Found::default();
    let mut seen = 0;
    for folder in folders(cwd, trusted, &mut found) {
        walk(
            &folder,
            &folder.dir,
            folder.prefix.to_owned(),
            0,
            &mut seen,
            &mut found,
        );
    }
    let mut kept: Vec<CustomCommand> = Vec::new();
    for command in std::mem::take(&mut found.commands) {
        match kept.iter().find(|earlier| earlier.name == command.name) {
            Some(earlier) => found.warnings.push(format!(
                "the command {} was left out: /{} is {} already",
                shown(&command.path),
                command.name,
                shown(&earlier.path)
            )),
            None => kept.push(command),
        }
    }
    found.commands = kept;
    found
}

/// The commands under `dir`, named `prefix` + the file's stem, sorted by name.
fn walk(
    folder: &Folder,
    dir: &Path,
    prefix: String,
    depth: usize,
    seen: &mut usize,
    found: &mut Found,
) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.flatten().map(|entry| entry.path()).collect();
    paths.sort();
    for path in paths {
        if *seen >= MAX_COMMANDS {
            found.warnings.push(format!(
                "more than {MAX_COMMANDS} command files: the rest of {} were not read",
                shown(dir)
            ));
            return;
        }
        let Some(stem) = path
            .file_stem()
            .map(|stem| stem.to_string_lossy().into_owned())
        else {
            continue;
        };
        if stem.starts_with('.') {
            continue;
        }
        let Ok(metadata) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if metadata.is_dir() {
            if depth + 1 >= MAX_DEPTH {
                found.warnings.push(format!(
                    "the folder {} was not read: namespaces go {MAX_DEPTH} levels deep at most",
                    shown(&path)
                ));
            } else if let Some(why) = bad_name(&stem) {
                found
                    .warnings
                    .push(format!("the folder {} was not read: {why}", shown(&path)));
            } else {
                walk(
                    folder,
                    &path,
                    format!("{prefix}{stem}:"),
                    depth + 1,
                    seen,
                    found,
                );
            }
            continue;
        }
        if path.extension().is_none_or(|extension| extension != "md") {
            continue;
        }
        *seen += 1;
        let name = format!("{prefix}{stem}");
        match read_command(folder, &path, &stem, &name, &mut found.warnings) {
            Ok(command) => found.commands.push(command),
            Err(why) => found
                .warnings
                .push(format!("the command {} was left out: {why}", shown(&path))),
        }
    }
}

/// The command in `path`, or why it is refused.
fn read_command(
    folder: &Folder,
    path: &Path,
    stem: &str,
    name: &str,
    warnings: &mut Vec<String>,
) -> Result<CustomCommand, String> {
    if let Some(why) = bad_name(stem) {
        return Err(why);
    }
    if folder.prefix.is_empty() && RESERVED.contains(&name) {
        return Err(format!(
            "/{name} is one of golato's own commands; rename the file"
        ));
    }
    let text = kept_files::read(folder, path, MAX_COMMAND_BYTES)?;
    let parsed = crate::setup::front_matter::parse(&text, true)?;
    let ignored: Vec<String> = parsed
        .keys()
        .into_iter()
        .filter(|key| {
            !matches!(
                key.as_str(),
                "description" | "argument-hint" | "allowed-tools" | "model"
                    // golato's model never calls a command on its own: honoured as it is.
                    | "disable-model-invocation"
            )
        })
        .collect();
    if !ignored.is_empty() {
        warnings.push(format!(
            "the command /{name} ({}): golato has no counterpart for {}; ignored",
            shown(path),
            ignored.join(", ")
        ));
    }
    let tools = kept_files::claude_tools(
        &parsed.fields["allowed-tools"],
        "allowed-tools",
        &format!("the command /{name}"),
        warnings,
    )?;
    Ok(CustomCommand {
        name: name.to_owned(),
        description: parsed.text("description"),
        hint: parsed.text("argument-hint").or_else(|| {
            // `argument-hint: [pr-number]` is a YAML list: shown as written.
            match &parsed.fields["argument-hint"] {
                yaml_rust2::Yaml::Array(items) => Some(
                    items
                        .iter()
                        .map(|item| match item.as_str() {
                            Some(text) => format!("[{text}]"),
                            None => "[…]".into(),
                        })
                        .collect::<Vec<_>>()
                        .join(" "),
                ),
                _ => None,
            }
        }),
        tools,
        model: parsed.text("model"),
        body: parsed.body,
        path: path.to_owned(),
    })
}

/// `body` with its arguments put in: `$ARGUMENTS` all of them, `$1`…`$9` each (split as a
/// shell splits words, quotes kept together), `$$` a dollar. With neither in the body, the
/// arguments follow it as `ARGUMENTS: …`, as Claude Code does.
pub(crate) fn with_arguments(body: &str, arguments: &str) -> String {
    let arguments = arguments.trim();
    let words = shell_words(arguments);
    let mut out = String::with_capacity(body.len() + arguments.len());
    let mut used = false;
    let mut rest = body;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix("ARGUMENTS") {
            out.push_str(arguments);
            used = true;
            rest = tail;
        } else if let Some(digit) = after.chars().next().filter(|c| ('1'..='9').contains(c)) {
            let index = digit as usize - '1' as usize;
            out.push_str(words.get(index).map_or("", String::as_str));
            used = true;
            rest = &after[1..];
        } else if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    if !used && !arguments.is_empty() {
        out.push_str(&format!("\n\nARGUMENTS: {arguments}"));
    }
    out
}

/// `text` split into words as a shell would: spaces separate, quotes group.
fn shell_words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let (mut word, mut quote, mut any) = (String::new(), None, false);
    for c in text.chars() {
        match (quote, c) {
            (Some(open), c) if c == open => quote = None,
            (Some(_), c) => word.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                any = true;
            }
            (None, c) if c.is_whitespace() => {
                if any || !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
                any = false;
            }
            (None, c) => word.push(c),
        }
    }
    if any || !word.is_empty() {
        words.push(word);
    }
    words
}

/// The `` !`command` `` pieces of `text`: where each stands and its command.
pub(crate) fn shell_pieces(text: &str) -> Vec<(std::ops::Range<usize>, String)> {
    let mut pieces = Vec::new();
    let mut from = 0;
    while let Some(at) = text[from..].find("!`").map(|at| at + from) {
        let start = at + 2;
        match text[start..].find('`') {
            Some(length) if !text[start..start + length].contains('\n') => {
                let command = text[start..start + length].trim();
                if !command.is_empty() {
                    pieces.push((at..start + length + 1, command.to_owned()));
                }
                from = start + length + 1;
            }
            _ => from = start,
        }
    }
    pieces
}

/// The files `text` mentions as `@path` that exist (relative to `cwd`, absolute, or `~/`):
/// a word starting with `@` that names one. Other `@` words (`@decorator`) stay words.
pub(crate) fn mentioned_files(text: &str, cwd: &Path) -> Vec<String> {
    let mut files: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        let Some(path) = word.strip_prefix('@') else {
            continue;
        };
        let path = path.trim_end_matches(|c: char| {
            matches!(c, ',' | ';' | ')' | ']' | '.' | ':' | '"' | '\'')
        });
        if path.is_empty() {
            continue;
        }
        let full = match path.strip_prefix("~/") {
            Some(rest) => match crate::setup::skills::home() {
                Some(home) => home.join(rest),
                None => continue,
            },
            None => cwd.join(path),
        };
        if std::fs::symlink_metadata(&full).is_ok() && !files.iter().any(|known| known == path) {
            files.push(path.to_owned());
        }
    }
    files
}

/// `golato commands`: the commands a session here offers, where each came from, and what was
/// left out with why.
pub(crate) fn command(
    cwd: &Path,
    trust_given: bool,
) -> Result<crate::error::Exit, crate::error::CliError> {
    use std::io::Write as _;
    let trusted = crate::settings::trust::trusted(cwd, trust_given);
    let found = gather(cwd, trusted);
    let mut out = std::io::stdout().lock();
    if found.commands.is_empty() && found.untrusted.is_empty() {
        let _ = writeln!(
            out,
            "no commands here: put a Markdown file in .golato/commands/ or .claude/commands/ (this project, when trusted), ~/.config/golato/commands/ or ~/.claude/commands/"
        );
    }
    for command in &found.commands {
        let hint = command
            .hint
            .as_deref()
            .map(|hint| format!(" {hint}"))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "/{}{}  {}",
            crate::view::shown::visible(&command.name),
            crate::view::shown::visible(&hint),
            shown(&command.path)
        );
        if let Some(description) = &command.description {
            let _ = writeln!(
                out,
                "    {}",
                crate::view::shown::visible(&description.replace('\n', " "))
            );
        }
    }
    kept_files::say_left_out(&found.untrusted, &found.warnings);
    Ok(crate::error::Exit::Success)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_go_where_the_body_says_or_after_it() {
        assert_eq!(
            with_arguments("Fix issue #$ARGUMENTS now", "42"),
            "Fix issue #42 now"
        );
        assert_eq!(
            with_arguments("Review PR #$1 with priority $2 ($3)", "456 'very high'"),
            "Review PR #456 with priority very high ()"
        );
        assert_eq!(with_arguments("Costs $$5 and $x", ""), "Costs $5 and $x");
        assert_eq!(
            with_arguments("Summarize.", "the diff"),
            "Summarize.\n\nARGUMENTS: the diff"
        );
        assert_eq!(with_arguments("Summarize.", "  "), "Summarize.");
    }

    #[test]
    fn shell_pieces_and_mentions_are_found_where_written() {
        let text = "Status: !`git status --short` and !`git diff HEAD`\nnot !` here\n";
        let pieces = shell_pieces(text);
        let commands: Vec<&str> = pieces.iter().map(|(_, command)| command.as_str()).collect();
        assert_eq!(commands, ["git status --short", "git diff HEAD"]);
        assert_eq!(&text[pieces[0].0.clone()], "!`git status --short`");
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("notes.md"), "x").unwrap();
        assert_eq!(
            mentioned_files("See @notes.md, @decorator and mail@example.com", dir.path()),
            ["notes.md"]
        );
    }
}
