//! The network by domain, on the helper's side: inside the command's new network namespace,
//! bring the loopback up, listen on the proxy's address, and hand the listening socket to
//! golato, which serves the proxy on it from outside. The namespace has no other interface, so
//! the proxy is the only way out; the command never holds the listener.

use std::io::IoSlice;
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::os::fd::{AsFd as _, AsRawFd as _};
use std::os::unix::net::UnixStream;
use std::path::Path;

use super::Stop;

/// The proxy variables a command gets: every spelling the common tools read.
pub(super) fn variables(port: u16) -> Vec<(&'static str, String)> {
    let proxy = format!("http://127.0.0.1:{port}");
    let mut variables: Vec<(&'static str, String)> = [
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
        "npm_config_proxy",
        "npm_config_https_proxy",
        "CARGO_HTTP_PROXY",
        "PIP_PROXY",
    ]
    .into_iter()
    .map(|name| (name, proxy.clone()))
    .collect();
    // The command's own servers on its loopback stay reachable directly.
    let local = "localhost,127.0.0.1,::1".to_owned();
    variables.push(("NO_PROXY", local.clone()));
    variables.push(("no_proxy", local));
    variables
}

/// Brings the namespace's loopback up, listens on 127.0.0.1:`port`, and sends the listener
/// to the Unix socket `to` (a probe has none: it only checks that all this works).
pub(super) fn open(port: u16, to: Option<&Path>) -> Result<(), Stop> {
    loopback_up()?;
    let listener =
        TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, port))).map_err(|error| {
            Stop::Failed(format!(
                "could not listen on 127.0.0.1:{port} for golato's proxy: {error}"
            ))
        })?;
    let Some(to) = to else {
        return Ok(());
    };
    let golato = UnixStream::connect(to).map_err(|error| {
        Stop::Failed(format!(
            "could not reach golato's proxy at {}: {error}",
            to.display()
        ))
    })?;
    let fds = [listener.as_fd()];
    let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut ancillary = rustix::net::SendAncillaryBuffer::new(&mut space);
    if !ancillary.push(rustix::net::SendAncillaryMessage::ScmRights(&fds)) {
        return Err(Stop::Failed(
            "could not attach the proxy's socket to the message".into(),
        ));
    }
    rustix::net::sendmsg(
        &golato,
        &[IoSlice::new(b"proxy")],
        &mut ancillary,
        rustix::net::SendFlags::empty(),
    )
    .map_err(|error| Stop::Failed(format!("could not send golato the proxy's socket: {error}")))?;
    Ok(())
}

/// `ip link set lo up`: a new network namespace starts with its loopback down, without
/// 127.0.0.1.
pub(super) fn loopback_up() -> Result<(), Stop> {
    let socket = rustix::net::socket(
        rustix::net::AddressFamily::INET,
        rustix::net::SocketType::DGRAM,
        None,
    )
    .map_err(|error| {
        Stop::Failed(format!(
            "could not open a socket to set up the loopback: {error}"
        ))
    })?;
    set_up(socket.as_raw_fd(), b"lo").map_err(|error| {
        Stop::Unsupported(format!(
            "could not bring up the loopback of the command's network namespace ({error})"
        ))
    })
}

/// Sets the flags UP and RUNNING of the interface `name` (SIOCSIFFLAGS), which no safe API of
/// nix or rustix offers.
#[allow(unsafe_code)]
fn set_up(socket: i32, name: &[u8]) -> std::io::Result<()> {
    use nix::libc;
    // SAFETY: ifreq is a plain C struct of integers, arrays and a union of them: all zero is
    // a valid value.
    let mut request: libc::ifreq = unsafe { std::mem::zeroed() };
    for (slot, byte) in request.ifr_name.iter_mut().zip(name) {
        *slot = *byte as libc::c_char;
    }
    request.ifr_ifru.ifru_flags = (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
    // SAFETY: `socket` is an open socket for the duration of the call, and `request` a valid,
    // NUL-terminated ifreq that SIOCSIFFLAGS only reads.
    let result = unsafe { libc::ioctl(socket, libc::SIOCSIFFLAGS, &request) };
    match result {
        0 => Ok(()),
        _ => Err(std::io::Error::last_os_error()),
    }
}
