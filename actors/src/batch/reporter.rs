//! How a job's outcome reaches its batch: the supervisor's mailbox when the job runs in an actor,
//! or collected directly when it runs as a task; a reporter dropped unreported still reports.

use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use super::{BatchObserver, BatchReport, BatchSupervisor, CallDone, JobOutcome};
use crate::Mailbox;

/// How a per-call actor reports its job's one outcome to the supervisor. Dropped without
/// reporting (the actor stopped or died first), it reports [`JobOutcome::Lost`], so the batch
/// never waits for an outcome that cannot come.
pub struct Reporter<O: Send + Unpin + 'static> {
    pub(super) route: Route<O>,
    pub(super) index: usize,
    pub(super) reported: bool,
}

/// Where a reporter's outcome goes.
pub(super) enum Route<O: Send + Unpin + 'static> {
    /// To the supervisor, which starts the next job (sequential or capped batches).
    Supervisor(Mailbox<BatchSupervisor<O>>),
    /// Straight to the observer (parallel batches without a cap).
    Direct(Arc<Direct<O>>),
    /// To whoever holds the receiver of [`Reporter::forwarding`].
    Forward(Option<tokio::sync::oneshot::Sender<JobOutcome<O>>>),
}

/// Outcomes by source index, in the order they came.
pub(super) type Outcomes<O> = Vec<(usize, JobOutcome<O>)>;

/// The observer of a parallel batch, and how many of its jobs have yet to report.
pub(super) struct Direct<O: Send + Unpin + 'static> {
    pub(super) remaining: AtomicUsize,
    pub(super) observer: BatchObserver<O>,
    /// The outcomes so far, when they are reported together.
    pub(super) collected: Option<Mutex<Outcomes<O>>>,
    /// How many outcomes the batch will have in all.
    pub(super) jobs: usize,
}

impl<O: Send + Unpin + 'static> fmt::Debug for Reporter<O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reporter")
            .field("index", &self.index)
            .finish_non_exhaustive()
    }
}

impl<O: Send + Unpin + 'static> Reporter<O> {
    /// A reporter for job `index` whose outcome goes to the returned receiver instead of a
    /// batch: for work that passes a job's outcome through something else first (a journal
    /// that records it), which then reports it with the job's own reporter. Dropped without
    /// reporting, it sends [`JobOutcome::Lost`] like any reporter.
    pub fn forwarding(
        index: usize,
    ) -> (Reporter<O>, tokio::sync::oneshot::Receiver<JobOutcome<O>>) {
        let (sender, receiver) = tokio::sync::oneshot::channel();
        let reporter = Reporter {
            route: Route::Forward(Some(sender)),
            index,
            reported: false,
        };
        (reporter, receiver)
    }

    /// The job's source index.
    pub fn index(&self) -> usize {
        self.index
    }

    /// Reports the job's outcome; the supervisor then counts it as returned.
    pub fn report(mut self, outcome: JobOutcome<O>) {
        self.send(outcome);
    }

    fn send(&mut self, outcome: JobOutcome<O>) {
        self.reported = true;
        let index = self.index;
        match &mut self.route {
            Route::Supervisor(supervisor) => supervisor.do_send(CallDone { index, outcome }),
            Route::Forward(sender) => {
                if let Some(sender) = sender.take() {
                    // Nobody waits any more only when the work was dropped with its run.
                    let _ = sender.send(outcome);
                }
            }
            Route::Direct(direct) => {
                direct.outcome(index, outcome);
                // Each outcome is queued or stored before its count is taken, so the last one
                // to count sees (and ends after) every outcome.
                if direct.remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
                    direct.end();
                }
            }
        }
    }
}

impl<O: Send + Unpin + 'static> Direct<O> {
    /// Reports one outcome now, or keeps it for the end.
    pub(super) fn outcome(&self, index: usize, outcome: JobOutcome<O>) {
        match &self.collected {
            Some(collected) => {
                let mut collected = lock(collected);
                // Made room for when the first outcome comes: a batch whose calls are all still
                // running holds nothing for their outcomes.
                if collected.capacity() == 0 {
                    collected.reserve_exact(self.jobs);
                }
                collected.push((index, outcome));
            }
            None => self
                .observer
                .reports
                .do_send(BatchReport::Finished { index, outcome }),
        }
    }

    /// Reports the end of the batch, with the outcomes kept for it.
    pub(super) fn end(&self) {
        let end = match &self.collected {
            Some(collected) => BatchReport::Collected {
                outcomes: std::mem::take(&mut *lock(collected)),
            },
            None => BatchReport::Done,
        };
        self.observer.reports.do_send(end);
    }
}

/// Locks a batch's collected outcomes; nothing panics while they are held.
pub(super) fn lock<T>(collected: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    collected.lock().unwrap_or_else(PoisonError::into_inner)
}

impl<O: Send + Unpin + 'static> Drop for Reporter<O> {
    fn drop(&mut self) {
        if !self.reported {
            self.send(JobOutcome::Lost);
        }
    }
}
