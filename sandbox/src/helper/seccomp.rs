//! The sandbox's system-call filter.
//!
//! Always: the kernel keyrings (`keyctl`, `add_key`, `request_key`: a session keyring is shared
//! with the user's other processes) and io_uring (its requests pass the filter unseen). Without
//! network: Unix-domain sockets (a path to a local daemon leaves the network namespace) and
//! `AF_VSOCK` (the hypervisor's sockets are in no namespace). On x86-64, every x32 system call
//! (the same numbers with bit 30 set would bypass the per-number rules).

use std::collections::BTreeMap;

use seccompiler::{
    sock_filter, BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition,
    SeccompFilter, SeccompRule, TargetArch,
};

use super::Stop;

/// The errno a refused call gets: "permission denied", as a file the sandbox keeps out.
const REFUSED: u32 = nix::libc::EACCES as u32;

/// Installs the filter on this process (and so on everything it starts).
pub(super) fn install(network: bool) -> Result<(), Stop> {
    let seccomp = |error: seccompiler::BackendError| Stop::Failed(format!("seccomp: {error}"));
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for call in [
        nix::libc::SYS_keyctl,
        nix::libc::SYS_add_key,
        nix::libc::SYS_request_key,
        nix::libc::SYS_io_uring_setup,
    ] {
        rules.insert(call, Vec::new());
    }
    if !network {
        let family = |family: i32| {
            SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, family as u64)
                .and_then(|condition| SeccompRule::new(vec![condition]))
                .map_err(seccomp)
        };
        rules.insert(
            nix::libc::SYS_socket,
            vec![family(nix::libc::AF_UNIX)?, family(nix::libc::AF_VSOCK)?],
        );
    }
    let arch = TargetArch::try_from(std::env::consts::ARCH)
        .map_err(|error| Stop::Unsupported(format!("seccomp on this architecture: {error}")))?;
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(REFUSED),
        arch,
    )
    .map_err(seccomp)?;
    let compiled: BpfProgram = filter.try_into().map_err(seccomp)?;
    let mut program = refuse_x32();
    program.extend(compiled);
    seccompiler::apply_filter(&program).map_err(|error| Stop::Failed(format!("seccomp: {error}")))
}

/// On x86-64: a prefix refusing system-call numbers with the x32 bit. seccompiler's own
/// program, which follows, checks the architecture (x32 calls report x86-64's) and matches
/// numbers exactly, so `socket | 0x4000_0000` would pass it.
fn refuse_x32() -> BpfProgram {
    if std::env::consts::ARCH != "x86_64" {
        return Vec::new();
    }
    const LOAD_WORD: u16 = 0x20; // BPF_LD (0) | BPF_W (0) | BPF_ABS
    const JUMP_IF_AT_LEAST: u16 = 0x05 | 0x30; // BPF_JMP | BPF_JGE | BPF_K
    const RETURN: u16 = 0x06; // BPF_RET | BPF_K
    const X32_BIT: u32 = 0x4000_0000;
    const RETURN_ERRNO: u32 = 0x0005_0000; // SECCOMP_RET_ERRNO
    vec![
        // seccomp_data.nr is at offset 0.
        sock_filter {
            code: LOAD_WORD,
            jt: 0,
            jf: 0,
            k: 0,
        },
        sock_filter {
            code: JUMP_IF_AT_LEAST,
            jt: 0,
            jf: 1,
            k: X32_BIT,
        },
        sock_filter {
            code: RETURN,
            jt: 0,
            jf: 0,
            k: RETURN_ERRNO | REFUSED,
        },
    ]
}
