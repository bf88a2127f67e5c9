//! What commands and agents files share: the folders they are kept in (a trusted project's
//! `.golato/KIND/` and `.claude/KIND/`, the user's `~/.config/golato/KIND/` and Claude Code's
//! `~/.claude/KIND/`), how one is read (bounded, a regular file, never through a project's
//! link that leads out of the project), their names, and Claude Code's tool lists.

use std::path::{Path, PathBuf};

use yaml_rust2::Yaml;

/// One folder of kept files: where it is, whether a project's, and a prefix for its names.
pub(crate) struct Folder {
    pub(crate) dir: PathBuf,
    /// The project's root: links must stay inside it. `None` for the user's own folders.
    pub(crate) project: Option<PathBuf>,
    pub(crate) prefix: &'static str,
}

/// The folders of `kind` (`commands`, `agents`) for a session in `cwd`: the project's first
/// (root down) when `trusted`, else named in `untrusted`; then the user's.
pub(crate) fn folders(
    cwd: &Path,
    trusted: bool,
    kind: &str,
    untrusted: &mut Vec<PathBuf>,
) -> Vec<Folder> {
    let mut folders = Vec::new();
    let real = cwd.canonicalize().unwrap_or_else(|_| cwd.to_owned());
    let dirs = crate::settings::project_files::project_dirs(&real);
    let root = dirs.first().cloned().unwrap_or_else(|| real.clone());
    for dir in &dirs {
        for sub in [".golato", ".claude"] {
            let dir = dir.join(sub).join(kind);
            if !dir.is_dir() {
                continue;
            }
            match trusted {
                true => folders.push(Folder {
                    dir,
                    project: Some(root.clone()),
                    prefix: "",
                }),
                false => untrusted.push(dir),
            }
        }
    }
    let config_home = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|dir| !dir.is_empty())
        .map(PathBuf::from)
        .or_else(|| crate::setup::skills::home().map(|home| home.join(".config")));
    for dir in [
        config_home.map(|home| home.join("golato").join(kind)),
        crate::settings::config::claude_home().map(|home| home.join(kind)),
    ]
    .into_iter()
    .flatten()
    {
        folders.push(Folder {
            dir,
            project: None,
            prefix: "",
        });
    }
    folders
}

/// The text of the kept file `path` of `folder`, at most `limit` bytes, or why not.
pub(crate) fn read(folder: &Folder, path: &Path, limit: u64) -> Result<String, String> {
    // A project's link may lead anywhere (`~/.ssh/id_rsa`), and its text would go to the
    // model: it must stay inside the project. The user's own links are theirs.
    let real = path
        .canonicalize()
        .map_err(|error| format!("it cannot be read ({error})"))?;
    if let Some(project) = &folder.project {
        if !real.starts_with(project) {
            return Err(format!(
                "it is a link to {}, outside the project",
                shown(&real)
            ));
        }
    }
    // Bounded, a regular file only (a FIFO would hang), never a credential folder's.
    crate::setup::prompt::read_bounded(&real, limit)
        .map_err(|error| format!("it cannot be read ({error})"))
}

/// The `.md` files in `dir` that are not hidden, sorted; none when it cannot be read.
pub(crate) fn markdown_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = entries
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| {
            path.extension().is_some_and(|extension| extension == "md")
                && !path
                    .file_name()
                    .is_some_and(|name| name.to_string_lossy().starts_with('.'))
        })
        .collect();
    paths.sort();
    paths
}

/// Says on stderr what a listing left out: the untrusted project's folders, then each
/// warning.
pub(crate) fn say_left_out(untrusted: &[PathBuf], warnings: &[String]) {
    for dir in untrusted {
        eprintln!(
            "golato: {} left out: this folder is not trusted (`golato trust` trusts it, or pass --trust)",
            shown(dir)
        );
    }
    for warning in warnings {
        eprintln!("golato: {}", crate::view::shown::visible(warning));
    }
}

/// `path` as a line shows it (control characters made visible).
pub(crate) fn shown(path: &Path) -> String {
    crate::view::shown::visible(&path.display().to_string()).into_owned()
}

/// Why `name` cannot name a command or agent, if it cannot.
pub(crate) fn bad_name(name: &str) -> Option<String> {
    if name.is_empty() || name.chars().count() > 64 {
        return Some("its name is empty or longer than 64 characters".into());
    }
    if name
        .chars()
        .any(|c| c.is_control() || c.is_whitespace() || matches!(c, ':' | '/' | '\\' | '$' | '@'))
    {
        return Some(format!(
            "its name {} has a control character, a space or one of : / \\ $ @",
            crate::view::shown::visible(name)
        ));
    }
    None
}

/// A Claude Code tool list (`key: Bash(git add:*), Read` or a YAML list) as golato's tool
/// names; `None` when the key is not there. What has no counterpart, and the patterns
/// golato's rules judge instead, are named once in `warnings` as `owner`'s.
pub(crate) fn claude_tools(
    value: &Yaml,
    key: &str,
    owner: &str,
    warnings: &mut Vec<String>,
) -> Result<Option<Vec<String>>, String> {
    let entries = match value {
        Yaml::BadValue => return Ok(None),
        Yaml::String(text) => split_tools(text),
        Yaml::Array(items) => items
            .iter()
            .filter_map(|item| item.as_str().map(str::to_owned))
            .collect(),
        _ => return Err(format!("its {key} is neither a text nor a list")),
    };
    Ok(Some(tool_names(&entries, key, owner, warnings)))
}

/// `Bash(git add:*), Read` as its entries: split at commas outside parentheses.
fn split_tools(text: &str) -> Vec<String> {
    let mut entries = Vec::new();
    let (mut depth, mut current) = (0usize, String::new());
    for c in text.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' | ' ' if depth == 0 => {
                if !current.trim().is_empty() {
                    entries.push(current.trim().to_owned());
                }
                current.clear();
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    if !current.trim().is_empty() {
        entries.push(current.trim().to_owned());
    }
    entries
}

/// golato's tool names for Claude Code's (`Bash(git add:*)` is `bash`); what has no
/// counterpart, and the patterns golato's rules judge instead, named once.
fn tool_names(
    entries: &[String],
    key: &str,
    owner: &str,
    warnings: &mut Vec<String>,
) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    let (mut unknown, mut patterns) = (Vec::new(), Vec::new());
    for entry in entries {
        let (tool, pattern) = match entry.split_once('(') {
            Some((tool, _)) => (tool.trim(), true),
            None => (entry.trim(), false),
        };
        let name = match tool {
            "Bash" | "bash" => "bash",
            "Read" | "read" => "read",
            "Edit" | "MultiEdit" | "edit" => "edit",
            "Write" | "write" => "write",
            "Grep" | "grep" => "grep",
            "Glob" | "find" => "find",
            "LS" | "ls" => "ls",
            "Task" | "task" => "task",
            "TodoWrite" | "update_plan" => "update_plan",
            "WebFetch" | "web_fetch" => "web_fetch",
            other => {
                unknown.push(other.to_owned());
                continue;
            }
        };
        if pattern {
            patterns.push(entry.clone());
        }
        if !names.iter().any(|known| known == name) {
            names.push(name.to_owned());
        }
    }
    if !unknown.is_empty() {
        warnings.push(format!(
            "{owner}: {key} names tools golato does not have ({}); left out",
            unknown.join(", ")
        ));
    }
    if !patterns.is_empty() {
        warnings.push(format!(
            "{owner}: {key} patterns ({}) narrow the tools only; golato's rules still decide each call",
            patterns.join(", ")
        ));
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_tool_lists_become_golato_tools_and_the_rest_is_named() {
        let mut warnings = Vec::new();
        let names = tool_names(
            &split_tools("Bash(git add:*), Bash(git status:*), Read, NotebookEdit"),
            "allowed-tools",
            "the command /commit",
            &mut warnings,
        );
        assert_eq!(names, ["bash", "read"]);
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings[0].contains("NotebookEdit"));
        assert!(warnings[1].contains("Bash(git add:*), Bash(git status:*)"));
    }
}
