//! Reading golato's own files (sessions, configuration, schemas, prompts) without hanging or
//! filling memory: regular files only, opened without blocking, read up to a stated bound.
//!
//! A FIFO named like a session would otherwise block the open until a writer came; a link to
//! `/dev/zero` would be read until memory ran out.

use std::io::Read as _;
use std::path::Path;

/// How much of a configuration file is read at most.
pub(crate) const CONFIG_LIMIT: u64 = 1024 * 1024;
/// How much of a session file is read at most.
pub(crate) const SESSION_LIMIT: u64 = 256 * 1024 * 1024;
/// How much of an output schema is read at most.
pub(crate) const SCHEMA_LIMIT: u64 = 4 * 1024 * 1024;

/// Why a file was not read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Unreadable {
    /// It is not there.
    #[error("it does not exist")]
    Missing,
    /// It is a FIFO, a device, a directory or a socket.
    #[error("it is {0}, not a regular file")]
    NotRegular(&'static str),
    /// It is larger than the bound.
    #[error("it is larger than {limit} bytes, more than golato reads of such a file")]
    TooLarge {
        /// The bound.
        limit: u64,
    },
    /// Anything else the system said.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// Opens `path` for reading if it is a regular file, never blocking on the open.
pub(crate) fn open_regular(path: &Path) -> Result<std::fs::File, Unreadable> {
    use std::os::unix::fs::{FileTypeExt as _, OpenOptionsExt as _};
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags((rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOCTTY).bits() as i32)
        .open(path)
        .map_err(|error| match error.kind() {
            std::io::ErrorKind::NotFound => Unreadable::Missing,
            _ => Unreadable::Io(error),
        })?;
    let kind = file.metadata()?.file_type();
    if kind.is_file() {
        return Ok(file);
    }
    Err(Unreadable::NotRegular(if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "not a file"
    }))
}

/// The whole of the regular file at `path`, at most `limit` bytes.
pub(crate) fn read(path: &Path, limit: u64) -> Result<Vec<u8>, Unreadable> {
    let file = open_regular(path)?;
    // Sized once: growing by doubling would hold two buffers of a long file.
    let size = file.metadata()?.len().min(limit + 1);
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    file.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(Unreadable::TooLarge { limit });
    }
    Ok(bytes)
}

/// [`read`], as UTF-8 text.
pub(crate) fn read_text(path: &Path, limit: u64) -> Result<String, Unreadable> {
    String::from_utf8(read(path, limit)?).map_err(|_| {
        Unreadable::Io(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "it is not UTF-8 text",
        ))
    })
}
