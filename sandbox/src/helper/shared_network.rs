//! A session's network namespace, on the helper's side: a holder process makes it (with a user
//! namespace that maps the caller, and its loopback up) and keeps it while golato holds its
//! standard input open; each command's helper joins it instead of making a network namespace
//! of its own, so a server a background command started is reachable from later commands, and
//! from nothing else.

use std::io::{Read as _, Write as _};
use std::os::fd::AsFd as _;
use std::os::unix::fs::MetadataExt as _;

use nix::sched::{setns, unshare, CloneFlags};

use super::Stop;

/// The holder a command's helper joins: its process and the inodes of its two namespaces,
/// checked once opened, so that a holder that died and whose process ID was reused is never
/// mistaken for it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Holder {
    pid: u32,
    user: u64,
    net: u64,
}

impl Holder {
    /// `PID:USER_INODE:NET_INODE`.
    pub(super) fn parse(text: &std::ffi::OsStr) -> Option<Holder> {
        let text = text.to_str()?;
        let mut parts = text.split(':').map(str::parse::<u64>);
        let (Some(Ok(pid)), Some(Ok(user)), Some(Ok(net)), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return None;
        };
        Some(Holder {
            pid: u32::try_from(pid).ok()?,
            user,
            net,
        })
    }

    /// Enters the holder's user namespace, then its network namespace.
    pub(super) fn join(&self) -> Result<(), Stop> {
        for (name, inode, kind) in [
            ("user", self.user, CloneFlags::CLONE_NEWUSER),
            ("net", self.net, CloneFlags::CLONE_NEWNET),
        ] {
            let path = format!("/proc/{}/ns/{name}", self.pid);
            let gone = |reason: String| {
                Stop::Failed(format!(
                    "could not join the session's network ({path}: {reason}); its holder has ended: start a new session"
                ))
            };
            let file = std::fs::File::open(&path).map_err(|error| gone(error.to_string()))?;
            let found = file
                .metadata()
                .map_err(|error| gone(error.to_string()))?
                .ino();
            if found != inode {
                return Err(gone(format!(
                    "namespace {found}, not the session's {inode}"
                )));
            }
            setns(file.as_fd(), kind).map_err(|error| gone(error.to_string()))?;
        }
        Ok(())
    }
}

/// The holder: makes the namespaces, says `ready` on standard output, and keeps them until its
/// standard input reaches its end (golato closed it, or died). Never returns.
pub(super) fn hold() -> ! {
    let mut out = std::io::stdout();
    if let Err(stop) = make() {
        let line = match stop {
            Stop::Unsupported(missing) => format!("unsupported {missing}\n"),
            Stop::Failed(reason) => format!("error {reason}\n"),
        };
        let _ = out.write_all(line.as_bytes());
        std::process::exit(125);
    }
    let _ = out.write_all(b"ready\n");
    let _ = out.flush();
    let mut sink = [0u8; 64];
    let mut stdin = std::io::stdin();
    while matches!(stdin.read(&mut sink), Ok(count) if count > 0) {}
    std::process::exit(0)
}

fn make() -> Result<(), Stop> {
    let uid = rustix::process::getuid().as_raw();
    let gid = rustix::process::getgid().as_raw();
    unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNET).map_err(|error| {
        Stop::Unsupported(format!(
            "user and network namespaces are not available ({error})"
        ))
    })?;
    let write = |file: &str, content: String| {
        std::fs::write(file, content)
            .map_err(|error| Stop::Failed(format!("could not write {file}: {error}")))
    };
    write("/proc/self/setgroups", "deny".into())?;
    write("/proc/self/uid_map", format!("0 {uid} 1"))?;
    write("/proc/self/gid_map", format!("0 {gid} 1"))?;
    super::proxy_port::loopback_up()
}
