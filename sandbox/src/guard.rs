//! The process guard: outside the sandbox, a command's processes still end with golato.

#[cfg(target_os = "linux")]
pub(crate) mod process;

use std::path::{Path, PathBuf};

use super::{Error, GUARD_ARG};

/// How to start a command outside the sandbox so that it never outlives this process.
///
/// Under a sandbox, the helper's PID namespace already ends every process of a command when
/// golato dies. With [`Mode::Off`](super::Mode::Off) and [`Policy::with_guard`](super::Policy::with_guard),
/// golato's `bash` starts its command through the guard: the helper program started with
/// [`GUARD_ARG`], which adopts every process the command starts (also one that daemonizes) and
/// kills them all when this process dies, by SIGKILL too. The guard confines nothing.
///
/// ```no_run
/// use golato_sandbox::{run_helper_if_asked, Guard};
///
/// fn main() -> Result<(), golato_sandbox::Error> {
///     run_helper_if_asked();
///     let guard = Guard::new(None)?;
///     let status = std::process::Command::new(guard.program())
///         .args(guard.args())
///         .args(["bash", "-c", "sleep 1"])
///         .status();
///     # let _ = status;
///     Ok(())
/// }
/// ```
#[derive(Debug, Clone)]
pub struct Guard {
    program: PathBuf,
    parent: String,
}

impl Guard {
    /// The guard of `helper` (`None`: this program), checked to answer as one.
    ///
    /// # Errors
    ///
    /// [`Error::Helper`] when the program cannot be started or does not answer as a guard (its
    /// `main` does not call [`run_helper_if_asked`](super::run_helper_if_asked) first).
    pub fn new(helper: Option<&Path>) -> Result<Guard, Error> {
        let program = match helper {
            Some(helper) => helper.to_owned(),
            None => std::env::current_exe().map_err(|error| Error::Helper {
                program: "(this program)".into(),
                reason: format!("could not find this program's executable: {error}"),
            })?,
        };
        // Once per program and process: a tool set is built per session.
        static ANSWERED: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());
        let mut answered = ANSWERED
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if !answered.contains(&program) {
            probe(&program)?;
            answered.push(program.clone());
        }
        drop(answered);
        Ok(Guard {
            program,
            parent: std::process::id().to_string(),
        })
    }

    /// The program to start.
    pub fn program(&self) -> &Path {
        &self.program
    }

    /// Its arguments before the command's own: [`GUARD_ARG`], this process's ID, `--`.
    pub fn args(&self) -> [&str; 3] {
        [GUARD_ARG, &self.parent, "--"]
    }

    /// Asks the guard with process ID `pid` to end its command's whole tree with a grace:
    /// SIGTERM to every process below it (what it adopted included), SIGKILL to what is left
    /// after 3 s, then it exits as the command did. Gone already is fine.
    pub fn end_with_grace(pid: i32) {
        if let Some(pid) = rustix::process::Pid::from_raw(pid) {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::USR2);
        }
    }

    /// Whether the process `pid` is a guard (started with [`GUARD_ARG`] and a parent's ID,
    /// not a command the guard starts through itself).
    pub fn is_guard(pid: i32) -> bool {
        let Ok(line) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            return false;
        };
        let mut words = line.split(|byte| *byte == 0).skip(1);
        words.next() == Some(GUARD_ARG.as_bytes())
            && words
                .next()
                .is_some_and(|parent| parent.iter().all(u8::is_ascii_digit))
    }

    /// Asks the guard (or the sandbox's helper) with process ID `pid` to end its command's
    /// whole tree now, what it adopted included (the signal golato's death sends it; SIGTERM
    /// it leaves to the command). Gone already is fine.
    pub fn stop(pid: i32) {
        if let Some(pid) = rustix::process::Pid::from_raw(pid) {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::USR1);
        }
    }
}

#[cfg(target_os = "linux")]
fn probe(program: &Path) -> Result<(), Error> {
    let not_a_guard = |reason: String| Error::Helper {
        program: program.to_owned(),
        reason,
    };
    let output = std::process::Command::new(program)
        .args([GUARD_ARG, "--probe"])
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|error| {
            not_a_guard(format!(
                "could not start it: {error}{}",
                super::prepare::limit_hint(&error)
            ))
        })?;
    if output.status.success() && output.stdout == process::PROBE_ANSWER.as_bytes() {
        Ok(())
    } else {
        Err(not_a_guard(format!(
            "asked to act as the process guard, it exited with {} saying {:?}",
            output.status,
            String::from_utf8_lossy(&output.stdout[..output.stdout.len().min(200)])
        )))
    }
}

#[cfg(not(target_os = "linux"))]
fn probe(program: &Path) -> Result<(), Error> {
    Err(Error::Helper {
        program: program.to_owned(),
        reason: "the process guard runs on Linux only".into(),
    })
}
