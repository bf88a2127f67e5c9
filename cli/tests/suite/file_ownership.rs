//! write and edit respect a file's permissions and keep its mode, owner and group; a file with
//! several hard links is changed for every link.
//!
//! Some checks need root (to own files as another user, or to run `golato` as one); they say so
//! and skip when the tests run unprivileged.

use crate::support;

use std::os::unix::fs::MetadataExt;

use serde_json::json;
use support::*;

fn edit_args(path: &str) -> String {
    json!({"path": path, "edits": [{"oldText": "old", "newText": "new"}]}).to_string()
}

#[test]
fn a_file_the_caller_may_not_write_is_refused_even_in_a_writable_directory() {
    let dir = tempfile::tempdir().unwrap();
    // Anyone may create and rename files here: a rename over the file would succeed.
    chmod(dir.path(), 0o777);
    let file = dir.path().join("locked.txt");
    for (tool, arguments) in [
        ("edit", edit_args("locked.txt")),
        (
            "write",
            json!({"path": "locked.txt", "content": "new"}).to_string(),
        ),
    ] {
        std::fs::write(&file, "old\n").unwrap();
        chmod(&file, 0o444);
        let (is_error, text) = if is_root() {
            // Root may write anything; an unprivileged user may not write root's 0444 file.
            let (code, stdout) = golato_as_nobody(tool, &arguments, dir.path());
            (code == Some(1), stdout)
        } else {
            let result = call_tool(&tools_in(dir.path()), tool, &arguments);
            (result.is_error, result.text())
        };
        assert!(is_error, "{tool} of a read-only file succeeded: {text}");
        assert!(
            text.contains("Permission denied") && text.contains("locked.txt"),
            "{tool}: {text}"
        );
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "old\n", "{tool}");
        let metadata = std::fs::metadata(&file).unwrap();
        assert_eq!(metadata.mode() & 0o7777, 0o444, "{tool}: mode kept");
        assert_eq!(
            metadata.uid(),
            rustix::process::geteuid().as_raw(),
            "{tool}"
        );
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert_eq!(names, ["locked.txt"], "{tool}: nothing left beside it");
    }
}

#[test]
fn every_hard_link_sees_an_edit_or_a_write() {
    let dir = tempfile::tempdir().unwrap();
    let first = dir.path().join("first.txt");
    let second = dir.path().join("second.txt");
    std::fs::write(&first, "old\n").unwrap();
    std::fs::hard_link(&first, &second).unwrap();
    let tools = tools_in(dir.path());

    let result = call_tool(&tools, "edit", &edit_args("first.txt"));
    assert!(!result.is_error, "{}", result.text());
    assert_eq!(std::fs::read_to_string(&second).unwrap(), "new\n");

    let result = call_tool(
        &tools,
        "write",
        &json!({"path": "second.txt", "content": "written\n"}).to_string(),
    );
    assert!(!result.is_error, "{}", result.text());
    assert_eq!(std::fs::read_to_string(&first).unwrap(), "written\n");
    assert_eq!(std::fs::metadata(&first).unwrap().nlink(), 2);
}

/// Tests that need root (to give files away, set file capabilities, mount): ignored in an
/// ordinary `cargo test`; `.ci/run` runs them as root (`-- --ignored needs_root`), where they
/// fail, never skip, when the machine cannot do what they need.
mod needs_root {
    use super::*;

    #[test]
    #[ignore = "needs root"]
    fn edit_and_write_keep_the_files_mode_owner_and_group() {
        assert!(is_root(), "run as root");
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("theirs.txt");
        for (tool, arguments) in [
            ("edit", edit_args("theirs.txt")),
            (
                "write",
                json!({"path": "theirs.txt", "content": "new\n"}).to_string(),
            ),
        ] {
            std::fs::write(&file, "old\n").unwrap();
            std::os::unix::fs::chown(&file, Some(NOBODY), Some(NOBODY)).unwrap();
            chmod(&file, 0o640);
            let result = call_tool(&tools_in(dir.path()), tool, &arguments);
            assert!(!result.is_error, "{tool}: {}", result.text());
            assert_eq!(std::fs::read_to_string(&file).unwrap(), "new\n", "{tool}");
            let metadata = std::fs::metadata(&file).unwrap();
            assert_eq!(
                (metadata.uid(), metadata.gid(), metadata.mode() & 0o7777),
                (NOBODY, NOBODY, 0o640),
                "{tool} kept owner, group and mode"
            );
        }
    }

    #[test]
    #[ignore = "needs root"]
    fn an_unprivileged_edit_of_a_file_it_may_write_but_not_own_keeps_the_owner() {
        assert!(is_root(), "run as root");
        let dir = tempfile::tempdir().unwrap();
        chmod(dir.path(), 0o777);
        let file = dir.path().join("shared.txt");
        std::fs::write(&file, "old\n").unwrap();
        chmod(&file, 0o666);
        let (code, stdout) = golato_as_nobody("edit", &edit_args("shared.txt"), dir.path());
        assert_eq!(code, Some(0), "{stdout}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "new\n");
        let metadata = std::fs::metadata(&file).unwrap();
        assert_eq!(
            (metadata.uid(), metadata.mode() & 0o7777),
            (0, 0o666),
            "still root's, not the editor's"
        );
    }

    #[test]
    #[ignore = "needs root"]
    fn a_file_the_caller_may_write_but_not_read_is_still_written() {
        // Opening for reading too (to keep the old content for an in-place rewrite) must not refuse
        // a write-only file: it is replaced by a rename, as before.
        assert!(is_root(), "run as root");
        let dir = tempfile::tempdir().unwrap();
        chmod(dir.path(), 0o777);
        let file = dir.path().join("drop-box.txt");
        std::fs::write(&file, "old\n").unwrap();
        std::os::unix::fs::chown(&file, Some(NOBODY), Some(NOBODY)).unwrap();
        chmod(&file, 0o200);
        let arguments = json!({"path": "drop-box.txt", "content": "new\n"}).to_string();
        let (code, stdout) = golato_as_nobody("write", &arguments, dir.path());
        assert_eq!(code, Some(0), "{stdout}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "new\n");
        assert_eq!(std::fs::metadata(&file).unwrap().mode() & 0o777, 0o200);
    }
}
