//! Every process a bash call started, found again at its end: by the mark the call puts in the
//! command's environment, which every descendant inherits, also one that left the process group
//! (`set -m` jobs, `setsid` daemons) or was reparented to init.

use std::sync::atomic::{AtomicU64, Ordering};

/// The environment variable that marks a call's processes.
pub(super) const MARK_VARIABLE: &str = "GOLATO_BASH_CALL";

/// How many times the sweep looks again after killing: a process may fork between the listing
/// and the kill; its child carries the mark too and is found by the next sweep.
const MAX_SWEEPS: usize = 64;

/// A call's mark: this process's ID, a counter and the time, so two calls never share one.
pub(super) fn new_mark() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.subsec_nanos());
    format!(
        "{}-{}-{nanos:x}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// A process that was killed: its ID and command name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Killed {
    pub(super) pid: i32,
    pub(super) name: String,
    /// golato's own (the sandbox's helper, shown by the kernel as `golato-sandbox` or `exe`):
    /// killed too, but not named to the model or the person as the command's.
    pub(super) internal: bool,
}

/// Kills every process carrying `mark`, sweeping again until none is left; returns them in the
/// order found. golato's own first (the guard or the sandbox's helper), asked to end their
/// tree and waited for (at most [`STOP_WAIT`]): a guard killed before it killed what it adopted
/// would leave a daemon that cleared its environment (`env -i`) behind; then SIGKILL to the
/// rest. A process that cleared its environment is found by neither: the sandbox's PID
/// namespace or the guard is what contains those.
pub(super) fn kill_marked(mark: &str) -> Vec<Killed> {
    let needle = format!("{MARK_VARIABLE}={mark}");
    let own = std::process::id() as i32;
    // All of them are named as killed, also those the guard or helper ends before SIGKILL.
    let mut killed: Vec<Killed> = marked(&needle, own);
    let golatos: Vec<i32> = killed
        .iter()
        .filter(|process| process.internal)
        .map(|process| process.pid)
        .collect();
    for pid in &golatos {
        golato_sandbox::Guard::stop(*pid);
    }
    let until = std::time::Instant::now() + STOP_WAIT;
    while golatos.iter().any(|pid| alive(*pid)) && std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    for _ in 0..MAX_SWEEPS {
        let live = marked(&needle, own);
        if live.is_empty() {
            break;
        }
        for process in live {
            if let Some(pid) = rustix::process::Pid::from_raw(process.pid) {
                // Already gone is fine.
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
            if !killed.contains(&process) {
                killed.push(process);
            }
        }
    }
    killed
}

/// How long [`kill_marked`] waits for golato's own processes to end their trees before it
/// kills what is left itself.
const STOP_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Whether `pid` is a live process (not a zombie).
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|stat| !matches!(name_and_state(&stat).1, None | Some('Z' | 'X')))
}

/// A process's name and state from its `/proc/PID/stat`: "pid (name) state …", the name may
/// hold spaces and parentheses and ends at the last ')'.
fn name_and_state(stat: &str) -> (String, Option<char>) {
    match (stat.find('('), stat.rfind(')')) {
        (Some(open), Some(close)) if open < close => (
            stat[open + 1..close].to_owned(),
            stat[close + 1..].trim_start().chars().next(),
        ),
        _ => (String::from("?"), None),
    }
}

/// Sends `signal` once to every live process carrying `mark` but golato's own (the guard and
/// the sandbox's helper end the whole tree at once on a signal: the command's processes get the
/// signal itself, so SIGTERM leaves them their grace).
pub(super) fn signal_marked(mark: &str, signal: rustix::process::Signal) {
    let needle = format!("{MARK_VARIABLE}={mark}");
    for process in marked(&needle, std::process::id() as i32) {
        if process.internal {
            continue;
        }
        if let Some(pid) = rustix::process::Pid::from_raw(process.pid) {
            let _ = rustix::process::kill_process(pid, signal);
        }
    }
}

/// Whether the process `pid` is golato's own (the guard or the sandbox's helper).
pub(super) fn is_internal(pid: i32) -> bool {
    internal(std::path::Path::new(&format!("/proc/{pid}")))
}

/// Waits (up to 5 s) until no live process carries `mark`: those [`kill_marked`] killed have
/// died.
pub(super) fn wait_gone(mark: &str) {
    if !wait_gone_for(mark, std::time::Duration::from_secs(5)) {
        tracing::warn!(
            mark,
            "processes of a killed command were still alive after 5 s"
        );
    }
}

/// Waits up to `limit` until no live process carries `mark`; whether none does.
pub(super) fn wait_gone_for(mark: &str, limit: std::time::Duration) -> bool {
    let needle = format!("{MARK_VARIABLE}={mark}");
    let own = std::process::id() as i32;
    let until = std::time::Instant::now() + limit;
    loop {
        if marked(&needle, own).is_empty() {
            return true;
        }
        if std::time::Instant::now() >= until {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// The live processes (not zombies) whose environment holds `needle`.
fn marked(needle: &str, own: i32) -> Vec<Killed> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|name| name.parse::<i32>().ok())
        else {
            continue;
        };
        if pid == own {
            continue;
        }
        let dir = entry.path();
        let Ok(environ) = std::fs::read(dir.join("environ")) else {
            continue;
        };
        if !environ
            .split(|byte| *byte == 0)
            .any(|variable| variable == needle.as_bytes())
        {
            continue;
        }
        let stat = std::fs::read_to_string(dir.join("stat")).unwrap_or_default();
        let (name, state) = name_and_state(&stat);
        if state == Some('Z') {
            continue;
        }
        found.push(Killed {
            pid,
            name,
            internal: internal(&dir),
        });
    }
    found
}

/// How a result names what was killed: "3 processes: bash (120), sleep (121), sleep (130)".
pub(super) fn describe(killed: &[Killed]) -> String {
    const SHOWN: usize = 20;
    let killed: Vec<&Killed> = killed.iter().filter(|process| !process.internal).collect();
    let mut names: Vec<String> = killed
        .iter()
        .take(SHOWN)
        .map(|process| format!("{} ({})", process.name, process.pid))
        .collect();
    if killed.len() > SHOWN {
        names.push(format!("and {} more", killed.len() - SHOWN));
    }
    let noun = if killed.len() == 1 {
        "process"
    } else {
        "processes"
    };
    format!("{} {noun}: {}", killed.len(), names.join(", "))
}

/// Whether the process whose `/proc` folder is `dir` runs one of golato's programs.
fn internal(dir: &std::path::Path) -> bool {
    std::fs::read_link(dir.join("exe")).is_ok_and(|exe| {
        exe.file_name()
            .is_some_and(|file| file.to_string_lossy().starts_with("golato"))
    })
}
