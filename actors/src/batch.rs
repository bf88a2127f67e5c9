//! Batch execution: a [`BatchSupervisor`] per batch, one [`CallActor`] per job.
//!
//! The supervisor runs every job of a batch at once ([`Mode::Parallel`]) or one after another
//! ([`Mode::Sequential`]), and reports to a [`BatchObserver`]: [`JobStarting`] before each job of a
//! sequential batch (and waits for it to be handled, so the observer can announce the job before
//! it runs), [`JobFinished`] for each job with its source index, then [`BatchDone`] once every
//! started job has returned. Each job runs on the host runtime (workers for async work, the
//! blocking pool for blocking work), never on an actor thread; a panic becomes
//! [`JobOutcome::Panicked`] and an actor that dies without reporting becomes [`JobOutcome::Lost`],
//! so a batch never hangs on a broken job.

use std::collections::VecDeque;
use std::fmt;

use actix::fut::ActorFutureExt;
use actix::{Actor, ActorContext, AsyncContext, Context, Handler, Message, WrapFuture};
use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::{Envelope, Mailbox, TracedActor, TracedRecipient};

/// How the jobs of a batch are run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Every job starts at once; outcomes arrive in completion order.
    Parallel,
    /// Each job starts after the previous one returned, in source order.
    Sequential,
}

/// The work of one job.
pub enum Work<O> {
    /// Builds and runs a future on the runtime's worker threads. The builder itself runs there
    /// too, so nothing of the job ever runs on an actor thread.
    Async(Box<dyn FnOnce() -> BoxFuture<'static, O> + Send>),
    /// Runs a closure on the runtime's blocking pool.
    Blocking(Box<dyn FnOnce() -> O + Send>),
    /// An outcome known in advance; reported in its turn without starting anything.
    Ready(O),
}

impl<O> fmt::Debug for Work<O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Work::Async(_) => "Work::Async",
            Work::Blocking(_) => "Work::Blocking",
            Work::Ready(_) => "Work::Ready",
        })
    }
}

/// One job of a batch, with its source index (its position in the caller's list).
#[derive(Debug)]
pub struct Job<O> {
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

/// Sent to the observer before a job of a sequential batch starts; the job starts once it has
/// been handled.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct JobStarting {
    /// Source index of the job about to start.
    pub index: usize,
}

/// Sent to the observer when a job has an outcome.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct JobFinished<O: Send + Unpin + 'static> {
    /// Source index of the job.
    pub index: usize,
    /// What became of it.
    pub outcome: JobOutcome<O>,
}

/// Sent to the observer once every job of the batch has finished (or was never started).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct BatchDone;

/// Where a supervisor reports.
#[derive(Debug)]
pub struct BatchObserver<O: Send + Unpin + 'static> {
    /// Told before each job of a sequential batch starts; `None` to start without telling.
    pub starting: Option<TracedRecipient<JobStarting>>,
    /// Told each job's outcome.
    pub finished: TracedRecipient<JobFinished<O>>,
    /// Told when the batch is over.
    pub done: TracedRecipient<BatchDone>,
}

/// Runs one batch.
#[derive(Message)]
#[rtype(result = "()")]
pub struct RunBatch<O: Send + Unpin + 'static> {
    /// The jobs, in source order.
    pub jobs: Vec<Job<O>>,
    /// Parallel or sequential.
    pub mode: Mode,
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

/// Supervises one batch: starts a [`CallActor`] per job and reports outcomes by source index.
pub struct BatchSupervisor<O: Send + Unpin + 'static> {
    runtime: tokio::runtime::Handle,
    span: tracing::Span,
    mailbox: Mailbox<Self>,
    queue: VecDeque<Job<O>>,
    mode: Mode,
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
    /// `runtime`, inside `span`.
    pub fn spawn(runtime: tokio::runtime::Handle, span: tracing::Span) -> Mailbox<Self> {
        let context = Context::new();
        let mailbox = Mailbox::new(context.address());
        let supervisor = BatchSupervisor {
            runtime,
            span,
            mailbox: mailbox.clone(),
            queue: VecDeque::new(),
            mode: Mode::Parallel,
            cancel: CancellationToken::new(),
            observer: None,
            running: 0,
        };
        context.run(supervisor);
        mailbox
    }

    fn report(&self, index: usize, outcome: JobOutcome<O>) {
        if let Some(observer) = &self.observer {
            observer.finished.do_send(JobFinished { index, outcome });
        }
    }

    /// Starts jobs until one is running (sequential) or all are (parallel); finishes the batch
    /// when nothing is left.
    fn advance(&mut self, ctx: &mut Context<Self>) {
        while let Some(job) = self.queue.pop_front() {
            if self.mode == Mode::Sequential && self.cancel.is_cancelled() {
                self.report(job.index, JobOutcome::NotStarted);
                continue;
            }
            let starting = match (&self.mode, &self.observer) {
                (Mode::Sequential, Some(observer)) => observer.starting.clone(),
                _ => None,
            };
            if let Some(starting) = starting {
                let index = job.index;
                let announce = async move { starting.send(JobStarting { index }).await };
                ctx.wait(announce.into_actor(self).map(move |_, this, ctx| {
                    this.launch(job, ctx);
                    if this.running == 0 {
                        this.advance(ctx);
                    }
                }));
                return;
            }
            self.launch(job, ctx);
            if self.mode == Mode::Sequential && self.running > 0 {
                return;
            }
        }
        if self.running == 0 {
            if let Some(observer) = self.observer.take() {
                observer.done.do_send(BatchDone);
            }
            ctx.stop();
        }
    }

    fn launch(&mut self, job: Job<O>, _ctx: &mut Context<Self>) {
        match job.work {
            Work::Ready(outcome) => self.report(job.index, JobOutcome::Completed(outcome)),
            work => {
                self.running += 1;
                let actor = CallActor {
                    index: job.index,
                    work: Some(work),
                    supervisor: self.mailbox.clone(),
                    runtime: self.runtime.clone(),
                    span: job.span,
                    reported: false,
                };
                actor.start();
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
            observer.done.do_send(BatchDone);
        }
    }
}

impl<O: Send + Unpin + 'static> Handler<Envelope<RunBatch<O>>> for BatchSupervisor<O> {
    type Result = ();

    fn handle(&mut self, envelope: Envelope<RunBatch<O>>, ctx: &mut Context<Self>) {
        let (batch, span) = envelope.open(&self.span, "BatchSupervisor", "RunBatch");
        let _entered = span.enter();
        self.queue = batch.jobs.into();
        self.mode = batch.mode;
        self.cancel = batch.cancel;
        self.observer = Some(batch.observer);
        self.advance(ctx);
    }
}

/// A job's outcome, from its [`CallActor`] to its supervisor.
#[derive(Message)]
#[rtype(result = "()")]
struct CallDone<O: Send + Unpin + 'static> {
    index: usize,
    outcome: JobOutcome<O>,
}

impl<O: Send + Unpin + 'static> Handler<Envelope<CallDone<O>>> for BatchSupervisor<O> {
    type Result = ();

    fn handle(&mut self, envelope: Envelope<CallDone<O>>, ctx: &mut Context<Self>) {
        let (done, span) = envelope.open(&self.span, "BatchSupervisor", "CallDone");
        let _entered = span.enter();
        self.running = self.running.saturating_sub(1);
        self.report(done.index, done.outcome);
        if self.running == 0 || self.mode == Mode::Parallel {
            self.advance(ctx);
        }
    }
}

/// Runs one job on the host runtime and reports its outcome to the supervisor; reports
/// [`JobOutcome::Lost`] from `Drop` if it is stopped before that.
pub struct CallActor<O: Send + Unpin + 'static> {
    index: usize,
    work: Option<Work<O>>,
    supervisor: Mailbox<BatchSupervisor<O>>,
    runtime: tokio::runtime::Handle,
    span: tracing::Span,
    reported: bool,
}

impl<O: Send + Unpin + 'static> fmt::Debug for CallActor<O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallActor")
            .field("index", &self.index)
            .field("reported", &self.reported)
            .finish_non_exhaustive()
    }
}

impl<O: Send + Unpin + 'static> CallActor<O> {
    fn report(&mut self, outcome: JobOutcome<O>) {
        self.reported = true;
        self.supervisor.do_send(CallDone {
            index: self.index,
            outcome,
        });
    }
}

fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    match payload.downcast::<String>() {
        Ok(message) => *message,
        Err(payload) => match payload.downcast::<&'static str>() {
            Ok(message) => (*message).to_owned(),
            Err(_) => "a panic with a non-string payload".to_owned(),
        },
    }
}

fn outcome_of<O>(joined: Result<O, tokio::task::JoinError>) -> JobOutcome<O> {
    match joined {
        Ok(value) => JobOutcome::Completed(value),
        Err(error) if error.is_panic() => JobOutcome::Panicked(panic_message(error.into_panic())),
        Err(_) => JobOutcome::Lost,
    }
}

impl<O: Send + Unpin + 'static> Actor for CallActor<O> {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        let span = self.span.clone();
        let _entered = span.enter();
        let handle = match self.work.take() {
            None => return,
            Some(Work::Ready(value)) => {
                self.report(JobOutcome::Completed(value));
                ctx.stop();
                return;
            }
            Some(Work::Async(build)) => {
                let span = self.span.clone();
                self.runtime
                    .spawn(async move { build().await }.instrument(span))
            }
            Some(Work::Blocking(work)) => {
                let span = self.span.clone();
                self.runtime.spawn_blocking(move || span.in_scope(work))
            }
        };
        ctx.wait(handle.into_actor(self).map(|joined, this, ctx| {
            this.report(outcome_of(joined));
            ctx.stop();
        }));
    }
}

impl<O: Send + Unpin + 'static> Drop for CallActor<O> {
    fn drop(&mut self) {
        if !self.reported {
            self.report(JobOutcome::Lost);
        }
    }
}
