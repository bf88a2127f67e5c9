//! Batch execution: a [`BatchSupervisor`] per batch, one per-call actor per job.
//!
//! The supervisor runs every job of a batch at once ([`Mode::Parallel`], optionally at most
//! [`RunBatch::max_running`] at a time) or one after another ([`Mode::Sequential`]), and reports
//! to a [`BatchObserver`]: [`BatchReport::Starting`] before each job of a sequential or capped
//! batch starts (and waits for it to be handled, so the observer can announce the job before it
//! runs), [`BatchReport::Finished`] for each job with its source index, then
//! [`BatchReport::Done`] once every started job has returned.
//!
//! The per-call actor is the caller's: [`Work::Actor`] starts it with a [`Reporter`], through
//! which it reports its one outcome (golato's tool actor is one). For plain work,
//! [`Work::Async`] and [`Work::Blocking`] run on a [`WorkActor`] here. Work runs on the host
//! runtime (workers for async work, the blocking pool for blocking work), never on an actor
//! thread; a panic becomes [`JobOutcome::Panicked`] and an actor that dies without reporting
//! becomes [`JobOutcome::Lost`] (its reporter's `Drop` says so), so a batch never hangs on a
//! broken job.

mod reporter;

pub use reporter::Reporter;
use std::collections::VecDeque;
use std::fmt;
use std::num::NonZeroUsize;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};

use actix::fut::ActorFutureExt;
use actix::{Actor, ActorContext, AsyncContext, Context, Handler, Message, WrapFuture};
use futures::future::BoxFuture;
use reporter::{Direct, Route};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::{Envelope, Host, Mailbox, TracedActor, TracedRecipient};

/// How the jobs of a batch are run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Every job starts at once; outcomes arrive in completion order.
    Parallel,
    /// Each job starts after the previous one returned, in source order.
    Sequential,
}

/// The work of one job.
pub enum Work<O: Send + Unpin + 'static> {
    /// Builds and runs a future on the runtime's worker threads. The builder itself runs there
    /// too, so nothing of the job ever runs on an actor thread.
    Async(Box<dyn FnOnce() -> BoxFuture<'static, O> + Send>),
    /// Runs a closure on the runtime's blocking pool.
    Blocking(Box<dyn FnOnce() -> O + Send>),
    /// An outcome known in advance; reported in its turn without starting anything.
    Ready(O),
    /// Starts the caller's own per-call actor on the supervisor's arbiter. The actor reports
    /// its outcome through the [`Reporter`] exactly once; if it is dropped unreported, the
    /// reporter reports [`JobOutcome::Lost`].
    Actor(Box<dyn FnOnce(Reporter<O>) + Send>),
}

impl<O: Send + Unpin + 'static> fmt::Debug for Work<O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Work::Async(_) => "Work::Async",
            Work::Blocking(_) => "Work::Blocking",
            Work::Ready(_) => "Work::Ready",
            Work::Actor(_) => "Work::Actor",
        })
    }
}

/// One job of a batch, with its source index (its position in the caller's list).
#[derive(Debug)]
pub struct Job<O: Send + Unpin + 'static> {
    /// Position of the job in the caller's batch; outcomes are reported under it.
    pub index: usize,
    /// What to run.
    pub work: Work<O>,
    /// The span the job's actor and its work run in.
    pub span: tracing::Span,
}

/// What became of a job.
#[derive(Debug)]
pub enum JobOutcome<O> {
    /// The work returned this value.
    Completed(O),
    /// The work panicked with this message.
    Panicked(String),
    /// The job's actor or task ended without an outcome (the host is shutting down).
    Lost,
    /// The batch was cancelled before this job of a sequential batch started.
    NotStarted,
}

/// What a supervisor tells its observer, in this order for each job: `Starting` (sequential
/// or capped batches only; the job starts once it has been handled), then `Finished`; and
/// `Done` once, after every job's `Finished`. An observer that does not need each outcome as
/// it comes ([`BatchObserver::each_outcome`] off) of a parallel batch without a cap gets one
/// `Collected` with all of them instead of the `Finished` reports and `Done`.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub enum BatchReport<O: Send + Unpin + 'static> {
    /// The job at this source index is about to start.
    Starting {
        /// Source index of the job.
        index: usize,
    },
    /// The job at this source index has its outcome.
    Finished {
        /// Source index of the job.
        index: usize,
        /// What became of it.
        outcome: JobOutcome<O>,
    },
    /// Every job of the batch has finished (or was never started).
    Done,
    /// Every job's outcome, by source index, in the order they came; the batch is done.
    Collected {
        /// The outcomes, one per job.
        outcomes: Vec<(usize, JobOutcome<O>)>,
    },
}

/// Where a supervisor reports: one recipient for every report (one recipient to make per
/// batch, not three).
#[derive(Debug)]
pub struct BatchObserver<O: Send + Unpin + 'static> {
    /// Told every [`BatchReport`].
    pub reports: TracedRecipient<BatchReport<O>>,
    /// Whether jobs of a sequential or capped batch are announced (`BatchReport::Starting`)
    /// before they start.
    pub announce_starts: bool,
    /// Whether each outcome of a parallel batch without a cap is reported as it comes
    /// (`Finished`). Off, they are collected and reported in one message when the last one
    /// is in (`Collected`): one message per batch instead of one per job, for an observer that
    /// would only store them.
    pub each_outcome: bool,
}

/// Runs one batch.
#[derive(Message)]
#[rtype(result = "()")]
pub struct RunBatch<O: Send + Unpin + 'static> {
    /// The jobs, in source order.
    pub jobs: Vec<Job<O>>,
    /// Parallel or sequential.
    pub mode: Mode,
    /// In a parallel batch, how many jobs may run at once; the rest wait in source order, each
    /// announced to the observer when it starts. `None`: no limit.
    pub max_running: Option<NonZeroUsize>,
    /// When cancelled, a sequential batch starts no further job (each gets
    /// [`JobOutcome::NotStarted`]); started jobs are waited for either way. Jobs that should
    /// observe cancellation get a child of this token from whoever built them.
    pub cancel: CancellationToken,
    /// Where to report.
    pub observer: BatchObserver<O>,
}

impl<O: Send + Unpin + 'static> fmt::Debug for RunBatch<O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunBatch")
            .field("jobs", &self.jobs.len())
            .field("mode", &self.mode)
            .finish_non_exhaustive()
    }
}

/// Supervises one batch: starts a per-call actor per job and reports outcomes by source index.
pub struct BatchSupervisor<O: Send + Unpin + 'static> {
    runtime: tokio::runtime::Handle,
    span: tracing::Span,
    mailbox: Mailbox<Self>,
    queue: VecDeque<Job<O>>,
    mode: Mode,
    max_running: Option<NonZeroUsize>,
    cancel: CancellationToken,
    observer: Option<BatchObserver<O>>,
    running: usize,
}

impl<O: Send + Unpin + 'static> fmt::Debug for BatchSupervisor<O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BatchSupervisor")
            .field("queued", &self.queue.len())
            .field("running", &self.running)
            .field("mode", &self.mode)
            .finish_non_exhaustive()
    }
}

impl<O: Send + Unpin + 'static> BatchSupervisor<O> {
    /// Starts a supervisor on the current arbiter (call this from an actor) whose jobs run on
    /// `host`'s runtime, inside `span`; its messages count in [`Host::stats`].
    pub fn spawn(host: &Host, span: tracing::Span) -> Mailbox<Self> {
        let runtime = host.runtime().clone();
        let context = Context::new();
        let mailbox = Mailbox::counted_as(context.address(), host, crate::console::Kind::Batch);
        let supervisor = BatchSupervisor {
            runtime,
            span,
            mailbox: mailbox.clone(),
            queue: VecDeque::new(),
            mode: Mode::Parallel,
            max_running: None,
            cancel: CancellationToken::new(),
            observer: None,
            running: 0,
        };
        context.run(supervisor);
        mailbox
    }

    fn begin(&mut self, batch: RunBatch<O>, ctx: &mut Context<Self>) {
        self.mode = batch.mode;
        self.max_running = batch.max_running;
        self.cancel = batch.cancel;
        if self.mode == Mode::Parallel && self.max_running.is_none() {
            return self.launch_all(batch.jobs, batch.observer, ctx);
        }
        self.queue = batch.jobs.into();
        self.observer = Some(batch.observer);
        self.advance(ctx);
    }

    fn report(&self, index: usize, outcome: JobOutcome<O>) {
        if let Some(observer) = &self.observer {
            observer
                .reports
                .do_send(BatchReport::Finished { index, outcome });
        }
    }

    /// How many jobs may run at once.
    fn capacity(&self) -> usize {
        match (self.mode, self.max_running) {
            (Mode::Sequential, _) => 1,
            (Mode::Parallel, Some(limit)) => limit.get(),
            (Mode::Parallel, None) => usize::MAX,
        }
    }

    /// Whether jobs wait for a free slot (and are announced when they get one).
    fn queued_jobs_wait(&self) -> bool {
        self.mode == Mode::Sequential || self.max_running.is_some()
    }

    /// Starts jobs while there is room; finishes the batch when nothing is left.
    fn advance(&mut self, ctx: &mut Context<Self>) {
        while self.running < self.capacity() {
            let Some(job) = self.queue.pop_front() else {
                break;
            };
            if self.queued_jobs_wait() && self.cancel.is_cancelled() {
                self.report(job.index, JobOutcome::NotStarted);
                continue;
            }
            let starting = match &self.observer {
                Some(observer) if self.queued_jobs_wait() && observer.announce_starts => {
                    Some(observer.reports.clone())
                }
                _ => None,
            };
            if let Some(starting) = starting {
                let index = job.index;
                let announce = async move { starting.send(BatchReport::Starting { index }).await };
                ctx.wait(announce.into_actor(self).map(move |_, this, ctx| {
                    this.launch(job);
                    this.advance(ctx);
                }));
                return;
            }
            self.launch(job);
        }
        if self.running == 0 && self.queue.is_empty() {
            if let Some(observer) = self.observer.take() {
                observer.reports.do_send(BatchReport::Done);
            }
            ctx.stop();
        }
    }

    /// A parallel batch without a cap: every job starts now, and each one's reporter tells the
    /// observer directly (the last one also says the batch is done), so an outcome costs one
    /// message instead of two and the supervisor has nothing left to wait for.
    fn launch_all(
        &mut self,
        mut jobs: Vec<Job<O>>,
        observer: BatchObserver<O>,
        ctx: &mut Context<Self>,
    ) {
        let running = jobs
            .iter()
            .filter(|job| !matches!(job.work, Work::Ready(_)))
            .count();
        let direct = Arc::new(Direct {
            remaining: AtomicUsize::new(running),
            collected: (!observer.each_outcome).then(|| Mutex::new(Vec::new())),
            observer,
            jobs: jobs.len(),
        });
        // Outcomes known in advance go first, so none can follow the last reporter's `Done`
        // (reordered in place: a second list of jobs would be one more large allocation).
        jobs.sort_unstable_by_key(|job| (!matches!(job.work, Work::Ready(_)), job.index));
        for job in jobs {
            let work = match job.work {
                Work::Ready(outcome) => {
                    direct.outcome(job.index, JobOutcome::Completed(outcome));
                    continue;
                }
                work => work,
            };
            let reporter = Reporter {
                route: Route::Direct(Arc::clone(&direct)),
                index: job.index,
                reported: false,
            };
            match work {
                Work::Actor(start) => start(reporter),
                work => self.start_work_actor(work, reporter, job.span),
            }
        }
        if running == 0 {
            direct.end();
        }
        ctx.stop();
    }

    fn start_work_actor(&self, work: Work<O>, reporter: Reporter<O>, span: tracing::Span) {
        WorkActor {
            work: Some(work),
            reporter: Some(reporter),
            runtime: self.runtime.clone(),
            span,
        }
        .start();
    }

    fn launch(&mut self, job: Job<O>) {
        let reporter = |supervisor: &Self| Reporter {
            route: Route::Supervisor(supervisor.mailbox.clone()),
            index: job.index,
            reported: false,
        };
        match job.work {
            Work::Ready(outcome) => self.report(job.index, JobOutcome::Completed(outcome)),
            Work::Actor(start) => {
                self.running += 1;
                start(reporter(self));
            }
            work => {
                self.running += 1;
                self.start_work_actor(work, reporter(self), job.span);
            }
        }
    }
}

impl<O: Send + Unpin + 'static> Actor for BatchSupervisor<O> {
    type Context = Context<Self>;
}

impl<O: Send + Unpin + 'static> TracedActor for BatchSupervisor<O> {
    fn span(&self) -> &tracing::Span {
        &self.span
    }
}

impl<O: Send + Unpin + 'static> Drop for BatchSupervisor<O> {
    fn drop(&mut self) {
        // Stopped before the batch was over (the host is going away): whoever waits for the
        // batch must still hear of every queued job and of the end.
        for job in std::mem::take(&mut self.queue) {
            self.report(job.index, JobOutcome::Lost);
        }
        if let Some(observer) = self.observer.take() {
            observer.reports.do_send(BatchReport::Done);
        }
    }
}

impl<O: Send + Unpin + 'static> Handler<Envelope<RunBatch<O>>> for BatchSupervisor<O> {
    type Result = ();

    fn handle(&mut self, envelope: Envelope<RunBatch<O>>, ctx: &mut Context<Self>) {
        let (batch, span, _handling) = envelope.open(&self.span, "BatchSupervisor", "RunBatch");
        let _entered = span.enter();
        self.begin(batch, ctx);
    }
}

/// A job's outcome, from its per-call actor to its supervisor.
#[derive(Message)]
#[rtype(result = "()")]
struct CallDone<O: Send + Unpin + 'static> {
    index: usize,
    outcome: JobOutcome<O>,
}

impl<O: Send + Unpin + 'static> Handler<Envelope<CallDone<O>>> for BatchSupervisor<O> {
    type Result = ();

    fn handle(&mut self, envelope: Envelope<CallDone<O>>, ctx: &mut Context<Self>) {
        let (done, span, _handling) = envelope.open(&self.span, "BatchSupervisor", "CallDone");
        let _entered = span.enter();
        self.running = self.running.saturating_sub(1);
        self.report(done.index, done.outcome);
        self.advance(ctx);
    }
}

/// Runs one plain job ([`Work::Async`] or [`Work::Blocking`]) on the host runtime and reports
/// its outcome to the supervisor.
pub struct WorkActor<O: Send + Unpin + 'static> {
    work: Option<Work<O>>,
    reporter: Option<Reporter<O>>,
    runtime: tokio::runtime::Handle,
    span: tracing::Span,
}

impl<O: Send + Unpin + 'static> fmt::Debug for WorkActor<O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WorkActor")
            .field("reporter", &self.reporter)
            .finish_non_exhaustive()
    }
}

/// The message of a panic's payload.
pub fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    match payload.downcast::<String>() {
        Ok(message) => *message,
        Err(payload) => match payload.downcast::<&'static str>() {
            Ok(message) => (*message).to_owned(),
            Err(_) => "a panic with a non-string payload".to_owned(),
        },
    }
}

/// What became of a job from how its task ended.
pub fn outcome_of<O>(joined: Result<O, tokio::task::JoinError>) -> JobOutcome<O> {
    match joined {
        Ok(value) => JobOutcome::Completed(value),
        Err(error) if error.is_panic() => JobOutcome::Panicked(panic_message(error.into_panic())),
        Err(_) => JobOutcome::Lost,
    }
}

impl<O: Send + Unpin + 'static> Actor for WorkActor<O> {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        let span = self.span.clone();
        let _entered = span.enter();
        let handle = match self.work.take() {
            Some(Work::Async(build)) => {
                let span = self.span.clone();
                self.runtime
                    .spawn(async move { build().await }.instrument(span))
            }
            Some(Work::Blocking(work)) => {
                let span = self.span.clone();
                self.runtime.spawn_blocking(move || span.in_scope(work))
            }
            // The supervisor reports these itself and never gives them to a `WorkActor`.
            Some(Work::Ready(_) | Work::Actor(_)) | None => {
                ctx.stop();
                return;
            }
        };
        ctx.wait(handle.into_actor(self).map(|joined, this, ctx| {
            if let Some(reporter) = this.reporter.take() {
                reporter.report(outcome_of(joined));
            }
            ctx.stop();
        }));
    }
}
