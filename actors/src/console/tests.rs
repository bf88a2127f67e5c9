#![allow(clippy::unwrap_used, clippy::panic)]
use super::*;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn a_socket_path_that_is_a_file_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let planted = dir.path().join("console.sock");
    std::fs::write(&planted, "keep me").unwrap();
    let console = Console::new(ConsoleConfig::default());
    let error = console
        .serve(&ConsoleAddr::Unix(planted.clone()), runtime().handle())
        .unwrap_err();
    assert!(matches!(error, ServeError::Listen { .. }), "{error}");
    assert_eq!(std::fs::read_to_string(&planted).unwrap(), "keep me");
    let bad = "no such address".parse::<ConsoleAddr>().unwrap_err();
    assert!(bad.to_string().contains("HOST:PORT"), "{bad}");
}

#[test]
fn past_the_viewer_cap_a_newcomer_is_closed_and_the_others_go_on() {
    use std::io::BufRead as _;
    let runtime = runtime();
    let console = Console::new(ConsoleConfig::default());
    let server = console
        .serve(&"127.0.0.1:0".parse().unwrap(), runtime.handle())
        .unwrap();
    let ConsoleAddr::Tcp(addr) = server.addr().clone() else {
        panic!("not TCP")
    };
    let first_line = |stream: &std::net::TcpStream| {
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(stream)
            .read_line(&mut line)
            .unwrap();
        line
    };
    let kept: Vec<std::net::TcpStream> = (0..MAX_VIEWERS)
        .map(|_| {
            let stream = std::net::TcpStream::connect(addr).unwrap();
            assert!(first_line(&stream).contains("hello"));
            stream
        })
        .collect();
    let extra = std::net::TcpStream::connect(addr).unwrap();
    assert_eq!(first_line(&extra), "", "the newcomer is closed");
    drop(kept);
}

#[test]
fn a_viewer_that_reads_too_slowly_is_told_how_many_updates_it_missed() {
    use std::io::BufRead as _;
    let runtime = runtime();
    let console = Console::new(ConsoleConfig {
        rate: 100,
        ..ConsoleConfig::default()
    });
    // Enough entries that one update is far more than the sockets hold.
    let probes: Vec<Probe> = (0..100_000)
        .map(|_| {
            let probe = console.register(Kind::Other, "Busy");
            probe.running(|| "something".into());
            probe
        })
        .collect();
    let server = console
        .serve(&"127.0.0.1:0".parse().unwrap(), runtime.handle())
        .unwrap();
    let ConsoleAddr::Tcp(addr) = server.addr().clone() else {
        panic!("not TCP")
    };
    let stream = std::net::TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let mut reader = std::io::BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    assert!(line.contains("hello"));
    // A slow reader: the snapshot's write stays blocked meanwhile.
    std::thread::sleep(Duration::from_millis(300));
    let dropped = loop {
        line.clear();
        assert!(reader.read_line(&mut line).unwrap() > 0, "the stream ended");
        match serde_json::from_str::<Update>(&line).unwrap() {
            Update::Delta(delta) => break delta.dropped,
            Update::Snapshot(snapshot) => assert_eq!(snapshot.actors.len(), probes.len()),
            _ => {}
        }
    };
    assert!(dropped > 0, "the missed updates were not counted");
}

#[test]
fn an_ended_actor_leaves_the_live_list_for_a_bounded_history() {
    let console = Console::new(ConsoleConfig {
        history: 3,
        ..ConsoleConfig::default()
    });
    for _ in 0..10 {
        let probe = console.register(Kind::Other, "Short");
        probe.running(|| "a moment".into());
    }
    let snapshot = console.snapshot();
    assert!(snapshot.actors.is_empty());
    assert_eq!(
        snapshot.ended.iter().map(|a| a.id).collect::<Vec<_>>(),
        [8, 9, 10]
    );
    assert!(snapshot.ended.iter().all(|a| a.ended_ms_ago.is_some()));
}

#[test]
fn a_connection_is_told_of_each_ending_once_even_within_one_tick_of_the_clock() {
    let console = Console::new(ConsoleConfig::default());
    drop(console.register(Kind::Other, "First"));
    let (told, last) = console.history(console.shared.now_us(), 0);
    assert_eq!(told.len(), 1);
    // Ended on the same (coarse) clock reading, most likely: told by number, not by time.
    drop(console.register(Kind::Other, "Second"));
    let (told, next) = console.history(console.shared.now_us(), last);
    assert_eq!(
        told.iter()
            .map(|view| view.name.as_str())
            .collect::<Vec<_>>(),
        ["Second"]
    );
    assert!(console.history(console.shared.now_us(), next).0.is_empty());
}

#[test]
fn a_calls_id_and_tool_are_told_whole_however_long_short_or_wide() {
    let console = Console::new(ConsoleConfig::default());
    let long = "c".repeat(200);
    let edge = format!("{}é", "x".repeat(36));
    let calls = [
        (long.as_str(), "read"),
        ("", ""),
        (edge.as_str(), "✏️ édit"),
        ("never started", "bash"),
    ];
    let group = console.calls("ToolCall", 1, 2, calls.into_iter());
    group.begin(0);
    group.begin(1);
    group.begin(2);
    group.begin(7);
    let snapshot = console.snapshot();
    let named: Vec<(Option<String>, Option<String>)> = snapshot
        .actors
        .iter()
        .map(|view| (view.identity.call.clone(), view.identity.tool.clone()))
        .collect();
    assert_eq!(
        named,
        [
            (Some(long), Some("read".to_owned())),
            (Some(String::new()), Some(String::new())),
            (Some(edge), Some("✏️ édit".to_owned()))
        ]
    );
    assert!(snapshot
        .actors
        .iter()
        .all(|view| view.identity.run == Some(1) && view.identity.batch == Some(2)));
    assert!(snapshot
        .actors
        .iter()
        .all(|view| view.activity.to_string() == "running its tool"));
    // Ended, the three that ran are in the history, named; the one that never began is not.
    group.end(1);
    drop(group);
    let snapshot = console.snapshot();
    assert!(snapshot.actors.is_empty());
    let tools: Vec<Option<String>> = snapshot
        .ended
        .iter()
        .map(|view| view.identity.tool.clone())
        .collect();
    assert_eq!(
        tools,
        [
            Some("read".into()),
            Some(String::new()),
            Some("✏️ édit".into())
        ]
    );
}

#[test]
fn a_dropped_console_is_freed_though_its_history_holds_records() {
    let console = Console::new(ConsoleConfig::default());
    let weak = Arc::downgrade(&console.shared);
    drop(console.register(Kind::Other, "Ended"));
    let outliving = console.register(Kind::Other, "Outliving");
    let group = console.calls("ToolCall", 1, 2, [("a", "read")].into_iter());
    group.begin(0);
    let member = group.probe(0);
    drop(group);
    assert_eq!(console.snapshot().ended.len(), 2);
    drop(console);
    assert!(
        weak.upgrade().is_none(),
        "the records in the history keep the console alive"
    );
    // Probes that outlive their console change and end quietly.
    outliving.running(|| "on".into());
    member.waiting(|| WaitingOn::Person);
    drop((outliving, member));
}
