//! A session file as bytes: its lines judged (complete, torn at the end, damaged in the
//! middle), the lock that lets one process at a time write it, a torn tail set aside before an
//! append, and `golato sessions repair`.

use std::io::{Read as _, Seek as _, SeekFrom, Write as _};
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::error::CliError;

/// What the file's lines are.
#[derive(Debug)]
pub(super) struct Lines {
    /// The first line, parsed (`None` when it is not JSON).
    pub(super) header: Option<Value>,
    /// Every later line that parsed, with its line number (1-based), up to the first that did
    /// not.
    pub(super) steps: Vec<(usize, Value)>,
    /// The first line (not the last) that is not JSON: the file is damaged there.
    pub(super) damaged: Option<usize>,
    /// A last line without its newline that is not JSON: a write cut short (a crash, a full
    /// disk). Ignored when reading; set aside before the next append.
    pub(super) torn: bool,
}

/// Judges `bytes`, a whole session file.
pub(super) fn lines(bytes: &[u8]) -> Lines {
    let mut parts: Vec<&[u8]> = bytes.split(|byte| *byte == b'\n').collect();
    // After a final newline, `split` yields an empty last part: nothing is torn.
    let tail = parts.pop().filter(|tail| !tail.is_empty());
    let mut header = None;
    let mut steps = Vec::new();
    let mut damaged = None;
    for (index, part) in parts.iter().enumerate() {
        let parsed = serde_json::from_slice::<Value>(part).ok();
        if index == 0 {
            header = parsed;
            continue;
        }
        match parsed {
            Some(value) => steps.push((index + 1, value)),
            None => {
                damaged = Some(index + 1);
                break;
            }
        }
    }
    let mut torn = false;
    if let (Some(tail), None) = (tail, damaged) {
        match serde_json::from_slice::<Value>(tail) {
            // Written whole, only its newline missing.
            Ok(value) if header.is_some() => steps.push((parts.len() + 1, value)),
            Ok(value) => header = Some(value),
            Err(_) => torn = true,
        }
    }
    Lines {
        header,
        steps,
        damaged,
        torn,
    }
}

/// The lock on a session: while it is held, no other golato writes the session. A lock file
/// beside it (`ID.lock`) names the process holding it.
#[derive(Debug)]
pub(crate) struct Lock {
    _file: std::fs::File,
}

impl Lock {
    /// Takes the lock of the session file `session`, or says who holds it.
    pub(crate) fn take(session: &Path, id: &str) -> Result<Lock, CliError> {
        let path = session.with_extension("lock");
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|error| {
                CliError::Failed(format!(
                    "could not open the session's lock {}: {error}",
                    path.display()
                ))
            })?;
        match rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => {}
            Err(rustix::io::Errno::WOULDBLOCK) => {
                let mut holder = String::new();
                let _ = (&file).take(64).read_to_string(&mut holder);
                let holder = holder.trim();
                return Err(CliError::usage(format!(
                    "the session {id} is being written by another golato{}; wait for it to end (or stop it), or start a new session",
                    if holder.is_empty() {
                        String::new()
                    } else {
                        format!(" (process {holder})")
                    }
                )));
            }
            Err(error) => {
                return Err(CliError::Failed(format!(
                    "could not lock the session {id} ({}): {error}",
                    path.display()
                )))
            }
        }
        let _ = file.set_len(0);
        let _ = write!(file, "{}", std::process::id());
        Ok(Lock { _file: file })
    }
}

/// Opens the session at `path` to append to it, under `lock`: refused when it changed since it
/// was read (`expected` bytes); a torn last line is moved to `ID.torn` and cut off, a last line
/// whose newline is missing gets it, so the next step starts on a line of its own.
pub(super) fn open_for_append(
    path: &Path,
    expected: u64,
    _lock: &Lock,
) -> Result<std::fs::File, CliError> {
    let failed = |error: std::io::Error| {
        CliError::Failed(format!(
            "could not open the session {} to go on: {error}",
            path.display()
        ))
    };
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(failed)?;
    let length = file.metadata().map_err(failed)?.len();
    if length != expected {
        return Err(CliError::Failed(format!(
            "the session {} changed while golato opened it (another golato wrote to it); run the command again",
            path.display()
        )));
    }
    let start = last_line_start(&mut file, length).map_err(failed)?;
    if start < length {
        let mut tail = Vec::new();
        file.seek(SeekFrom::Start(start)).map_err(failed)?;
        file.read_to_end(&mut tail).map_err(failed)?;
        if serde_json::from_slice::<Value>(&tail).is_ok() {
            file.seek(SeekFrom::End(0)).map_err(failed)?;
            file.write_all(b"\n").map_err(failed)?;
        } else {
            let aside = path.with_extension("torn");
            let mut kept = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&aside)
                .map_err(failed)?;
            tail.push(b'\n');
            kept.write_all(&tail)
                .and_then(|()| kept.sync_data())
                .map_err(failed)?;
            file.set_len(start).map_err(failed)?;
            eprintln!(
                "golato: the session's last line was cut short (a crash or a full disk); it is kept in {}",
                aside.display()
            );
        }
        file.sync_data().map_err(failed)?;
    }
    file.seek(SeekFrom::End(0)).map_err(failed)?;
    Ok(file)
}

/// Where the file's last line starts: just after its last newline (`length` when it ends with
/// one), read backwards in blocks.
fn last_line_start(file: &mut std::fs::File, length: u64) -> std::io::Result<u64> {
    const BLOCK: u64 = 64 * 1024;
    let mut end = length;
    let mut block = vec![0u8; BLOCK as usize];
    while end > 0 {
        let start = end.saturating_sub(BLOCK);
        let size = (end - start) as usize;
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(&mut block[..size])?;
        if let Some(at) = block[..size].iter().rposition(|byte| *byte == b'\n') {
            return Ok(start + at as u64 + 1);
        }
        end = start;
    }
    Ok(0)
}

/// `golato sessions repair`: keeps the lines before the first damaged one (and a torn tail
/// aside), moves the rest to `ID.jsonl.damaged`, and says what it did.
pub(crate) fn repair(path: &Path, id: &str, bytes: &[u8]) -> Result<String, CliError> {
    let judged = lines(bytes);
    let failed = |error: std::io::Error| {
        CliError::Failed(format!("could not repair {}: {error}", path.display()))
    };
    let Some(line) = judged.damaged else {
        if judged.torn {
            let _lock = Lock::take(path, id)?;
            open_for_append(path, bytes.len() as u64, &_lock)?;
            return Ok(format!(
                "the session {id} had a last line cut short; it is set aside in {}",
                path.with_extension("torn").display()
            ));
        }
        return Ok(format!("the session {id} is whole; nothing to repair"));
    };
    let cut = nth_line_start(bytes, line);
    let aside: PathBuf = path.with_extension("jsonl.damaged");
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&aside)
        .and_then(|mut file| {
            file.write_all(&bytes[cut..])
                .and_then(|()| file.sync_data())
        })
        .map_err(failed)?;
    let kept = tempfile::NamedTempFile::new_in(path.parent().unwrap_or(Path::new(".")))
        .and_then(|mut file| {
            file.write_all(&bytes[..cut])?;
            file.as_file().sync_data()?;
            Ok(file)
        })
        .map_err(failed)?;
    kept.persist(path).map_err(|error| failed(error.error))?;
    let moved = bytes[cut..]
        .split(|byte| *byte == b'\n')
        .filter(|part| !part.is_empty())
        .count();
    Ok(format!(
        "the session {id} was damaged at line {line}: kept the {} before it, moved {} from there on to {}",
        crate::view::shown::count((line - 1) as u64, "line"),
        crate::view::shown::count(moved as u64, "line"),
        aside.display()
    ))
}

/// The byte offset where line `line` (1-based) starts.
fn nth_line_start(bytes: &[u8], line: usize) -> usize {
    bytes
        .iter()
        .enumerate()
        .filter(|(_, byte)| **byte == b'\n')
        .nth(line.saturating_sub(2))
        .map_or(0, |(at, _)| at + 1)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;
    use proptest::prelude::*;

    fn session(steps: usize) -> Vec<u8> {
        let mut text = String::from("{\"golato_session\":1}\n");
        for step in 0..steps {
            text.push_str(&format!("{{\"message\":{{\"n\":{step}}}}}\n"));
        }
        text.into_bytes()
    }

    fn numbers(judged: &Lines) -> Vec<u64> {
        judged
            .steps
            .iter()
            .map(|(_, value)| value["message"]["n"].as_u64().unwrap())
            .collect()
    }

    proptest! {
        /// Any prefix of a session (a crash at any byte) reads as the steps written whole,
        /// never as damage.
        #[test]
        fn any_prefix_reads_as_its_whole_steps(steps in 0usize..12, cut in 0usize..2000) {
            let bytes = session(steps);
            let prefix = &bytes[..cut.min(bytes.len())];
            let judged = lines(prefix);
            prop_assert_eq!(judged.damaged, None);
            let whole_lines = prefix.iter().filter(|byte| **byte == b'\n').count();
            let expected: Vec<u64> = (0..whole_lines.saturating_sub(1) as u64).collect();
            let got = numbers(&judged);
            // The last step may also be whole without its newline.
            prop_assert!(got == expected || got.len() == expected.len() + 1, "{:?} {:?}", got, expected);
            prop_assert_eq!(&got[..expected.len()], &expected[..]);
        }

        /// One corrupted line in the middle is damage at exactly that line; the steps before
        /// it are what repair keeps.
        #[test]
        fn a_corrupted_middle_line_is_named(steps in 2usize..12, which in 0usize..12, garbage in "[^\n]{0,20}") {
            let bytes = session(steps);
            let text = String::from_utf8(bytes).unwrap();
            let mut all: Vec<String> = text.lines().map(str::to_owned).collect();
            let line = 2 + which % steps; // a step line, 1-based
            all[line - 1] = format!("{{torn{garbage}");
            let corrupted = all.join("\n") + "\n";
            let judged = lines(corrupted.as_bytes());
            prop_assert_eq!(judged.damaged, Some(line));
            prop_assert_eq!(numbers(&judged), (0..(line - 2) as u64).collect::<Vec<_>>());
            prop_assert_eq!(nth_line_start(corrupted.as_bytes(), line), all[..line - 1].iter().map(|l| l.len() + 1).sum::<usize>());
        }
    }

    #[test]
    fn an_append_after_a_torn_tail_starts_on_a_fresh_line_and_keeps_the_tail_aside() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let mut bytes = session(3);
        bytes.extend_from_slice(b"{\"message\":{\"n\":3");
        std::fs::write(&path, &bytes).unwrap();
        let lock = Lock::take(&path, "s").unwrap();
        let mut file = open_for_append(&path, bytes.len() as u64, &lock).unwrap();
        file.write_all(b"{\"message\":{\"n\":4}}\n").unwrap();
        let judged = lines(&std::fs::read(&path).unwrap());
        assert_eq!(numbers(&judged), [0, 1, 2, 4]);
        assert!(!judged.torn && judged.damaged.is_none());
        assert_eq!(
            std::fs::read_to_string(path.with_extension("torn")).unwrap(),
            "{\"message\":{\"n\":3\n"
        );
        // A second writer is refused while the first holds the lock, and says who.
        let error = Lock::take(&path, "s").unwrap_err().to_string();
        assert!(error.contains("being written by another golato"), "{error}");
        assert!(error.contains(&std::process::id().to_string()), "{error}");
        drop(lock);
        assert!(Lock::take(&path, "s").is_ok());
    }

    #[test]
    fn an_append_to_a_file_that_changed_since_it_was_read_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        std::fs::write(&path, session(2)).unwrap();
        let lock = Lock::take(&path, "s").unwrap();
        let error = open_for_append(&path, 3, &lock).unwrap_err().to_string();
        assert!(error.contains("changed while golato opened it"), "{error}");
    }

    #[test]
    fn repair_keeps_what_came_before_the_damage() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let mut text = String::from_utf8(session(2)).unwrap();
        text.push_str("garbage\n{\"message\":{\"n\":9}}\n");
        std::fs::write(&path, &text).unwrap();
        let said = repair(&path, "s", text.as_bytes()).unwrap();
        assert!(said.contains("damaged at line 4"), "{said}");
        let judged = lines(&std::fs::read(&path).unwrap());
        assert_eq!(numbers(&judged), [0, 1]);
        assert_eq!(
            std::fs::read_to_string(path.with_extension("jsonl.damaged")).unwrap(),
            "garbage\n{\"message\":{\"n\":9}}\n"
        );
    }
}
