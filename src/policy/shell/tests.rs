#![allow(clippy::unwrap_used)]

use super::*;

/// Each command's first form.
fn written(line: &str) -> Vec<String> {
    commands(line)
        .commands
        .into_iter()
        .map(|command| command.forms[0].text.clone())
        .collect()
}

/// Every form of every command.
fn seen(line: &str) -> Vec<String> {
    commands(line)
        .commands
        .into_iter()
        .flat_map(|command| command.forms.into_iter().map(|form| form.text))
        .collect()
}

#[test]
fn separators_cut_the_line_into_its_commands() {
    assert_eq!(
        written("git status && rm -rf ~"),
        ["git status", "rm -rf ~"]
    );
    assert_eq!(
        written("a; b || c | d |& e & f\ng"),
        ["a", "b", "c", "d", "e", "f", "g"]
    );
    assert_eq!(written("(cd x && make) ; { ls; }"), ["cd x", "make", "ls"]);
}

#[test]
fn substitutions_functions_and_branches_run_their_commands() {
    assert_eq!(
        written("echo $(rm -rf ~)"),
        ["echo $(rm -rf ~)", "rm -rf ~"]
    );
    assert!(written("echo \"`curl x | sh`\"").contains(&"sh".to_owned()));
    assert!(written("diff <(ls a) b").contains(&"ls a".to_owned()));
    assert!(written("function g { rm f; }; g").contains(&"rm f".to_owned()));
    assert!(written("if a; then b; elif rm f; then c; fi").contains(&"rm f".to_owned()));
    assert!(written("cat <<EOF\n$(rm f)\nEOF").contains(&"rm f".to_owned()));
    // The grammar glues `;` to the delimiter, or hangs words on the here-document.
    assert!(seen("case x in x) cat <<EOF; rm f\nx\nEOF\n;; esac").contains(&"rm f".to_owned()));
    assert!(written("cat <<EOF a b\nx\nEOF").contains(&"cat a b".to_owned()));
}

#[test]
fn quotes_and_escapes_are_read_as_bash_reads_them() {
    assert_eq!(written("echo 'a && b' \"c; d\""), ["echo a && b c; d"]);
    assert_eq!(written("\"rm\" -rf  /"), ["rm -rf /"]);
    assert_eq!(written("r\\m -rf x"), ["rm -rf x"]);
    assert_eq!(written("r''m x"), ["rm x"]);
    assert_eq!(written("ls # ; rm -rf /"), ["ls"]);
    // ANSI-C quoting holds a quote that a splitter took for a closing one.
    assert_eq!(
        written("git status $'\\'' ; rm f #'"),
        ["git status '", "rm f"]
    );
}

#[test]
fn wrappers_and_other_shells_show_the_commands_they_run() {
    for (line, inner) in [
        ("sudo -u root /bin/rm -rf /", "rm -rf /"),
        ("FOO=1 env -i BAR=2 nohup rm x", "rm x"),
        ("timeout -s KILL 5 rm f", "rm f"),
        ("env --chdir . rm f", "rm f"),
        ("env -S 'rm f'", "rm f"),
        ("nice --adjustment 5 rm f", "rm f"),
        ("stdbuf --output L rm f", "rm f"),
        ("ionice --class 3 rm f", "rm f"),
        ("/usr/bin/time -o F rm f", "rm f"),
        ("exec -a x rm f", "rm f"),
        ("coproc rm f", "rm f"),
        ("bash -lc 'rm f'", "rm f"),
        ("sh -xc 'rm f'", "rm f"),
        ("bash -c -- 'rm f'", "rm f"),
        ("eval 'rm f'", "rm f"),
        ("find . -exec rm {} ;", "rm {}"),
        ("xargs -n 1 rm", "rm"),
    ] {
        assert!(
            seen(line).contains(&inner.to_owned()),
            "{line}: {:?}",
            seen(line)
        );
    }
}

#[test]
fn only_plain_lines_are_plain() {
    for line in [
        "git status",
        "git status && git log | head -n 3; git diff 2>&1 >/dev/null",
        "git commit -m 'a message' -m \"another\"",
        "cat <<'EOF'\nit's $x\nEOF",
        "# a comment\ngit status",
    ] {
        assert!(commands(line).plain, "{line}");
    }
    for line in [
        "git status $x",
        "git status \"$HOME\"",
        "X=1 git status",
        "git log > out.txt",
        "git status &",
        "(git status)",
        "f() { git status; }",
        "echo 'open",
        "git $'status'",
        "cat <<EOF\n$x\nEOF",
        "git log <<EOF a\nx\nEOF",
    ] {
        assert!(!commands(line).plain, "{line}");
    }
}

#[test]
fn allowable_forms_are_as_written_and_past_known_wrappers() {
    let forms = |line: &str| -> Vec<String> {
        commands(line)
            .commands
            .into_iter()
            .flat_map(|command| command.forms)
            .filter(|form| form.allowable)
            .map(|form| form.text)
            .collect()
    };
    assert_eq!(
        forms("timeout 5 git status"),
        ["timeout 5 git status", "git status"]
    );
    assert_eq!(forms("./git status"), ["./git status"]);
    assert_eq!(forms("env --unset git rm f"), ["env --unset git rm f"]);
    assert!(forms("git -c alias.x='!rm f' x").is_empty());
    assert!(forms("git {-c,alias.x=y} x").is_empty());
    assert!(forms("g* status").is_empty());
}

#[test]
fn what_nests_too_deep_or_multiplies_is_not_plain() {
    let mut nested = String::from("x");
    for _ in 0..MAX_DEPTH + 2 {
        nested = format!("bash -c {}", shell_quote(&nested));
    }
    assert!(!commands(&nested).plain);
    let wide = "env ".repeat(20_000) + "rm f";
    let found = commands(&wide);
    assert!(!found.plain);
    let parens = "( ".repeat(50_000) + "rm f" + &" )".repeat(50_000);
    assert!(written(&parens).contains(&"rm f".to_owned()));
}

#[test]
fn a_large_misread_line_is_read_once_and_bounded() {
    // A here-document the grammar cannot read, then 20,000 commands.
    let line = "cat <<EOF; ".to_owned() + &"echo $'\\x72'm f; ".repeat(20_000) + "\nx\nEOF";
    let started = std::time::Instant::now();
    let found = commands(&line);
    assert!(!found.plain);
    eprintln!("{} bytes: {:?}", line.len(), started.elapsed());
}

fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}
