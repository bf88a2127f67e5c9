//! What bash rules decide, against a corpus of lines (the hostile forms of issue 41 and their
//! neighbours) and against bash itself: random lines are run by a real bash with `rm` and `git`
//! replaced by programs that record their calls, and no line that ran `rm` may be anything but
//! denied, no line allowed may have run anything but git.

use std::path::Path;
use std::process::{Command, Stdio};

use golato::policy::{Decision, Rules, Source};
use proptest::prelude::*;
use serde_json::json;

/// `allow bash(git *)` and `deny bash(rm *)`, as the cases use them.
fn git_and_rm() -> Rules {
    let mut rules = Rules::new();
    rules
        .add(
            Decision::Allow,
            "bash(git *)",
            Source::flag("--allow"),
            Path::new("/"),
        )
        .unwrap();
    rules
        .add(
            Decision::Deny,
            "bash(rm *)",
            Source::flag("--deny"),
            Path::new("/"),
        )
        .unwrap();
    rules
}

fn decide(rules: &Rules, line: &str) -> &'static str {
    match rules
        .decide("bash", &json!({ "command": line }), Path::new("/"))
        .map(|verdict| verdict.decision)
    {
        Some(Decision::Allow) => "allow",
        Some(Decision::Deny) => "deny",
        Some(Decision::Ask) => "ask",
        None => "default",
    }
}

#[test]
fn the_corpus_is_decided_as_written_down() {
    let corpus = include_str!("../fixtures/bash_rules_corpus.txt");
    let rules = git_and_rm();
    let mut cases = 0;
    let mut wrong = Vec::new();
    for (number, entry) in corpus.lines().enumerate() {
        if entry.starts_with('#') || entry.is_empty() {
            continue;
        }
        let (expected, line) = entry.split_once('\t').unwrap();
        let line: String = serde_json::from_str(line).unwrap();
        cases += 1;
        let decided = decide(&rules, &line);
        if decided != expected {
            wrong.push(format!(
                "line {}: {line:?}: {decided}, expected {expected}",
                number + 1
            ));
        }
    }
    assert!(cases >= 200, "the corpus holds {cases} cases");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// `'…'` for bash.
fn quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// A program's name spelled as bash may be given it.
fn spelled(name: &'static str) -> impl Strategy<Value = String> {
    let (first, rest) = name.split_at(1);
    prop_oneof![
        Just(name.to_owned()),
        Just(format!("'{name}'")),
        Just(format!("\"{name}\"")),
        Just(format!("\\{name}")),
        Just(format!("{first}''{rest}")),
        Just(format!("\"{first}\"{rest}")),
        Just(format!("$'{name}'")),
        Just(format!("$'\\x{:02x}'{rest}", first.as_bytes()[0])),
    ]
}

/// Wrappers bash and coreutils really run the command after.
const WRAPPERS: &[&str] = &[
    "",
    "env ",
    "env -i PATH=\"$PATH\" ",
    "env -u X ",
    "env --unset X ",
    "env --chdir . ",
    "timeout 5 ",
    "timeout -s KILL 5 ",
    "timeout --signal=KILL 5 ",
    "nice ",
    "nice -n 5 ",
    "nice --adjustment 5 ",
    "nohup ",
    "stdbuf -oL ",
    "stdbuf --output L ",
    "command ",
    "exec ",
    "exec -a x ",
    "exec -a git ",
    "time ",
    "X=1 ",
];

fn simple() -> impl Strategy<Value = String> {
    let program = prop_oneof![
        spelled("rm").prop_map(|rm| format!("{rm} f")),
        spelled("git").prop_map(|git| format!("{git} status")),
        Just("git log".to_owned()),
    ];
    (prop::sample::select(WRAPPERS), program)
        .prop_map(|(wrapper, command)| format!("{wrapper}{command}"))
}

fn line() -> impl Strategy<Value = String> {
    simple().prop_recursive(3, 12, 2, |inner| {
        prop_oneof![
            (
                inner.clone(),
                prop::sample::select(&[" ; ", " && ", " || ", " | ", "\n", " & "][..]),
                inner.clone()
            )
                .prop_map(|(a, separator, b)| format!("{a}{separator}{b}")),
            inner.clone().prop_map(|a| format!("echo $({a})")),
            inner.clone().prop_map(|a| format!("echo \"`{a}`\"")),
            inner
                .clone()
                .prop_map(|a| format!("bash -c {}", quoted(&a))),
            inner.clone().prop_map(|a| format!("sh -xc {}", quoted(&a))),
            inner
                .clone()
                .prop_map(|a| format!("bash -c -- {}", quoted(&a))),
            inner.clone().prop_map(|a| format!("eval {}", quoted(&a))),
            inner.clone().prop_map(|a| format!("{{ {a}; }}")),
            inner.clone().prop_map(|a| format!("( {a} )")),
            inner.clone().prop_map(|a| format!("if true; then {a}; fi")),
            inner
                .clone()
                .prop_map(|a| format!("if false; then :; elif {a}; then :; fi")),
            inner.clone().prop_map(|a| format!("g() {{ {a}; }}; g")),
            inner.clone().prop_map(|a| format!("coproc {a}")),
            inner
                .clone()
                .prop_map(|a| format!("cat <<EOF\n$({a})\nEOF")),
            inner
                .clone()
                .prop_map(|a| format!("git status $'\\'' ; {a} #'")),
            inner.clone().prop_map(|a| format!("env -S {}", quoted(&a))),
            inner.clone().prop_map(|a| format!("echo f | xargs {a}")),
            inner.clone().prop_map(|a| format!("time {{ {a}; }}")),
            inner.clone().prop_map(|a| format!("coproc {{ {a}; }}")),
            inner
                .clone()
                .prop_map(|a| format!("for i in 1; do {a}; done")),
            inner
                .clone()
                .prop_map(|a| format!("while true; do {a}; break; done")),
            inner
                .clone()
                .prop_map(|a| format!("case x in x) {a};; esac")),
            inner.clone().prop_map(|a| format!("! {a}")),
            inner.clone().prop_map(|a| format!("[[ -n $({a}) ]]")),
            inner.clone().prop_map(|a| format!("x=$({a})")),
            inner
                .clone()
                .prop_map(|a| format!("cat <<EOF; {a}\nx\nEOF")),
            inner.prop_map(|a| format!("cat <(\n{a}\n)")),
        ]
    })
}

/// A folder where `rm` and `git` record their calls, and a work folder to run in.
struct Recorder {
    dir: tempfile::TempDir,
}

impl Recorder {
    fn new() -> Recorder {
        let dir = tempfile::tempdir().unwrap();
        let stubs = dir.path().join("stubs");
        std::fs::create_dir_all(&stubs).unwrap();
        std::fs::create_dir_all(dir.path().join("work")).unwrap();
        for name in ["rm", "git"] {
            let stub = stubs.join(name);
            std::fs::write(
                &stub,
                format!("#!/bin/sh\nprintf '%s\\n' \"{name} $*\" >> \"$RECORD\"\n"),
            )
            .unwrap();
            let mut permissions = std::fs::metadata(&stub).unwrap().permissions();
            std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
            std::fs::set_permissions(&stub, permissions).unwrap();
        }
        Recorder { dir }
    }

    /// The programs `line` ran, as bash ran it.
    fn run(&self, line: &str) -> Vec<String> {
        let record = self.dir.path().join("record");
        let _ = std::fs::remove_file(&record);
        let path = format!("{}:/usr/bin:/bin", self.dir.path().join("stubs").display());
        let status = Command::new("timeout")
            .args(["5", "bash", "-c", &format!("{line}\nwait")])
            .env_clear()
            .env("PATH", path)
            .env("RECORD", &record)
            .current_dir(self.dir.path().join("work"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap();
        // bash may loop for ever on a line it misreads itself (an unterminated here-document
        // in a command substitution loses a `break`): what it ran until killed is on record.
        let _ = status;
        std::fs::read_to_string(&record)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Random nesting of quoting, wrappers, separators and shells around `rm`: whatever bash
    /// really runs, a line that ran `rm` is denied, and a line allowed ran only git.
    #[test]
    fn bash_never_runs_an_rm_the_rules_let_through(line in line()) {
        let recorder = Recorder::new();
        let ran = recorder.run(&line);
        let decided = decide(&git_and_rm(), &line);
        if ran.iter().any(|call| call.starts_with("rm ")) {
            prop_assert_eq!(decided, "deny", "bash ran {:?} for {:?}", ran, line);
        }
        if decided == "allow" {
            prop_assert!(ran.iter().all(|call| call.starts_with("git ")), "bash ran {:?} for {:?}", ran, line);
        }
    }
}
