//! Subagents: the `task` tool runs child runs as tool calls. Several in one batch run at once;
//! the parent's cancel reaches grandchildren; budgets and depth are bounded by the parent's;
//! children's events reach the parent's tagged with their path.

use crate::support;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use golato::agent::event::SubagentEvent;
use golato::agent::{self, Agent, Budget, Event};
use golato::generator::{EventStream, Generator, Model, Request, Scripted};
use golato::message::Message;
use golato::subagent;
use golato::tool::{Tool, ToolContext, ToolResult};
use serde_json::{json, Value};
use support::*;

/// Answers each run from the script named by its first prompt, and keeps the tools each
/// prompt's requests offered.
struct ByPrompt {
    scripts: HashMap<String, Scripted>,
    offered: Arc<Mutex<HashMap<String, Vec<String>>>>,
    /// The system prompt each prompt's requests sent.
    systems: Arc<Mutex<HashMap<String, Option<String>>>>,
}

impl ByPrompt {
    fn new(scripts: &[(&str, Value)]) -> ByPrompt {
        ByPrompt {
            scripts: scripts
                .iter()
                .map(|(prompt, script)| {
                    (
                        (*prompt).to_owned(),
                        Scripted::from_json(&script.to_string()).unwrap(),
                    )
                })
                .collect(),
            offered: Arc::default(),
            systems: Arc::default(),
        }
    }
}

impl Generator for ByPrompt {
    fn stream(&self, request: Request) -> EventStream {
        let first = request
            .messages
            .iter()
            .find_map(|message| match message {
                Message::User(user) => Some(user.text()),
                _ => None,
            })
            .unwrap_or_default();
        self.systems
            .lock()
            .unwrap()
            .insert(first.clone(), request.system_prompt.clone());
        self.offered.lock().unwrap().insert(
            first.clone(),
            request.tools.iter().map(|tool| tool.name.clone()).collect(),
        );
        match self.scripts.get(&first) {
            Some(script) => script.stream(request),
            None => panic!("no script for the prompt {first:?}"),
        }
    }
}

fn task_call(id: &str, description: &str, prompt: &str) -> Value {
    json!({"id": id, "name": "task", "arguments": {"description": description, "prompt": prompt}})
}

/// A tool that waits until `parties` calls of it are running at once (a barrier: the calls
/// must run in parallel), then answers.
fn meeting_tool(parties: usize) -> Tool {
    let barrier = Arc::new(tokio::sync::Barrier::new(parties));
    Tool::new(
        "meet",
        "Waits for the others.",
        object_schema(json!({}), &[]),
        move |_ctx, _args| {
            let barrier = Arc::clone(&barrier);
            async move {
                match tokio::time::timeout(HANG_GUARD, barrier.wait()).await {
                    Ok(_) => Ok(ToolResult::text("met")),
                    Err(_) => Err("the other calls never ran at the same time".into()),
                }
            }
        },
    )
}

fn parent(generator: ByPrompt, tools: Vec<Tool>, config: subagent::Config) -> Agent {
    let generator: Arc<dyn Generator> = Arc::new(generator);
    let task = subagent::tool(subagent::Config {
        generator: Some(Arc::clone(&generator)),
        tools: tools.clone(),
        ..config
    })
    .unwrap();
    let mut all = tools;
    all.push(task);
    Agent::new(agent::Config {
        generator: Some(generator),
        tools: all,
        ..Default::default()
    })
    .unwrap()
}

fn subagent_events(events: &[Event]) -> Vec<&SubagentEvent> {
    events
        .iter()
        .filter_map(|event| match event {
            Event::Subagent(nested) => Some(nested),
            _ => None,
        })
        .collect()
}

#[test]
fn two_task_calls_run_at_once_and_their_answers_are_the_results() {
    let generator = ByPrompt::new(&[
        (
            "main",
            json!([
                {"tool_calls": [task_call("t1", "first", "child one"), task_call("t2", "second", "child two")]},
                {"text": "both done"}
            ]),
        ),
        (
            "child one",
            json!([{"tool_calls": [{"id": "m1", "name": "meet", "arguments": {}}]}, {"text": "one says hi"}]),
        ),
        (
            "child two",
            json!([{"tool_calls": [{"id": "m2", "name": "meet", "arguments": {}}]}, {"text": "two says hi"}]),
        ),
    ]);
    // Each transcript handed over: its path, its description, its length.
    type Saved = Vec<(Vec<String>, String, usize)>;
    let transcripts: Arc<Mutex<Saved>> = Arc::default();
    let sink = {
        let transcripts = Arc::clone(&transcripts);
        Arc::new(move |child: &subagent::ChildTranscript<'_>| {
            transcripts.lock().unwrap().push((
                child.path.to_vec(),
                child.description.to_owned(),
                child.messages.len(),
            ));
        })
    };
    // The parent's hooks run around the children's calls, told which task call they are under.
    let seen = Log::default();
    let watching = {
        let seen = seen.clone();
        golato::hook::before(move |ctx| {
            seen.push(format!("{} under {:?}", ctx.call.id, ctx.path));
            async { Ok(golato::hook::BeforeToolCall::Run) }
        })
    };
    let agent = parent(
        generator,
        vec![meeting_tool(2)],
        subagent::Config {
            on_transcript: Some(sink),
            hooks: vec![watching],
            ..Default::default()
        },
    );
    // The children's `meet` calls wait for each other: only calls running at once pass.
    let (events, outcome) = collect(agent.start(prompt("main")));
    let result = outcome.unwrap();
    assert_eq!(result.final_message.text(), "both done");
    let results = transcript_results(&result.messages);
    assert_eq!(results[0].text(), "one says hi");
    assert_eq!(results[1].text(), "two says hi");
    assert!(!results[0].is_error && !results[1].is_error);
    let mut seen = seen.entries();
    seen.sort();
    assert_eq!(seen, ["m1 under [\"t1\"]", "m2 under [\"t2\"]"]);

    // Each child's events came through, tagged with its call, between that call's start
    // and end.
    let nested = subagent_events(&events);
    for (id, tool_call) in [("t1", "m1"), ("t2", "m2")] {
        let own: Vec<&&SubagentEvent> = nested.iter().filter(|e| e.path == [id]).collect();
        assert!(matches!(*own[0].event, Event::RunStart(_)), "{id}");
        assert!(
            matches!(*own.last().unwrap().event, Event::RunEnd(_)),
            "{id}"
        );
        assert!(own.iter().any(|e| matches!(&*e.event,
            Event::ToolExecutionStart(start) if start.call.id == tool_call)));
        let position = |wanted: &dyn Fn(&Event) -> bool| events.iter().position(wanted).unwrap();
        let start = position(&|e| matches!(e, Event::ToolExecutionStart(s) if s.call.id == id));
        let end = position(&|e| matches!(e, Event::ToolExecutionEnd(s) if s.call.id == id));
        let first = position(&|e| matches!(e, Event::Subagent(n) if n.path == [id]));
        let last = events
            .iter()
            .rposition(|e| matches!(e, Event::Subagent(n) if n.path == [id]))
            .unwrap();
        assert!(
            start < first && last < end,
            "{id}: {start} {first} {last} {end}"
        );
    }
    // Both transcripts were handed over: prompt, call, result, answer.
    let mut saved = transcripts.lock().unwrap().clone();
    saved.sort();
    assert_eq!(
        saved,
        vec![
            (vec!["t1".to_owned()], "first".to_owned(), 4),
            (vec!["t2".to_owned()], "second".to_owned(), 4)
        ]
    );
    // Serialized for --json as the child's own event under a path.
    let first = nested.iter().find(|e| e.path == ["t1"]).unwrap();
    let json = serde_json::to_value(first).unwrap();
    assert_eq!(json["path"], json!(["t1"]));
    assert_eq!(json["event"]["type"], "run_start");
}

/// A tool that says it started, then waits for its call's cancellation and notes it.
fn waiting_tool(started: Arc<tokio::sync::Notify>, saw_cancel: Arc<AtomicBool>) -> Tool {
    Tool::new(
        "wait",
        "Waits until cancelled.",
        object_schema(json!({}), &[]),
        move |ctx: ToolContext, _args| {
            let (started, saw_cancel) = (Arc::clone(&started), Arc::clone(&saw_cancel));
            async move {
                started.notify_one();
                ctx.cancelled().await;
                saw_cancel.store(true, Ordering::SeqCst);
                Ok(ToolResult::text("stopped"))
            }
        },
    )
}

#[test]
fn cancelling_the_parent_reaches_a_grandchilds_tool_and_depth_is_bounded() {
    let generator = ByPrompt::new(&[
        (
            "main",
            json!([{"tool_calls": [task_call("t1", "child", "child")]}]),
        ),
        (
            "child",
            json!([{"tool_calls": [task_call("t2", "grandchild", "grandchild")]}]),
        ),
        (
            "grandchild",
            json!([{"tool_calls": [{"id": "w", "name": "wait", "arguments": {}}]}]),
        ),
    ]);
    let offered = Arc::clone(&generator.offered);
    let started = Arc::new(tokio::sync::Notify::new());
    let saw_cancel = Arc::new(AtomicBool::new(false));
    let agent = parent(
        generator,
        vec![waiting_tool(Arc::clone(&started), Arc::clone(&saw_cancel))],
        subagent::Config::default(),
    );
    let run = agent.start(prompt("main"));
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        tokio::time::timeout(HANG_GUARD, started.notified())
            .await
            .expect("the grandchild's tool never started");
    });
    run.cancel();
    let (events, outcome) = collect(run);
    assert!(
        matches!(outcome, Err(agent::Error::Cancelled { .. })),
        "{outcome:?}"
    );
    assert!(saw_cancel.load(Ordering::SeqCst));
    // The grandchild's events carry both calls' IDs.
    assert!(subagent_events(&events)
        .iter()
        .any(|e| e.path == ["t1", "t2"]
            && matches!(&*e.event, Event::ToolExecutionStart(s) if s.call.id == "w")));
    // Depth 2: the child may start a grandchild, the grandchild no one.
    let offered = offered.lock().unwrap();
    assert!(offered["child"].contains(&"task".to_owned()), "{offered:?}");
    assert!(
        !offered["grandchild"].contains(&"task".to_owned()),
        "{offered:?}"
    );
}

/// Ten children in parallel draw from one budget: each model answer of each child is counted
/// for the parent as it arrives, and no child asks again once the parent's budget is spent.
/// Before, each was given the whole of what was left, and ten spent 8.5 times the budget.
#[test]
fn parallel_children_share_one_budget() {
    const CHILDREN: usize = 10;
    const PER_ANSWER: u64 = 850;
    const BUDGET: u64 = 3_000;
    let calls: Vec<Value> = (0..CHILDREN)
        .map(|n| task_call(&format!("t{n}"), "child", &format!("c{n}")))
        .collect();
    let mut scripts = vec![(
        "main".to_owned(),
        json!([
            {"tool_calls": calls, "usage": {"input_tokens": 100, "output_tokens": 0}},
            {"text": "never asked"}
        ]),
    )];
    for n in 0..CHILDREN {
        let answer = |text: &str| {
            json!({"tool_calls": [{"id": format!("e{text}"), "name": "echo", "arguments": {"text": text}}],
                   "usage": {"input_tokens": PER_ANSWER, "output_tokens": 0}})
        };
        scripts.push((
            format!("c{n}"),
            json!([answer("1"), answer("2"), {"text": "done", "usage": {"input_tokens": PER_ANSWER, "output_tokens": 0}}]),
        ));
    }
    let borrowed: Vec<(&str, Value)> = scripts
        .iter()
        .map(|(prompt, script)| (prompt.as_str(), script.clone()))
        .collect();
    let served = Arc::new(std::sync::atomic::AtomicU64::new(0));
    struct Counting {
        inner: ByPrompt,
        served: Arc<std::sync::atomic::AtomicU64>,
    }
    impl Generator for Counting {
        fn stream(&self, request: Request) -> EventStream {
            self.served.fetch_add(1, Ordering::SeqCst);
            self.inner.stream(request)
        }
    }
    let generator: Arc<dyn Generator> = Arc::new(Counting {
        inner: ByPrompt::new(&borrowed),
        served: Arc::clone(&served),
    });
    let task = subagent::tool(subagent::Config {
        generator: Some(Arc::clone(&generator)),
        tools: vec![echo_tool()],
        ..Default::default()
    })
    .unwrap();
    let agent = Agent::new(agent::Config {
        generator: Some(generator),
        model: Model::new("m"),
        tools: vec![echo_tool(), task],
        budget: Some(Budget::tokens(BUDGET)),
        ..Default::default()
    })
    .unwrap();
    let error = agent.start(prompt("main")).wait().unwrap_err();
    let agent::Error::Budget { reached, .. } = &error else {
        panic!("{error}");
    };
    // Every answer counted once: the parent's own and each child's.
    let child_answers = served.load(Ordering::SeqCst) - 1;
    let used = 100 + child_answers * PER_ANSWER;
    assert!(
        reached.contains(&format!("{used} tokens used")),
        "{reached} ({child_answers} answers)"
    );
    // No child asked once the budget was spent: past it, at most the one request each child
    // had in flight (the first requests all go out at once).
    assert!(
        used <= BUDGET + CHILDREN as u64 * PER_ANSWER,
        "{used} tokens for a budget of {BUDGET}"
    );
    assert!(child_answers < (CHILDREN * 3) as u64, "{child_answers}");
}

#[test]
fn a_child_gets_what_is_left_of_the_budget_and_its_spending_counts() {
    let generator = ByPrompt::new(&[
        (
            "main",
            json!([
                {"tool_calls": [task_call("t1", "child", "child")], "usage": {"input_tokens": 100, "output_tokens": 0}},
                {"text": "never asked"}
            ]),
        ),
        (
            "child",
            json!([
                {"tool_calls": [{"id": "e", "name": "echo", "arguments": {"text": "x"}}], "usage": {"input_tokens": 950, "output_tokens": 0}},
                {"text": "never asked either"}
            ]),
        ),
    ]);
    let agent = {
        let generator: Arc<dyn Generator> = Arc::new(generator);
        let task = subagent::tool(subagent::Config {
            generator: Some(Arc::clone(&generator)),
            tools: vec![echo_tool()],
            ..Default::default()
        })
        .unwrap();
        Agent::new(agent::Config {
            generator: Some(generator),
            model: Model::new("m"),
            tools: vec![echo_tool(), task],
            budget: Some(Budget::tokens(1_000)),
            ..Default::default()
        })
        .unwrap()
    };
    let error = agent.start(prompt("main")).wait().unwrap_err();
    // The child had 900 tokens left and spent 950: it stopped after its batch.
    let agent::Error::Budget { reached, messages } = &error else {
        panic!("{error}");
    };
    let results = transcript_results(messages);
    assert!(results[0].is_error, "{}", results[0].text());
    assert!(
        results[0]
            .text()
            .contains("950 tokens used, the budget is 900"),
        "{}",
        results[0].text()
    );
    // The parent counts the child's tokens: 100 + 950.
    assert!(reached.contains("1050 tokens used"), "{reached}");
}

#[test]
fn a_call_naming_tools_or_a_model_it_may_not_have_is_refused_with_the_choices() {
    let generator = ByPrompt::new(&[(
        "main",
        json!([
            {"tool_calls": [
                {"id": "t1", "name": "task", "arguments": {"description": "d", "prompt": "x", "tools": ["bash"]}},
                {"id": "t2", "name": "task", "arguments": {"description": "d", "prompt": "x", "model": "bigger"}}
            ]},
            {"text": "ok"}
        ]),
    )]);
    let agent = parent(generator, vec![echo_tool()], subagent::Config::default());
    let result = agent.start(prompt("main")).wait().unwrap();
    let results = transcript_results(&result.messages);
    assert!(results[0].is_error);
    assert!(
        results[0]
            .text()
            .contains("\"bash\" is not a tool a subagent may use; choose from: echo, task"),
        "{}",
        results[0].text()
    );
    assert!(results[1].is_error);
    assert!(
        results[1].text().contains("\"bigger\" is not a model"),
        "{}",
        results[1].text()
    );
}

#[test]
fn a_named_agent_runs_with_its_instructions_and_never_more_tools_than_the_childrens() {
    let generator = ByPrompt::new(&[
        (
            "main",
            json!([
                {"tool_calls": [
                    {"id": "t1", "name": "task", "arguments": {"description": "d", "prompt": "look", "agent": "reviewer"}},
                    {"id": "t2", "name": "task", "arguments": {"description": "d", "prompt": "x", "agent": "nobody"}}
                ]},
                {"text": "ok"}
            ]),
        ),
        ("look", json!([{"text": "looks fine"}])),
    ]);
    let offered = Arc::clone(&generator.offered);
    let systems = Arc::clone(&generator.systems);
    let reviewer = subagent::NamedAgent::new("reviewer", "Reviews a change", "You review code.")
        // `bash` is not the children's: left out, never gained.
        .with_tools(["echo", "bash"]);
    let agent = parent(
        generator,
        vec![echo_tool(), meeting_tool(1)],
        subagent::Config {
            system_prompt: Some("Work in /project.".into()),
            agents: vec![reviewer],
            ..Default::default()
        },
    );
    let task = agent
        .tool_definitions()
        .iter()
        .find(|definition| definition.name == "task")
        .unwrap();
    assert!(
        task.description.contains("- reviewer: Reviews a change"),
        "{}",
        task.description
    );
    let result = agent.start(prompt("main")).wait().unwrap();
    let results = transcript_results(&result.messages);
    assert!(!results[0].is_error, "{}", results[0].text());
    assert!(results[0].text().contains("looks fine"));
    assert_eq!(offered.lock().unwrap()["look"], ["echo"]);
    assert_eq!(
        systems.lock().unwrap()["look"].as_deref(),
        Some("You review code.\n\nWork in /project.")
    );
    assert!(results[1].is_error);
    assert!(
        results[1]
            .text()
            .contains("\"nobody\" is not an agent here; choose from: reviewer"),
        "{}",
        results[1].text()
    );
}

#[test]
fn a_configuration_that_cannot_run_a_child_is_refused() {
    assert!(matches!(
        subagent::tool(subagent::Config::default()),
        Err(subagent::Error::NoGenerator)
    ));
    let generator: Arc<dyn Generator> = Arc::new(Scripted::new([]));
    let refused = subagent::tool(subagent::Config {
        generator: Some(generator),
        max_depth: 0,
        ..Default::default()
    })
    .unwrap_err();
    assert!(refused.to_string().contains("give 1 or more"), "{refused}");
}

#[test]
fn a_huge_answer_is_cut_with_a_note_and_a_failing_child_is_an_error_result() {
    let huge = "x".repeat(200 * 1024);
    let generator = ByPrompt::new(&[
        (
            "main",
            json!([
                {"tool_calls": [task_call("t1", "big", "big"), task_call("t2", "broken", "broken")]},
                {"text": "ok"}
            ]),
        ),
        ("big", json!([{"text": huge}])),
        // Its script has no answer for its second request: the child's generator fails.
        (
            "broken",
            json!([{"text": "trying", "tool_calls": [{"id": "e", "name": "echo", "arguments": {"text": "x"}}]}]),
        ),
    ]);
    let agent = parent(generator, vec![echo_tool()], subagent::Config::default());
    let result = agent.start(prompt("main")).wait().unwrap();
    let results = transcript_results(&result.messages);
    let big = results[0].text();
    assert!(big.len() < 60 * 1024, "{}", big.len());
    assert!(
        big.ends_with(&format!(
            "[… the answer was cut at {} of its {} bytes]",
            subagent::MAX_ANSWER_BYTES,
            200 * 1024
        )),
        "{}",
        &big[big.len() - 200..]
    );
    let broken = &results[1];
    assert!(broken.is_error);
    assert!(
        broken.text().starts_with("the subagent did not finish:"),
        "{}",
        broken.text()
    );
    assert!(
        broken.text().contains("Its last words:\ntrying"),
        "{}",
        broken.text()
    );
}

/// A runner that runs children elsewhere: it records what each call asked for, forwards one
/// event, and answers with what the child spent.
struct Elsewhere {
    asked: Mutex<Vec<subagent::Child>>,
}

impl subagent::Runner for Elsewhere {
    fn run(
        &self,
        child: subagent::Child,
        ctx: ToolContext,
    ) -> futures::future::BoxFuture<'static, Result<subagent::ChildOutcome, golato::tool::BoxError>>
    {
        self.asked.lock().unwrap().push(child.clone());
        Box::pin(async move {
            ctx.forward(Event::RunStart(
                serde_json::from_value(json!({"run_id": 7})).unwrap(),
            ));
            let answer = golato::message::AssistantMessage::with_text(format!(
                "ran {:?} elsewhere",
                child.prompt
            ));
            let usage = golato::message::Usage {
                input_tokens: 300,
                ..Default::default()
            };
            Ok(subagent::ChildOutcome::finished(
                vec![
                    Message::User(golato::message::UserMessage::new(child.prompt)),
                    Message::Assistant(answer.clone()),
                ],
                answer,
            )
            .with_spent(usage, None))
        })
    }
}

/// With a runner, a child is what the call asked for (path, depth, tools, budget left), checked
/// first: a call naming a tool it may not have never reaches the runner. The runner's events
/// are the child's, its answer the result, what it spent the parent's.
#[test]
fn a_runner_gets_the_child_the_call_asked_for_and_its_outcome_is_the_result() {
    let generator = ByPrompt::new(&[(
        "main",
        json!([
            {"tool_calls": [
                {"id": "t1", "name": "task", "arguments": {"description": "d", "prompt": "elsewhere", "tools": ["echo"]}},
                {"id": "t2", "name": "task", "arguments": {"description": "d", "prompt": "x", "tools": ["bash"]}}
            ]},
            {"text": "ok"}
        ]),
    )]);
    let runner = Arc::new(Elsewhere {
        asked: Mutex::default(),
    });
    let generator: Arc<dyn Generator> = Arc::new(generator);
    let task = subagent::tool(subagent::Config {
        generator: Some(Arc::clone(&generator)),
        tools: vec![echo_tool()],
        runner: Some(runner.clone()),
        ..Default::default()
    })
    .unwrap();
    let agent = Agent::new(agent::Config {
        generator: Some(generator),
        tools: vec![echo_tool(), task],
        budget: Some(Budget::tokens(10_000)),
        ..Default::default()
    })
    .unwrap();
    let (events, result) = collect(agent.start(prompt("main")));
    let result = result.unwrap();
    let asked = runner.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0].path, ["t1"]);
    assert_eq!(asked[0].depth, 1);
    assert_eq!(asked[0].tools.as_deref(), Some(&["echo".to_owned()][..]));
    assert_eq!(asked[0].budget, Some(Budget::tokens(10_000)));
    let results = transcript_results(&result.messages);
    assert_eq!(results[0].text(), "ran \"elsewhere\" elsewhere");
    assert!(results[1].is_error);
    assert!(results[1].text().contains("\"bash\" is not a tool"));
    assert_eq!(subagent_events(&events).len(), 1);
    assert_eq!(subagent_events(&events)[0].path, ["t1"]);
    assert_eq!(
        result.usage.input_tokens, 300,
        "the child's tokens count for the parent"
    );
    let ended = events.iter().find_map(|event| match event {
        Event::RunEnd(end) => Some(end.usage.input_tokens),
        _ => None,
    });
    assert_eq!(ended, Some(300), "the child's tokens count for the parent");
}

/// A stand-in for bash: a command in the sandbox with checkpoints reports the files it changed
/// in its details; one outside it does not.
fn fake_bash() -> Tool {
    Tool::new(
        "bash",
        "Runs a command.",
        object_schema(json!({"command": {"type": "string"}}), &["command"]),
        |_ctx, arguments: Value| async move {
            let command = arguments["command"].as_str().unwrap_or_default().to_owned();
            let details = match command.as_str() {
                "make" => json!({"capture": "captured", "changes": [
                    {"path": "/w/out.o", "before": "absent", "after": {"kept": "x"}},
                    {"path": "/w/old.o", "before": {"kept": "y"}, "after": "absent"}
                ]}),
                "make again" => json!({"capture": "captured", "changes": [
                    {"path": "/w/out.o", "before": {"kept": "x"}, "after": {"kept": "z"}}
                ]}),
                _ => json!({"capture": {"uncaptured": "no sandbox"}}),
            };
            Ok(ToolResult::text("ran").with_details(details))
        },
    )
}

/// The call's result lists what the child's captured commands changed (each file once), and
/// counts the commands that ran uncaptured.
#[test]
fn a_childs_captured_commands_are_listed_with_what_they_changed() {
    let bash = |id: &str, command: &str| json!({"id": id, "name": "bash", "arguments": {"command": command}});
    let generator = ByPrompt::new(&[
        (
            "main",
            json!([{"tool_calls": [task_call("t1", "build", "child")]}, {"text": "ok"}]),
        ),
        (
            "child",
            json!([
                {"tool_calls": [bash("b1", "make"), bash("b2", "make again"), bash("b3", "curl")]},
                {"text": "built"}
            ]),
        ),
    ]);
    let agent = parent(generator, vec![fake_bash()], subagent::Config::default());
    let result = agent.start(prompt("main")).wait().unwrap();
    let text = transcript_results(&result.messages)[0].text();
    assert_eq!(
        text,
        "built\n\n[Its 2 captured bash command(s) changed 2 file(s): /w/out.o, /w/old.o]\n\
         [It ran 1 bash command(s) outside the sandbox's capture; what they changed is not listed]"
    );
}

/// A child sent from elsewhere (a durable worker gets it through the server's ingress) is held
/// to the configuration's budget whatever budget it carries, or none.
#[test]
fn a_child_made_from_elsewhere_gets_no_more_than_the_configured_budget() {
    let generator = ByPrompt::new(&[(
        "child",
        json!([
            {"tool_calls": [{"id": "e", "name": "echo", "arguments": {"text": "x"}}], "usage": {"input_tokens": 150, "output_tokens": 0}},
            {"text": "never asked"}
        ]),
    )]);
    let config = Arc::new(subagent::Config {
        generator: Some(Arc::new(generator)),
        tools: vec![echo_tool()],
        max_budget: Some(Budget::tokens(100)),
        ..Default::default()
    });
    for carried in [None, Some(Budget::tokens(1_000_000))] {
        let mut child = subagent::Child::new(vec!["t1".into()], 1, "child");
        child.budget = carried;
        let agent = subagent::child_agent(&config, &child).unwrap();
        let error = agent.start(prompt("child")).wait().unwrap_err();
        let agent::Error::Budget { reached, .. } = &error else {
            panic!("{carried:?}: {error}");
        };
        assert!(reached.contains("the budget is 100"), "{reached}");
    }
}
