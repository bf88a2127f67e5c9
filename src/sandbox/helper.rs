//! The helper process: confines itself, then becomes the command.
//!
//! It runs as a fresh single-threaded process (a multi-threaded one such as golato's cannot
//! enter a new user namespace), started as `PROGRAM __golato-sandbox SPEC -- COMMAND…` or
//! `… SPEC --probe`. Its standard input is the write end of golato's status pipe: a failure is
//! written there (and the helper exits 125); a command replaces it with `/dev/null` when it
//! starts, which closes the pipe with nothing said; a probe writes what it enforced.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::Write as _;
use std::os::fd::AsFd as _;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};

use landlock::{
    path_beneath_rules, Access, AccessFs, CompatLevel, Compatible, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, Scope, ABI,
};
use nix::mount::{mount, MsFlags};
use nix::sched::{unshare, CloneFlags};

use super::prepare::{Spec, SHM, STATUS_ERROR, STATUS_OK, STATUS_UNSUPPORTED};

/// Devices a confined command may still write (and read): output sinks, sources of bytes, the
/// terminal.
const DEVICES: [&str; 8] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
];

/// Why the helper stopped before the command.
enum Stop {
    /// The kernel lacks a feature the policy needs.
    Unsupported(String),
    /// Anything else.
    Failed(String),
}

/// The helper's `main`: never returns.
pub(super) fn main(mut args: std::env::ArgsOs) -> ! {
    let spec = args
        .next()
        .and_then(|json| serde_json::from_str::<Spec>(&json.to_string_lossy()).ok());
    let Some(spec) = spec else {
        finish(Err(Stop::Failed(
            "its instructions were missing or unreadable (a golato of another version?)".into(),
        )))
    };
    let mode = args.next();
    let command: Vec<OsString> = args.collect();
    let confined = confine(&spec);
    match (mode.as_deref().and_then(|mode| mode.to_str()), confined) {
        (Some("--probe"), Ok(report)) => finish(Ok(report)),
        (Some("--"), Ok(_)) if !command.is_empty() => {
            let error = std::process::Command::new(&command[0])
                .args(&command[1..])
                .stdin(std::process::Stdio::null())
                .exec();
            finish(Err(Stop::Failed(format!(
                "could not start {}: {error}",
                command[0].to_string_lossy()
            ))))
        }
        (_, Ok(_)) => finish(Err(Stop::Failed("it was started without a command".into()))),
        (_, Err(stop)) => finish(Err(stop)),
    }
}

/// Writes the outcome to the status pipe and exits.
fn finish(outcome: Result<String, Stop>) -> ! {
    let (line, code) = match outcome {
        Ok(report) => (format!("{STATUS_OK}{report}"), 0),
        Err(Stop::Unsupported(missing)) => (format!("{STATUS_UNSUPPORTED}{missing}"), 125),
        Err(Stop::Failed(reason)) => (format!("{STATUS_ERROR}{reason}"), 125),
    };
    if let Ok(status) = std::io::stdin().as_fd().try_clone_to_owned() {
        let _ = std::fs::File::from(status).write_all(line.as_bytes());
    }
    std::process::exit(code)
}

fn failed(what: impl std::fmt::Display) -> impl FnOnce(nix::Error) -> Stop {
    move |error| Stop::Failed(format!("{what}: {error}"))
}

/// Confines this process as `spec` says; returns what was enforced.
fn confine(spec: &Spec) -> Result<String, Stop> {
    let uid = rustix::process::getuid().as_raw();
    let gid = rustix::process::getgid().as_raw();
    let mut namespaces = CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNS;
    if !spec.network {
        namespaces |= CloneFlags::CLONE_NEWNET;
    }
    unshare(namespaces).map_err(|error| {
        Stop::Unsupported(format!(
            "user namespaces are not available ({error}); allow them (sysctl user.max_user_namespaces above 0, kernel.unprivileged_userns_clone=1 where it exists, or kernel.apparmor_restrict_unprivileged_userns=0)"
        ))
    })?;
    // Root inside maps to the caller outside: files created keep the caller as owner.
    let write = |file: &str, content: String| {
        std::fs::write(file, content)
            .map_err(|error| Stop::Failed(format!("could not write {file}: {error}")))
    };
    write("/proc/self/setgroups", "deny".into())?;
    write("/proc/self/uid_map", format!("0 {uid} 1"))?;
    write("/proc/self/gid_map", format!("0 {gid} 1"))?;
    mount_read_only(spec)?;
    std::env::set_current_dir(&spec.cwd).map_err(|error| {
        Stop::Failed(format!(
            "could not enter the working directory {}: {error}",
            spec.cwd.display()
        ))
    })?;
    // Nothing for the command to regain: an empty bounding set leaves root inside the
    // namespace without capabilities once it starts the command.
    for bit in 0..64 {
        let _ = rustix::thread::remove_capability_from_bounding_set(
            rustix::thread::CapabilitySet::from_bits_retain(1 << bit),
        );
    }
    let landlock = restrict_paths(spec)?;
    let network = if spec.network {
        "network allowed".to_owned()
    } else {
        refuse_sockets()?;
        "no network (own network namespace; Unix-domain sockets and io_uring refused)".to_owned()
    };
    Ok(format!(
        "read-only mounts but {} writable root(s); {landlock}; {network}",
        spec.writable.len()
    ))
}

/// A private mount namespace: writable roots bound on themselves, denied paths hidden, every
/// other mount read-only.
fn mount_read_only(spec: &Spec) -> Result<(), Stop> {
    let none = None::<&str>;
    mount(none, "/", none, MsFlags::MS_REC | MsFlags::MS_PRIVATE, none)
        .map_err(failed("could not make the mounts private"))?;
    for root in &spec.writable {
        mount(
            Some(root),
            root,
            none,
            MsFlags::MS_BIND | MsFlags::MS_REC,
            none,
        )
        .map_err(failed(format_args!("could not bind {}", root.display())))?;
    }
    for denied in &spec.denied {
        let Ok(metadata) = std::fs::metadata(denied) else {
            continue;
        };
        let hidden = if metadata.is_dir() {
            mount(
                Some("tmpfs"),
                denied,
                Some("tmpfs"),
                MsFlags::MS_RDONLY | MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
                Some("mode=000,size=0"),
            )
        } else {
            mount(Some("/dev/null"), denied, none, MsFlags::MS_BIND, none)
        };
        hidden.map_err(failed(format_args!("could not hide {}", denied.display())))?;
    }
    if spec.private_shm {
        mount(
            Some("tmpfs"),
            SHM,
            Some("tmpfs"),
            MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
            Some("mode=1777"),
        )
        .map_err(failed(format_args!("could not mount a private {SHM}")))?;
    }
    let table = std::fs::read_to_string("/proc/self/mountinfo")
        .map_err(|error| Stop::Failed(format!("could not read /proc/self/mountinfo: {error}")))?;
    for (point, options) in table.lines().filter_map(mount_point) {
        if spec.writable.iter().any(|root| point.starts_with(root))
            || (spec.private_shm && point.starts_with(SHM))
        {
            continue;
        }
        // A mount inherited from the parent namespace keeps its locked flags; leaving one
        // out would be refused.
        let mut flags = MsFlags::MS_REMOUNT | MsFlags::MS_BIND | MsFlags::MS_RDONLY;
        for option in options.split(',') {
            flags |= match option {
                "nosuid" => MsFlags::MS_NOSUID,
                "nodev" => MsFlags::MS_NODEV,
                "noexec" => MsFlags::MS_NOEXEC,
                "noatime" => MsFlags::MS_NOATIME,
                "nodiratime" => MsFlags::MS_NODIRATIME,
                "relatime" => MsFlags::MS_RELATIME,
                _ => MsFlags::empty(),
            };
        }
        match mount(none, &point, none, flags, none) {
            // Gone since the table was read, or under a mount that hides it.
            Ok(()) | Err(nix::Error::ENOENT) => {}
            Err(error) => {
                return Err(Stop::Failed(format!(
                    "could not make {} read-only: {error}",
                    point.display()
                )))
            }
        }
    }
    Ok(())
}

/// A line of `/proc/self/mountinfo`: the mount point and its per-mount options.
fn mount_point(line: &str) -> Option<(PathBuf, &str)> {
    let mut fields = line.split(' ').skip(4);
    let point = unescape(fields.next()?);
    Some((point, fields.next()?))
}

/// Undoes mountinfo's octal escapes (`\040` for a space, …).
fn unescape(field: &str) -> PathBuf {
    use std::os::unix::ffi::OsStringExt as _;
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        let escaped = bytes
            .get(index + 1..index + 4)
            .filter(|_| bytes[index] == b'\\')
            .and_then(|digits| std::str::from_utf8(digits).ok())
            .and_then(|digits| u8::from_str_radix(digits, 8).ok());
        match escaped {
            Some(byte) => {
                out.push(byte);
                index += 4;
            }
            None => {
                out.push(bytes[index]);
                index += 1;
            }
        }
    }
    PathBuf::from(OsString::from_vec(out))
}

/// Landlock: reading and running anywhere, writing beneath the writable roots and to the
/// devices; signals and abstract sockets scoped to the sandbox where the kernel can.
fn restrict_paths(spec: &Spec) -> Result<String, Stop> {
    let abi = ABI::V6;
    let landlock = |error: landlock::RulesetError| Stop::Failed(format!("Landlock: {error}"));
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(abi))
        .map_err(landlock)?
        .scope(Scope::Signal)
        .map_err(landlock)?;
    if !spec.network {
        ruleset = ruleset.scope(Scope::AbstractUnixSocket).map_err(landlock)?;
    }
    let devices: Vec<&Path> = DEVICES
        .iter()
        .map(Path::new)
        .filter(|device| device.exists())
        .collect();
    let status = ruleset
        .create()
        .map_err(landlock)?
        .add_rules(path_beneath_rules(["/"], AccessFs::from_read(abi)))
        .map_err(landlock)?
        .add_rules(path_beneath_rules(&spec.writable, AccessFs::from_all(abi)))
        .map_err(landlock)?
        .add_rules(path_beneath_rules(
            spec.private_shm.then_some(SHM),
            AccessFs::from_all(abi),
        ))
        .map_err(landlock)?
        .add_rules(path_beneath_rules(devices, AccessFs::from_file(abi)))
        .map_err(landlock)?
        .restrict_self()
        .map_err(landlock)?;
    match status.ruleset {
        RulesetStatus::NotEnforced => Err(Stop::Unsupported(
            "Landlock is not enabled in this kernel (it needs Linux 5.13 or later with landlock in the lsm= boot parameter)".into(),
        )),
        RulesetStatus::FullyEnforced => {
            Ok("Landlock fully enforced (signals scoped to the sandbox)".into())
        }
        RulesetStatus::PartiallyEnforced => Ok(
            "Landlock partly enforced: this kernel predates some of its rules (signals are scoped only from Linux 6.12)".into(),
        ),
    }
}

/// seccomp: Unix-domain sockets (a path to a local daemon leaves the network namespace) and
/// io_uring (which could open sockets past the filter) are refused.
fn refuse_sockets() -> Result<(), Stop> {
    use seccompiler::{
        BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
        SeccompRule, TargetArch,
    };
    let seccomp = |error: seccompiler::BackendError| Stop::Failed(format!("seccomp: {error}"));
    let unix = SeccompCondition::new(
        0,
        SeccompCmpArgLen::Dword,
        SeccompCmpOp::Eq,
        nix::libc::AF_UNIX as u64,
    )
    .map_err(seccomp)?;
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    rules.insert(
        nix::libc::SYS_socket,
        vec![SeccompRule::new(vec![unix]).map_err(seccomp)?],
    );
    rules.insert(nix::libc::SYS_io_uring_setup, Vec::new());
    let arch = TargetArch::try_from(std::env::consts::ARCH)
        .map_err(|error| Stop::Unsupported(format!("seccomp on this architecture: {error}")))?;
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(nix::libc::EACCES as u32),
        arch,
    )
    .map_err(seccomp)?;
    let program: BpfProgram = filter.try_into().map_err(seccomp)?;
    seccompiler::apply_filter(&program).map_err(|error| Stop::Failed(format!("seccomp: {error}")))
}
