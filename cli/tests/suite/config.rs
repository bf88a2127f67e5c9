//! Configuration files, profiles and `--config` overrides, as `golato config` shows them and
//! as a run takes them (flags always win).

use crate::support;

use serde_json::json;
use support::cli::*;

/// A user configuration with a profile, and a project one in `project`.
fn configured(project: &std::path::Path) -> std::path::PathBuf {
    let user = project.join("user.toml");
    std::fs::write(
        &user,
        "model = \"user-model\"\nsandbox = \"read-only\"\n[profiles.open]\nsandbox = \"off\"\napprove = \"never\"\n",
    )
    .unwrap();
    std::fs::create_dir(project.join(".golato")).unwrap();
    std::fs::write(
        project.join(".golato/config.toml"),
        "model = \"project-model\"\ntemperature = 0.5\nmcp = [{ command = \"node\", args = [\"s.js\"], env = { TOKEN = \"x\" } }]\n",
    )
    .unwrap();
    user
}

#[test]
fn golato_config_shows_each_setting_in_effect_and_where_it_comes_from() {
    let project = tempfile::tempdir().unwrap();
    let user = configured(project.path());
    let output = golato()
        .env("GOLATO_CONFIG", &user)
        .args([
            "config",
            "--profile",
            "open",
            "--config",
            "max_turns=3",
            "-C",
        ])
        .arg(project.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let text = stdout(&output);
    let line = |key: &str| {
        text.lines()
            .find(|line| line.starts_with(&format!("{key} = ")))
            .unwrap_or_else(|| panic!("no {key} in {text}"))
            .to_owned()
    };
    // The user's file over the project's (a project never overrides its user); the profile
    // over both; --config over all.
    assert!(line("model").contains("\"user-model\""), "{text}");
    assert!(line("model").ends_with("user.toml"), "{text}");
    assert!(
        line("temperature").ends_with(".golato/config.toml"),
        "{text}"
    );
    assert!(
        line("sandbox").contains("\"off\"    # profile open in "),
        "{text}"
    );
    assert!(
        line("max_turns").ends_with("# --config max_turns=3"),
        "{text}"
    );
}

#[test]
fn a_run_takes_its_defaults_from_the_configuration_and_flags_win() {
    let project = tempfile::tempdir().unwrap();
    let user = project.path().join("user.toml");
    std::fs::write(&user, "sandbox = \"off\"\napprove = \"edits\"\n").unwrap();
    let script = script_file(project.path(), "script.jsonl", &[json!({"text": "Hi."})]);
    let start = |flags: &[&str]| {
        let output = golato()
            .env("GOLATO_CONFIG", &user)
            .args(["run", "--json", "-C"])
            .arg(project.path())
            .arg("--script")
            .arg(&script)
            .args(flags)
            .arg("hi")
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(0), "{output:?}");
        of_type(&json_lines(&output), "run_start")[0].clone()
    };
    let configured = start(&[]);
    assert_eq!(configured["sandbox"], "off");
    assert_eq!(configured["approve"], "edits");
    let flagged = start(&["--sandbox", "read-only", "--approve", "never"]);
    assert_eq!(flagged["sandbox"], "read-only");
    assert_eq!(flagged["approve"], "never");
    let overridden = start(&["--config", "sandbox=workspace-write"]);
    assert_eq!(overridden["sandbox"], "workspace-write");
}

#[test]
fn a_bad_configuration_is_a_usage_error_naming_the_file_and_the_key() {
    let project = tempfile::tempdir().unwrap();
    let user = project.path().join("user.toml");
    std::fs::write(&user, "modle = \"typo\"\n").unwrap();
    let output = golato()
        .env("GOLATO_CONFIG", &user)
        .args(["run", "-C"])
        .arg(project.path())
        .arg("hi")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let error = one_error_line(&output);
    assert!(error.contains("user.toml"), "{error}");
    assert!(
        error.contains("line 1: `modle` is not a setting (did you mean `model`?)"),
        "{error}"
    );
    // `golato config`, which the error once pointed at, fails the same way: not named.
    assert!(!error.contains("golato config"), "{error}");
    // Nothing near: every setting is named.
    std::fs::write(&user, "[profiles.x]\nzzzzqq = 1\n").unwrap();
    let output = golato()
        .env("GOLATO_CONFIG", &user)
        .args(["config", "-C"])
        .arg(project.path())
        .output()
        .unwrap();
    let error = one_error_line(&output);
    assert!(
        error.contains("line 2: `zzzzqq` is not a setting; the settings are provider, model"),
        "{error}"
    );
    let output = golato_output(&["config", "--config", "sandbx=off"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(one_error_line(&output)
        .contains("--config sandbx=off: `sandbx` is not a setting (did you mean `sandbox`?)"));

    let output = golato_output(&["run", "--profile", "nope", "hi"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(one_error_line(&output).contains("--profile nope"));
}

#[test]
fn a_configured_budget_ends_a_run_and_a_bad_one_is_a_usage_error() {
    let project = tempfile::tempdir().unwrap();
    let user = project.path().join("user.toml");
    std::fs::write(&user, "sandbox = \"off\"\nmax_tokens = 50\n").unwrap();
    let script = script_file(
        project.path(),
        "script.jsonl",
        &[
            json!({"tool_calls": [{"id": "1", "name": "bash", "arguments": {"command": "true"}}],
                   "usage": {"input_tokens": 100, "output_tokens": 10}}),
            json!({"text": "Done."}),
        ],
    );
    let run = |config: &std::path::Path| {
        golato()
            .env("GOLATO_CONFIG", config)
            .args(["run", "-C"])
            .arg(project.path())
            .arg("--script")
            .arg(&script)
            .arg("go")
            .output()
            .unwrap()
    };
    let output = run(&user);
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let story = story(&output);
    assert!(
        story.contains("110 tokens used, the budget is 50"),
        "{story}"
    );

    std::fs::write(&user, "max_cost = -1.0\n").unwrap();
    let output = run(&user);
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let error = one_error_line(&output);
    assert!(
        error.contains("max_cost") && error.contains("user.toml"),
        "{error}"
    );
}

#[test]
fn a_wrong_typed_setting_is_refused_naming_the_file_the_line_and_the_key() {
    let cases = [
        ("max_cost = \"lots\"", "max_cost", "expected a number"),
        ("sandbox = 5", "sandbox", "expected a string"),
        ("tools = \"read\"", "tools", "expected a list"),
        ("max_turns = -3", "max_turns", "expected a whole number"),
        (
            "context_window = 1.5",
            "context_window",
            "expected a whole number",
        ),
        (
            "mcp = [1, 2]",
            "mcp",
            "a command line (a string) or a table",
        ),
        ("writable = true", "writable", "expected a list"),
    ];
    for (line, key, why) in cases {
        let project = tempfile::tempdir().unwrap();
        std::fs::create_dir(project.path().join(".golato")).unwrap();
        let file = project.path().join(".golato/config.toml");
        std::fs::write(&file, format!("model = \"m\"\n\n{line}\n")).unwrap();
        let output = golato_output(&["config", "--cwd", project.path().to_str().unwrap()]);
        assert_eq!(output.status.code(), Some(2), "{line}: {output:?}");
        let error = one_error_line(&output);
        assert!(
            error.contains(&file.display().to_string()),
            "{line}: {error}"
        );
        assert!(
            error.contains(&format!("line 3: `{key}`")),
            "{line}: {error}"
        );
        assert!(error.contains(why), "{line}: {error}");
    }
}

#[test]
fn golato_skills_lists_a_trusted_projects_skills_and_says_why_one_was_left_out() {
    let dir = tempfile::tempdir().unwrap();
    let skills = dir.path().join(".claude/skills");
    std::fs::create_dir_all(skills.join("deploy")).unwrap();
    std::fs::create_dir_all(skills.join("broken")).unwrap();
    std::fs::write(
        skills.join("deploy/SKILL.md"),
        "---\nname: deploy\ndescription: Ship the service.\n---\nSteps.",
    )
    .unwrap();
    std::fs::write(skills.join("broken/SKILL.md"), "no front matter").unwrap();
    let run = |trust: bool| {
        let mut command = golato();
        command.args(["skills", "-C"]).arg(dir.path());
        if trust {
            command.arg("--trust");
        }
        command.output().unwrap()
    };
    let output = run(true);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let out = String::from_utf8_lossy(&output.stdout);
    assert!(
        out.starts_with("deploy  ") && out.contains("Ship the service."),
        "{out}"
    );
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(err.contains("broken/SKILL.md was left out"), "{err}");
    // Not trusted: the project's skills are not offered, and the ones left out are named.
    let output = run(false);
    let out = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(!out.contains("deploy"), "{out}");
    assert!(!out.contains("no skills here"), "{out}");
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(
        err.contains(".claude/skills left out: this folder is not trusted"),
        "{err}"
    );
}

#[test]
fn a_working_directory_that_is_not_a_folder_is_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("file");
    std::fs::write(&file, "").unwrap();
    for (cwd, why) in [
        (dir.path().join("missing"), "No such file"),
        (file, "not a folder"),
    ] {
        let output = golato()
            .args(["run", "-C"])
            .arg(&cwd)
            .args(["--script", "/nonexistent.jsonl", "hi"])
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "-C {cwd:?}");
        let error = one_error_line(&output);
        assert!(error.contains("cannot work in"), "{error}");
        assert!(error.contains(why), "{error}");
        assert!(error.contains("give -C"), "{error}");
    }
}
