//! golato embedded in an application: on its tokio runtime, on its actix arbiters, under its
//! supervisor; shutdown with a deadline, and dropping a host without one.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix::Supervisor;
use golato::agent::{self, Agent, Error};
use golato::embed::{self, AgentService, InjectCrash, Restarts, StartRun};
use golato::generator::{EventStream, Generator, Request, Scripted};
use golato::message::Message;
use golato::tool::{Tool, ToolResult};
use golato::{Host, HostConfig, HostError, ToolTasks};
use serde_json::json;
use support::*;
use tokio::sync::{mpsc, Semaphore};

/// A tool that says it has started, then waits for a permit of `release`. With `cooperative`
/// it gives up when cancelled; otherwise it ignores cancellation (as a careless tool would).
fn gate_tool(
    entered: mpsc::UnboundedSender<()>,
    release: Arc<Semaphore>,
    cooperative: bool,
) -> Tool {
    Tool::new(
        "gate",
        "Waits.",
        json!({"type": "object"}),
        move |ctx, _args| {
            let (entered, release) = (entered.clone(), Arc::clone(&release));
            async move {
                let _ = entered.send(());
                if cooperative {
                    tokio::select! {
                        () = ctx.cancelled() => return Ok(ToolResult::error("cancelled")),
                        permit = release.acquire() => drop(permit),
                    }
                } else {
                    drop(release.acquire().await);
                }
                Ok(ToolResult::text("through"))
            }
        },
    )
}

fn gated_agent(host: &Host, tool: Tool) -> Agent {
    Agent::new(agent::Config {
        generator: Some(Arc::new(script(vec![call("g", "gate", "{}")]))),
        tools: vec![tool],
        host: Some(host.clone()),
        ..Default::default()
    })
    .unwrap()
}

async fn entered(receiver: &mut mpsc::UnboundedReceiver<()>, count: usize) {
    for _ in 0..count {
        tokio::time::timeout(HANG_GUARD, receiver.recv())
            .await
            .expect("the tool started")
            .expect("a tool is alive");
    }
}

fn has_prompt(messages: &[Message]) -> bool {
    matches!(messages.first(), Some(Message::User(_)))
}

/// A tool naming the thread its function runs on.
fn thread_tool(seen: Arc<Mutex<Vec<String>>>) -> Tool {
    Tool::new(
        "where",
        "Names its thread.",
        json!({"type": "object"}),
        move |_ctx, _| {
            let seen = Arc::clone(&seen);
            async move {
                let name = std::thread::current().name().unwrap_or("").to_owned();
                seen.lock().unwrap().push(name);
                Ok(ToolResult::text("here"))
            }
        },
    )
}

#[test]
fn tools_run_on_the_runtime_the_application_lends() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("app-worker")
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(tools_run_on(runtime.handle().clone()));
}

async fn tools_run_on(runtime: tokio::runtime::Handle) {
    let host = Host::new(HostConfig {
        runtime: Some(runtime),
        thread_name: "lent".into(),
        tool_tasks: ToolTasks::Workers,
        ..HostConfig::default()
    })
    .unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let agent = Agent::new(agent::Config {
        generator: Some(Arc::new(script(vec![
            call("1", "where", "{}"),
            call("2", "where", "{}"),
        ]))),
        tools: vec![thread_tool(Arc::clone(&seen))],
        host: Some(host.clone()),
        ..Default::default()
    })
    .unwrap();
    agent.run(prompt("go")).await.unwrap();
    // A runtime of the host's own would have named its workers "lent-worker".
    assert_eq!(*seen.lock().unwrap(), ["app-worker"; 2]);
    assert_eq!(host.shutdown(HANG_GUARD).await.unfinished, 0);
}

#[tokio::test(flavor = "current_thread")]
async fn a_current_thread_runtime_is_refused_with_what_to_do() {
    let error = Host::new(HostConfig {
        runtime: Some(tokio::runtime::Handle::current()),
        ..HostConfig::default()
    })
    .unwrap_err();
    assert!(matches!(error, HostError::CurrentThreadRuntime));
    assert!(error.to_string().contains("multi-thread"));
}

#[actix::test]
async fn runs_live_on_the_applications_arbiter() {
    /// A generator that notes the thread it is polled on: the run actor's.
    struct Noting(Scripted, Arc<Mutex<Vec<std::thread::ThreadId>>>);
    impl Generator for Noting {
        fn stream(&self, request: Request) -> EventStream {
            self.1.lock().unwrap().push(std::thread::current().id());
            self.0.stream(request)
        }
    }
    let host =
        embed::host_on_arbiters(vec![actix::Arbiter::current()], HostConfig::default()).unwrap();
    let polled = Arc::new(Mutex::new(Vec::new()));
    let agent = Agent::new(agent::Config {
        generator: Some(Arc::new(Noting(
            script(vec![call("1", "echo", r#"{"text":"hi"}"#)]),
            Arc::clone(&polled),
        ))),
        tools: vec![echo_tool()],
        host: Some(host.clone()),
        ..Default::default()
    })
    .unwrap();
    let result = agent.run(prompt("go")).await.unwrap();
    assert_eq!(result.final_message.text(), "done");
    let here = std::thread::current().id();
    assert_eq!(*polled.lock().unwrap(), [here, here]);
    assert_eq!(host.shutdown(HANG_GUARD).await.unfinished, 0);
    // The application's system still runs after golato's host stopped.
    assert_eq!(actix::spawn(async { 7 }).await.unwrap(), 7);
    let refused = agent.run(prompt("again")).await;
    assert!(
        matches!(refused, Err(Error::Host(HostError::Stopped))),
        "{refused:?}"
    );
}

#[actix::test]
async fn an_empty_arbiter_list_is_refused() {
    let error = embed::host_on_arbiters(vec![], HostConfig::default()).unwrap_err();
    assert!(matches!(error, HostError::NoArbiters));
}

#[actix::test]
async fn a_crashed_run_ends_alone_and_the_supervised_service_restarts() {
    let host =
        embed::host_on_arbiters(vec![actix::Arbiter::current()], HostConfig::default()).unwrap();
    let (entered_tx, mut entered_rx) = mpsc::unbounded_channel();
    let release = Arc::new(Semaphore::new(0));
    let agent = gated_agent(&host, gate_tool(entered_tx, Arc::clone(&release), true));
    let service = Supervisor::start(move |_| AgentService::new(agent));

    let mut runs = Vec::new();
    for _ in 0..3 {
        runs.push(service.send(StartRun::new(prompt("go"))).await.unwrap());
    }
    entered(&mut entered_rx, 3).await;
    runs[1].inject_crash();
    release.add_permits(3);
    let outcomes = futures::future::join_all(runs.into_iter().map(|run| run.finish())).await;
    assert_eq!(outcomes[0].as_ref().unwrap().final_message.text(), "done");
    assert_eq!(outcomes[2].as_ref().unwrap().final_message.text(), "done");
    match &outcomes[1] {
        Err(error @ Error::Crashed { messages }) => {
            assert!(has_prompt(messages), "the transcript is kept: {messages:?}");
            // The assistant message with the call is kept, with an error result for its call.
            assert!(messages.iter().any(|m| matches!(m, Message::Assistant(_))));
            assert!(error.to_string().contains("crashed"));
        }
        other => panic!("the crashed run ends with Crashed, got {other:?}"),
    }

    // The service itself fails; its supervisor restarts it, and it serves runs again.
    assert_eq!(service.send(Restarts).await.unwrap(), 0);
    service.do_send(InjectCrash);
    assert_eq!(service.send(Restarts).await.unwrap(), 1);
    release.add_permits(1);
    let run = service.send(StartRun::new(prompt("again"))).await.unwrap();
    assert_eq!(run.finish().await.unwrap().final_message.text(), "done");
    assert_eq!(host.shutdown(HANG_GUARD).await.unfinished, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_cancels_and_waits_for_runs_that_stop() {
    let host = Host::new(HostConfig::default()).unwrap();
    let (entered_tx, mut entered_rx) = mpsc::unbounded_channel();
    let agent = gated_agent(
        &host,
        gate_tool(entered_tx, Arc::new(Semaphore::new(0)), true),
    );
    let run = agent.start(prompt("go"));
    entered(&mut entered_rx, 1).await;
    let report = host.shutdown(HANG_GUARD).await;
    assert_eq!(report.unfinished, 0);
    match run.finish().await {
        Err(Error::Cancelled { messages }) => assert!(has_prompt(&messages)),
        other => panic!("a run cancelled by shutdown ends Cancelled, got {other:?}"),
    }
}

#[test]
fn shutdown_gives_up_on_a_tool_that_ignores_cancellation_at_the_deadline() {
    let host = Host::new(HostConfig::default()).unwrap();
    let (entered_tx, mut entered_rx) = mpsc::unbounded_channel();
    let release = Arc::new(Semaphore::new(0));
    let agent = gated_agent(&host, gate_tool(entered_tx, Arc::clone(&release), false));
    let run = agent.start(prompt("go"));
    assert!(entered_rx.blocking_recv().is_some());
    // The deadline is what is under test: the tool never returns by itself.
    let report = host.shutdown_blocking(Duration::from_millis(200));
    assert_eq!(report.unfinished, 1);
    match run.wait() {
        Err(Error::Lost { messages }) => assert!(has_prompt(&messages)),
        other => panic!("a run abandoned at the deadline ends Lost, got {other:?}"),
    }
    release.add_permits(1);
}

static PANICS: AtomicUsize = AtomicUsize::new(0);

#[actix::test]
async fn dropping_a_host_in_async_code_neither_waits_nor_panics() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        // Another test of this file crashes a run on purpose.
        if !info.to_string().contains("injected") {
            PANICS.fetch_add(1, Ordering::SeqCst);
        }
        previous(info);
    }));
    // A host on this arbiter with a worker runtime of its own: its last handle goes with the
    // run's actor, on this very thread, inside async code, where dropping a runtime panics.
    let host =
        embed::host_on_arbiters(vec![actix::Arbiter::current()], HostConfig::default()).unwrap();
    let workers = host.runtime().clone();
    let (entered_tx, mut entered_rx) = mpsc::unbounded_channel();
    let release = Arc::new(Semaphore::new(0));
    let agent = gated_agent(&host, gate_tool(entered_tx, Arc::clone(&release), false));
    let run = agent.start(prompt("go"));
    entered(&mut entered_rx, 1).await;
    drop((agent, host));
    release.add_permits(1);
    assert_eq!(run.finish().await.unwrap().final_message.text(), "done");
    // The host is gone once its worker runtime refuses work (a shut-down runtime cancels what
    // is spawned on it).
    let gone = async {
        while workers.spawn(async {}).await.is_ok() {
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(HANG_GUARD, gone)
        .await
        .expect("the host is dropped with the run's actor");
    assert_eq!(PANICS.load(Ordering::SeqCst), 0);
}

#[actix::test]
async fn an_actix_application_on_its_own_arbiters_serves_the_actor_console() {
    use golato::host::console::{ConsoleConfig, Kind, Update};
    use tokio::io::AsyncBufReadExt as _;
    let host = embed::host_on_arbiters(
        vec![actix::Arbiter::current()],
        HostConfig {
            console: Some(ConsoleConfig {
                listen: Some("127.0.0.1:0".parse().unwrap()),
                ..ConsoleConfig::default()
            }),
            ..HostConfig::default()
        },
    )
    .unwrap();
    let (entered_tx, mut entered_rx) = mpsc::unbounded_channel();
    let release = Arc::new(Semaphore::new(0));
    let agent = gated_agent(&host, gate_tool(entered_tx, Arc::clone(&release), true));
    let service = Supervisor::start(move |_| AgentService::new(agent));
    let run = service.send(StartRun::new(prompt("go"))).await.unwrap();
    entered(&mut entered_rx, 1).await;

    let Some(golato::host::console::ConsoleAddr::Tcp(addr)) = host.console_addr() else {
        panic!("the console is not served on TCP")
    };
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut lines = tokio::io::BufReader::new(stream).lines();
    let hello = lines.next_line().await.unwrap().unwrap();
    assert!(matches!(
        serde_json::from_str::<Update>(&hello).unwrap(),
        Update::Hello { .. }
    ));
    let first = lines.next_line().await.unwrap().unwrap();
    let Update::Snapshot(snapshot) = serde_json::from_str::<Update>(&first).unwrap() else {
        panic!("the second update is not a snapshot")
    };
    let kinds: Vec<Kind> = snapshot.actors.iter().map(|actor| actor.kind).collect();
    assert!(kinds.contains(&Kind::Run), "{kinds:?}");
    assert!(kinds.contains(&Kind::Call), "{kinds:?}");
    release.add_permits(1);
    assert_eq!(run.finish().await.unwrap().final_message.text(), "done");
    assert_eq!(host.shutdown(HANG_GUARD).await.unfinished, 0);
}

/// A generator that notes the thread each model turn is asked on (the run actor's).
struct NotingTurns(Scripted, Arc<Mutex<Vec<std::thread::ThreadId>>>);

impl Generator for NotingTurns {
    fn stream(&self, request: Request) -> EventStream {
        self.1.lock().unwrap().push(std::thread::current().id());
        self.0.stream(request)
    }
}

/// The threads of one run: its two model turns', then its four calls' functions'.
fn threads_of_one_run(host: &Host) -> (Vec<std::thread::ThreadId>, Vec<std::thread::ThreadId>) {
    let (turns, calls) = (
        Arc::new(Mutex::new(Vec::new())),
        Arc::new(Mutex::new(Vec::new())),
    );
    let noting = {
        let calls = Arc::clone(&calls);
        Tool::new("where", "", json!({"type": "object"}), move |_ctx, _| {
            let calls = Arc::clone(&calls);
            async move {
                calls.lock().unwrap().push(std::thread::current().id());
                Ok(ToolResult::text("here"))
            }
        })
    };
    let agent = Agent::new(agent::Config {
        generator: Some(Arc::new(NotingTurns(
            script(
                (0..4)
                    .map(|i| call(&i.to_string(), "where", "{}"))
                    .collect(),
            ),
            Arc::clone(&turns),
        ))),
        tools: vec![noting],
        host: Some(host.clone()),
        ..Default::default()
    })
    .unwrap();
    agent.start(prompt("go")).wait().unwrap();
    let (turns, calls) = (turns.lock().unwrap().clone(), calls.lock().unwrap().clone());
    (turns, calls)
}

#[test]
fn a_runs_turns_and_its_calls_functions_share_one_thread_by_default() {
    let host = Host::new(HostConfig {
        arbiters: 2,
        ..HostConfig::default()
    })
    .unwrap();
    // Runs go round-robin over the two arbiters: each keeps to the one it was given.
    for _ in 0..4 {
        let (turns, calls) = threads_of_one_run(&host);
        assert_eq!(turns.len(), 2);
        assert_eq!(turns[0], turns[1]);
        assert_eq!(calls, [turns[0]; 4]);
    }
    assert_eq!(host.shutdown_blocking(HANG_GUARD).unfinished, 0);
}

#[test]
fn with_workers_a_calls_function_runs_off_the_runs_thread() {
    let host = Host::new(HostConfig {
        arbiters: 1,
        tool_tasks: ToolTasks::Workers,
        ..HostConfig::default()
    })
    .unwrap();
    let (turns, calls) = threads_of_one_run(&host);
    assert_eq!(calls.len(), 4);
    assert!(
        calls.iter().all(|thread| *thread != turns[0]),
        "{turns:?} {calls:?}"
    );
    assert_eq!(host.shutdown_blocking(HANG_GUARD).unfinished, 0);
}

#[test]
fn shutdown_abandons_blocking_work_a_tool_started_on_an_arbiter_with_a_lent_runtime() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let host = Host::new(HostConfig {
        runtime: Some(runtime.handle().clone()),
        ..HostConfig::default()
    })
    .unwrap();
    let (entered_tx, mut entered_rx) = mpsc::unbounded_channel();
    // Work nothing ever releases: the blocking pool it went to cannot be waited for.
    let (_never_tx, never_rx) = std::sync::mpsc::channel::<()>();
    let never_rx = Arc::new(Mutex::new(never_rx));
    let stuck = Tool::new("gate", "", json!({"type": "object"}), move |_ctx, _| {
        let (entered_tx, never_rx) = (entered_tx.clone(), Arc::clone(&never_rx));
        async move {
            let _ = entered_tx.send(());
            let _ = tokio::task::spawn_blocking(move || never_rx.lock().unwrap().recv()).await;
            Ok(ToolResult::text("never"))
        }
    });
    let agent = gated_agent(&host, stuck);
    let run = agent.start(prompt("go"));
    runtime.block_on(entered(&mut entered_rx, 1));
    let report = host.shutdown_blocking(Duration::from_millis(100));
    assert_eq!(report.unfinished, 1);
    assert!(run.wait().is_err());
}

/// An async tool function that blocks its thread until the test lets it go.
fn thread_blocking_tool(
    entered: mpsc::UnboundedSender<()>,
    hold: std::sync::mpsc::Receiver<()>,
) -> Tool {
    let hold = Arc::new(Mutex::new(hold));
    Tool::new("gate", "", json!({"type": "object"}), move |_ctx, _| {
        let (entered, hold) = (entered.clone(), Arc::clone(&hold));
        async move {
            let _ = entered.send(());
            // Wrong in async code, as a careless tool does it: the run's thread is held.
            let _ = hold.lock().unwrap().recv();
            Ok(ToolResult::text("let go"))
        }
    })
}

#[test]
fn shutdown_leaves_behind_an_actor_thread_a_tool_blocks_instead_of_waiting_for_ever() {
    for blocking in [true, false] {
        let host = Host::new(HostConfig {
            arbiters: 1,
            ..HostConfig::default()
        })
        .unwrap();
        let (entered_tx, mut entered_rx) = mpsc::unbounded_channel();
        let (hold_tx, hold_rx) = std::sync::mpsc::channel::<()>();
        let agent = gated_agent(&host, thread_blocking_tool(entered_tx, hold_rx));
        let run = agent.start(prompt("go"));
        let waiter = tokio::runtime::Runtime::new().unwrap();
        waiter.block_on(entered(&mut entered_rx, 1));
        // The shutdown runs on a thread of its own, so that a hang fails the test.
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        let stopping = host.clone();
        std::thread::spawn(move || {
            let report = if blocking {
                stopping.shutdown_blocking(Duration::from_millis(100))
            } else {
                tokio::runtime::Runtime::new()
                    .unwrap()
                    .block_on(stopping.shutdown(Duration::from_millis(100)))
            };
            let _ = done_tx.send(report);
        });
        let report = done_rx
            .recv_timeout(HANG_GUARD)
            .expect("the shutdown returned while the tool still held its thread");
        assert_eq!(report.unfinished, 1);
        // Let go, the thread ends and the run with it, lost with the host.
        drop(hold_tx);
        assert!(run.wait().is_err());
    }
}
