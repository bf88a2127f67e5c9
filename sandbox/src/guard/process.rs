//! The guard process: ties a command that runs outside the sandbox to golato's life.
//!
//! golato starts it as `PROGRAM __golato-guard PARENT_PID -- COMMAND…` (or `… --probe`). Under
//! a sandbox the helper's PID namespace ends every process of a command when golato dies; with
//! the sandbox off nothing did, and a killed durable worker's commands ran on beside their
//! retries on another worker. The guard asks the kernel for a signal when golato dies
//! (SIGKILL included), becomes the subreaper of everything the command starts (so a process
//! that daemonizes stays its descendant), and on that signal kills the whole tree. While golato
//! lives it only waits: the command's exit status is its own (a signal by the same signal).

use std::ffi::OsString;
use std::io::Write as _;

use nix::sys::signal::{SigSet, Signal};
use rustix::process::{Pid, WaitOptions};

/// What the guard prints to standard output for `--probe`.
pub(crate) const PROBE_ANSWER: &str = "golato guard";

/// The signal golato's death sends, and golato sends to stop a command's whole tree: one the
/// guard can catch, unlike SIGKILL, and not SIGTERM, which golato sends the command's processes
/// first so that they may clean up (a guard that took SIGTERM as the end would cut that short).
const DEATH_SIGNAL: Signal = Signal::SIGUSR1;

/// The guard's `main`: never returns.
pub(crate) fn main(args: std::env::ArgsOs) -> ! {
    let rest: Vec<OsString> = args.collect();
    match rest.first().and_then(|first| first.to_str()) {
        Some("--probe") => {
            let _ = std::io::stdout().write_all(PROBE_ANSWER.as_bytes());
            std::process::exit(0)
        }
        Some(EXEC_ARG) if rest.len() > 1 => exec_unblocked(&rest[1..]),
        Some(parent) => {
            let parent = parent.parse::<i32>().ok();
            match rest.get(1).and_then(|dash| dash.to_str()) {
                Some("--") if rest.len() > 2 => guard(parent, &rest[2..]),
                _ => refuse("it was started without a command"),
            }
        }
        None => refuse("it was started without its parent's process ID"),
    }
}

fn refuse(why: &str) -> ! {
    tracing::error!("golato's process guard: {why}");
    let _ = writeln!(std::io::stderr(), "golato's process guard: {why}");
    std::process::exit(125)
}

fn guard(parent: Option<i32>, command: &[OsString]) -> ! {
    let signals = SigSet::from_iter([Signal::SIGCHLD, DEATH_SIGNAL, GRACE_SIGNAL, Signal::SIGHUP]);
    // SIGTERM is for the command (golato's grace before SIGKILL): the guard, in the command's
    // process group, keeps it blocked and never takes it. Blocked before anything can arrive;
    // the others are taken with sigwait below. The command starts with an empty mask (the
    // standard library resets it in the child).
    let blocked = SigSet::from_iter([
        Signal::SIGCHLD,
        DEATH_SIGNAL,
        GRACE_SIGNAL,
        Signal::SIGHUP,
        Signal::SIGTERM,
    ]);
    if blocked.thread_block().is_err() {
        refuse("could not block the signals it waits for")
    }
    let _ = rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::USR1));
    // golato may have died before the request above: then the signal never comes.
    let parent_now = rustix::process::getppid().map(|pid| pid.as_raw_nonzero().get());
    if parent.is_none() || parent_now != parent {
        refuse("golato, which started it, is gone")
    }
    let _ = rustix::process::set_child_subreaper(Some(rustix::process::getpid()));
    // Through this program again (`EXEC_ARG`), which unblocks every signal and then becomes
    // the command: a child inherits the guard's blocked signals, and the command must take
    // SIGTERM (golato's grace) and every other signal as it would anywhere.
    let trampoline = std::env::current_exe().unwrap_or_else(|_| "/proc/self/exe".into());
    let command_pid = match std::process::Command::new(trampoline)
        .arg(crate::GUARD_ARG)
        .arg(EXEC_ARG)
        .args(command)
        .spawn()
    {
        Ok(child) => child.id() as i32,
        Err(error) => {
            // Said on standard error, which golato shows as the command's output.
            let _ = writeln!(
                std::io::stderr(),
                "could not start {}: {error}",
                command[0].to_string_lossy()
            );
            std::process::exit(127)
        }
    };
    loop {
        match signals.wait() {
            Ok(Signal::SIGCHLD) => {
                if let Some(status) = reap(command_pid) {
                    end_as(status)
                }
            }
            Ok(GRACE_SIGNAL) => end_gracefully(command_pid),
            Ok(_) => {
                kill_descendants();
                std::process::exit(128 + DEATH_SIGNAL as i32)
            }
            Err(_) => {}
        }
    }
}

/// The signal golato sends to end a command with a grace (`bash_kill`): SIGTERM to every
/// process below the guard, what it adopted included, then SIGKILL after [`GRACE`].
pub(crate) const GRACE_SIGNAL: Signal = Signal::SIGUSR2;

/// How long the processes get between SIGTERM and SIGKILL.
const GRACE: std::time::Duration = std::time::Duration::from_secs(3);

/// SIGTERM to the whole tree, the guard staying while any of it lives (so what it adopted is
/// never orphaned by the command's end), SIGKILL to what is left after [`GRACE`]; then exits as
/// the command did.
fn end_gracefully(command_pid: i32) -> ! {
    let own = own_pid();
    for pid in descendants(own) {
        if let Some(pid) = Pid::from_raw(pid) {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        }
    }
    let until = std::time::Instant::now() + GRACE;
    let mut status = None;
    while std::time::Instant::now() < until {
        if let Some(ended) = reap(command_pid) {
            status = Some(ended);
        }
        if descendants(own).is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    kill_descendants();
    match status.or_else(|| reap(command_pid)) {
        Some(status) => end_as(status),
        None => std::process::exit(128 + Signal::SIGTERM as i32),
    }
}

/// The argument that makes the guard's program the command itself, its signals unblocked.
const EXEC_ARG: &str = "--exec";

/// Unblocks every signal and becomes `command`; says why on standard error (the command's
/// output) and exits 127 when it cannot.
fn exec_unblocked(command: &[OsString]) -> ! {
    let _ = SigSet::all().thread_unblock();
    let error = std::os::unix::process::CommandExt::exec(
        std::process::Command::new(&command[0]).args(&command[1..]),
    );
    let _ = writeln!(
        std::io::stderr(),
        "could not start {}: {error}",
        command[0].to_string_lossy()
    );
    std::process::exit(127)
}

/// Reaps every child that ended (orphans it adopted included); the command's status once it
/// is among them.
fn reap(command_pid: i32) -> Option<rustix::process::WaitStatus> {
    let mut ended = None;
    while let Ok(Some((pid, status))) = rustix::process::wait(WaitOptions::NOHANG) {
        if pid.as_raw_nonzero().get() == command_pid {
            ended = Some(status);
        }
    }
    ended
}

/// Exits as the command did: its code, or the same signal.
fn end_as(status: rustix::process::WaitStatus) -> ! {
    match (status.exit_status(), status.terminating_signal()) {
        (Some(code), _) => std::process::exit(code),
        (None, Some(signal)) => {
            // Taken out of the blocked set so that it ends this process too.
            if let Ok(signal) = Signal::try_from(signal) {
                let _ = SigSet::from_iter([signal]).thread_unblock();
            }
            crate::helper::die_of(signal, 128 + signal)
        }
        (None, None) => std::process::exit(125),
    }
}

/// SIGKILLs every descendant until none is left. A process forking while its parent is
/// killed leaves an orphan, which comes to the guard (the subreaper) and is found next round.
fn kill_descendants() {
    let own = own_pid();
    // Bounded: a tree that keeps growing faster than it is killed would otherwise hold the
    // guard forever; ten thousand rounds take seconds.
    for _ in 0..10_000 {
        let live = descendants(own);
        for pid in &live {
            if let Some(pid) = Pid::from_raw(*pid) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
        }
        let mut reaped = false;
        loop {
            match rustix::process::wait(WaitOptions::NOHANG) {
                Ok(Some(_)) => reaped = true,
                Ok(None) => break,
                // No child at all: every descendant is gone (an orphan would be a child).
                Err(rustix::io::Errno::CHILD) => return,
                Err(_) => break,
            }
        }
        if live.is_empty() && !reaped {
            std::thread::yield_now();
        }
    }
}

/// The live processes below `root`: read from each process's `children` files (only the
/// tree, however many processes the machine runs), else from a scan of all of `/proc`.
fn descendants(root: i32) -> Vec<i32> {
    let mut found = vec![root];
    let mut next = 0;
    while next < found.len() {
        let Some(children) = children(found[next]) else {
            return descendants_by_scan(root);
        };
        found.extend(children);
        next += 1;
    }
    found.remove(0);
    found
}

/// The children of every thread of `pid`; `None` when the kernel has no `children` files.
fn children(pid: i32) -> Option<Vec<i32>> {
    let Ok(threads) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        // Gone meanwhile: no children to find.
        return Some(Vec::new());
    };
    let mut children = Vec::new();
    for thread in threads.flatten() {
        match std::fs::read_to_string(thread.path().join("children")) {
            Ok(list) => children.extend(
                list.split_whitespace()
                    .filter_map(|pid| pid.parse::<i32>().ok()),
            ),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound && pid == own_pid() => {
                return None
            }
            Err(_) => {}
        }
    }
    Some(children)
}

fn own_pid() -> i32 {
    rustix::process::getpid().as_raw_nonzero().get()
}

/// The live processes below `root`, from a scan of every process's `stat`.
fn descendants_by_scan(root: i32) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let processes: Vec<(i32, i32)> = entries
        .filter_map(|entry| {
            let pid: i32 = entry.ok()?.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            // `PID (NAME) STATE PPID …`; the name may hold spaces and parentheses.
            let after_name = &stat[stat.rfind(')')? + 1..];
            let mut fields = after_name.split_whitespace();
            let state = fields.next()?;
            let parent: i32 = fields.next()?.parse().ok()?;
            (state != "Z" && state != "X").then_some((pid, parent))
        })
        .collect();
    let mut found = vec![root];
    let mut next = 0;
    while next < found.len() {
        let parent = found[next];
        found.extend(
            processes
                .iter()
                .filter(|(_, of)| *of == parent)
                .map(|(pid, _)| *pid),
        );
        next += 1;
    }
    found.remove(0);
    found
}
