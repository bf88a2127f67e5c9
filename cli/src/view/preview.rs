//! What an edit or a write would change, worked out before it runs, so a person approving it
//! sees the diff and not only a path.

use std::path::Path;

/// The largest file a preview reads; past it the question shows the call without a diff.
const PREVIEW_LIMIT: u64 = 4 * 1024 * 1024;

/// The unified diff `tool` would make with `arguments`, relative to `cwd`; `None` for other
/// tools or arguments that do not say (the tool itself then reports what is wrong).
pub(crate) fn change(cwd: &Path, tool: &str, arguments: &serde_json::Value) -> Option<String> {
    let path = arguments["path"].as_str()?;
    let full = cwd.join(path);
    let original = || {
        crate::bounded::read(&full, PREVIEW_LIMIT)
            .ok()
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
    };
    let (before, after) = match tool {
        "write" => {
            let content = arguments["content"].as_str()?;
            (original().unwrap_or_default(), content.to_owned())
        }
        "edit" => {
            let before = original()?;
            let mut after = before.clone();
            for edit in arguments["edits"].as_array()? {
                let (old, new) = (edit["oldText"].as_str()?, edit["newText"].as_str()?);
                // Only an exact, unique match is shown as the file; otherwise the
                // replacements themselves (the tool's fuzzy matching decides at run time).
                if old.is_empty() || after.matches(old).count() != 1 {
                    return Some(replacements(path, arguments));
                }
                after = after.replacen(old, new, 1);
            }
            (before, after)
        }
        _ => return None,
    };
    Some(unified(&before, &after, path, path))
}

/// How long a diff is searched for: past it the diff is still right, only longer than the
/// shortest (`similar` falls back to a coarser answer). A `sed -i` over 80,000 lines took
/// minutes without it.
const DIFF_TIME_LIMIT: std::time::Duration = std::time::Duration::from_secs(1);

/// The unified diff of `before` and `after` by lines, with the given headers, searched for at
/// most [`DIFF_TIME_LIMIT`].
pub(crate) fn unified(before: &str, after: &str, old_header: &str, new_header: &str) -> String {
    similar::TextDiff::configure()
        .timeout(DIFF_TIME_LIMIT)
        .diff_lines(before, after)
        .unified_diff()
        .context_radius(3)
        .header(old_header, new_header)
        .to_string()
}

/// The edit's replacements as removed and added lines.
fn replacements(path: &str, arguments: &serde_json::Value) -> String {
    let mut diff = format!("--- {path}\n+++ {path}\n");
    for edit in arguments["edits"].as_array().into_iter().flatten() {
        diff.push_str("@@ replacement @@\n");
        for line in edit["oldText"].as_str().unwrap_or_default().lines() {
            diff.push_str(&format!("-{line}\n"));
        }
        for line in edit["newText"].as_str().unwrap_or_default().lines() {
            diff.push_str(&format!("+{line}\n"));
        }
    }
    diff
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_edit_is_shown_as_the_diff_of_the_file_and_a_write_against_what_was_there() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "one\ntwo\nthree\n").unwrap();
        let diff = change(
            dir.path(),
            "edit",
            &json!({"path": "a.txt", "edits": [{"oldText": "two", "newText": "2"}]}),
        )
        .unwrap();
        assert!(
            diff.contains("-two\n+2\n") && diff.contains(" one\n"),
            "{diff}"
        );
        let diff = change(
            dir.path(),
            "write",
            &json!({"path": "new.txt", "content": "hi\n"}),
        )
        .unwrap();
        assert!(diff.contains("+hi"), "{diff}");
        let ambiguous = change(
            dir.path(),
            "edit",
            &json!({"path": "a.txt", "edits": [{"oldText": "o", "newText": "0"}]}),
        )
        .unwrap();
        assert!(
            ambiguous.contains("@@ replacement @@\n-o\n+0"),
            "{ambiguous}"
        );
        assert_eq!(change(dir.path(), "bash", &json!({"command": "ls"})), None);
    }
}
