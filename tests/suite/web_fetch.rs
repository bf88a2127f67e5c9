//! `web_fetch` against loopback servers only, their names resolved through the resolver seam:
//! HTML as Markdown, a redirect to a refused host stopped, a 50 MB page bounded, a slow server
//! timed out, a name resolving to a loopback address no pattern names exactly refused, read
//! mode, an unlisted host after approval (and a redirect from it to another refused), a PDF
//! named as not read.

use crate::support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use golato::builtin::{self, Unlisted, WebFetch};
use golato::message::ToolResultMessage;
use golato::sandbox::network::{Methods, NetworkPolicy};
use golato::tool::Tool;
use serde_json::json;
use support::pages::{serve, Answer};

fn tools(web_fetch: WebFetch, names: &[(&str, SocketAddr)]) -> Vec<Tool> {
    builtin::new(builtin::Config {
        allowed_tool_names: Some(vec!["web_fetch".into()]),
        network_resolver: Some(Arc::new(support::TestNames::new(names))),
        web_fetch,
        ..Default::default()
    })
    .unwrap()
}

fn allowing(allow: &[&str], deny: &[&str]) -> WebFetch {
    WebFetch {
        domains: NetworkPolicy::new(allow, deny, Methods::All).unwrap(),
        ..Default::default()
    }
}

fn fetch(tools: &[Tool], url: &str) -> ToolResultMessage {
    support::call_tool(tools, "web_fetch", &json!({ "url": url }).to_string())
}

const PAGE: &str = "<html><head><title>Docs</title><script>var secret = 1;</script><style>p{}</style></head>\
    <body><h1>Vec</h1><p>A <strong>contiguous</strong> growable array, see <a href=\"/push\">push</a>.</p>\
    <ul><li>one</li><li>two</li></ul><pre><code>let v = vec![1];</code></pre></body></html>";

#[test]
fn a_page_is_read_as_markdown_and_text_and_json_as_they_are() {
    let server = serve(|path| match path {
        "/" => Answer::Page("text/html; charset=utf-8", PAGE.into()),
        "/data" => Answer::Page("application/json", br#"{"a": [1, 2]}"#.to_vec()),
        "/notes" => Answer::Page("text/plain", b"plain *not* markdown\n".to_vec()),
        "/doc.pdf" => Answer::Page("application/pdf", b"%PDF-1.4 ...".to_vec()),
        _ => Answer::Page("text/plain", b"missing".to_vec()),
    });
    let tools = tools(allowing(&["docs.test"], &[]), &[("docs.test", server)]);
    let page = fetch(&tools, &format!("http://docs.test:{}/", server.port()));
    let text = page.text();
    assert!(!page.is_error, "{text}");
    assert!(text.contains("# Vec"), "{text}");
    assert!(
        text.contains("A **contiguous** growable array, see [push](/push)."),
        "{text}"
    );
    assert!(text.contains("*   one\n*   two"), "{text}");
    assert!(text.contains("let v = vec![1];"), "{text}");
    assert!(
        !text.contains("secret") && !text.contains("p{}"),
        "scripts and styles are not read: {text}"
    );
    let details = page.details.unwrap();
    assert_eq!(details["status"], 200);
    let json = fetch(&tools, &format!("http://docs.test:{}/data", server.port()));
    assert!(
        json.text().ends_with("{\"a\": [1, 2]}\n"),
        "{}",
        json.text()
    );
    let plain = fetch(&tools, &format!("http://docs.test:{}/notes", server.port()));
    assert!(plain.text().contains("plain *not* markdown"));
    let pdf = fetch(
        &tools,
        &format!("http://docs.test:{}/doc.pdf", server.port()),
    );
    assert!(
        pdf.is_error
            && pdf
                .text()
                .contains("is a PDF, which web_fetch does not read"),
        "{}",
        pdf.text()
    );
}

#[test]
fn every_redirect_is_judged_again_and_one_to_a_refused_host_is_stopped() {
    let evil = serve(|_| Answer::Page("text/plain", b"the metadata".to_vec()));
    let evil_port = evil.port();
    let server = serve(move |path| match path {
        "/moved" => Answer::Redirect("/here".into()),
        "/here" => Answer::Page("text/plain", b"arrived".to_vec()),
        "/away" => Answer::Redirect(format!("http://evil.test:{evil_port}/")),
        "/loop" => Answer::Redirect("/loop".into()),
        _ => Answer::Page("text/plain", b"?".to_vec()),
    });
    let tools = tools(
        allowing(&["docs.test"], &[]),
        &[("docs.test", server), ("evil.test", evil)],
    );
    let base = format!("http://docs.test:{}", server.port());
    let moved = fetch(&tools, &format!("{base}/moved"));
    assert!(
        moved.text().contains("arrived") && moved.text().contains("redirected from"),
        "{}",
        moved.text()
    );
    let away = fetch(&tools, &format!("{base}/away"));
    assert!(away.is_error);
    assert!(
        away.text().contains(
            "the page redirected to evil.test, which was not fetched: not in the allowed domains"
        ),
        "{}",
        away.text()
    );
    assert!(!away.text().contains("the metadata"));
    let looping = fetch(&tools, &format!("{base}/loop"));
    assert!(
        looping.is_error && looping.text().contains("redirected more than 5 times"),
        "{}",
        looping.text()
    );
}

#[test]
fn a_50_mb_page_is_read_only_to_the_limit_and_a_slow_server_times_out() {
    let server = serve(|path| match path {
        "/huge" => Answer::Huge(50 * 1024 * 1024),
        _ => Answer::Stall,
    });
    let tools = tools(
        WebFetch {
            timeout: Duration::from_secs(2),
            ..allowing(&["docs.test"], &[])
        },
        &[("docs.test", server)],
    );
    let huge = fetch(&tools, &format!("http://docs.test:{}/huge", server.port()));
    assert!(!huge.is_error, "{}", huge.text());
    let details = huge.details.clone().unwrap();
    assert_eq!(details["bytes"], builtin::DEFAULT_MAX_PAGE_BYTES);
    assert_eq!(details["cut"], true);
    assert!(huge.text().contains("only the first part was read"));
    assert!(
        huge.text().len() < 60 * 1024,
        "the text returned is bounded as read's"
    );
    assert!(
        huge.text().contains("Use offset="),
        "{}",
        &huge.text()[huge.text().len() - 200..]
    );
    let slow = fetch(&tools, &format!("http://docs.test:{}/slow", server.port()));
    assert!(
        slow.is_error && slow.text().contains("did not answer within 2 s"),
        "{}",
        slow.text()
    );
}

#[test]
fn a_name_resolving_to_a_loopback_address_no_pattern_names_exactly_is_refused() {
    let server = serve(|_| Answer::Page("text/plain", b"internal".to_vec()));
    // `*.test` allows the name, but not the loopback address it resolves to.
    let tools = tools(allowing(&["*.test"], &[]), &[("docs.test", server)]);
    let refused = fetch(&tools, &format!("http://docs.test:{}/", server.port()));
    assert!(refused.is_error);
    assert!(
        refused
            .text()
            .contains("resolves to the local address 127.0.0.1"),
        "{}",
        refused.text()
    );
    assert!(!refused.text().contains("internal"));
    // An address in the URL is judged as well: not listed, not fetched.
    let literal = fetch(&tools, &format!("http://127.0.0.1:{}/", server.port()));
    assert!(
        literal.is_error && literal.text().contains("127.0.0.1 was not fetched"),
        "{}",
        literal.text()
    );
    // Denied wins over allowed.
    let denied = tools_denying(server);
    let refused = fetch(&denied, &format!("http://docs.test:{}/", server.port()));
    assert!(
        refused.text().contains("in the denied domains"),
        "{}",
        refused.text()
    );
}

fn tools_denying(server: SocketAddr) -> Vec<Tool> {
    tools(
        allowing(&["docs.test"], &["docs.test"]),
        &[("docs.test", server)],
    )
}

#[test]
fn read_mode_fetches_and_an_unlisted_host_goes_only_after_approval() {
    let other = serve(|_| Answer::Page("text/plain", b"elsewhere".to_vec()));
    let other_port = other.port();
    let server = serve(move |path| match path {
        "/away" => Answer::Redirect(format!("http://other.test:{other_port}/")),
        _ => Answer::Page("text/plain", b"reachable".to_vec()),
    });
    let names = [("docs.test", server), ("other.test", other)];
    let reading = tools(
        WebFetch {
            domains: NetworkPolicy::new(&["docs.test"], &[], Methods::Read).unwrap(),
            ..Default::default()
        },
        &names,
    );
    assert!(
        fetch(&reading, &format!("http://docs.test:{}/", server.port()))
            .text()
            .contains("reachable")
    );
    // Listed nowhere: refused, saying what would allow it.
    let listed_nowhere = tools(WebFetch::default(), &names);
    let refused = fetch(
        &listed_nowhere,
        &format!("http://docs.test:{}/", server.port()),
    );
    assert!(
        refused.text().contains("docs.test was not fetched: not in the allowed domains; the person can allow it with --allow-domain docs.test (or a rule web_fetch(docs.test))"),
        "{}",
        refused.text()
    );
    // After approval the call's own host may be fetched, but the addresses it resolves to are
    // judged all the same: a loopback one only where a pattern names it exactly.
    let approved = |allow: &[&str]| {
        tools(
            WebFetch {
                unlisted: Unlisted::AfterApproval,
                ..allowing(allow, &[])
            },
            &names,
        )
    };
    let local = fetch(
        &approved(&[]),
        &format!("http://docs.test:{}/", server.port()),
    );
    assert!(
        local
            .text()
            .contains("resolves to the local address 127.0.0.1"),
        "{}",
        local.text()
    );
    let server_address = format!("127.0.0.1:{}", server.port());
    let approved = approved(&[&server_address]);
    let fetched = fetch(&approved, &format!("http://docs.test:{}/", server.port()));
    assert!(fetched.text().contains("reachable"), "{}", fetched.text());
    // A redirect to another unlisted host is not fetched.
    let away = fetch(
        &approved,
        &format!("http://docs.test:{}/away", server.port()),
    );
    assert!(
        away.text()
            .contains("redirected to other.test, which was not fetched"),
        "{}",
        away.text()
    );
}
