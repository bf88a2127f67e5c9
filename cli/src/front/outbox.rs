//! What the front end writes to the terminal goes through a thread of its own, so that a
//! terminal that stops reading (a stalled connection, a frozen emulator) never blocks the
//! front end's loop: keys, the run's events and signals (SIGTERM) are still handled, and
//! golato can leave. Frames queue up to a bound; past it they are dropped and the live area is
//! drawn whole again once the terminal reads again.

use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender, TrySendError};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Chunks (one a flush: a frame, a block of scrollback) queued for the writer thread.
const QUEUED: usize = 256;
/// Bytes held back while the queue is full; past this, they are dropped.
const HELD: usize = 16 * 1024 * 1024;

/// The shared state of the outbox and its writer thread.
struct Shared {
    /// Chunks sent and not yet written.
    pending: AtomicUsize,
    /// Bytes were dropped: the screen no longer shows what the front end thinks it does.
    lost: AtomicBool,
}

/// A writer to standard output that never blocks: see the module.
#[derive(Clone)]
pub(crate) struct Outbox {
    sender: SyncSender<Vec<u8>>,
    shared: Arc<Shared>,
    /// What `write` gathered since the last flush, and what the full queue held back.
    buffer: Arc<Mutex<(Vec<u8>, Vec<u8>)>>,
}

impl Outbox {
    /// The outbox, and its writer thread started.
    pub(crate) fn start() -> std::io::Result<Outbox> {
        let (sender, receiver) = sync_channel::<Vec<u8>>(QUEUED);
        let shared = Arc::new(Shared {
            pending: AtomicUsize::new(0),
            lost: AtomicBool::new(false),
        });
        let writer = Arc::clone(&shared);
        std::thread::Builder::new()
            .name("golato-terminal".into())
            .spawn(move || {
                let mut out = std::io::stdout();
                for chunk in receiver {
                    // A terminal gone for good (EIO) or refusing: nothing more can be shown.
                    let _ = out.write_all(&chunk).and_then(|()| out.flush());
                    writer.pending.fetch_sub(1, Ordering::AcqRel);
                }
            })?;
        Ok(Outbox {
            sender,
            shared,
            buffer: Arc::default(),
        })
    }

    /// Waits (at most `limit`) until everything flushed so far is written; whether it was. A
    /// terminal that does not read by then is taken as stuck.
    pub(crate) fn drain(&self, limit: Duration) -> bool {
        let _ = std::io::Write::flush(&mut self.clone());
        let deadline = Instant::now() + limit;
        loop {
            let held = self
                .buffer
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .1
                .is_empty();
            if held && self.shared.pending.load(Ordering::Acquire) == 0 {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(2));
            let _ = std::io::Write::flush(&mut self.clone());
        }
    }

    /// Whether bytes were dropped since the last call: the live area must be drawn whole.
    pub(crate) fn take_lost(&self) -> bool {
        self.shared.lost.swap(false, Ordering::AcqRel)
    }
}

impl Write for Outbox {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.buffer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .0
            .extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let mut buffer = self.buffer.lock().unwrap_or_else(PoisonError::into_inner);
        let (fresh, held) = &mut *buffer;
        held.append(fresh);
        if held.is_empty() {
            return Ok(());
        }
        let chunk = std::mem::take(held);
        self.shared.pending.fetch_add(1, Ordering::AcqRel);
        match self.sender.try_send(chunk) {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(chunk)) => {
                self.shared.pending.fetch_sub(1, Ordering::AcqRel);
                if chunk.len() > HELD {
                    // Dropped whole: the next flush starts clean, and the front end redraws.
                    self.shared.lost.store(true, Ordering::Release);
                } else {
                    *held = chunk;
                }
                Ok(())
            }
            Err(TrySendError::Disconnected(_)) => {
                self.shared.pending.fetch_sub(1, Ordering::AcqRel);
                Err(std::io::Error::new(
                    std::io::ErrorKind::BrokenPipe,
                    "the terminal's writer thread is gone",
                ))
            }
        }
    }
}
