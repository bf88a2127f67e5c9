//! What policy costs a tool call: deciding 100 rules, and a no-op command hook.
//!
//! - `rules/decide_100`: `Rules::decide` alone, 100 bash rules (none matching) against a line of
//!   three commands, and 100 path rules against a path.
//! - `calls/*`: one run of 8 calls of a trivial tool named `bash`, through the agent: with no
//!   hook, with the policy hook holding those 100 rules, and with one `PreToolUse` command hook
//!   running `true` (a process per call).
//!
//! `cargo bench -p golato --bench policy`

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use golato::agent::{self, Agent, Input};
use golato::message::{AssistantMessage, ToolCall, UserMessage};
use golato::policy::{CallPolicy, Decision, HookSession, Source};
use golato::tool::{Tool, ToolResult};
use serde_json::json;

const CALLS: usize = 8;
const LINE: &str = "echo hello && ls -la | wc -l";

fn hundred_rules(cwd: &Path) -> CallPolicy {
    let mut policy = CallPolicy::new();
    for i in 0..100 {
        let (decision, rule) = match i % 4 {
            0 | 1 => (Decision::Allow, format!("bash(tool-{i} *)")),
            2 => (Decision::Ask, format!("bash(deploy-{i}:*)")),
            _ => (Decision::Deny, format!("bash(rm -rf /srv/{i}*)")),
        };
        policy
            .rules
            .add(decision, &rule, Source::flag("bench"), cwd)
            .unwrap();
    }
    policy
}

fn path_rules(cwd: &Path) -> CallPolicy {
    let mut policy = CallPolicy::new();
    for i in 0..100 {
        policy
            .rules
            .add(
                Decision::Deny,
                &format!("read(**/secret-{i}/**)"),
                Source::flag("bench"),
                cwd,
            )
            .unwrap();
    }
    policy
}

fn agent(hooks: Vec<Arc<dyn golato::hook::Hook>>) -> Agent {
    let tool = Tool::new(
        "bash",
        "Does nothing.",
        json!({"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}),
        |_ctx, _args| async { Ok(ToolResult::text("ok")) },
    );
    let calls = (0..CALLS).map(|i| {
        ToolCall::new(
            format!("call-{i}"),
            "bash",
            json!({ "command": LINE }).to_string(),
        )
    });
    Agent::new(agent::Config {
        generator: Some(Arc::new(support::Canned::new(vec![
            AssistantMessage::with_tool_calls(calls),
            AssistantMessage::with_text("done"),
        ]))),
        tools: vec![tool],
        hooks,
        ..Default::default()
    })
    .unwrap()
}

fn policy(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().canonicalize().unwrap();
    let rules = hundred_rules(&cwd);
    let paths = path_rules(&cwd);
    let mut group = c.benchmark_group("rules");
    group.bench_function("decide_100_bash", |b| {
        let args = json!({ "command": LINE });
        b.iter(|| black_box(rules.rules.decide("bash", &args, &cwd).is_some()))
    });
    group.bench_function("decide_100_path", |b| {
        let args = json!({ "path": "src/deep/module/file.rs" });
        b.iter(|| black_box(paths.rules.decide("read", &args, &cwd).is_some()))
    });
    group.finish();

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let session = || {
        tokio::sync::watch::channel(HookSession {
            cwd: cwd.clone(),
            ..Default::default()
        })
        .1
    };
    let mut noop = CallPolicy::new();
    noop.add_toml(
        "[[hooks.PreToolUse]]\ncommand = \"true\"\n",
        Path::new("bench.toml"),
        &cwd,
    )
    .unwrap();
    let agents = [
        ("no_hook", agent(Vec::new())),
        (
            "rules_100",
            agent(vec![Arc::new(hundred_rules(&cwd)).hook(None, session())]),
        ),
        (
            "noop_command_hook",
            agent(vec![Arc::new(noop).hook(None, session())]),
        ),
    ];
    let mut group = c.benchmark_group("calls");
    group.throughput(Throughput::Elements(CALLS as u64));
    for (name, agent) in &agents {
        group.bench_function(*name, |b| {
            b.iter(|| {
                runtime.block_on(async {
                    black_box(
                        agent
                            .run(Input::from(UserMessage::new("go")))
                            .await
                            .unwrap(),
                    )
                })
            })
        });
    }
    group.finish();
}

criterion_group!(benches, policy);
criterion_main!(benches);
