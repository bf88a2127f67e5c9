//! The search tools against a model of the tree: for any small tree of text files, `grep`
//! with a literal finds exactly the lines that hold it, `find` lists exactly the files its glob
//! names, and `ls` lists exactly a folder's entries.

use crate::support;

use std::collections::BTreeSet;

use golato::builtin;
use proptest::prelude::*;
use serde_json::json;
use support::*;

const WORDS: [&str; 6] = ["apple", "pear", "fig", "plum", "kiwi", "lime"];

/// A file: its folder (none, `a` or `b`), its name and extension, its lines of words.
#[derive(Debug, Clone)]
struct File {
    folder: Option<&'static str>,
    name: String,
    lines: Vec<Vec<&'static str>>,
}

impl File {
    fn path(&self) -> String {
        match self.folder {
            Some(folder) => format!("{folder}/{}", self.name),
            None => self.name.clone(),
        }
    }
}

fn file() -> impl Strategy<Value = File> {
    (
        prop::option::of(prop::sample::select(vec!["a", "b"])),
        "[c-e]{1,3}",
        prop::sample::select(vec!["txt", "rs"]),
        prop::collection::vec(
            prop::collection::vec(prop::sample::select(WORDS.to_vec()), 1..4),
            0..5,
        ),
    )
        .prop_map(|(folder, stem, extension, lines)| File {
            folder,
            name: format!("{stem}.{extension}"),
            lines,
        })
}

/// Files with distinct paths.
fn tree() -> impl Strategy<Value = Vec<File>> {
    prop::collection::vec(file(), 1..10).prop_map(|files| {
        let mut seen = BTreeSet::new();
        files
            .into_iter()
            .filter(|file| seen.insert(file.path()))
            .collect()
    })
}

fn lines_of(text: &str) -> BTreeSet<String> {
    text.lines().map(str::to_owned).collect()
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 64,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn grep_find_and_ls_agree_with_the_tree(files in tree(), word in prop::sample::select(WORDS.to_vec())) {
        let dir = tempfile::tempdir().unwrap();
        for file in &files {
            let path = dir.path().join(file.path());
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            let text: String = file.lines.iter().map(|words| words.join(" ") + "\n").collect();
            std::fs::write(path, text).unwrap();
        }
        let tools = builtin::new(builtin::Config {
            working_directory: dir.path().to_owned(),
            allowed_tool_names: Some(vec!["grep".into(), "find".into(), "ls".into()]),
            ..Default::default()
        })
        .unwrap();

        // grep: every line holding the word, as `path:line: text`, and nothing else.
        let expected: BTreeSet<String> = files
            .iter()
            .flat_map(|file| {
                file.lines.iter().enumerate().filter(|(_, words)| words.join(" ").contains(word)).map(
                    move |(number, words)| format!("{}:{}: {}", file.path(), number + 1, words.join(" ")),
                )
            })
            .collect();
        let found = call_tool(&tools, "grep", &json!({"pattern": word, "literal": true}).to_string());
        prop_assert!(!found.is_error, "{}", found.text());
        if expected.is_empty() {
            prop_assert!(found.text().starts_with("No matches for"), "{}", found.text());
        } else {
            prop_assert_eq!(lines_of(&found.text()), expected);
        }

        // find: exactly the files the glob names, in every folder.
        let rust: BTreeSet<String> = files
            .iter()
            .map(File::path)
            .filter(|path| path.ends_with(".rs"))
            .collect();
        let found = call_tool(&tools, "find", r#"{"pattern": "*.rs"}"#);
        prop_assert!(!found.is_error, "{}", found.text());
        if !rust.is_empty() {
            prop_assert_eq!(lines_of(&found.text()), rust);
        }

        // ls: the top folder's files and folders (folders ending in /).
        let top: BTreeSet<String> = files
            .iter()
            .map(|file| match file.folder {
                Some(folder) => format!("{folder}/"),
                None => file.name.clone(),
            })
            .collect();
        let listed = call_tool(&tools, "ls", "{}");
        prop_assert!(!listed.is_error, "{}", listed.text());
        prop_assert_eq!(lines_of(&listed.text()), top);
    }
}
