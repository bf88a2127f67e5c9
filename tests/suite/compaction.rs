//! Context compaction: a run whose next request would outgrow the window has its oldest turns
//! summarized, never splitting a call from its result; the transcript keeps everything; a
//! provider's "too long" refusal compacts once and retries; `Agent::compact` on demand; a
//! journaled run sends the same compacted requests when it is picked up.

use crate::support;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use golato::agent::compaction::{Compaction, CompactionReason, SUMMARY_HEADER};
use golato::agent::{self, Agent, Event};
use golato::generator::{Generator, Model, OpenAiChat, Request, RetryPolicy, Scripted};
use golato::journal::MemoryJournal;
use golato::message::{AssistantMessage, Content, Message};
use serde_json::Value;
use support::*;

/// Every tool result of a request follows the assistant message that made its call, and
/// every call of a request has its result there (but the calls of its last message).
fn assert_pairs_whole(request: &[Message]) {
    let mut called = HashSet::new();
    let mut answered = HashSet::new();
    for message in request {
        match message {
            Message::Assistant(assistant) => {
                called.extend(assistant.tool_calls.iter().map(|call| call.id.clone()))
            }
            Message::ToolResult(result) => {
                assert!(
                    called.contains(&result.tool_call_id),
                    "the result of {} is sent without its call: {request:#?}",
                    result.tool_call_id
                );
                answered.insert(result.tool_call_id.clone());
            }
            Message::User(_) => {}
        }
    }
    assert_eq!(called, answered, "a call is sent without its result");
}

fn summarizer() -> (Recording<Scripted>, Arc<Mutex<Vec<Request>>>) {
    recording(Scripted::new([AssistantMessage::with_text(
        "The user wants pages fetched; several were.",
    )]))
}

fn compacting_agent(generator: impl Generator, summaries: impl Generator) -> Agent {
    compacting_agent_with_hooks(generator, summaries, Vec::new())
}

fn compacting_agent_with_hooks(
    generator: impl Generator,
    summaries: impl Generator,
    hooks: Vec<Arc<dyn golato::hook::Hook>>,
) -> Agent {
    Agent::new(agent::Config {
        generator: Some(Arc::new(generator)),
        tools: vec![fetch_tool(10)],
        context_window: Some(1_000),
        compaction: Compaction::default()
            .with_threshold(0.8)
            .with_keep_recent(0.3)
            .with_counter(Arc::new(PerMessage))
            .with_summarizer(Arc::new(summaries), Model::new("cheap")),
        hooks,
        ..Default::default()
    })
    .unwrap()
}

#[test]
fn a_run_past_the_threshold_sends_a_summary_and_the_recent_turns() {
    let (model, requests) = recording(Scripted::new(fetching_script(6, true)));
    let (summaries, summary_requests) = summarizer();
    let agent = compacting_agent(model, summaries);
    let (events, outcome) = collect(agent.start(prompt("fetch the pages")));
    let result = outcome.unwrap();

    // The transcript keeps everything: the prompt, 7 answers, 12 results.
    assert_eq!(result.messages.len(), 1 + 7 + 12);
    assert_eq!(result.final_message.text(), "all fetched");

    // Turn 3's request would be 7 messages (700 of 1,000 tokens: under 800); turn 4's is 10.
    let compactions: Vec<_> = events
        .iter()
        .filter_map(|event| match event {
            Event::Compaction(compaction) => Some(compaction.clone()),
            _ => None,
        })
        .collect();
    assert!(!compactions.is_empty(), "no compaction: {events:#?}");
    let first = &compactions[0];
    assert_eq!(first.turn, 4);
    assert_eq!(first.reason, CompactionReason::Threshold);
    assert_eq!(first.tokens_before, 1_000);
    // Kept: 300 tokens at most, cut before an assistant message: the last call and its two
    // results. Replaced: the 7 messages before.
    assert_eq!(first.replaced, 7);
    assert_eq!(first.tokens_after, 400);
    assert!(first.summary.contains("pages fetched"));

    // Every request is whole, and those after a compaction start with the summary.
    let requests = requests.lock().unwrap();
    assert_eq!(requests.len(), 7);
    for request in requests.iter() {
        assert_pairs_whole(&request.messages);
        let estimate = request.messages.len() as u64 * 100;
        assert!(estimate < 1_000, "a request of {estimate} tokens was sent");
    }
    let fourth = &requests[3];
    assert_eq!(fourth.messages.len(), 4);
    let Message::User(summary) = &fourth.messages[0] else {
        panic!("{:#?}", fourth.messages[0]);
    };
    assert!(summary.text().starts_with(SUMMARY_HEADER));
    assert_eq!(fourth.compacted_turns, 2);

    // The summarizer saw the replaced messages as text, with the prompt.
    let summary_requests = summary_requests.lock().unwrap();
    assert_eq!(summary_requests.len(), compactions.len());
    let Message::User(asked) = &summary_requests[0].messages[0] else {
        panic!("{:#?}", summary_requests[0]);
    };
    let asked = asked.text();
    assert!(asked.contains("User: fetch the pages"), "{asked}");
    assert!(
        asked.contains("Assistant called fetch (call a0)"),
        "{asked}"
    );
    assert!(summary_requests[0].tools.is_empty());
}

#[test]
fn the_cut_never_separates_the_results_of_a_parallel_batch() {
    // Keep-recent budgets from 1 to 9 messages: wherever it falls, the batch stays whole.
    for keep in 1..=6 {
        let (model, requests) = recording(Scripted::new(fetching_script(8, true)));
        let (summaries, _) = summarizer();
        let agent = Agent::new(agent::Config {
            generator: Some(Arc::new(model)),
            tools: vec![fetch_tool(10)],
            context_window: Some(1_000),
            compaction: Compaction::default()
                .with_threshold(0.95)
                .with_keep_recent(f64::from(keep) / 10.0)
                .with_counter(Arc::new(PerMessage))
                .with_summarizer(Arc::new(summaries), Model::new("cheap")),
            ..Default::default()
        })
        .unwrap();
        let result = agent.start(prompt("go")).wait().unwrap();
        assert_eq!(result.messages.len(), 1 + 9 + 16);
        for request in requests.lock().unwrap().iter() {
            assert_pairs_whole(&request.messages);
        }
    }
}

#[test]
fn a_summarizer_that_fails_ends_the_run_with_the_whole_transcript() {
    let model = Scripted::new(fetching_script(6, false));
    // An empty script: the summary request fails.
    let agent = compacting_agent(model, Scripted::new([]));
    let error = agent.start(prompt("go")).wait().unwrap_err();
    let agent::Error::Compaction { reason, messages } = &error else {
        panic!("{error}");
    };
    assert!(reason.contains("script"), "{reason}");
    // Prompt, then 4 answers each with its result (the compaction came before the 5th turn).
    assert_eq!(messages.len(), 9, "{messages:#?}");
    assert!(error.to_string().contains("summary could not be written"));
}

#[test]
fn compaction_off_sends_the_whole_transcript() {
    let (model, requests) = recording(Scripted::new(fetching_script(6, false)));
    let agent = Agent::new(agent::Config {
        generator: Some(Arc::new(model)),
        tools: vec![fetch_tool(10)],
        context_window: Some(1_000),
        compaction: Compaction::off().with_counter(Arc::new(PerMessage)),
        ..Default::default()
    })
    .unwrap();
    agent.start(prompt("go")).wait().unwrap();
    let requests = requests.lock().unwrap();
    assert_eq!(requests.last().unwrap().messages.len(), 13);
}

#[test]
fn settings_out_of_range_are_refused_at_build() {
    let error = Agent::new(agent::Config {
        generator: Some(Arc::new(Scripted::new([]))),
        compaction: Compaction::default().with_threshold(1.5),
        ..Default::default()
    })
    .unwrap_err();
    assert!(error.to_string().contains("threshold is 1.5"), "{error}");
}

#[test]
fn a_journaled_run_sends_the_same_compacted_requests_when_picked_up() {
    let journal = Arc::new(MemoryJournal::new());
    let (summaries, _) = summarizer();
    let agent = compacting_agent(Scripted::new(fetching_script(6, false)), summaries);
    let first = agent
        .start_journaled(prompt("go"), journal.clone())
        .wait()
        .unwrap();
    assert!(
        journal
            .keys()
            .iter()
            .any(|key| key.ends_with("/compaction-1")),
        "{:?}",
        journal.keys()
    );
    // Picked up again, nothing is asked of either model: every step is in the journal.
    let (model, requests) = recording(Scripted::new([]));
    let (summaries, summary_requests) = recording(Scripted::new([]));
    let again = compacting_agent(model, summaries)
        .start_journaled(prompt("go"), journal)
        .wait()
        .unwrap();
    assert_eq!(again.messages, first.messages);
    assert!(requests.lock().unwrap().is_empty());
    assert!(summary_requests.lock().unwrap().is_empty());
}

#[test]
fn agent_compact_replaces_the_oldest_turns_on_demand() {
    let (summaries, _) = summarizer();
    let agent = compacting_agent(Scripted::new([]), summaries);
    let transcript = agent
        .start(prompt("go"))
        .wait()
        .err()
        .and_then(|error| error.messages().map(<[Message]>::to_vec))
        .unwrap_or_default();
    // An empty script fails at once: only the prompt, which cannot be compacted.
    assert_eq!(transcript.len(), 1);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let unchanged = runtime.block_on(agent.compact(transcript.clone())).unwrap();
    assert_eq!(unchanged.replaced, 0);
    assert_eq!(unchanged.messages, transcript);

    let (summaries, _) = summarizer();
    let full = Agent::new(agent::Config {
        generator: Some(Arc::new(Scripted::new(fetching_script(5, false)))),
        tools: vec![fetch_tool(10)],
        compaction: Compaction::off(),
        ..Default::default()
    })
    .unwrap()
    .start(prompt("go"))
    .wait()
    .unwrap()
    .messages;
    assert_eq!(full.len(), 12);
    let compacted = runtime.block_on(agent.compact(full.clone())).unwrap();
    assert!(compacted.replaced > 0);
    assert_eq!(
        compacted.messages[1..],
        full[compacted.replaced..],
        "the kept messages are the transcript's last, unchanged"
    );
    assert_pairs_whole(&compacted.messages);
    drop(summaries);

    // A run goes on from the compacted transcript, and its request starts with the summary.
    let answered = compacted
        .messages
        .iter()
        .filter(|message| matches!(message, Message::Assistant(_)))
        .count();
    let (model, requests) = recording(Scripted::new(vec![
        AssistantMessage::with_text("and more");
        answered + 1
    ]));
    let go_on = agent_with(model, vec![fetch_tool(10)]);
    let result = go_on
        .start(agent::Input {
            prompts: vec![golato::message::UserMessage::new("more")],
            transcript: compacted.messages,
            summary: None,
        })
        .wait()
        .unwrap();
    assert_eq!(result.final_message.text(), "and more");
    let requests = requests.lock().unwrap();
    let Message::User(first) = &requests[0].messages[0] else {
        panic!("{:#?}", requests[0]);
    };
    assert!(
        matches!(&first.content[0], Content::Text { text } if text.starts_with(SUMMARY_HEADER))
    );
}

use support::compaction::*;

fn provider_agent(base_url: &str, compaction: Compaction) -> Agent {
    let client = OpenAiChat::new(base_url, None)
        .unwrap()
        .with_retry(RetryPolicy {
            max_retries: 0,
            ..RetryPolicy::default()
        });
    Agent::new(agent::Config {
        generator: Some(Arc::new(client)),
        model: Model::new("local-model"),
        tools: vec![fetch_tool(2_000)],
        compaction,
        ..Default::default()
    })
    .unwrap()
}

#[test]
fn a_request_refused_as_too_long_is_compacted_once_and_sent_again() {
    // Each fetch adds ~2 KB; the fifth request is over 9 KB.
    let (_runtime, base_url, provider) = provider(9_000, provider_turns(6));
    let agent = provider_agent(&base_url, Compaction::default());
    let (events, outcome) = collect(agent.start(prompt("fetch six pages")));
    let result = outcome.unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(result.final_message.text(), "done");
    // Nothing lost: the prompt, 7 answers, 6 results.
    assert_eq!(result.messages.len(), 14);

    let refusals: Vec<_> = events
        .iter()
        .filter_map(|event| match event {
            Event::Compaction(compaction) => Some(compaction),
            _ => None,
        })
        .collect();
    assert!(!refusals.is_empty());
    assert!(refusals
        .iter()
        .all(|compaction| compaction.reason == CompactionReason::ContextTooLong));

    let bodies = provider.bodies();
    let refused = bodies.iter().filter(|(size, _)| *size > 9_000).count();
    assert_eq!(refused, refusals.len(), "one refusal per compaction");
    // Each refused request is followed by a summary request and the same turn sent again.
    for (index, (size, _)) in bodies.iter().enumerate() {
        if *size > 9_000 {
            let (_, summary) = &bodies[index + 1];
            assert!(summary["messages"][0]["content"]
                .as_str()
                .unwrap()
                .starts_with("You compact"));
            let (retried, again) = &bodies[index + 2];
            assert!(*retried <= 9_000);
            let first = &again["messages"][0];
            assert!(wire_text(first).starts_with(SUMMARY_HEADER), "{first}");
            assert_wire_pairs_whole(again);
        }
    }
}

/// Every `tool` message of an OpenAI request answers a call made earlier in it.
fn assert_wire_pairs_whole(request: &Value) {
    let mut called = HashSet::new();
    for message in request["messages"].as_array().unwrap() {
        for call in message["tool_calls"].as_array().into_iter().flatten() {
            called.insert(call["id"].as_str().unwrap().to_owned());
        }
        if message["role"] == "tool" {
            assert!(called.contains(message["tool_call_id"].as_str().unwrap()));
        }
    }
}

#[test]
fn a_refusal_that_compaction_cannot_help_fails_the_run_with_the_providers_error() {
    let (_runtime, base_url, provider) = provider(1_000, provider_turns(1));
    let agent = provider_agent(&base_url, Compaction::default());
    let error = agent
        .start(prompt(&"too long ".repeat(200)))
        .wait()
        .unwrap_err();
    let agent::Error::Generator { source, messages } = &error else {
        panic!("{error}");
    };
    assert!(source.is_context_too_long(), "{source}");
    assert_eq!(messages.len(), 1);
    // Asked once: a prompt alone has nothing to summarize.
    assert_eq!(provider.bodies().len(), 1);
}

#[test]
fn with_compaction_off_a_refusal_fails_the_run() {
    let (_runtime, base_url, provider) = provider(5_000, provider_turns(6));
    let agent = provider_agent(&base_url, Compaction::off());
    let error = agent.start(prompt("fetch")).wait().unwrap_err();
    assert!(
        matches!(&error, agent::Error::Generator { source, .. } if source.is_context_too_long()),
        "{error}"
    );
    let bodies = provider.bodies();
    assert!(bodies
        .iter()
        .all(|(_, body)| !body["messages"][0]["content"]
            .as_str()
            .unwrap_or_default()
            .starts_with("You compact")));
}

#[test]
fn a_journaled_run_refused_as_too_long_asks_the_turn_again_under_the_same_step() {
    let (_runtime, base_url, provider) = provider(9_000, provider_turns(6));
    let agent = provider_agent(&base_url, Compaction::default());
    let journal = Arc::new(MemoryJournal::new());
    let result = agent
        .start_journaled(prompt("fetch six pages"), journal.clone())
        .wait()
        .unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(result.messages.len(), 14);
    let keys = journal.keys();
    assert!(
        keys.iter().any(|key| key.ends_with("/compaction-1")),
        "{keys:?}"
    );
    // Every turn is recorded once, the refused one included (under its retry).
    for turn in 1..=7 {
        let name = format!("turn-{turn}");
        assert_eq!(
            keys.iter().filter(|key| **key == name).count(),
            1,
            "{keys:?}"
        );
    }
    let asked = provider.bodies().len();
    // Picked up again: nothing is asked.
    let again = provider_agent(&base_url, Compaction::default())
        .start_journaled(prompt("fetch six pages"), journal)
        .wait()
        .unwrap();
    assert_eq!(again.messages, result.messages);
    assert_eq!(provider.bodies().len(), asked);
}

#[test]
fn each_providers_wording_of_too_long_is_recognized_and_nothing_else() {
    use golato::generator::Error;
    let refusal = |status: Option<u16>, message: &str| Error::Provider {
        status,
        message: message.to_owned(),
    };
    for (status, message) in [
        // OpenAI Chat Completions.
        (Some(400), "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens."),
        // OpenAI Responses.
        (Some(400), "Your input exceeds the context window of this model. Please adjust your input and try again."),
        // Anthropic.
        (Some(400), "prompt is too long: 210000 tokens > 200000 maximum"),
        // In Anthropic's stream, without a status.
        (None, "prompt is too long: 210000 tokens > 200000 maximum"),
        // llama.cpp server, vLLM.
        (Some(400), "the request exceeds the available context size, try increasing it"),
        (Some(400), "This model's maximum context length is 8192 tokens."),
        // A proxy's body limit.
        (Some(413), "Request Entity Too Large"),
    ] {
        assert!(refusal(status, message).is_context_too_long(), "{message}");
    }
    for (status, message) in [
        (Some(429), "Rate limit reached for gpt-4o"),
        (
            Some(400),
            "Invalid 'tools[0].function.name': string does not match pattern",
        ),
        (Some(401), "Incorrect API key provided"),
    ] {
        assert!(!refusal(status, message).is_context_too_long(), "{message}");
    }
    assert!(!Error::IncompleteStream.is_context_too_long());
}

#[test]
fn the_next_run_goes_on_from_the_summary_a_run_gave_without_summarizing_again() {
    let (summaries, _) = summarizer();
    let agent = compacting_agent(Scripted::new(fetching_script(6, false)), summaries);
    let first = agent.start(prompt("go")).wait().unwrap();
    let summary = first.summary.clone().expect("the run compacted");
    assert!(summary.fits(&first.messages));

    // Another process goes on (a wider window, so that nothing needs compacting again).
    let mut script = fetching_script(6, false);
    script.push(AssistantMessage::with_text("and more"));
    let (model, requests) = recording(Scripted::new(script));
    let (summaries, summary_requests) = summarizer();
    let going_on = Agent::new(agent::Config {
        generator: Some(Arc::new(model)),
        tools: vec![fetch_tool(10)],
        context_window: Some(10_000),
        compaction: Compaction::default()
            .with_counter(Arc::new(PerMessage))
            .with_summarizer(Arc::new(summaries), Model::new("cheap")),
        ..Default::default()
    })
    .unwrap();
    let second = going_on
        .start(agent::Input {
            prompts: vec![golato::message::UserMessage::new("more")],
            transcript: first.messages.clone(),
            summary: Some(summary.clone()),
        })
        .wait()
        .unwrap();
    // The script's next entry answered: the summary's turns were counted.
    assert_eq!(second.final_message.text(), "and more");
    assert_eq!(second.summary, Some(summary.clone()));
    assert!(summary_requests.lock().unwrap().is_empty());
    let requests = requests.lock().unwrap();
    let sent = &requests[0];
    assert_eq!(
        sent.messages.len(),
        1 + first.messages.len() - summary.replaces + 1
    );
    let Message::User(head) = &sent.messages[0] else {
        panic!("{sent:#?}");
    };
    assert!(head.text().contains(&summary.text));

    // A summary that does not fit the transcript is refused, saying why.
    let error = agent
        .start(agent::Input {
            prompts: vec![golato::message::UserMessage::new("more")],
            transcript: first.messages[..2].to_vec(),
            summary: Some(summary),
        })
        .wait()
        .unwrap_err();
    assert!(
        matches!(error, agent::Error::NotContinuable { .. }),
        "{error}"
    );
    assert!(error.to_string().contains("Input::summary"), "{error}");
}

#[test]
fn absurd_usage_from_a_provider_neither_panics_nor_wraps() {
    // A provider may report anything: tokens at u64::MAX in every field, turn after turn.
    let huge = golato::message::Usage {
        input_tokens: u64::MAX,
        output_tokens: u64::MAX,
        cache_read_tokens: u64::MAX,
        cache_write_tokens: u64::MAX,
    };
    let mut script = fetching_script(3, false);
    for entry in &mut script {
        entry.usage = huge;
    }
    let (summaries, _) = summarizer();
    let agent = Agent::new(agent::Config {
        generator: Some(Arc::new(Scripted::new(script))),
        tools: vec![fetch_tool(10)],
        model: Model::new("gpt-4o-mini"),
        context_window: Some(1_000),
        compaction: Compaction::default()
            .with_counter(Arc::new(PerMessage))
            .with_summarizer(Arc::new(summaries), Model::new("cheap")),
        budget: Some(agent::Budget::tokens(u64::MAX)),
        ..Default::default()
    })
    .unwrap();
    let (events, outcome) = collect(agent.start(prompt("go")));
    // The run is held to its budget (it has spent "everything") instead of crashing.
    let error = outcome.unwrap_err();
    assert!(matches!(error, agent::Error::Budget { .. }), "{error}");
    let Some(Event::RunEnd(end)) = events.last() else {
        panic!("{events:#?}")
    };
    assert_eq!(end.usage.input_tokens, u64::MAX);
    assert!(end.cost.unwrap().is_finite());
}

/// A counter that says every message is as large as can be.
struct Enormous;

impl golato::agent::compaction::TokenCounter for Enormous {
    fn count_message(&self, _: &Message) -> u64 {
        u64::MAX
    }
}

#[test]
fn a_counter_returning_absurd_figures_neither_panics_nor_loses_messages() {
    let (summaries, _) = summarizer();
    let agent = Agent::new(agent::Config {
        generator: Some(Arc::new(Scripted::new(fetching_script(4, false)))),
        tools: vec![fetch_tool(10)],
        context_window: Some(1_000),
        compaction: Compaction::default()
            .with_counter(Arc::new(Enormous))
            .with_summarizer(Arc::new(summaries), Model::new("cheap")),
        ..Default::default()
    })
    .unwrap();
    let (events, outcome) = collect(agent.start(prompt("go")));
    let result = outcome.unwrap();
    assert_eq!(result.messages.len(), 1 + 5 + 4);
    assert!(events
        .iter()
        .any(|event| matches!(event, Event::Compaction(c) if c.tokens_before == u64::MAX)));
}

/// The policy's `PreCompact` command hooks run before the summary is asked for, told the
/// trigger, through the one hook `golato::policy` makes.
#[test]
fn a_pre_compact_hook_runs_before_the_summary() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().canonicalize().unwrap();
    let mut policy = golato::policy::CallPolicy::new();
    policy
        .add_toml(
            "[[hooks.PreCompact]]\nmatcher = \"auto\"\ncommand = \"cat >> compacting.jsonl; echo >> compacting.jsonl\"\n",
            std::path::Path::new("policy.toml"),
            &cwd,
        )
        .unwrap();
    let (_session, watched) = tokio::sync::watch::channel(golato::policy::HookSession {
        cwd: cwd.clone(),
        ..Default::default()
    });
    let hook = Arc::new(policy).hook(None, watched);
    let (model, _) = recording(Scripted::new(fetching_script(6, true)));
    let (summaries, _) = summarizer();
    let agent = compacting_agent_with_hooks(model, summaries, vec![hook]);
    let (events, outcome) = collect(agent.start(prompt("fetch the pages")));
    outcome.unwrap();
    let compactions = events
        .iter()
        .filter(|event| matches!(event, Event::Compaction(_)))
        .count();
    let told = std::fs::read_to_string(cwd.join("compacting.jsonl")).unwrap();
    let told: Vec<Value> = told
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(told.len(), compactions, "{told:?}");
    assert_eq!(told[0]["hook_event_name"], "PreCompact");
    assert_eq!(told[0]["trigger"], "auto");
}
