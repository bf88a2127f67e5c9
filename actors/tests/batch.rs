//! The batch supervisor and the host, without any notion of models or tools.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Barrier};
use std::time::Duration;

use actix::{Actor, Context, Handler};
use futures::FutureExt;
use golato_actors::batch::{
    BatchObserver, BatchReport, BatchSupervisor, Job, JobOutcome, Mode, RunBatch, Work,
};
use golato_actors::{traced_handlers, Host, HostConfig, HostError, Mailbox, TracedActor};
use tokio_util::sync::CancellationToken;

#[derive(Debug, PartialEq)]
enum Seen {
    Starting(usize),
    Finished(usize, String),
    Done,
    /// `Collected`, sorted by index (they come in the order the jobs ended).
    Collected(Vec<(usize, String)>),
}

struct Observer {
    seen: mpsc::Sender<Seen>,
    span: tracing::Span,
}

impl Actor for Observer {
    type Context = Context<Self>;
}

impl TracedActor for Observer {
    fn span(&self) -> &tracing::Span {
        &self.span
    }
}

impl Handler<BatchReport<String>> for Observer {
    type Result = ();
    fn handle(&mut self, report: BatchReport<String>, _: &mut Context<Self>) {
        let seen = match report {
            BatchReport::Starting { index } => Seen::Starting(index),
            BatchReport::Finished { index, outcome } => Seen::Finished(index, text(outcome)),
            BatchReport::Done => Seen::Done,
            BatchReport::Collected { outcomes } => {
                let mut outcomes: Vec<_> = outcomes
                    .into_iter()
                    .map(|(index, outcome)| (index, text(outcome)))
                    .collect();
                outcomes.sort();
                Seen::Collected(outcomes)
            }
        };
        self.seen.send(seen).unwrap();
    }
}

fn text(outcome: JobOutcome<String>) -> String {
    match outcome {
        JobOutcome::Completed(value) => value,
        JobOutcome::Panicked(text) => format!("panicked: {text}"),
        JobOutcome::Lost => "lost".to_owned(),
        JobOutcome::NotStarted => "not started".to_owned(),
    }
}

traced_handlers!(Observer { BatchReport<String> });

/// Runs `jobs` on a fresh supervisor and returns everything the observer saw, in order.
fn run_batch(
    host: &Host,
    jobs: Vec<Job<String>>,
    mode: Mode,
    cancel: CancellationToken,
) -> Vec<Seen> {
    run_batch_with(host, jobs, mode, None, cancel, true)
}

fn run_batch_with(
    host: &Host,
    jobs: Vec<Job<String>>,
    mode: Mode,
    max_running: Option<NonZeroUsize>,
    cancel: CancellationToken,
    each_outcome: bool,
) -> Vec<Seen> {
    let (seen_tx, seen_rx) = mpsc::channel();
    let supervisor_host = host.clone();
    let observer = golato_actors::embed::start(host, move |ctx: &mut Context<Observer>| {
        let mailbox = Mailbox::new(actix::AsyncContext::address(ctx));
        let supervisor = BatchSupervisor::spawn(&supervisor_host, tracing::Span::none());
        supervisor.do_send(RunBatch {
            jobs,
            mode,
            max_running,
            cancel,
            observer: BatchObserver {
                reports: mailbox.recipient(),
                announce_starts: true,
                each_outcome,
            },
        });
        Observer {
            seen: seen_tx,
            span: tracing::Span::none(),
        }
    })
    .unwrap();
    let mut seen = Vec::new();
    loop {
        let next = seen_rx
            .recv_timeout(Duration::from_secs(30))
            .expect("the batch reports");
        let done = matches!(next, Seen::Done | Seen::Collected(_));
        seen.push(next);
        if done {
            drop(observer);
            return seen;
        }
    }
}

fn job(index: usize, work: Work<String>) -> Job<String> {
    Job {
        index,
        work,
        span: tracing::Span::none(),
    }
}

fn async_job(index: usize, value: &str) -> Job<String> {
    let value = value.to_owned();
    job(
        index,
        Work::Async(Box::new(move || async move { value }.boxed())),
    )
}

/// One job of each kind: async, blocking, ready, and one that panics.
fn mixed_jobs() -> Vec<Job<String>> {
    vec![
        async_job(0, "zero"),
        job(1, Work::Blocking(Box::new(|| "one".to_owned()))),
        job(2, Work::Ready("two".to_owned())),
        job(
            3,
            Work::Async(Box::new(|| async { panic!("job three broke") }.boxed())),
        ),
    ]
}

#[test]
fn a_parallel_batch_reports_every_outcome_by_index_then_done() {
    let host = Host::global().unwrap();
    let mut jobs = mixed_jobs();
    jobs.push(job(
        4,
        Work::Blocking(Box::new(|| panic!("job four broke"))),
    ));
    let mut seen = run_batch(&host, jobs, Mode::Parallel, CancellationToken::new());
    assert_eq!(seen.pop(), Some(Seen::Done));
    seen.sort_by_key(|s| match s {
        Seen::Finished(index, _) => *index,
        _ => usize::MAX,
    });
    assert_eq!(
        seen,
        [
            Seen::Finished(0, "zero".into()),
            Seen::Finished(1, "one".into()),
            Seen::Finished(2, "two".into()),
            Seen::Finished(3, "panicked: job three broke".into()),
            Seen::Finished(4, "panicked: job four broke".into()),
        ]
    );
}

#[test]
fn an_observer_that_stores_outcomes_gets_them_all_in_one_report() {
    let host = Host::global().unwrap();
    let seen = run_batch_with(
        &host,
        mixed_jobs(),
        Mode::Parallel,
        None,
        CancellationToken::new(),
        false,
    );
    // Nothing before it, and the batch ends with it (no `Done`).
    assert_eq!(
        seen,
        [Seen::Collected(vec![
            (0, "zero".into()),
            (1, "one".into()),
            (2, "two".into()),
            (3, "panicked: job three broke".into()),
        ])]
    );
    // A batch with nothing to run still ends.
    assert_eq!(
        run_batch_with(
            &host,
            vec![],
            Mode::Parallel,
            None,
            CancellationToken::new(),
            false
        ),
        [Seen::Collected(vec![])]
    );
}

#[test]
fn a_sequential_batch_announces_each_job_and_runs_them_in_order() {
    let host = Host::global().unwrap();
    let jobs = vec![
        async_job(0, "a"),
        job(1, Work::Ready("b".into())),
        async_job(2, "c"),
    ];
    let seen = run_batch(&host, jobs, Mode::Sequential, CancellationToken::new());
    assert_eq!(
        seen,
        [
            Seen::Starting(0),
            Seen::Finished(0, "a".into()),
            Seen::Starting(1),
            Seen::Finished(1, "b".into()),
            Seen::Starting(2),
            Seen::Finished(2, "c".into()),
            Seen::Done,
        ]
    );
}

#[test]
fn a_cancelled_sequential_batch_starts_nothing_more_but_waits_for_the_running_job() {
    let host = Host::global().unwrap();
    let cancel = CancellationToken::new();
    let first = {
        let cancel = cancel.clone();
        job(
            0,
            Work::Async(Box::new(move || {
                async move {
                    cancel.cancel();
                    "finished after cancelling".to_owned()
                }
                .boxed()
            })),
        )
    };
    let seen = run_batch(
        &host,
        vec![first, async_job(1, "never"), async_job(2, "never")],
        Mode::Sequential,
        cancel,
    );
    assert_eq!(
        seen,
        [
            Seen::Starting(0),
            Seen::Finished(0, "finished after cancelling".into()),
            Seen::Finished(1, "not started".into()),
            Seen::Finished(2, "not started".into()),
            Seen::Done,
        ]
    );
}

#[test]
fn a_capped_parallel_batch_runs_at_most_that_many_at_once_announcing_each() {
    let host = Host::global().unwrap();
    let running = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    // Jobs meet in pairs: two must run at once for any to finish, so the cap is also reached.
    let pairs = Arc::new(Barrier::new(2));
    let jobs = (0..4)
        .map(|index| {
            let (running, most, pairs) = (running.clone(), most.clone(), pairs.clone());
            job(
                index,
                Work::Blocking(Box::new(move || {
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    pairs.wait();
                    running.fetch_sub(1, Ordering::SeqCst);
                    format!("job {index}")
                })),
            )
        })
        .collect();
    let seen = run_batch_with(
        &host,
        jobs,
        Mode::Parallel,
        NonZeroUsize::new(2),
        CancellationToken::new(),
        true,
    );
    assert_eq!(most.load(Ordering::SeqCst), 2);
    let announced: Vec<usize> = seen
        .iter()
        .filter_map(|s| match s {
            Seen::Starting(index) => Some(*index),
            _ => None,
        })
        .collect();
    assert_eq!(announced, [0, 1, 2, 3]);
    // Each job is announced before its outcome, and jobs 2 and 3 only after a slot freed.
    let position = |wanted: &Seen| seen.iter().position(|s| s == wanted).unwrap();
    let first_finish = seen
        .iter()
        .position(|s| matches!(s, Seen::Finished(..)))
        .unwrap();
    assert!(position(&Seen::Starting(2)) > first_finish);
    assert_eq!(seen.last(), Some(&Seen::Done));
}

#[test]
fn a_callers_actor_reports_through_its_reporter_or_is_lost_when_dropped() {
    let host = Host::global().unwrap();
    let jobs = vec![
        job(
            0,
            Work::Actor(Box::new(|reporter| {
                reporter.report(JobOutcome::Completed("reported".to_owned()))
            })),
        ),
        job(1, Work::Actor(Box::new(drop))),
    ];
    let mut seen = run_batch(&host, jobs, Mode::Parallel, CancellationToken::new());
    assert_eq!(seen.pop(), Some(Seen::Done));
    seen.sort_by_key(|s| match s {
        Seen::Finished(index, _) => *index,
        _ => usize::MAX,
    });
    assert_eq!(
        seen,
        [
            Seen::Finished(0, "reported".into()),
            Seen::Finished(1, "lost".into())
        ]
    );
}

#[test]
fn an_empty_batch_is_done_at_once() {
    let host = Host::global().unwrap();
    assert_eq!(
        run_batch(&host, vec![], Mode::Parallel, CancellationToken::new()),
        [Seen::Done]
    );
}

#[test]
fn shutdown_waits_for_tracked_work_then_refuses_new_actors() {
    let host = Host::new(HostConfig {
        arbiters: 2,
        worker_threads: Some(1),
        ..HostConfig::default()
    })
    .unwrap();
    let guard = golato_actors::embed::track(&host);
    let token = golato_actors::embed::shutdown_token(&host).clone();
    let (released_tx, released_rx) = mpsc::channel();
    // The "work" ends when it sees the shutdown signal: it says so, then lets go of its guard
    // (in that order: shutdown may return the moment the guard is gone).
    host.spawn(async move {
        token.cancelled().await;
        released_tx.send(()).unwrap();
        drop(guard);
    });
    let report = host.shutdown_blocking(std::time::Duration::from_secs(60));
    assert_eq!(report.unfinished, 0);
    released_rx
        .try_recv()
        .expect("shutdown returned only after the work ended");
    assert!(!host.is_running());
    let refused = golato_actors::embed::start(&host, |_: &mut Context<Observer>| Observer {
        seen: mpsc::channel().0,
        span: tracing::Span::none(),
    });
    assert!(matches!(refused, Err(HostError::Stopped)));
}
