//! `@` mentions: a file of the workspace named in a prompt, completed by fuzzy matching its
//! path. A mentioned image (or a pasted path to one) is attached to the prompt; other files are
//! left as paths for the model to read with its tools.

use std::path::{Path, PathBuf};

use golato::message::{Content, UserMessage};
use nucleo_matcher::pattern::{CaseMatching, Normalization, Pattern};
use nucleo_matcher::{Config, Matcher};

/// The most files listed for completion: a mention in a huge tree still answers at once.
const MAX_FILES: usize = 20_000;
/// Completions shown at once.
pub(crate) const SHOWN: usize = 5;

/// The workspace's files, relative to it, as git would see them (.gitignore, .ignore and the
/// global excludes respected; hidden files left out).
#[derive(Debug, Default)]
pub(crate) struct Files {
    paths: Vec<String>,
}

impl Files {
    /// Lists the files under `root`, at most [`MAX_FILES`] of them.
    pub(crate) fn scan(root: &Path) -> Files {
        let paths = ignore::WalkBuilder::new(root)
            .require_git(false)
            .build()
            .flatten()
            .filter(|entry| entry.file_type().is_some_and(|kind| kind.is_file()))
            .filter_map(|entry| {
                let relative = entry.path().strip_prefix(root).ok()?;
                Some(relative.to_string_lossy().into_owned())
            })
            .take(MAX_FILES)
            .collect();
        Files { paths }
    }

    /// The best matches for `query` (what follows the `@`), best first.
    pub(crate) fn best(&self, query: &str, count: usize) -> Vec<String> {
        if query.is_empty() {
            return self.paths.iter().take(count).cloned().collect();
        }
        let mut matcher = Matcher::new(Config::DEFAULT.match_paths());
        let pattern = Pattern::parse(query, CaseMatching::Smart, Normalization::Smart);
        let mut found = pattern.match_list(self.paths.iter(), &mut matcher);
        // Equal scores: the shorter path (a file nearer the root) first.
        found
            .sort_by(|(a, score_a), (b, score_b)| score_b.cmp(score_a).then(a.len().cmp(&b.len())));
        found
            .into_iter()
            .take(count)
            .map(|(path, _)| path.clone())
            .collect()
    }
}

/// The mention being typed: the word at the cursor when it starts with `@`.
pub(crate) fn typed(word: Option<&(usize, String)>) -> Option<&str> {
    word.and_then(|(_, word)| word.strip_prefix('@'))
}

/// Whether `path` (relative to `cwd`, or absolute) names an image file.
fn image_path(cwd: &Path, path: &str) -> Option<PathBuf> {
    let extension = Path::new(path)
        .extension()?
        .to_string_lossy()
        .to_lowercase();
    if !matches!(extension.as_str(), "png" | "jpg" | "jpeg" | "gif" | "webp") {
        return None;
    }
    let full = cwd.join(path);
    full.is_file().then_some(full)
}

/// The prompt for `text`: images it mentions (`@path`, or a pasted path on a line of its own,
/// as terminals paste a dragged file) attached after the text; an image that cannot be
/// attached is a problem to tell the person (nothing is sent then).
pub(crate) fn prompt(text: &str, cwd: &Path) -> Result<UserMessage, String> {
    let mut images = Vec::new();
    for word in text.split_whitespace() {
        let (mentioned, path) = match word.strip_prefix('@') {
            Some(path) => (true, path),
            None => (false, word.trim_matches(|c| c == '\'' || c == '"')),
        };
        // A bare path counts only when it is absolute (a dragged file), so ordinary words
        // that happen to end in .png stay words.
        if !mentioned && !path.starts_with('/') {
            continue;
        }
        if let Some(full) = image_path(cwd, path) {
            if !images.contains(&full) {
                images.push(full);
            }
        }
    }
    let mut content = vec![Content::text(text)];
    for path in &images {
        let part = crate::setup::prompt::image_part(path)
            .map_err(|why| format!("{}: {why}", path.display()))?;
        content.push(part);
    }
    Ok(UserMessage { content })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_listed_as_git_sees_them_and_matched_fuzzily() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src/front")).unwrap();
        std::fs::create_dir_all(dir.path().join("target")).unwrap();
        for file in [
            "src/main.rs",
            "src/front/markdown.rs",
            "target/main.o",
            "README.md",
        ] {
            std::fs::write(dir.path().join(file), "").unwrap();
        }
        std::fs::write(dir.path().join(".gitignore"), "target/\n").unwrap();
        let files = Files::scan(dir.path());
        let mut all = files.best("", 10);
        all.sort();
        assert_eq!(all, ["README.md", "src/front/markdown.rs", "src/main.rs"]);
        assert_eq!(files.best("mrs", 1), ["src/main.rs"]);
        assert_eq!(files.best("frmd", 1), ["src/front/markdown.rs"]);
        assert!(files.best("zzz", 5).is_empty());
    }

    #[test]
    fn a_mentioned_image_is_attached_and_a_broken_one_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        // The smallest PNG header `image::guess_format` recognizes.
        std::fs::write(dir.path().join("shot.png"), b"\x89PNG\r\n\x1a\n0000").unwrap();
        std::fs::write(dir.path().join("fake.png"), b"not an image").unwrap();
        let message = prompt("what is in @shot.png", dir.path()).unwrap();
        assert_eq!(message.content.len(), 2);
        assert!(
            matches!(&message.content[1], Content::Image { mime_type, .. } if mime_type == "image/png")
        );
        let plain = prompt("a shot.png word and @missing.png", dir.path()).unwrap();
        assert_eq!(plain.content.len(), 1);
        let error = prompt("@fake.png", dir.path()).unwrap_err();
        assert!(
            error.contains("fake.png") && error.contains("not an image"),
            "{error}"
        );
        let dragged = format!("'{}'", dir.path().join("shot.png").display());
        assert_eq!(prompt(&dragged, dir.path()).unwrap().content.len(), 2);
    }
}
