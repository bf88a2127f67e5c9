//! The helper process: confines itself, then starts the command.
//!
//! Two stages, both this program. golato starts the first as `PROGRAM __golato-sandbox SPEC --
//! COMMAND…` (or `… SPEC --probe`): a fresh single-threaded process (a multi-threaded one such
//! as golato's cannot enter a new user namespace) that makes the namespaces (user, mount, PID,
//! IPC, and network unless allowed), builds the file system's view and starts the second stage
//! as `… SPEC --inside …`. The second is the first process of the new PID namespace: it mounts
//! a `/proc` and a `/dev` of its own, leaves the terminal's session, drops capabilities, applies
//! Landlock and seccomp, closes what it inherited, and starts the command with secrets taken out
//! of its environment. When the command ends the second stage writes how (`exit N`, `signal N`)
//! on a pipe to the first and exits, and the kernel ends every process left in the namespace;
//! the first ends the same way (by the signal itself, so golato sees what bash saw). When the
//! first stage is killed, the second dies with it.
//!
//! With `--capture STAGE` before `--`, the first stage first covers the working directory with
//! an overlay whose upper layer is in STAGE (see [`crate::capture`]); where it cannot, it
//! leaves the reason there and the command runs uncaptured.
//!
//! Standard input of both is the write end of golato's status pipe: a failure is written there
//! (and the helper exits 125); both let go of it once the command starts, which closes the pipe
//! with nothing said; a probe writes what it enforced.

mod mounts;
mod proxy_port;
mod seccomp;
mod shared_network;

use std::ffi::OsString;
use std::io::{Read as _, Write as _};
use std::os::fd::{AsFd as _, AsRawFd as _};
use std::os::unix::process::ExitStatusExt as _;
use std::path::Path;

use landlock::{
    path_beneath_rules, Access, AccessFs, CompatLevel, Compatible, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, Scope, ABI,
};
use nix::sched::{unshare, CloneFlags};

use super::prepare::{
    Spec, CAPTURE, HOLD_NETWORK, JOIN_NETWORK, PROXY, SHM, STATUS_ERROR, STATUS_OK,
    STATUS_UNSUPPORTED,
};
use super::HELPER_ARG;

/// Devices a confined command may still write (and read): output sinks, sources of bytes, the
/// terminal (which, outside its session, it cannot open).
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

/// The second stage's first argument after the spec.
const INSIDE: &str = "--inside";

/// Why the helper stopped before the command.
enum Stop {
    /// The kernel lacks a feature the policy needs.
    Unsupported(String),
    /// Anything else.
    Failed(String),
}

/// The helper's `main`: never returns.
pub(super) fn main(mut args: std::env::ArgsOs) -> ! {
    let spec_json = args.next().unwrap_or_default();
    let Ok(spec) = serde_json::from_str::<Spec>(&spec_json.to_string_lossy()) else {
        finish(Err(Stop::Failed(
            "its instructions were missing or unreadable (a golato of another version?)".into(),
        )))
    };
    let rest: Vec<OsString> = args.collect();
    if rest.first().and_then(|first| first.to_str()) == Some(INSIDE) {
        finish(inside(&spec, &rest[1..]))
    }
    if rest.first().and_then(|first| first.to_str()) == Some(HOLD_NETWORK) {
        shared_network::hold()
    }
    let mut options = Options::default();
    let mut rest = rest.as_slice();
    loop {
        match (rest.first().and_then(|first| first.to_str()), rest.get(1)) {
            (Some(CAPTURE), Some(stage)) => options.capture = Some(Path::new(stage)),
            (Some(PROXY), Some(socket)) => options.proxy = Some(Path::new(socket)),
            (Some(JOIN_NETWORK), Some(holder)) => {
                options.join = Some(shared_network::Holder::parse(holder).unwrap_or_else(|| {
                    finish(Err(Stop::Failed(format!(
                        "{JOIN_NETWORK} {} is not PID:INODE:INODE",
                        holder.to_string_lossy()
                    ))))
                }))
            }
            _ => break,
        }
        rest = &rest[2..];
    }
    finish(outside(&spec, &spec_json, &options, rest))
}

/// The first stage's options, before the task.
#[derive(Default)]
struct Options<'a> {
    /// `--capture STAGE`: the staging area of the command's changes.
    capture: Option<&'a Path>,
    /// `--proxy SOCKET`: where to send the proxy address's listening socket.
    proxy: Option<&'a Path>,
    /// `--join-network HOLDER`: the session's network namespace to join.
    join: Option<shared_network::Holder>,
}

/// What comes after the spec: `--probe`, or `--` and the command.
enum Task<'a> {
    Probe,
    Command(&'a [OsString]),
}

fn task(rest: &[OsString]) -> Result<Task<'_>, Stop> {
    match rest.first().and_then(|first| first.to_str()) {
        Some("--probe") => Ok(Task::Probe),
        Some("--") if rest.len() > 1 => Ok(Task::Command(&rest[1..])),
        _ => Err(Stop::Failed("it was started without a command".into())),
    }
}

/// The first stage: namespaces and the file system's view, then the second stage; exits as
/// the second did.
fn outside(
    spec: &Spec,
    spec_json: &OsString,
    options: &Options<'_>,
    rest: &[OsString],
) -> Result<String, Stop> {
    // Dies with golato (the thread that started it, a runtime's long-lived thread), and the
    // second stage and the whole namespace with it: a sandboxed command never outlives
    // golato, even one killed with SIGKILL.
    let _ = rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL));
    task(rest)?;
    let uid = rustix::process::getuid().as_raw();
    let gid = rustix::process::getgid().as_raw();
    let mut namespaces =
        CloneFlags::CLONE_NEWNS | CloneFlags::CLONE_NEWPID | CloneFlags::CLONE_NEWIPC;
    match &options.join {
        // The holder's user namespace maps this user already, and its network is the session's.
        Some(holder) => holder.join()?,
        None => namespaces |= CloneFlags::CLONE_NEWUSER,
    }
    if !spec.network && options.join.is_none() {
        namespaces |= CloneFlags::CLONE_NEWNET;
    }
    unshare(namespaces).map_err(|error| {
        Stop::Unsupported(format!(
            "user namespaces are not available, or not with mount, PID and IPC namespaces inside ({error}); allow them (sysctl user.max_user_namespaces above 0, kernel.unprivileged_userns_clone=1 where it exists, or kernel.apparmor_restrict_unprivileged_userns=0)"
        ))
    })?;
    // Root inside maps to the caller outside: files created keep the caller as owner.
    let write = |file: &str, content: String| {
        std::fs::write(file, content)
            .map_err(|error| Stop::Failed(format!("could not write {file}: {error}")))
    };
    if options.join.is_none() {
        write("/proc/self/setgroups", "deny".into())?;
        write("/proc/self/uid_map", format!("0 {uid} 1"))?;
        write("/proc/self/gid_map", format!("0 {gid} 1"))?;
    }
    if let Some(port) = spec.proxy_port {
        // Before the mounts: the caller's socket may lie where the view hides (a private
        // TMPDIR).
        proxy_port::open(port, options.proxy)?;
    }
    mounts::file_system(spec, options.capture)?;
    // The second stage says here how the command ended (it cannot die of the command's signal
    // itself: a namespace's first process ignores its own). Not close-on-exec, so the second
    // stage inherits the write end; it is told the number.
    let (fate_reader, fate_writer) = rustix::pipe::pipe()
        .map_err(|error| Stop::Failed(format!("could not create a pipe: {error}")))?;
    // Opened before the second stage starts: it shares this mount namespace and covers /dev
    // with a fresh one, where /dev/null appears only a moment later.
    let null = std::fs::File::open("/dev/null")
        .map_err(|error| Stop::Failed(format!("could not open /dev/null: {error}")))?;
    let mut second = std::process::Command::new("/proc/self/exe")
        .arg(HELPER_ARG)
        .arg(spec_json)
        .arg(INSIDE)
        .arg(fate_writer.as_raw_fd().to_string())
        .args(rest)
        .spawn()
        .map_err(|error| Stop::Failed(format!("could not start its second stage: {error}")))?;
    drop(fate_writer);
    // Only the second stage holds the status pipe now: it closes when the command starts.
    let _ = rustix::stdio::dup2_stdin(&null);
    let mut fate = String::new();
    let _ = std::fs::File::from(fate_reader).read_to_string(&mut fate);
    let status = second
        .wait()
        .map_err(|error| Stop::Failed(format!("could not wait for its second stage: {error}")))?;
    match fate.split_once(' ') {
        Some(("exit", code)) => std::process::exit(code.parse().unwrap_or(125)),
        Some(("signal", signal)) => die_of(signal.parse().unwrap_or(0), 125),
        // The second stage itself was killed (or failed before the command): end as it did.
        _ => die_of(status.signal().unwrap_or(0), status.code().unwrap_or(125)),
    }
}

/// Ends this process by `signal` when it is one, else exits with `code`.
pub(crate) fn die_of(signal: i32, code: i32) -> ! {
    if let Some(signal) = rustix::process::Signal::from_named_raw(signal) {
        // No core file of the helper for the command's crash.
        let _ = rustix::process::setrlimit(
            rustix::process::Resource::Core,
            rustix::process::Rlimit {
                current: Some(0),
                maximum: None,
            },
        );
        let _ = rustix::process::kill_process(rustix::process::getpid(), signal);
    }
    std::process::exit(code)
}

/// The second stage, the PID namespace's first process: the rest of the confinement, then the
/// command (reaping whatever it leaves behind) or the probe's report.
fn inside(spec: &Spec, rest: &[OsString]) -> Result<String, Stop> {
    // Dies with the first stage, which is what golato kills.
    let _ = rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL));
    let (fate, rest) = rest
        .split_first()
        .ok_or_else(|| Stop::Failed("it was started without its fate pipe".into()))?;
    let task = task(rest)?;
    mounts::proc_and_dev(spec)?;
    // Reopened (close-on-exec) before Landlock, which would refuse opening it for writing; the
    // inherited descriptor is closed for the command below with the rest.
    let mut fate = std::fs::OpenOptions::new()
        .write(true)
        .open(format!("/proc/self/fd/{}", fate.to_string_lossy()))
        .map_err(|error| Stop::Failed(format!("could not open its fate pipe: {error}")))?;
    // A session of its own: no controlling terminal, so nothing can be pushed into the user's
    // (TIOCSTI) or read from it.
    rustix::process::setsid()
        .map_err(|error| Stop::Failed(format!("could not start a new session: {error}")))?;
    close_inherited()?;
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
    seccomp::install(spec.network)?;
    let network = match (spec.network, spec.proxy_port) {
        (true, _) => "network allowed",
        (false, Some(_)) => "network by domain only, through golato's proxy (own network namespace whose loopback holds the proxy's address; Unix-domain and vsock sockets refused)",
        (false, None) => "no network (own network namespace; Unix-domain and vsock sockets refused)",
    };
    let report = format!(
        "read-only mounts but {} writable root(s); own PID, IPC and mount namespaces, /proc and /dev; new session; {landlock}; {network}; keyrings and io_uring refused",
        spec.writable.len()
    );
    let command = match task {
        Task::Probe => return Ok(report),
        Task::Command(command) => command,
    };
    let command_pid = std::process::Command::new(&command[0])
        .args(&command[1..])
        .env_clear()
        .envs(passed_environment(spec))
        .stdin(std::process::Stdio::null())
        .spawn()
        .map_err(|error| {
            Stop::Failed(format!(
                "could not start {}: {error}",
                command[0].to_string_lossy()
            ))
        })?
        .id();
    let null = std::fs::File::open("/dev/null")
        .map_err(|error| Stop::Failed(format!("could not open /dev/null: {error}")))?;
    let _ = rustix::stdio::dup2_stdin(&null);
    // As the namespace's first process it adopts every orphan: reap them all until the command
    // itself ends; then exiting ends the rest.
    let (line, code) = loop {
        match rustix::process::wait(rustix::process::WaitOptions::empty()) {
            Ok(Some((pid, status))) if pid.as_raw_nonzero().get() as u32 == command_pid => {
                break match (status.exit_status(), status.terminating_signal()) {
                    (Some(code), _) => (format!("exit {code}"), code),
                    (None, Some(signal)) => (format!("signal {signal}"), 128 + signal),
                    (None, None) => ("exit 125".to_owned(), 125),
                };
            }
            Ok(_) | Err(rustix::io::Errno::INTR) => {}
            Err(error) => {
                return Err(Stop::Failed(format!(
                    "could not wait for the command: {error}"
                )))
            }
        }
    };
    let _ = fate.write_all(line.as_bytes());
    std::process::exit(code)
}

/// Variables named like secrets (`*KEY*`, `*TOKEN*`, `*SECRET*`, `*PASSWORD*`, …) stay out of
/// the command's environment unless the policy passes them on.
fn passed_environment(spec: &Spec) -> impl Iterator<Item = (OsString, OsString)> + '_ {
    std::env::vars_os()
        .filter(move |(name, _)| {
            let name = name.to_string_lossy();
            spec.pass_env.iter().any(|passed| *passed == name) || !super::looks_secret(&name)
        })
        .filter(|(name, _)| spec.command_tmpdir.is_none() || name != "TMPDIR")
        .chain(
            spec.command_tmpdir
                .iter()
                .map(|tmpdir| ("TMPDIR".into(), tmpdir.clone().into_os_string())),
        )
        .chain(
            spec.proxy_port
                .into_iter()
                .flat_map(proxy_port::variables)
                .map(|(name, value)| (name.into(), value.into())),
        )
}

/// Marks every descriptor above standard error close-on-exec, so nothing golato's own parent
/// left open (a file, a socket) reaches the command.
fn close_inherited() -> Result<(), Stop> {
    let entries = std::fs::read_dir("/proc/self/fd")
        .map_err(|error| Stop::Failed(format!("could not list open descriptors: {error}")))?;
    let numbers: Vec<i32> = entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse().ok())
        .filter(|&fd| fd > 2)
        .collect();
    for fd in numbers {
        set_close_on_exec(fd);
    }
    Ok(())
}

#[allow(unsafe_code)]
fn set_close_on_exec(fd: i32) {
    // SAFETY: the helper is single-threaded and `fd` was just listed as open in this process;
    // the borrow lives only for this call, and fcntl on a descriptor closed meanwhile (the
    // listing's own) fails with EBADF, changing nothing.
    let borrowed = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
    let _ = rustix::io::fcntl_setfd(borrowed, rustix::io::FdFlags::CLOEXEC);
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
            spec.private_shm
                .then_some(Path::new(SHM))
                .into_iter()
                .chain(spec.private_tmp.as_deref()),
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
