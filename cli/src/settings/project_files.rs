//! The files of a project that only its folder's trust lets steer golato, besides its
//! `.golato/config.toml`: the instruction files (`AGENTS.md`, else `CLAUDE.md`) and the skill
//! folders, from the repository's root down to the working directory. Found here, below
//! every room that reads them or asks about them.

use std::path::{Path, PathBuf};

/// The nearest directory at or above `cwd` holding `.git` (a directory or a worktree's file).
fn repository_root(cwd: &Path) -> Option<PathBuf> {
    cwd.ancestors()
        .find(|dir| dir.join(".git").exists())
        .map(Path::to_path_buf)
}

/// The directories from the repository's root (else `cwd` alone) down to `cwd`.
pub(crate) fn project_dirs(cwd: &Path) -> Vec<PathBuf> {
    let root = repository_root(cwd).unwrap_or_else(|| cwd.to_owned());
    let mut dirs: Vec<PathBuf> = cwd
        .ancestors()
        .take_while(|dir| dir.starts_with(&root))
        .map(Path::to_path_buf)
        .collect();
    dirs.reverse();
    dirs
}

/// The instruction file of `dir`: its AGENTS.md, else its CLAUDE.md.
pub(crate) fn instruction_file_in(dir: &Path) -> Option<PathBuf> {
    ["AGENTS.md", "CLAUDE.md"]
        .iter()
        .map(|name| dir.join(name))
        .find(|path| path.is_file())
}

/// A project's instruction files for a run in `cwd`, from the root down.
pub(crate) fn instruction_files(cwd: &Path) -> Vec<PathBuf> {
    project_dirs(cwd)
        .iter()
        .filter_map(|dir| instruction_file_in(dir))
        .collect()
}

/// The skill folders (`.agents/skills/`, `.claude/skills/`) of a project for a run in `cwd`
/// that hold anything.
pub(crate) fn skill_folders(cwd: &Path) -> Vec<PathBuf> {
    project_dirs(cwd)
        .iter()
        .flat_map(|dir| [dir.join(".agents/skills"), dir.join(".claude/skills")])
        .filter(|skills| {
            std::fs::read_dir(skills).is_ok_and(|mut entries| entries.next().is_some())
        })
        .collect()
}
