//! web_fetch: HTML to Markdown on a large real page (rustdoc's `Vec`, 920 KiB, kept in
//! `tests/fixtures/pages/`), the whole tool call against a loopback server (the network
//! policy's judgement, the request, the conversion), and what it adds over `curl` through the
//! sandbox's proxy (a bash call that only downloads). Peak resident memory is printed after
//! the conversion runs.
//!
//! `cargo bench -p golato --bench web_fetch`

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

#[path = "../tests/support/pages.rs"]
#[allow(dead_code, unreachable_pub)]
mod pages;

use std::hint::black_box;
use std::net::SocketAddr;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use golato::builtin::{self, WebFetch};
use golato::message::ToolCall;
use golato::sandbox::network::{Methods, NetworkPolicy};
use golato::tool::{Tool, ToolContext};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// `docs.test` is the loopback server.
#[derive(Debug)]
struct OneName(SocketAddr);

impl golato::proxy::Resolve for OneName {
    fn resolve(
        &self,
        _host: &str,
        _port: u16,
    ) -> futures::future::BoxFuture<'static, std::io::Result<Vec<SocketAddr>>> {
        let address = self.0;
        Box::pin(async move { Ok(vec![address]) })
    }
}

fn page() -> Vec<u8> {
    std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/pages/rust-std-vec.html"
    ))
    .unwrap()
}

fn call(runtime: &tokio::runtime::Runtime, tool: &Tool, arguments: serde_json::Value) -> String {
    let context = ToolContext::detached(
        ToolCall::new("bench", tool.name(), arguments.to_string()),
        CancellationToken::new(),
    );
    let result = runtime.block_on(tool.invoke(context, arguments)).unwrap();
    assert!(!result.is_error, "{:?}", result.content);
    result.text_content()
}

fn web_fetch(c: &mut Criterion) {
    let html = page();
    let text = String::from_utf8_lossy(&html).into_owned();
    let mut group = c.benchmark_group("web_fetch");
    group.sample_size(20);
    group.throughput(Throughput::Bytes(html.len() as u64));
    let converter = htmd::HtmlToMarkdown::builder()
        .skip_tags(vec![
            "script", "style", "noscript", "template", "svg", "head",
        ])
        .build();
    group.bench_function("html_to_markdown_920kib_page", |b| {
        b.iter(|| black_box(converter.convert(&text).unwrap()))
    });
    let markdown = converter.convert(&text).unwrap();
    eprintln!(
        "web_fetch/html_to_markdown: {} bytes of HTML became {} bytes of Markdown; peak RSS so far {:.1} MiB",
        text.len(),
        markdown.len(),
        support::peak_rss_mib()
    );

    let server = pages::serve(move |_| pages::Answer::Page("text/html", html.clone()));
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let domains = NetworkPolicy::new(&["docs.test"], &[], Methods::All).unwrap();
    let tools = builtin::new(builtin::Config {
        allowed_tool_names: Some(vec!["web_fetch".into(), "bash".into()]),
        network_resolver: Some(Arc::new(OneName(server))),
        web_fetch: WebFetch {
            domains: domains.clone(),
            ..Default::default()
        },
        sandbox: golato::sandbox::Policy::workspace_write()
            .with_domains(domains)
            .with_helper(support::sandbox_helper()),
        ..Default::default()
    })
    .unwrap();
    let find = |name: &str| tools.iter().find(|tool| tool.name() == name).unwrap();
    let url = format!("http://docs.test:{}/", server.port());
    group.bench_function("web_fetch_call_920kib_page", |b| {
        b.iter(|| black_box(call(&runtime, find("web_fetch"), json!({ "url": url }))))
    });
    let command = format!("curl -sS -o /dev/null -w '%{{size_download}}' {url}");
    group.bench_function("bash_curl_through_the_proxy_920kib_page", |b| {
        b.iter(|| black_box(call(&runtime, find("bash"), json!({ "command": command }))))
    });
    group.finish();
}

criterion_group!(benches, web_fetch);
criterion_main!(benches);
