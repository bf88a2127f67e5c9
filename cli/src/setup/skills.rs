//! Skills in the Agent Skills format: a folder holding `SKILL.md`, whose YAML front matter
//! names the skill and says when to use it, beside any scripts and files it needs. Found in the
//! project's `.agents/skills/` and `.claude/skills/` (in a trusted folder) and the user's
//! `~/.agents/skills/`. Only each skill's name, description and path go into the system
//! prompt; the model reads a skill's body with `read` when it decides to use it.

use std::path::{Path, PathBuf};

/// The most skills listed in the prompt (each is a few lines).
const MAX_SKILLS: usize = 100;
/// The most bytes of a `SKILL.md` read to find its front matter.
const MAX_FRONT_MATTER: u64 = 64 * 1024;

/// A skill found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Skill {
    pub(crate) name: String,
    pub(crate) description: String,
    /// Its `SKILL.md`.
    pub(crate) path: PathBuf,
}

/// The skills found, and the files that could not be read as skills (each with why).
#[derive(Debug, Default)]
pub(crate) struct Found {
    pub(crate) skills: Vec<Skill>,
    pub(crate) warnings: Vec<String>,
}

/// The name and description in `text`'s front matter, or why there are none.
fn front_matter(text: &str) -> Result<(String, String), String> {
    let parsed = crate::setup::front_matter::parse(text, false)?;
    let field = |key: &str| {
        parsed
            .text(key)
            .ok_or_else(|| format!("its front matter has no `{key}` (a text)"))
    };
    Ok((field("name")?, field("description")?))
}

/// The skills in the folders of `dir` (each a folder with a `SKILL.md`), by folder name.
fn in_dir(dir: &Path, found: &mut Found) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut folders: Vec<PathBuf> = entries
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.join("SKILL.md").is_file())
        .collect();
    folders.sort();
    for folder in folders {
        let path = folder.join("SKILL.md");
        let read = std::fs::File::open(&path).and_then(|file| {
            use std::io::Read as _;
            let mut bytes = Vec::new();
            file.take(MAX_FRONT_MATTER).read_to_end(&mut bytes)?;
            Ok(bytes)
        });
        let parsed = match read {
            Ok(bytes) => front_matter(&String::from_utf8_lossy(&bytes)),
            Err(error) => Err(format!("it cannot be read ({error})")),
        };
        match parsed {
            Ok((name, description)) => found.skills.push(Skill {
                name,
                description,
                path,
            }),
            Err(why) => found
                .warnings
                .push(format!("the skill {} was left out: {why}", path.display())),
        }
    }
}

/// The user's skills, then (when `trusted`) the project's, from the repository's root down to
/// `cwd`; a name found twice keeps its first.
pub(crate) fn gather(cwd: &Path, home: Option<&Path>, trusted: bool) -> Found {
    let mut found = Found::default();
    if let Some(home) = home {
        in_dir(&home.join(".agents/skills"), &mut found);
    }
    if trusted {
        let cwd = cwd.canonicalize().unwrap_or_else(|_| cwd.to_owned());
        for dir in crate::settings::project_files::project_dirs(&cwd) {
            in_dir(&dir.join(".agents/skills"), &mut found);
            in_dir(&dir.join(".claude/skills"), &mut found);
        }
    }
    let mut seen = std::collections::HashSet::new();
    found.skills.retain(|skill| seen.insert(skill.name.clone()));
    found.skills.truncate(MAX_SKILLS);
    found
}

/// The largest `SKILL.md` loaded whole into a prompt (`/NAME`, `$NAME`).
const MAX_SKILL_BYTES: u64 = 256 * 1024;

/// A skill's instructions as the person calls it by name: its `SKILL.md` after the front
/// matter, with where it is (its other files are beside it).
pub(crate) fn instructions(skill: &Skill) -> Result<String, String> {
    let text = crate::setup::prompt::read_bounded(&skill.path, MAX_SKILL_BYTES)
        .map_err(|error| format!("the skill {} cannot be read ({error})", skill.name))?;
    let parsed = crate::setup::front_matter::parse(&text, false)?;
    Ok(format!(
        "Use the skill {} for this. Its instructions ({}; its other files are beside it):\n\n{}",
        skill.name,
        skill.path.display(),
        parsed.body.trim()
    ))
}

/// The skills as the system prompt lists them; empty when there are none.
pub(crate) fn prompt_section(skills: &[Skill]) -> String {
    if skills.is_empty() {
        return String::new();
    }
    let mut text = "# Skills\n\nEach skill below is a folder of instructions (and maybe scripts) for one kind of task. When a task matches a skill's description, read its SKILL.md with the read tool first and follow it; its other files are beside it.\n".to_owned();
    for skill in skills {
        text.push_str(&format!(
            "\n- {}: {} ({})",
            skill.name,
            skill.description.replace('\n', " "),
            skill.path.display()
        ));
    }
    text
}

/// `golato skills`: the skills a run here would offer, and the ones left out.
pub(crate) fn command(
    cwd: &Path,
    trust_given: bool,
) -> Result<crate::error::Exit, crate::error::CliError> {
    use std::io::Write as _;
    let trusted = crate::settings::trust::trusted(cwd, trust_given);
    let found = gather(cwd, home().as_deref(), trusted);
    // A project's skills left out are named, with why: "no skills here" would be untrue.
    let mut left_out = 0;
    if !trusted {
        let real = cwd.canonicalize().unwrap_or_else(|_| cwd.to_owned());
        for dir in crate::settings::project_files::project_dirs(&real) {
            for skills in [dir.join(".agents/skills"), dir.join(".claude/skills")] {
                let any =
                    std::fs::read_dir(&skills).is_ok_and(|mut entries| entries.next().is_some());
                if any {
                    left_out += 1;
                    eprintln!(
                        "golato: {} left out: this folder is not trusted (`golato trust {}` trusts it, or pass --trust)",
                        crate::view::shown::visible(&skills.display().to_string()),
                        crate::view::shown::visible(&real.display().to_string())
                    );
                }
            }
        }
    }
    let mut out = std::io::stdout().lock();
    if found.skills.is_empty() && left_out == 0 {
        let _ = writeln!(
            out,
            "no skills here: put a folder with a SKILL.md in .agents/skills/ (this project, when trusted) or ~/.agents/skills/"
        );
    }
    for skill in &found.skills {
        let _ = writeln!(
            out,
            "{}  {}\n    {}",
            crate::view::shown::visible(&skill.name),
            crate::view::shown::visible(&skill.path.display().to_string()),
            crate::view::shown::visible(&skill.description.replace('\n', " "))
        );
    }
    for warning in &found.warnings {
        eprintln!("golato: {}", crate::view::shown::visible(warning));
    }
    Ok(crate::error::Exit::Success)
}

/// The user's home directory.
pub(crate) fn home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|home| !home.is_empty())
        .map(PathBuf::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skill(dir: &Path, folder: &str, text: &str) {
        std::fs::create_dir_all(dir.join(folder)).unwrap();
        std::fs::write(dir.join(folder).join("SKILL.md"), text).unwrap();
    }

    #[test]
    fn skills_are_found_by_their_front_matter_and_a_bad_one_is_a_warning() {
        let project = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        let skills = project.path().join(".agents/skills");
        skill(
            &skills,
            "pdf",
            "---\nname: pdf\ndescription: >\n  Fill and merge PDF forms\n  with the scripts here.\n---\n# PDF\nBody.",
        );
        skill(&skills, "broken", "---\nname: [unclosed\n  still\n---\n");
        skill(&skills, "plain", "no front matter at all");
        // The billion laughs in 386 bytes: refused, not expanded.
        let mut bomb = "---\nname: bomb\na: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n".to_owned();
        for (level, previous) in ["b", "c", "d", "e", "f", "g", "h", "i"]
            .iter()
            .zip(["a", "b", "c", "d", "e", "f", "g", "h"])
        {
            bomb.push_str(&format!(
                "{level}: &{level} [{}]\n",
                vec![format!("*{previous}"); 9].join(",")
            ));
        }
        bomb.push_str("description: boom\n---\n");
        skill(&skills, "bomb", &bomb);
        skill(
            &project.path().join(".claude/skills"),
            "review",
            "---\nname: review\ndescription: Review a change.\n---\n",
        );
        skill(
            &home.path().join(".agents/skills"),
            "mine",
            "---\nname: mine\ndescription: \"My own.\"\n---\n",
        );
        let found = gather(project.path(), Some(home.path()), true);
        let names: Vec<&str> = found
            .skills
            .iter()
            .map(|skill| skill.name.as_str())
            .collect();
        assert_eq!(names, ["mine", "pdf", "review"]);
        assert_eq!(
            found.skills[1].description,
            "Fill and merge PDF forms with the scripts here."
        );
        assert_eq!(found.warnings.len(), 3, "{:?}", found.warnings);
        assert!(found
            .warnings
            .iter()
            .any(|w| w.contains("bomb/SKILL.md") && w.contains("YAML alias (line 3)")));
        assert!(found
            .warnings
            .iter()
            .any(|w| w.contains("broken/SKILL.md") && w.contains("not YAML")));
        assert!(found
            .warnings
            .iter()
            .any(|w| w.contains("plain/SKILL.md") && w.contains("---")));
        let prompt = prompt_section(&found.skills);
        assert!(prompt.contains("- pdf: Fill and merge PDF forms with the scripts here. ("));
        assert!(
            !prompt.contains("Body."),
            "bodies are read when used, not listed"
        );
        // Untrusted: the user's own only.
        let untrusted = gather(project.path(), Some(home.path()), false);
        assert_eq!(untrusted.skills.len(), 1);
    }
}
