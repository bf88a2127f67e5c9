//! `max_concurrent_runs`: which runs of an agent may proceed, and the FIFO queue of the others.
//!
//! A run is admitted at once while fewer than the limit hold a [`Permit`]; otherwise it joins the
//! queue when `Agent::start` is called (so the queue order is the order of the `start` calls)
//! and waits, holding only its input, until a finishing run hands it its permit. A waiter that
//! gave up (cancelled) is skipped; a permit handed to a waiter that gives up at that very moment
//! is dropped with its channel, and its `Drop` passes it on, so no permit is ever lost.

use std::collections::VecDeque;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::oneshot;

pub(crate) struct Admission {
    limit: usize,
    state: Mutex<State>,
}

struct State {
    running: usize,
    waiting: VecDeque<oneshot::Sender<Permit>>,
}

impl fmt::Debug for Admission {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Admission")
            .field("limit", &self.limit)
            .finish_non_exhaustive()
    }
}

/// A run's place among the running ones; dropping it lets the oldest waiter in.
pub(crate) struct Permit {
    admission: Option<Arc<Admission>>,
}

impl Admission {
    pub(crate) fn new(limit: usize) -> Arc<Admission> {
        Arc::new(Admission {
            limit: limit.max(1),
            state: Mutex::new(State {
                running: 0,
                waiting: VecDeque::new(),
            }),
        })
    }

    /// A permit now, or a place in the queue that receives one later.
    pub(crate) fn admit(self: &Arc<Self>) -> Result<Permit, oneshot::Receiver<Permit>> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if state.running < self.limit {
            state.running += 1;
            return Ok(Permit {
                admission: Some(Arc::clone(self)),
            });
        }
        let (sender, receiver) = oneshot::channel();
        state.waiting.push_back(sender);
        Err(receiver)
    }

    /// A running run ended: its place goes to the oldest waiter still waiting.
    fn release(self: &Arc<Self>) {
        loop {
            let next = {
                let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
                match state.waiting.pop_front() {
                    Some(next) => next,
                    None => {
                        state.running = state.running.saturating_sub(1);
                        return;
                    }
                }
            };
            let permit = Permit {
                admission: Some(Arc::clone(self)),
            };
            match next.send(permit) {
                Ok(()) => return,
                // That waiter gave up: try the next one with the same place.
                Err(mut permit) => permit.admission = None,
            }
        }
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        if let Some(admission) = self.admission.take() {
            admission.release();
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]

    use super::*;

    #[test]
    fn waiters_are_let_in_in_order_and_a_gone_waiter_is_skipped() {
        let admission = Admission::new(1);
        let first = admission.admit().ok().unwrap();
        let mut second = admission.admit().err().unwrap();
        let third = admission.admit().err().unwrap();
        let mut fourth = admission.admit().err().unwrap();
        drop(third);
        drop(first);
        let second_permit = second.try_recv().unwrap();
        assert!(fourth.try_recv().is_err());
        drop(second_permit);
        // The third gave up, so the place skips it.
        let fourth_permit = fourth.try_recv().unwrap();
        drop(fourth_permit);
        // Nobody waits: the place is free again.
        assert!(admission.admit().is_ok());
    }

    #[test]
    fn a_permit_handed_to_a_waiter_that_then_gives_up_is_passed_on() {
        let admission = Admission::new(1);
        let first = admission.admit().ok().unwrap();
        let second = admission.admit().err().unwrap();
        let mut third = admission.admit().err().unwrap();
        drop(first);
        // The permit sits in the second waiter's channel; the waiter gives up without reading.
        drop(second);
        assert!(third.try_recv().is_ok());
    }
}
