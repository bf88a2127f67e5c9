//! A durable question is decided once (issue 54, point 3): two answers sent at once, over and
//! over, leave exactly one told it decided, and the call runs exactly when that one said yes;
//! an answer sent before its question exists decides nothing; a cancelled run's question is
//! closed; a refusal's reason reaches the model bounded and without control characters.

use crate::support;

use std::io::{Read as _, Write as _};
use std::sync::{Arc, Barrier};

use golato_restate::{Client, MAX_REASON_CHARS};
use support::restate::{free_port, Server};

use super::durable::results;
use super::durable_approvals::{approve, ledger, open_questions, runtime, submit, worker};

/// A POST of `body` to `path` on the ingress at `ingress`, written once `ready` lets every
/// sender go: the status and the body answered.
fn post_at_once(ingress: &str, path: &str, body: &str, ready: &Barrier) -> (u16, String) {
    let address = ingress.trim_start_matches("http://").trim_end_matches('/');
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    ready.wait();
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    let status = answer
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or(0);
    let body = answer
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_owned())
        .unwrap_or_default();
    (status, body)
}

/// The ingress path answering the question of call `call` of turn 1 of run `run`.
fn answer_path(run: &str, call: &str) -> String {
    format!("/GolatoQuestion/{run}%2F1%2F{call}/answer")
}

#[test]
#[ignore = "needs a Restate server: GOLATO_RESTATE_SERVER (.ci/run)"]
fn two_answers_sent_at_once_decide_once_and_the_loser_is_told_what_was_decided() {
    const TRIES: usize = 10;
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start();
    let _worker = worker(dir.path(), &server, free_port(), "worker", &[]);
    let mut yes_won = 0;
    for round in 0..TRIES {
        let run = format!("race-{round}");
        let running = submit(&server.ingress, &run);
        open_questions(&server.ingress, &run, 2);
        // Call y: a yes and a no at the same instant (in either order of writing).
        let ready = Arc::new(Barrier::new(2));
        let senders: Vec<_> = [r#"{"answer":"yes"}"#, r#"{"answer":"no","reason":"raced"}"#]
            .into_iter()
            .map(|body| {
                let (ingress, path, ready) = (
                    server.ingress.clone(),
                    answer_path(&run, "y"),
                    Arc::clone(&ready),
                );
                std::thread::spawn(move || (body, post_at_once(&ingress, &path, body, &ready)))
            })
            .collect();
        let answered: Vec<(&str, (u16, String))> = senders
            .into_iter()
            .map(|sender| sender.join().unwrap())
            .collect();
        let won: Vec<_> = answered
            .iter()
            .filter(|(_, (status, _))| (200..300).contains(status))
            .collect();
        assert_eq!(won.len(), 1, "round {round}: {answered:?}");
        let (lost_status, lost_body) = &answered
            .iter()
            .find(|(_, (status, _))| !(200..300).contains(status))
            .unwrap()
            .1;
        assert_eq!(*lost_status, 409, "{lost_body}");
        let yes = won[0].0.contains("yes");
        let said = if yes {
            "answered yes, and the call runs"
        } else {
            "answered no, and the call does not run"
        };
        assert!(lost_body.contains(said), "round {round}: {lost_body}");
        let no = approve(&server.ingress, &run, &["n", "no"]);
        assert!(no.status.success(), "{no:?}");
        let outcome = running.join().unwrap();
        let results = results(&outcome);
        assert_eq!(
            !results["y"].is_error,
            yes,
            "round {round}: {}",
            results["y"].text()
        );
        yes_won += usize::from(yes);
        assert_eq!(ledger(dir.path()).len(), yes_won, "round {round}");
    }
    // Either answer may win a round; over the rounds the ledger holds one line per yes.
    assert!(ledger(dir.path()).iter().all(|line| line == "y"));
}

#[test]
#[ignore = "needs a Restate server: GOLATO_RESTATE_SERVER (.ci/run)"]
fn an_early_answer_decides_nothing_a_cancelled_runs_question_is_closed_and_a_reason_is_cleaned() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start();
    let _worker = worker(dir.path(), &server, free_port(), "worker", &[]);
    // Before the run asks: refused, and the question, once asked, still waits.
    let ready = Barrier::new(1);
    let (status, body) = post_at_once(
        &server.ingress,
        &answer_path("early", "y"),
        r#"{"answer":"yes"}"#,
        &ready,
    );
    assert_eq!(status, 404, "{body}");
    assert!(body.contains("nothing was decided"), "{body}");
    let running = submit(&server.ingress, "early");
    open_questions(&server.ingress, "early", 2);
    assert!(ledger(dir.path()).is_empty());

    // A reason of 100 KB full of escape sequences: the model reads it bounded and clean.
    let reason = "\u{1b}[2J\u{1b}]0;owned\u{7}stop ".repeat(5_000);
    let no = approve(&server.ingress, "early", &["y", "no", "--reason", &reason]);
    assert!(no.status.success(), "{no:?}");
    let no = approve(&server.ingress, "early", &["n", "no"]);
    assert!(no.status.success(), "{no:?}");
    let outcome = running.join().unwrap();
    let text = results(&outcome)["y"].text();
    assert!(
        !text.chars().any(|c| c.is_control() && c != '\n'),
        "control characters reached the model"
    );
    assert!(text.contains("stop"), "{text}");
    assert!(
        text.chars().count() < MAX_REASON_CHARS + 1_000,
        "{} characters",
        text.chars().count()
    );
    assert!(ledger(dir.path()).is_empty());

    // Cancelled while its questions wait: they are closed, a later yes is refused saying so,
    // and nothing ran.
    let cancelled = submit(&server.ingress, "cancelled");
    open_questions(&server.ingress, "cancelled", 2);
    let client = Client::new(&server.ingress)
        .unwrap()
        .with_admin(&server.admin)
        .unwrap();
    assert!(runtime().block_on(client.cancel("cancelled")).unwrap());
    let late = approve(&server.ingress, "cancelled", &["y", "yes"]);
    assert!(!late.status.success(), "{late:?}");
    let said = String::from_utf8_lossy(&late.stderr);
    assert!(
        said.contains("the run was cancelled") || said.contains("waits on no question"),
        "{said}"
    );
    let (status, body) = post_at_once(
        &server.ingress,
        &answer_path("cancelled", "y"),
        r#"{"answer":"yes"}"#,
        &ready,
    );
    assert_eq!(status, 409, "{body}");
    assert!(
        body.contains("the run was cancelled, so the call does not run"),
        "{body}"
    );
    let outcome = cancelled.join().unwrap();
    assert!(outcome.error.is_some(), "{outcome:?}");
    assert!(ledger(dir.path()).is_empty());
}
