//! The memory that decoding images may take at once, shared by every `read` of the process: a
//! batch of eight images just under the pixel cap took 3.3 GB when each decoded as it pleased.

use std::sync::{Condvar, Mutex, PoisonError};
use std::time::Duration;

/// The memory all image decodes together may hold at once: 512 MiB. One image at the pixel
/// cap takes most of it; small images share it.
pub(super) const DECODE_BUDGET_BYTES: u64 = 512 * 1024 * 1024;

/// How often a waiting decode looks whether its call was cancelled.
const CANCEL_CHECK: Duration = Duration::from_millis(50);

#[derive(Debug, Default)]
struct State {
    in_use: u64,
    /// The most ever reserved at once (for tests and figures).
    peak: u64,
}

#[derive(Debug)]
pub(super) struct Budget {
    total: u64,
    state: Mutex<State>,
    freed: Condvar,
}

/// A share of the budget, given back when dropped.
#[derive(Debug)]
pub(super) struct Reservation<'a> {
    budget: &'a Budget,
    bytes: u64,
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        let mut state = self.budget.lock();
        state.in_use -= self.bytes;
        drop(state);
        self.budget.freed.notify_all();
    }
}

impl Budget {
    pub(super) const fn new(total: u64) -> Budget {
        Budget {
            total,
            state: Mutex::new(State { in_use: 0, peak: 0 }),
            freed: Condvar::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits until `bytes` (at most the whole budget) are free and takes them; `None` when
    /// `cancelled` says so first.
    pub(super) fn reserve(
        &self,
        bytes: u64,
        cancelled: &dyn Fn() -> bool,
    ) -> Option<Reservation<'_>> {
        let bytes = bytes.min(self.total);
        let mut state = self.lock();
        while state.in_use + bytes > self.total {
            if cancelled() {
                return None;
            }
            state = self
                .freed
                .wait_timeout(state, CANCEL_CHECK)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        state.in_use += bytes;
        state.peak = state.peak.max(state.in_use);
        Some(Reservation {
            budget: self,
            bytes,
        })
    }

    /// The most ever reserved at once.
    #[cfg(test)]
    pub(super) fn peak(&self) -> u64 {
        self.lock().peak
    }
}

/// The process's budget.
pub(super) static DECODES: Budget = Budget::new(DECODE_BUDGET_BYTES);

/// What decoding and fitting a `width` × `height` image holds at its peak: the decoded pixels
/// (4 bytes each), the resize's intermediate rows (16 bytes a pixel, the longer side against
/// the target size) and room for the re-encoded copies.
pub(super) fn decode_cost(width: u32, height: u32, target: u32) -> u64 {
    let (width, height) = (u64::from(width), u64::from(height));
    width * height * 4 + width.max(height) * u64::from(target) * 16 + 32 * 1024 * 1024
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use std::sync::Arc;

    #[test]
    fn reservations_never_exceed_the_budget_and_a_waiter_goes_on_when_one_is_freed() {
        let budget = Arc::new(Budget::new(100));
        let first = budget.reserve(70, &|| false).unwrap();
        let (started, waiting) = std::sync::mpsc::channel();
        let (done, finished) = std::sync::mpsc::channel();
        let waiter = {
            let budget = Arc::clone(&budget);
            std::thread::spawn(move || {
                started.send(()).unwrap();
                let second = budget.reserve(50, &|| false).unwrap();
                done.send(()).unwrap();
                drop(second);
            })
        };
        waiting.recv().unwrap();
        // 70 + 50 is over the budget: the second waits for the first.
        assert!(finished.try_recv().is_err());
        drop(first);
        finished.recv().unwrap();
        waiter.join().unwrap();
        assert!(budget.peak() <= 100);
        // More than the whole budget is taken as the whole budget.
        assert!(budget.reserve(1_000, &|| false).is_some());
    }

    #[test]
    fn a_cancelled_waiter_gives_up() {
        let budget = Budget::new(10);
        let _held = budget.reserve(10, &|| false).unwrap();
        assert!(budget.reserve(5, &|| true).is_none());
    }
}

#[cfg(test)]
mod fit_tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn fitting_an_image_that_needs_decoding_reserves_its_cost() {
        // Wider than the largest side sent: it must be decoded and resized.
        let image = image::GrayImage::from_fn(2_100, 10, |x, _| image::Luma([(x & 0xff) as u8]));
        let mut png = Vec::new();
        image
            .write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
            .unwrap();
        let fitted = super::super::images::fit(&png, "image/png", &|| false);
        assert!(
            matches!(fitted, super::super::images::Fitted::Reduced { .. }),
            "{fitted:?}"
        );
        assert!(DECODES.peak() >= decode_cost(2_100, 10, 2_000));
    }
}
