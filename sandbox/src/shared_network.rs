//! One network namespace for all of a session's sandboxed commands.
//!
//! Without it each command gets a network namespace of its own: a server a background command
//! started cannot be reached by the next command. A [`SharedNetwork`] is a holder process that
//! keeps one namespace (its loopback up, nothing else in it) for as long as the value lives;
//! commands started with [`Prepared::joining_args`] join it. It ends when the value is dropped
//! or this process dies (the holder waits for the end of a pipe only this process holds).

use std::ffi::OsString;
use std::io::{BufRead as _, BufReader};
use std::os::unix::fs::MetadataExt as _;
use std::process::{Child, ChildStdin, Command, Stdio};

use crate::{Error, Prepared, HELPER_ARG};

/// A network namespace kept for a session's commands: a holder process keeps it (its loopback
/// up, nothing else in it) while this value lives; commands started with
/// [`Prepared::joining_args`] join it, so a server one of them started is reached by the next.
/// Dropping the value (or this process dying) ends the holder.
#[derive(Debug)]
pub struct SharedNetwork {
    holder: Child,
    /// Closed on drop: the holder then exits.
    life: Option<ChildStdin>,
    /// `PID:USER_INODE:NET_INODE`, what a command's helper is told to join.
    join: OsString,
}

impl SharedNetwork {
    /// Starts the holder for commands of `prepared`.
    ///
    /// # Errors
    /// [`Error::Unsupported`] when the kernel does not allow the namespaces, [`Error::Helper`]
    /// when the helper cannot be started or does not answer as one.
    pub fn start(prepared: &Prepared) -> Result<SharedNetwork, Error> {
        let helper = prepared.helper();
        let failed = |reason: String| Error::Helper {
            program: helper.to_owned(),
            reason,
        };
        let mut holder = Command::new(helper)
            .arg(HELPER_ARG)
            .arg(prepared.spec_json())
            .arg(crate::prepare::HOLD_NETWORK)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|error| failed(format!("could not start it: {error}")))?;
        let life = holder.stdin.take();
        let mut said = String::new();
        if let Some(stdout) = holder.stdout.take() {
            let _ = BufReader::new(stdout).read_line(&mut said);
        }
        let said = said.trim_end();
        if said != "ready" {
            let _ = holder.kill();
            let _ = holder.wait();
            return Err(match said.split_once(' ') {
                Some(("unsupported", missing)) => Error::Unsupported {
                    mode: prepared.mode(),
                    missing: missing.to_owned(),
                },
                Some((_, reason)) => failed(reason.to_owned()),
                None => failed(format!("it said {said:?} instead of ready")),
            });
        }
        let inode = |name: &str| {
            std::fs::metadata(format!("/proc/{}/ns/{name}", holder.id()))
                .map(|metadata| metadata.ino())
                .map_err(|error| failed(format!("could not see its {name} namespace: {error}")))
        };
        let join = format!("{}:{}:{}", holder.id(), inode("user")?, inode("net")?).into();
        tracing::debug!(pid = holder.id(), "shared network namespace ready");
        Ok(SharedNetwork { holder, life, join })
    }

    pub(crate) fn join_arg(&self) -> &OsString {
        &self.join
    }
}

impl Drop for SharedNetwork {
    fn drop(&mut self) {
        drop(self.life.take());
        let _ = self.holder.kill();
        let _ = self.holder.wait();
    }
}
