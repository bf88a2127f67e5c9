//! What the agent is told before the conversation besides its own instructions: where it works
//! (directory, OS, shell, date, git state, sandbox) and the project's instructions, the
//! `AGENTS.md` files from the repository's root down to the working directory (a `CLAUDE.md`
//! where no `AGENTS.md` stands beside it), after the user's own in golato's configuration
//! directory. A project's files are read only in a trusted folder: they steer the model, and a
//! cloned repository must not steer it unasked.

use std::path::{Path, PathBuf};
use std::time::Duration;

/// The most bytes of instructions read, all files together; past it the rest is cut with a
/// note (as codex caps its project docs).
pub(crate) const MAX_INSTRUCTION_BYTES: usize = 32 * 1024;
/// How long `git` may take to say the branch and whether the tree is dirty.
const GIT_TIME: Duration = Duration::from_millis(500);

/// The instructions found, and which files they came from.
#[derive(Debug, Default)]
pub(crate) struct Instructions {
    /// The files read, in the order they are joined.
    pub(crate) files: Vec<PathBuf>,
    /// The files joined, each under its path.
    pub(crate) text: String,
    /// Why a project's files were not read, when they were not.
    pub(crate) skipped: Option<String>,
}

use crate::settings::project_files::instruction_file_in as file_in;
use crate::settings::project_files::project_dirs;

/// On a terminal, asks once whether to trust a folder whose project brings instructions for
/// the model (AGENTS.md or CLAUDE.md here or up to the repository's root) and that was never
/// decided; the answer is remembered (`golato trust`/`untrust` change it), so later starts ask
/// nothing. A folder trusted now has its instructions read in this run too.
///
/// # Errors
/// The trust store could not be read or written.
pub(crate) fn ask_once(
    settings: &mut crate::settings::Settings,
    ask: bool,
) -> Result<(), crate::error::CliError> {
    use crate::settings::trust::{Folder, Standing};
    if settings.trusted || !ask || settings.no_project_instructions {
        return Ok(());
    }
    let at_stake = crate::settings::trust_question::AtStake::project(&settings.cwd);
    if at_stake.instructions.is_empty() {
        return Ok(());
    }
    let folder = Folder::at(&settings.cwd)?;
    if folder.standing()? != Standing::Unknown {
        return Ok(());
    }
    settings.trusted = crate::settings::trust_question::ask(&folder, &at_stake)?;
    settings.said_no = !settings.trusted;
    Ok(())
}

/// The user's file (golato's configuration directory), then the project's from the root down.
pub(crate) fn gather(cwd: &Path, config_dir: Option<&Path>, trusted: bool) -> Instructions {
    let cwd = cwd.canonicalize().unwrap_or_else(|_| cwd.to_owned());
    let mut files: Vec<PathBuf> = config_dir.and_then(file_in).into_iter().collect();
    let project: Vec<PathBuf> = project_dirs(&cwd)
        .iter()
        .filter_map(|dir| file_in(dir))
        .collect();
    let mut skipped = None;
    if !project.is_empty() && !trusted {
        skipped = Some(format!(
            "{} not read: this folder is not trusted (`golato trust {}` trusts it, or pass --trust)",
            project
                .iter()
                .map(|path| path.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
            cwd.display()
        ));
    } else {
        files.extend(project);
    }
    let mut text = String::new();
    let mut read = Vec::new();
    for path in files {
        let room = MAX_INSTRUCTION_BYTES.saturating_sub(text.len());
        if room == 0 {
            text.push_str(&format!(
                "\n[{} and what follows it were left out: the instructions passed {} KiB]\n",
                path.display(),
                MAX_INSTRUCTION_BYTES / 1024
            ));
            break;
        }
        let Ok(bytes) = prefix(&path, room as u64 + 1) else {
            continue;
        };
        let content = String::from_utf8_lossy(&bytes);
        let mut cut = content.len().min(room);
        while !content.is_char_boundary(cut) {
            cut -= 1;
        }
        text.push_str(&format!("\n## {}\n\n{}", path.display(), &content[..cut]));
        if cut < content.len() {
            text.push_str(&format!(
                "\n[the rest of {} was left out: the instructions passed {} KiB]\n",
                path.display(),
                MAX_INSTRUCTION_BYTES / 1024
            ));
        }
        read.push(path);
    }
    Instructions {
        files: read,
        text,
        skipped,
    }
}

/// At most `limit` bytes from the start of the regular file at `path`.
fn prefix(path: &Path, limit: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read as _;
    let file = std::fs::File::open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::ErrorKind::InvalidInput.into());
    }
    let mut bytes = Vec::new();
    file.take(limit).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Today's date, `YYYY-MM-DD` (UTC).
fn today() -> String {
    let seconds = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_secs());
    crate::view::shown::utc_date(seconds)
}

/// The branch and whether the tree has changes, as `git` says within [`GIT_TIME`].
async fn git_state(cwd: &Path) -> String {
    let run = |args: &'static [&'static str]| {
        let mut command = tokio::process::Command::new("git");
        command
            .arg("-C")
            .arg(cwd)
            .args(args)
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true);
        async move {
            let output = tokio::time::timeout(GIT_TIME, command.output()).await;
            match output {
                Ok(Ok(output)) if output.status.success() => {
                    Some(String::from_utf8_lossy(&output.stdout).trim().to_owned())
                }
                _ => None,
            }
        }
    };
    let Some(branch) = run(&["rev-parse", "--abbrev-ref", "HEAD"]).await else {
        return "not a git repository (or git is not installed)".to_owned();
    };
    let dirty = match run(&["status", "--porcelain", "--untracked-files=no"]).await {
        Some(changes) if changes.is_empty() => "no uncommitted changes",
        Some(_) => "uncommitted changes",
        None => "changes unknown (git status took too long)",
    };
    format!("a git repository on branch {branch}, {dirty}")
}

/// Where the agent works, in a few lines for the system prompt.
pub(crate) async fn environment(cwd: &Path, sandbox: &golato::sandbox::Policy) -> String {
    let shell = std::env::var("SHELL").unwrap_or_else(|_| "/bin/sh".to_owned());
    format!(
        "# Environment\n\n- Working directory: {}\n- OS: {} ({})\n- Shell: {shell}\n- Date: {}\n- Repository: {}\n- Sandbox: {}",
        cwd.display(),
        std::env::consts::OS,
        std::env::consts::ARCH,
        today(),
        git_state(cwd).await,
        sandbox.mode,
    )
}

/// golato's configuration directory (where the user's own AGENTS.md is read).
fn config_dir() -> Option<PathBuf> {
    crate::settings::config::user_file().and_then(|file| file.parent().map(Path::to_path_buf))
}

/// The files a run in `cwd` reads, for `golato config`.
pub(crate) fn for_config(cwd: &Path, trust_given: bool) -> Instructions {
    gather(
        cwd,
        config_dir().as_deref(),
        crate::settings::trust::trusted(cwd, trust_given),
    )
}

/// What a session in `cwd` leaves unread for want of trust (the instruction files), for a
/// client that does not read stderr.
pub(crate) fn unread(cwd: &Path, trusted: bool) -> Option<String> {
    gather(cwd, config_dir().as_deref(), trusted).skipped
}

/// The system prompt: golato's (or `--system`'s) instructions, the environment, then the
/// instruction files; a project's files left unread are said once on stderr.
pub(crate) async fn system_prompt(
    base: Option<String>,
    settings: &crate::settings::Settings,
    header: &crate::view::header::Header,
) -> String {
    let trusted = settings.trusted;
    let found = gather(&header.cwd, config_dir().as_deref(), trusted);
    let skills = crate::setup::skills::gather(
        &header.cwd,
        crate::setup::skills::home().as_deref(),
        trusted,
    );
    for warning in &skills.warnings {
        eprintln!("golato: {}", crate::view::shown::visible(warning));
    }
    if let (Some(why), false) = (&found.skipped, settings.said_no) {
        eprintln!("golato: {}", crate::view::shown::visible(why));
    }
    let mut parts: Vec<String> = base.into_iter().collect();
    parts.push(environment(&header.cwd, &header.sandbox).await);
    if !found.text.is_empty() {
        parts.push(format!(
            "# Project instructions\n\nThe files below (the user's own, then the repository's from its root down to the working directory) say how to work here; the nearer a file is to the working directory, the more it counts.\n{}",
            found.text
        ));
    }
    let skills = crate::setup::skills::prompt_section(&skills.skills);
    if !skills.is_empty() {
        parts.push(skills);
    }
    parts.join("\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_read_from_the_root_down_agents_before_claude_and_only_when_trusted() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::create_dir_all(root.join("crates/app")).unwrap();
        std::fs::write(root.join("AGENTS.md"), "root rules").unwrap();
        std::fs::write(root.join("crates/CLAUDE.md"), "crates rules").unwrap();
        std::fs::write(root.join("crates/app/AGENTS.md"), "app rules").unwrap();
        std::fs::write(root.join("crates/app/CLAUDE.md"), "not read").unwrap();
        let user = tempfile::tempdir().unwrap();
        std::fs::write(user.path().join("AGENTS.md"), "my rules").unwrap();
        let found = gather(&root.join("crates/app"), Some(user.path()), true);
        let names: Vec<_> = found
            .files
            .iter()
            .map(|path| path.display().to_string())
            .collect();
        assert_eq!(
            names,
            [
                user.path().join("AGENTS.md").display().to_string(),
                root.join("AGENTS.md").display().to_string(),
                root.join("crates/CLAUDE.md").display().to_string(),
                root.join("crates/app/AGENTS.md").display().to_string(),
            ]
        );
        let order: Vec<usize> = ["my rules", "root rules", "crates rules", "app rules"]
            .iter()
            .map(|text| found.text.find(text).unwrap())
            .collect();
        assert!(
            order.windows(2).all(|pair| pair[0] < pair[1]),
            "{}",
            found.text
        );
        assert!(!found.text.contains("not read"));
        // Untrusted: the user's own file only, and why the others were not read.
        let untrusted = gather(&root.join("crates/app"), Some(user.path()), false);
        assert_eq!(untrusted.files.len(), 1);
        assert!(untrusted.skipped.unwrap().contains("golato trust"));
    }

    #[test]
    fn instructions_past_the_cap_are_cut_with_a_note() {
        let dir = tempfile::tempdir().unwrap();
        let big = "é".repeat(MAX_INSTRUCTION_BYTES);
        std::fs::write(dir.path().join("AGENTS.md"), &big).unwrap();
        let found = gather(dir.path(), None, true);
        assert!(found.text.len() < MAX_INSTRUCTION_BYTES + 400);
        assert!(found.text.contains("was left out"), "cut with a note");
    }
}
