//! The sandbox's view of the file system, built in its own mount namespace.
//!
//! Outside the PID namespace ([`file_system`]): every mount read-only but the writable roots;
//! golato's control files read-only even inside them; denied paths hidden; a private `TMPDIR`.
//! Inside it, as its first process ([`proc_and_dev`]): a `/proc` that shows only the sandbox's
//! processes and a `/dev` of its own, with a new pseudo-terminal instance (the host's terminals
//! are out of reach).

use std::ffi::OsString;
use std::os::fd::{AsRawFd as _, OwnedFd};
use std::path::{Path, PathBuf};

use nix::mount::{mount, MsFlags};

use super::{failed, Stop};
use crate::prepare::{Spec, SHM};

/// Devices bound into the sandbox's own `/dev` from the host's.
const DEVICES: [&str; 6] = ["null", "zero", "full", "random", "urandom", "tty"];

const NONE: Option<&str> = None;

/// The mount namespace as the policy says, before the PID namespace's first process starts.
/// With `capture`, the working directory is first covered by an overlay whose changes land in
/// that staging area (see [`crate::capture`]); where it cannot be, the reason is left there
/// and the command runs uncaptured.
pub(super) fn file_system(spec: &Spec, capture: Option<&Path>) -> Result<(), Stop> {
    mount(NONE, "/", NONE, MsFlags::MS_REC | MsFlags::MS_PRIVATE, NONE)
        .map_err(failed("could not make the mounts private"))?;
    if let Some(stage) = capture {
        if let Err(reason) = overlay(&spec.cwd, stage) {
            crate::capture::leave_reason(stage, &reason).map_err(|error| {
                Stop::Failed(format!(
                    "could not write in the staging area {}: {error}",
                    stage.display()
                ))
            })?;
        }
    }
    for root in &spec.writable {
        bind(root, root, MsFlags::MS_REC)?;
    }
    // A mount point cannot be renamed (EBUSY), so pinning each directory between a writable
    // root and a hidden or protected path keeps `mv ~/.config ~/.x` from moving the path out
    // from under its mount (and out of the denied list's reach at the next call).
    let guarded: Vec<&PathBuf> = spec.denied.iter().chain(&spec.protected).collect();
    let mut pinned: Vec<PathBuf> = Vec::new();
    for path in &guarded {
        for directory in between(spec, path) {
            if !pinned.contains(&directory) && directory.is_dir() {
                bind(&directory, &directory, MsFlags::MS_REC)?;
                pinned.push(directory);
            }
        }
    }
    for path in &spec.protected {
        make_missing_hooks_folder(path)?;
        match std::fs::symlink_metadata(path) {
            // A link is left as it is: binding it would bind what it leads to.
            Ok(metadata) if !metadata.file_type().is_symlink() => {
                bind(path, path, MsFlags::MS_REC)?;
                remount_read_only(path, &locked_options(path))?;
            }
            Ok(_) => {}
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => {
                return Err(Stop::Failed(format!(
                    "could not protect {}: {error}",
                    path.display()
                )))
            }
        }
    }
    for denied in &spec.denied {
        hide(denied)?;
    }
    if let Some(tmp) = &spec.private_tmp {
        mount(
            Some("tmpfs"),
            tmp,
            Some("tmpfs"),
            MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
            Some("mode=1777"),
        )
        .map_err(failed(format_args!(
            "could not mount a private TMPDIR on {}",
            tmp.display()
        )))?;
    }
    let table = std::fs::read_to_string("/proc/self/mountinfo")
        .map_err(|error| Stop::Failed(format!("could not read /proc/self/mountinfo: {error}")))?;
    for (point, options) in table.lines().filter_map(mount_point) {
        let left_writable = spec.writable.iter().any(|root| point.starts_with(root))
            && !spec.protected.iter().any(|path| point.starts_with(path));
        if left_writable || spec.private_tmp.as_deref() == Some(point.as_path()) {
            continue;
        }
        remount_read_only(&point, options)?;
    }
    Ok(())
}

/// Makes an empty `.git/hooks` where `.git` is a folder without one, so that it is bound
/// read-only like an existing one: `.git` is passed through capture, so a hook the command
/// planted in a `hooks` folder it made would otherwise run outside the sandbox at the user's
/// next commit. git makes this folder itself at `git init`; an empty one changes nothing.
fn make_missing_hooks_folder(path: &Path) -> Result<(), Stop> {
    let (Some(git), Some(name)) = (path.parent(), path.file_name()) else {
        return Ok(());
    };
    if name != "hooks" || git.file_name().is_none_or(|git| git != ".git") {
        return Ok(());
    }
    let git = match rustix::fs::open(
        git,
        rustix::fs::OFlags::PATH
            | rustix::fs::OFlags::DIRECTORY
            | rustix::fs::OFlags::NOFOLLOW
            | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    ) {
        Ok(git) => git,
        // No `.git` folder (or a link there): nothing a hook would be read from.
        Err(_) => return Ok(()),
    };
    match rustix::fs::mkdirat(&git, "hooks", rustix::fs::Mode::from_raw_mode(0o755)) {
        Ok(()) | Err(rustix::io::Errno::EXIST) => Ok(()),
        Err(error) => Err(Stop::Failed(format!(
            "could not make {} to protect it: {error}",
            path.display()
        ))),
    }
}

/// The existing directories strictly between the writable root holding `path` and `path`.
fn between(spec: &Spec, path: &Path) -> Vec<PathBuf> {
    let Some(root) = spec
        .writable
        .iter()
        .filter(|root| path.starts_with(root))
        .max_by_key(|root| root.as_os_str().len())
    else {
        return Vec::new();
    };
    let mut directories: Vec<PathBuf> = path
        .ancestors()
        .skip(1)
        .take_while(|ancestor| *ancestor != root.as_path())
        .map(Path::to_path_buf)
        .collect();
    directories.reverse();
    directories
}

fn bind(source: &Path, target: &Path, extra: MsFlags) -> Result<(), Stop> {
    mount(Some(source), target, NONE, MsFlags::MS_BIND | extra, NONE)
        .map_err(failed(format_args!("could not bind {}", target.display())))
}

/// Makes the mount at `point` read-only, keeping the flags in `options` (a mount inherited
/// from the parent namespace keeps its locked flags; leaving one out would be refused).
fn remount_read_only(point: &Path, options: &str) -> Result<(), Stop> {
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
    match mount(NONE, point, NONE, flags, NONE) {
        // Gone since the table was read, or under a mount that hides it.
        Ok(()) | Err(nix::Error::ENOENT) => Ok(()),
        Err(error) => Err(Stop::Failed(format!(
            "could not make {} read-only: {error}",
            point.display()
        ))),
    }
}

/// The per-mount flags of the mount holding `path`, in mountinfo's words (a bind made here
/// inherits them, locked).
fn locked_options(path: &Path) -> String {
    let Ok(info) = rustix::fs::statvfs(path) else {
        return String::new();
    };
    let flags = info.f_flag;
    [
        (rustix::fs::StatVfsMountFlags::NOSUID, "nosuid"),
        (rustix::fs::StatVfsMountFlags::NODEV, "nodev"),
        (rustix::fs::StatVfsMountFlags::NOEXEC, "noexec"),
        (rustix::fs::StatVfsMountFlags::NOATIME, "noatime"),
        (rustix::fs::StatVfsMountFlags::NODIRATIME, "nodiratime"),
        (rustix::fs::StatVfsMountFlags::RELATIME, "relatime"),
    ]
    .iter()
    .filter(|(flag, _)| flags.contains(*flag))
    .map(|(_, name)| *name)
    .collect::<Vec<_>>()
    .join(",")
}

/// Hides `denied` behind an empty, unreadable mount; nothing to do when it does not exist
/// (it is looked for again at every call, so one made later is hidden from then on).
fn hide(denied: &Path) -> Result<(), Stop> {
    let metadata = match std::fs::metadata(denied) {
        Ok(metadata) => metadata,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(error) => {
            return Err(Stop::Failed(format!(
                "could not look at the denied path {}, so it cannot be hidden: {error}",
                denied.display()
            )))
        }
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
        mount(Some("/dev/null"), denied, NONE, MsFlags::MS_BIND, NONE)
    };
    hidden.map_err(failed(format_args!("could not hide {}", denied.display())))
}

/// A fresh `/proc` (this process is the first of a new PID namespace: only the sandbox's own
/// processes show) and a `/dev` of the sandbox's own.
pub(super) fn proc_and_dev(spec: &Spec) -> Result<(), Stop> {
    let hidden = MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC;
    mount(Some("proc"), "/proc", Some("proc"), hidden, NONE)
        .map_err(failed("could not mount a /proc of the sandbox's own"))?;
    // The host's devices, held before the new /dev covers them.
    let mut devices: Vec<(&str, OwnedFd)> = Vec::new();
    for name in DEVICES {
        let path = Path::new("/dev").join(name);
        match rustix::fs::open(
            &path,
            rustix::fs::OFlags::PATH | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        ) {
            Ok(fd) => devices.push((name, fd)),
            Err(rustix::io::Errno::NOENT) => {}
            Err(error) => {
                return Err(Stop::Failed(format!(
                    "could not open {}: {error}",
                    path.display()
                )))
            }
        }
    }
    mount(
        Some("tmpfs"),
        "/dev",
        Some("tmpfs"),
        MsFlags::MS_NOSUID | MsFlags::MS_NOEXEC,
        Some("mode=755,size=64k"),
    )
    .map_err(failed("could not mount a /dev of the sandbox's own"))?;
    for (name, fd) in &devices {
        let target = Path::new("/dev").join(name);
        std::fs::File::create(&target).map_err(|error| {
            Stop::Failed(format!("could not create {}: {error}", target.display()))
        })?;
        let source = PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd()));
        bind(&source, &target, MsFlags::empty())?;
    }
    drop(devices);
    let directory = |path: &str| {
        std::fs::create_dir(path)
            .map_err(|error| Stop::Failed(format!("could not create {path}: {error}")))
    };
    directory("/dev/pts")?;
    mount(
        Some("devpts"),
        "/dev/pts",
        Some("devpts"),
        MsFlags::MS_NOSUID | MsFlags::MS_NOEXEC,
        Some("newinstance,ptmxmode=0666,mode=0620"),
    )
    .map_err(failed(
        "could not mount a pseudo-terminal instance of the sandbox's own",
    ))?;
    let links: [(&str, &str); 5] = [
        ("pts/ptmx", "/dev/ptmx"),
        ("/proc/self/fd", "/dev/fd"),
        ("/proc/self/fd/0", "/dev/stdin"),
        ("/proc/self/fd/1", "/dev/stdout"),
        ("/proc/self/fd/2", "/dev/stderr"),
    ];
    for (to, link) in links {
        std::os::unix::fs::symlink(to, link)
            .map_err(|error| Stop::Failed(format!("could not create {link}: {error}")))?;
    }
    directory(SHM)?;
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

/// Covers `cwd` with an overlay: reads see the real tree, writes land in the stage's upper
/// directory, to be applied when the command ends. Build output and git's own files
/// ([`crate::capture::PASSED_THROUGH`]) are bound back from the real tree, so they change in
/// place and are not captured. Layers are named through `/proc/self/fd`, so no path needs
/// escaping in the mount's options.
fn overlay(cwd: &Path, stage: &Path) -> Result<(), String> {
    let table = std::fs::read_to_string("/proc/self/mountinfo")
        .map_err(|error| format!("could not read /proc/self/mountinfo: {error}"))?;
    if let Some((inside, _)) = table
        .lines()
        .filter_map(mount_point)
        .find(|(point, _)| point.starts_with(cwd) && point != cwd)
    {
        return Err(format!(
            "a file system is mounted at {} inside the working directory, which an overlay would hide",
            inside.display()
        ));
    }
    let open = |path: &Path| {
        rustix::fs::open(
            path,
            rustix::fs::OFlags::PATH
                | rustix::fs::OFlags::DIRECTORY
                | rustix::fs::OFlags::NOFOLLOW
                | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        )
        .map_err(|error| format!("could not open {}: {error}", path.display()))
    };
    let by_fd = |fd: &OwnedFd| format!("/proc/self/fd/{}", fd.as_raw_fd());
    let mut passed = Vec::new();
    for name in crate::capture::PASSED_THROUGH {
        let path = cwd.join(name);
        if std::fs::symlink_metadata(&path).is_ok_and(|metadata| metadata.is_dir()) {
            passed.push((path.clone(), open(&path)?));
        }
    }
    let lower = open(cwd)?;
    let upper = open(&stage.join(crate::capture::UPPER))?;
    let work = open(&stage.join(crate::capture::WORK))?;
    let options = format!(
        "lowerdir={},upperdir={},workdir={},userxattr,volatile",
        by_fd(&lower),
        by_fd(&upper),
        by_fd(&work)
    );
    mount(
        Some("overlay"),
        cwd,
        Some("overlay"),
        MsFlags::empty(),
        Some(options.as_str()),
    )
    .map_err(|error| format!("the kernel refused an overlay on it ({error})"))?;
    for (path, fd) in &passed {
        if let Err(error) = mount(
            Some(by_fd(fd).as_str()),
            path,
            NONE,
            MsFlags::MS_BIND | MsFlags::MS_REC,
            NONE,
        ) {
            // Uncaptured rather than captured with build output or git's files in the overlay.
            let _ = nix::mount::umount2(cwd, nix::mount::MntFlags::MNT_DETACH);
            return Err(format!(
                "could not bind the real {} into the overlay ({error})",
                path.display()
            ));
        }
    }
    Ok(())
}
