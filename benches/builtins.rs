//! The built-in tools under load: read at the end of a 1 GiB sparse file, bash printing 100 MB,
//! a fuzzy edit of a 10 MB file, and the path-lock lease against a plain
//! `DashMap<PathBuf, Arc<tokio::sync::Mutex<()>>>` (alone and with 8 tasks contending for one
//! key) and against a small-file edit; a bash call and a write with and without the sandbox.
//! Peak resident memory is printed after the read and bash benches.
//!
//! `cargo bench -p golato --bench builtins`

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::hint::black_box;
use std::io::{Seek, SeekFrom, Write};
use std::path::PathBuf;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion};
use dashmap::DashMap;
use golato::builtin;
use golato::message::ToolCall;
use golato::tool::{Tool, ToolContext};
use golato_actors::path_lock::PathLock;
use golato_actors::Host;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

fn tools(dir: &std::path::Path) -> Vec<Tool> {
    builtin::new(builtin::Config {
        working_directory: dir.into(),
        ..Default::default()
    })
    .unwrap()
}

fn find<'a>(tools: &'a [Tool], name: &str) -> &'a Tool {
    tools.iter().find(|tool| tool.name() == name).unwrap()
}

/// Calls a tool function directly (the pipeline's own cost is the dispatch bench's subject).
fn invoke(runtime: &tokio::runtime::Runtime, tool: &Tool, arguments: Value) -> golato::ToolResult {
    let context = ToolContext::detached(
        ToolCall::new("bench", tool.name(), arguments.to_string()),
        CancellationToken::new(),
    );
    let result = runtime.block_on(tool.invoke(context, arguments)).unwrap();
    assert!(!result.is_error, "{}", result.text_content());
    result
}

fn read_and_bash(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut file = std::fs::File::create(dir.path().join("huge.log")).unwrap();
    file.seek(SeekFrom::Start(1 << 30)).unwrap();
    file.write_all(b"\nsecond to last\nlast line\n").unwrap();
    drop(file);
    let tools = tools(dir.path());
    let mut group = c.benchmark_group("builtins");
    group.sample_size(10);
    group.bench_function("read_end_of_1gib_sparse_file", |b| {
        b.iter(|| {
            black_box(invoke(
                &runtime,
                find(&tools, "read"),
                json!({"path": "huge.log", "offset": 2}),
            ))
        })
    });
    eprintln!(
        "builtins/read: peak RSS so far {:.1} MiB",
        support::peak_rss_mib()
    );
    group.bench_function("bash_printing_100mb", |b| {
        b.iter(|| {
            let result = invoke(&runtime, find(&tools, "bash"), json!({"command": "yes 0123456789012345678901234567890123456789012345678 | head -c 100000000"}));
            if let Some(path) = result.details.as_ref().and_then(|d| d["full_output_path"].as_str()) {
                let _ = std::fs::remove_file(path);
            }
        })
    });
    eprintln!(
        "builtins/bash: peak RSS so far {:.1} MiB",
        support::peak_rss_mib()
    );

    // A 10 MB file whose only match for the edit is fuzzy (typographic quotes and a dash).
    let mut text = String::with_capacity(10_500_000);
    let mut line = 0;
    while text.len() < 10_000_000 {
        text.push_str(&format!(
            "line {line}: let value = \u{201C}entry {line}\u{201D} \u{2014} plain text here   \n"
        ));
        line += 1;
    }
    let original = dir.path().join("big.txt");
    group.bench_function("fuzzy_edit_of_10mb_file", |b| {
        b.iter(|| {
            std::fs::write(&original, &text).unwrap();
            invoke(
                &runtime,
                find(&tools, "edit"),
                json!({"path": "big.txt", "edits": [{"oldText": "line 99999: let value = \"entry 99999\" - plain text here", "newText": "edited"}]}),
            )
        })
    });
    group.finish();
}

fn path_lock(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let host = Host::global().unwrap();
    let lock = PathLock::new(&host).unwrap();
    let key = PathBuf::from("/tmp/golato-bench/file.txt");
    let mut group = c.benchmark_group("path_lock");
    group.bench_function("path_lock_actor_lease", |b| {
        b.iter(|| runtime.block_on(async { black_box(lock.acquire(key.clone()).await.unwrap()) }))
    });
    let baseline: DashMap<PathBuf, Arc<tokio::sync::Mutex<()>>> = DashMap::new();
    group.bench_function("dashmap_mutex_lease", |b| {
        b.iter(|| {
            runtime.block_on(async {
                let mutex = Arc::clone(&baseline.entry(key.clone()).or_default());
                black_box(mutex.lock_owned().await)
            })
        })
    });
    // Contention: 8 tasks take turns on one key, 64 leases each; the lease is held across a
    // yield so that the others queue behind it.
    const TASKS: usize = 8;
    const LEASES: usize = 64;
    group.bench_function("path_lock_actor_contended_8x64", |b| {
        b.iter(|| {
            runtime.block_on(async {
                let tasks: Vec<_> = (0..TASKS)
                    .map(|_| {
                        let (lock, key) = (lock.clone(), key.clone());
                        tokio::spawn(async move {
                            for _ in 0..LEASES {
                                let lease = lock.acquire(key.clone()).await.unwrap();
                                tokio::task::yield_now().await;
                                drop(lease);
                            }
                        })
                    })
                    .collect();
                for task in tasks {
                    task.await.unwrap();
                }
            })
        })
    });
    // Sharing without contention: 8 tasks, each on a key of its own, on both workers; what
    // the key table costs when many runs edit different files at once.
    group.bench_function("path_lock_actor_distinct_keys_8x64", |b| {
        b.iter(|| {
            runtime.block_on(async {
                let tasks: Vec<_> = (0..TASKS)
                    .map(|task| {
                        let lock = lock.clone();
                        let key = PathBuf::from(format!("/tmp/golato-bench/file-{task}.txt"));
                        tokio::spawn(async move {
                            for _ in 0..LEASES {
                                let lease = lock.acquire(key.clone()).await.unwrap();
                                tokio::task::yield_now().await;
                                drop(lease);
                            }
                        })
                    })
                    .collect();
                for task in tasks {
                    task.await.unwrap();
                }
            })
        })
    });
    let baseline = Arc::new(baseline);
    group.bench_function("dashmap_mutex_contended_8x64", |b| {
        b.iter(|| {
            runtime.block_on(async {
                let tasks: Vec<_> = (0..TASKS)
                    .map(|_| {
                        let (baseline, key) = (Arc::clone(&baseline), key.clone());
                        tokio::spawn(async move {
                            for _ in 0..LEASES {
                                let mutex = Arc::clone(&baseline.entry(key.clone()).or_default());
                                let guard = mutex.lock_owned().await;
                                tokio::task::yield_now().await;
                                drop(guard);
                            }
                        })
                    })
                    .collect();
                for task in tasks {
                    task.await.unwrap();
                }
            })
        })
    });
    let dir = tempfile::tempdir().unwrap();
    let tools = tools(dir.path());
    std::fs::write(dir.path().join("small.txt"), "alpha\nbeta\ngamma\n").unwrap();
    let mut flip = false;
    group.bench_function("small_file_edit", |b| {
        b.iter(|| {
            let (from, to) = if flip {
                ("BETA", "beta")
            } else {
                ("beta", "BETA")
            };
            flip = !flip;
            invoke(
                &runtime,
                find(&tools, "edit"),
                json!({"path": "small.txt", "edits": [{"oldText": from, "newText": to}]}),
            )
        })
    });
    group.finish();
}

/// The sandbox's price: a bash call that does nothing (`true`) and a small write, unconfined
/// and under each policy (the helper is the small `golato-sandbox` binary, as the command line
/// uses it).
fn sandbox(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut group = c.benchmark_group("sandbox");
    for policy in [
        golato::sandbox::Policy::off(),
        golato::sandbox::Policy::read_only(),
        golato::sandbox::Policy::workspace_write(),
    ] {
        let name = policy.mode.name();
        let tools = builtin::new(builtin::Config {
            working_directory: dir.path().into(),
            sandbox: policy.with_helper(support::sandbox_helper()),
            ..Default::default()
        })
        .unwrap();
        let bash = find(&tools, "bash");
        group.bench_function(format!("bash_true_{name}"), |b| {
            b.iter(|| invoke(&runtime, bash, json!({"command": "true"})))
        });
        if name != "read-only" {
            let write = find(&tools, "write");
            group.bench_function(format!("write_small_file_{name}"), |b| {
                b.iter(|| {
                    invoke(
                        &runtime,
                        write,
                        json!({"path": "deep/dir/file.txt", "content": "hello"}),
                    )
                })
            });
        }
    }
    group.finish();
}

criterion_group!(benches, read_and_bash, path_lock, sandbox);
criterion_main!(benches);
