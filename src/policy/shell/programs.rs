//! What golato knows of the programs that run other commands: wrappers (`sudo rm`), shells
//! (`bash -c 'rm'`), `eval`, `find -exec`; the few wrappers an allow rule may look through
//! (their options all known); and programs whose options run a command of their own (`git -c`).

/// Programs that run the command in their arguments. A deny rule looks at every word after
/// them that is not an option as the start of that command: no option table can be complete
/// (`timeout -s KILL 5 rm`, `env --chdir . rm`, `nice --adjustment 5 rm`), and a false "this
/// may run rm" only asks.
const WRAPPERS: &[&str] = &[
    "sudo",
    "doas",
    "env",
    "command",
    "builtin",
    "exec",
    "nohup",
    "time",
    "nice",
    "stdbuf",
    "ionice",
    "setsid",
    "timeout",
    "coproc",
    "xargs",
    "busybox",
    "chrt",
    "taskset",
    "flock",
    "chroot",
    "unshare",
    "nsenter",
    "setpriv",
    "runuser",
    "su",
    "watch",
    "strace",
    "ltrace",
    "script",
    "prlimit",
    "numactl",
    "firejail",
    "systemd-run",
    "parallel",
];

/// Programs whose arguments are a command line of their own (`bash -c LINE`, `su -c LINE`).
const SHELLS: &[&str] = &[
    "bash", "sh", "zsh", "dash", "ksh", "mksh", "fish", "busybox", "ash", "su", "runuser",
    "script", "ssh", "eval",
];

/// Shells whose options are bash's (`-c`, clusters such as `-ec`, `-o NAME`): the first word
/// after them is the command line with `-c`, else a script's name, and the rest its arguments.
const POSIX_SHELLS: &[&str] = &["bash", "sh", "dash", "zsh", "ksh", "mksh", "ash"];

/// Of a POSIX shell's words (the shell first), the places of those that are command lines:
/// with `-c`, the first word after the options, else none. `None` for any other program
/// (each of its arguments may be a line).
pub(super) fn shell_lines(words: &[String]) -> Option<Vec<usize>> {
    let program = base_name(words.first()?);
    if !POSIX_SHELLS.contains(&program) {
        return None;
    }
    let mut at = 1;
    let mut runs_line = false;
    while let Some(word) = words.get(at) {
        if word == "--" || word == "-" {
            at += 1;
            break;
        }
        if let Some(long) = word.strip_prefix("--") {
            at += if matches!(long, "rcfile" | "init-file") {
                2
            } else {
                1
            };
            continue;
        }
        let Some(cluster) = word
            .strip_prefix(['-', '+'])
            .filter(|cluster| !cluster.is_empty())
        else {
            break;
        };
        runs_line |= word.starts_with('-') && cluster.contains('c');
        // `-o NAME` and `-O NAME` take the next word.
        at += 1 + cluster.chars().filter(|c| matches!(c, 'o' | 'O')).count();
    }
    Some(match runs_line {
        true => vec![at],
        false => Vec::new(),
    })
}

/// Whether `program` runs the lines it reads on its standard input (a shell, `su`, `ssh`…):
/// a here-document fed to it is a command line.
pub(super) fn reads_lines_on_stdin(program: &str) -> bool {
    let program = base_name(program);
    program != "eval" && SHELLS.contains(&program)
}

/// Which arguments of a program may be a command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Lines {
    /// Any of them (`bash -c rm`).
    All,
    /// Those with a space in them (`env -S 'rm f'`, `watch 'rm f'`): the others are words of
    /// the command the wrapper runs.
    Spaced,
}

/// `rm` for `/bin/rm`: a deny rule about `rm` holds however it is named.
pub(super) fn base_name(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// Whether `program` (as written) runs the command in its arguments.
pub(super) fn is_wrapper(program: &str) -> bool {
    WRAPPERS.contains(&base_name(program))
}

/// Whether `program`'s arguments may be a command line (`bash -c`, `env -S`, `watch 'rm f'`).
pub(super) fn runs_lines(program: &str) -> Option<Lines> {
    let program = base_name(program);
    if SHELLS.contains(&program) {
        Some(Lines::All)
    } else if is_wrapper(program) {
        Some(Lines::Spaced)
    } else {
        None
    }
}

/// `NAME=value`.
pub(super) fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !name.starts_with(|c: char| c.is_ascii_digit())
    })
}

/// The commands `find … -exec CMD … ;` (and `-execdir`, `-ok`, `-okdir`) runs: where each
/// starts in `words`, and where it ends.
pub(super) fn find_exec(words: &[String]) -> Vec<std::ops::Range<usize>> {
    if words.first().map(|program| base_name(program)) != Some("find") {
        return Vec::new();
    }
    let mut found = Vec::new();
    let mut at = 1;
    while at < words.len() {
        if matches!(words[at].as_str(), "-exec" | "-execdir" | "-ok" | "-okdir") {
            let start = at + 1;
            let end = words[start.min(words.len())..]
                .iter()
                .position(|word| word == ";" || word == "+")
                .map_or(words.len(), |offset| start + offset);
            found.push(start.min(end)..end);
            at = end;
        }
        at += 1;
    }
    found
}

/// Where the command run by a wrapper an allow rule may look through starts in `words` (the
/// wrapper first): `timeout 5 git status` is judged as `git status` too. Only wrappers that
/// change nothing the program sees, and only when every option before the command is known;
/// `None` otherwise (`env`, `sudo`, `exec -a`, `time -o FILE` are judged as written).
pub(super) fn transparent(words: &[String]) -> Option<usize> {
    let program = words.first()?;
    // By name only: `./timeout` is a file of the repository.
    let (with_value, flags, then_one): (&[&str], &[&str], bool) = match program.as_str() {
        "timeout" => (
            &["-s", "--signal", "-k", "--kill-after"],
            &["--preserve-status", "--foreground", "-v", "--verbose"],
            true,
        ),
        "nice" => (&["-n", "--adjustment"], &[], false),
        "nohup" => (&[], &[], false),
        "stdbuf" => (
            &["-i", "-o", "-e", "--input", "--output", "--error"],
            &[],
            false,
        ),
        "ionice" => (
            &["-c", "-n", "--class", "--classdata"],
            &["-t", "--ignore"],
            false,
        ),
        "time" => (&[], &["-p"], false),
        _ => return None,
    };
    let mut at = 1;
    while let Some(word) = words.get(at) {
        if word == "--" {
            at += 1;
            break;
        }
        if !word.starts_with('-') || word == "-" {
            break;
        }
        let long_with_value = word
            .split_once('=')
            .is_some_and(|(name, _)| name.starts_with("--") && with_value.contains(&name));
        let short_attached = !word.starts_with("--")
            && word.len() > 2
            && word
                .get(..2)
                .is_some_and(|option| with_value.contains(&option));
        if flags.contains(&word.as_str()) || long_with_value || short_attached {
            // `-p`, `--signal=KILL`, `-sKILL`, `-oL`.
            at += 1;
        } else if with_value.contains(&word.as_str()) {
            at += 2;
        } else if program == "nice" && word[1..].parse::<i32>().is_ok() {
            // `nice -10 make`.
            at += 1;
        } else {
            return None;
        }
    }
    if then_one {
        // timeout's duration.
        words.get(at)?;
        at += 1;
    }
    (at < words.len()).then_some(at)
}

/// Whether a program's own options run a command an allow rule for the program did not mean:
/// git's `-c` (an alias `!cmd`, `core.fsmonitor`, `diff.external`), `--config-env` and
/// `--exec-path`. Such a call is asked, never allowed.
pub(super) fn runs_its_own(words: &[String]) -> bool {
    match words.first().map(String::as_str) {
        Some("git") => {
            let mut at = 1;
            while let Some(word) = words.get(at) {
                if !word.starts_with('-') {
                    return false;
                }
                if word.starts_with("-c")
                    || word.starts_with("--config-env")
                    || word.starts_with("--exec-path")
                {
                    return true;
                }
                // Global options that take the next word.
                let takes = matches!(
                    word.as_str(),
                    "-C" | "--git-dir"
                        | "--work-tree"
                        | "--namespace"
                        | "--super-prefix"
                        | "--list-cmds"
                        | "--attr-source"
                );
                at += if takes { 2 } else { 1 };
            }
            false
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<String> {
        line.split(' ').map(str::to_owned).collect()
    }

    #[test]
    fn wrappers_with_known_options_are_looked_through() {
        assert_eq!(transparent(&words("timeout 5 git status")), Some(2));
        assert_eq!(transparent(&words("timeout -s KILL 5 git")), Some(4));
        assert_eq!(transparent(&words("timeout --signal=KILL 5 git")), Some(3));
        assert_eq!(transparent(&words("nice -n 5 git")), Some(3));
        assert_eq!(transparent(&words("nice -10 git")), Some(2));
        assert_eq!(transparent(&words("stdbuf -oL git")), Some(2));
        assert_eq!(transparent(&words("stdbuf --output L git")), Some(3));
        assert_eq!(transparent(&words("nohup git")), Some(1));
        assert_eq!(transparent(&words("time -p git")), Some(2));
    }

    #[test]
    fn unknown_options_and_other_wrappers_are_not() {
        assert_eq!(transparent(&words("timeout --weird 5 git")), None);
        assert_eq!(transparent(&words("time -o F git")), None);
        assert_eq!(transparent(&words("env git")), None);
        assert_eq!(transparent(&words("exec -a git rm")), None);
        assert_eq!(transparent(&words("./timeout 5 git")), None);
        assert_eq!(transparent(&words("timeout 5")), None);
    }

    #[test]
    fn git_options_that_run_commands_are_seen() {
        assert!(runs_its_own(&words("git -c alias.x=!rm x")));
        assert!(runs_its_own(&words("git -C d -c core.fsmonitor=x status")));
        assert!(runs_its_own(&words("git --exec-path=/tmp status")));
        assert!(runs_its_own(&words("git --config-env=a.b=C status")));
        assert!(!runs_its_own(&words("git status -c")));
        assert!(!runs_its_own(&words("git log --oneline")));
    }

    #[test]
    fn find_exec_commands_are_found() {
        let line = words("find . -name x -exec rm {} ; -print -execdir ls +");
        let ranges = find_exec(&line);
        assert_eq!(ranges.len(), 2);
        assert_eq!(line[ranges[0].clone()].join(" "), "rm {}");
        assert_eq!(line[ranges[1].clone()].join(" "), "ls");
    }
}
