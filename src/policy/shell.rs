//! A bash command line cut into the simple commands it runs, so a rule judges each on its own:
//! `git status && rm -rf ~` is two commands, and `echo $(rm -rf ~)` runs `rm -rf ~` too.
//!
//! This is not a shell: it knows quotes, escapes, the separators (`;`, `&`, `&&`, `||`, `|`,
//! `|&`, newlines, parentheses), command and process substitution (`$(…)`, backticks, `<(…)`,
//! `>(…)`, also inside double quotes), and what runs another command line (`bash -c`, `sh -c`,
//! `eval`) or a command after a wrapper (`sudo`, `env`, `nohup`, …). What it cannot read whole
//! (an open quote, nesting deeper than [`MAX_DEPTH`]) it says so, and no rule allows it.

/// How deep substitutions and `bash -c` may nest before the line counts as unreadable.
pub(crate) const MAX_DEPTH: usize = 8;

/// One simple command: its words, unquoted, joined by single spaces (`git status`), which is
/// what patterns are matched against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Simple(pub(crate) String);

/// The commands a command line runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Commands {
    /// Every simple command, outer ones before the ones they substitute.
    pub(crate) commands: Vec<Simple>,
    /// The line could not be read whole; `commands` holds what was.
    pub(crate) unreadable: bool,
}

/// Cuts `line` into its simple commands.
pub(crate) fn commands(line: &str) -> Commands {
    let mut found = Commands {
        commands: Vec::new(),
        unreadable: false,
    };
    cut(line, 0, &mut found);
    found
}

/// Words that run the command after them (their own options skipped).
const WRAPPERS: &[&str] = &[
    "sudo", "env", "command", "exec", "nohup", "time", "nice", "builtin", "doas", "stdbuf",
    "ionice", "setsid",
];

/// Shells whose `-c` argument is another command line.
const SHELLS: &[&str] = &["bash", "sh", "zsh", "dash", "ksh", "fish"];

fn cut(line: &str, depth: usize, found: &mut Commands) {
    if depth > MAX_DEPTH {
        found.unreadable = true;
        return;
    }
    let mut words: Vec<String> = Vec::new();
    let mut word = String::new();
    // Whether `word` holds a word (an empty quoted string is one).
    let mut in_word = false;
    let mut chars = line.chars().peekable();
    let finish_word = |words: &mut Vec<String>, word: &mut String, in_word: &mut bool| {
        if *in_word {
            words.push(std::mem::take(word));
            *in_word = false;
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('\n') => {}
                Some(next) => {
                    word.push(next);
                    in_word = true;
                }
                None => {}
            },
            '\'' => {
                in_word = true;
                let mut closed = false;
                for next in chars.by_ref() {
                    if next == '\'' {
                        closed = true;
                        break;
                    }
                    word.push(next);
                }
                if !closed {
                    found.unreadable = true;
                }
            }
            '"' => {
                in_word = true;
                let mut closed = false;
                while let Some(next) = chars.next() {
                    match next {
                        '"' => {
                            closed = true;
                            break;
                        }
                        '\\' => {
                            if let Some(escaped) = chars.next() {
                                word.push(escaped);
                            }
                        }
                        '$' if chars.peek() == Some(&'(') => {
                            chars.next();
                            substituted(&mut chars, '$', depth, &mut word, found);
                        }
                        '`' => substituted(&mut chars, '`', depth, &mut word, found),
                        other => word.push(other),
                    }
                }
                if !closed {
                    found.unreadable = true;
                }
            }
            '$' | '<' | '>' if chars.peek() == Some(&'(') => {
                chars.next();
                substituted(&mut chars, c, depth, &mut word, found);
                in_word = true;
            }
            '`' => {
                substituted(&mut chars, '`', depth, &mut word, found);
                in_word = true;
            }
            ';' | '&' | '|' | '\n' | '(' | ')' => {
                finish_word(&mut words, &mut word, &mut in_word);
                simple(std::mem::take(&mut words), depth, found);
            }
            '#' if !in_word => {
                // A comment runs to the end of the line.
                for next in chars.by_ref() {
                    if next == '\n' {
                        break;
                    }
                }
                finish_word(&mut words, &mut word, &mut in_word);
                simple(std::mem::take(&mut words), depth, found);
            }
            c if c.is_whitespace() => finish_word(&mut words, &mut word, &mut in_word),
            other => {
                word.push(other);
                in_word = true;
            }
        }
    }
    finish_word(&mut words, &mut word, &mut in_word);
    simple(words, depth, found);
}

/// A substitution opened by `opener` (`$`, `<`, `>` before a `(` already read, or a backtick):
/// its commands are cut on their own, and its text stays in the word as written.
fn substituted(
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
    opener: char,
    depth: usize,
    word: &mut String,
    found: &mut Commands,
) {
    let inner = match opener {
        '`' => backticked(chars, found),
        _ => balanced(chars, found),
    };
    cut(&inner, depth + 1, found);
    match opener {
        '`' => {
            word.push('`');
            word.push_str(&inner);
            word.push('`');
        }
        _ => {
            word.push(opener);
            word.push('(');
            word.push_str(&inner);
            word.push(')');
        }
    }
}

/// The text up to the `)` that closes an opened `(`, quotes and nested parentheses kept.
fn balanced(chars: &mut std::iter::Peekable<std::str::Chars<'_>>, found: &mut Commands) -> String {
    let mut inner = String::new();
    let mut open = 1usize;
    let mut quote: Option<char> = None;
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some('"'), '\\') | (None, '\\') => {
                inner.push(c);
                if let Some(next) = chars.next() {
                    inner.push(next);
                }
                continue;
            }
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '(') => open += 1,
            (None, ')') => {
                open -= 1;
                if open == 0 {
                    return inner;
                }
            }
            (None, _) => {}
        }
        inner.push(c);
    }
    found.unreadable = true;
    inner
}

/// The text up to the closing backtick.
fn backticked(
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
    found: &mut Commands,
) -> String {
    let mut inner = String::new();
    while let Some(c) = chars.next() {
        match c {
            '`' => return inner,
            '\\' => {
                if let Some(next) = chars.next() {
                    inner.push(next);
                }
            }
            other => inner.push(other),
        }
    }
    found.unreadable = true;
    inner
}

/// Records the simple command `words` make, past assignments, braces and wrappers, and what a
/// shell's `-c` or `eval` runs.
fn simple(words: Vec<String>, depth: usize, found: &mut Commands) {
    let mut words: &[String] = &words;
    loop {
        match words.first().map(String::as_str) {
            Some("{" | "}" | "!" | "then" | "do" | "else" | "if" | "while" | "until") => {
                words = &words[1..];
            }
            Some(word) if is_assignment(word) => words = &words[1..],
            Some(word) if WRAPPERS.contains(&base_name(word)) => {
                let wrapper = base_name(word);
                words = &words[1..];
                // The wrapper's own options (with their values) and, for env, assignments.
                while let Some(next) = words.first() {
                    if takes_value(wrapper, next) {
                        words = words.get(2..).unwrap_or_default();
                    } else if next.starts_with('-') || is_assignment(next) {
                        words = &words[1..];
                    } else {
                        break;
                    }
                }
            }
            Some("timeout") => {
                words = &words[1..];
                while let Some(next) = words.first() {
                    let number = next.chars().next().is_some_and(|c| c.is_ascii_digit());
                    if next.starts_with('-') || number {
                        words = &words[1..];
                    } else {
                        break;
                    }
                }
            }
            _ => break,
        }
    }
    let Some(first) = words.first() else {
        return;
    };
    let program = base_name(first);
    if program == "eval" {
        cut(&words[1..].join(" "), depth + 1, found);
    } else if SHELLS.contains(&program) {
        if let Some(at) = words.iter().position(|word| word == "-c") {
            if let Some(line) = words.get(at + 1) {
                cut(line, depth + 1, found);
            }
        }
    }
    let mut text = String::from(program);
    for word in &words[1..] {
        text.push(' ');
        text.push_str(word);
    }
    found.commands.push(Simple(text));
}

/// Whether `option` of `wrapper` takes the next word as its value (`sudo -u root`).
fn takes_value(wrapper: &str, option: &str) -> bool {
    let options: &[&str] = match wrapper {
        "sudo" => &["-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T"],
        "doas" => &["-u", "-C"],
        "env" => &["-u", "-C", "-S"],
        "nice" => &["-n"],
        "ionice" => &["-c", "-n", "-p"],
        "stdbuf" => &["-i", "-o", "-e"],
        _ => &[],
    };
    options.contains(&option)
}

/// `NAME=value`.
fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !name.starts_with(|c: char| c.is_ascii_digit())
    })
}

/// `rm` for `/bin/rm`: a rule about `rm` holds however it is named.
fn base_name(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use proptest::prelude::*;

    fn texts(line: &str) -> Vec<String> {
        commands(line)
            .commands
            .into_iter()
            .map(|simple| simple.0)
            .collect()
    }

    #[test]
    fn separators_cut_the_line_into_its_commands() {
        assert_eq!(texts("git status && rm -rf ~"), ["git status", "rm -rf ~"]);
        assert_eq!(
            texts("a; b || c | d |& e & f\ng"),
            ["a", "b", "c", "d", "e", "f", "g"]
        );
        assert_eq!(texts("(cd x && make) ; { ls; }"), ["cd x", "make", "ls"]);
    }

    #[test]
    fn substitutions_run_their_own_commands() {
        assert_eq!(texts("echo $(rm -rf ~)"), ["rm -rf ~", "echo $(rm -rf ~)"]);
        assert_eq!(
            texts("echo \"`curl x | sh`\""),
            ["curl x", "sh", "echo `curl x | sh`"]
        );
        assert_eq!(texts("diff <(ls a) b"), ["ls a", "diff <(ls a) b"]);
        assert_eq!(texts("echo \"$(echo $(id))\"").first().unwrap(), "id");
    }

    #[test]
    fn quotes_and_escapes_are_read_as_bash_reads_them() {
        assert_eq!(texts("echo 'a && b' \"c; d\""), ["echo a && b c; d"]);
        assert_eq!(texts("\"rm\" -rf  /"), ["rm -rf /"]);
        assert_eq!(texts("r\\m -rf x"), ["rm -rf x"]);
        assert_eq!(texts("ls # ; rm -rf /"), ["ls"]);
    }

    #[test]
    fn wrappers_assignments_and_other_shells_show_the_command_they_run() {
        assert_eq!(texts("sudo -u root /bin/rm -rf /"), ["rm -rf /"]);
        assert_eq!(texts("FOO=1 env -i BAR=2 nohup git push"), ["git push"]);
        assert_eq!(texts("timeout 5 git push"), ["git push"]);
        assert_eq!(
            texts("bash -c 'git status && git push'"),
            ["git status", "git push", "bash -c git status && git push"]
        );
        assert_eq!(texts("eval git push"), ["git push", "eval git push"]);
    }

    #[test]
    fn what_cannot_be_read_whole_is_said() {
        assert!(commands("echo 'open").unreadable);
        assert!(commands("echo $(open").unreadable);
        assert!(!commands("echo fine").unreadable);
        let deep = "bash -c ".repeat(MAX_DEPTH + 2) + "x";
        // Each level quotes nothing, so each `-c` takes one word: deep nesting needs quotes.
        let mut nested = String::from("x");
        for _ in 0..MAX_DEPTH + 2 {
            nested = format!("echo $({nested})");
        }
        assert!(commands(&nested).unreadable);
        let _ = commands(&deep);
    }

    proptest! {
        /// Whatever the line, cutting it ends, and a command joined after `&&` to any readable
        /// line is among the commands found.
        #[test]
        fn a_command_after_any_line_is_found(line in "[ -~\n]{0,80}") {
            let found = commands(&format!("{line}\n&& rm -rf ~"));
            if !found.unreadable {
                prop_assert!(found.commands.iter().any(|simple| simple.0 == "rm -rf ~"), "{:?}", found);
            }
        }
    }
}
