//! Budgets and cost: a run ends after the batch that reaches its token or money limit, with its
//! transcript; the cost of a run at the model's price (and none for a model without one).

use crate::support;

use std::sync::Arc;

use golato::agent::{self, Agent, Budget};
use golato::generator::{Model, Price, Scripted};
use serde_json::json;
use support::*;

/// Three turns of 600 input and 100 output tokens, each with a call of `echo`.
fn three_turns() -> Scripted {
    let turn = |id: &str| {
        json!({"tool_calls": [{"id": id, "name": "echo", "arguments": {"text": id}}],
               "usage": {"input_tokens": 600, "output_tokens": 100}})
    };
    Scripted::from_json(
        &json!([turn("a"), turn("b"), turn("c"), {"text": "done", "usage": {"input_tokens": 600, "output_tokens": 100}}])
            .to_string(),
    )
    .unwrap()
}

fn agent(model: Model, budget: Option<Budget>) -> Result<Agent, agent::Error> {
    Agent::new(agent::Config {
        generator: Some(Arc::new(three_turns())),
        model,
        tools: vec![echo_tool()],
        budget,
        ..Default::default()
    })
}

#[test]
fn a_token_budget_ends_the_run_after_the_batch_that_reaches_it() {
    let agent = agent(Model::new("m"), Some(Budget::tokens(1_000))).unwrap();
    let error = agent.start(prompt("go")).wait().unwrap_err();
    let agent::Error::Budget { reached, messages } = &error else {
        panic!("{error}");
    };
    assert!(
        reached.contains("1400 tokens used, the budget is 1000"),
        "{reached}"
    );
    // Two turns, each with its call's result: the second batch finished before the end.
    let results = transcript_results(messages);
    assert_eq!(results.len(), 2);
    assert_eq!(results[1].tool_call_id, "b");
}

#[test]
fn a_money_budget_uses_the_models_price_and_the_cost_is_reported() {
    let price = Price::new(100.0, 1_000.0, 0.0, 0.0);
    // Each turn costs 600 * 100 / 1e6 + 100 * 1000 / 1e6 = $0.16.
    let agent = agent(Model::new("m").with_price(price), Some(Budget::cost(0.40))).unwrap();
    let error = agent.start(prompt("go")).wait().unwrap_err();
    let agent::Error::Budget { reached, .. } = &error else {
        panic!("{error}");
    };
    assert!(reached.contains("$0.4800 spent"), "{reached}");

    let unlimited = agent_with_price(price);
    let result = unlimited.start(prompt("go")).wait().unwrap();
    assert!(
        (result.cost.unwrap() - 0.64).abs() < 1e-9,
        "{:?}",
        result.cost
    );
}

fn agent_with_price(price: Price) -> Agent {
    agent(Model::new("m").with_price(price), None).unwrap()
}

#[test]
fn a_model_without_a_price_has_no_cost_and_no_money_budget() {
    let result = agent(Model::new("my-local-model"), None)
        .unwrap()
        .start(prompt("go"))
        .wait()
        .unwrap();
    assert_eq!(result.cost, None, "unknown, never zero");
    let error = agent(Model::new("my-local-model"), Some(Budget::cost(1.0))).unwrap_err();
    assert!(
        matches!(error, agent::Error::UnpricedBudget { .. }),
        "{error}"
    );
    assert!(error.to_string().contains("Model::with_price"));
    // A known model has its price.
    assert_eq!(
        Model::new("claude-sonnet-4-5-20250929").price,
        Some(Price::new(3.0, 15.0, 0.3, 3.75))
    );
}

#[test]
fn each_turn_end_carries_its_cost_and_the_run_end_the_totals() {
    let run = agent_with_price(Price::new(100.0, 1_000.0, 0.0, 0.0)).start(prompt("go"));
    let (events, result) = collect(run);
    let result = result.unwrap();
    let turn_costs: Vec<f64> = events
        .iter()
        .filter_map(|event| match event {
            golato::Event::TurnEnd(end) => Some(end.cost.unwrap()),
            _ => None,
        })
        .collect();
    assert_eq!(turn_costs.len(), 4);
    for cost in &turn_costs {
        assert!((cost - 0.16).abs() < 1e-9, "{cost}");
    }
    let Some(golato::Event::RunEnd(end)) = events.last() else {
        panic!("{events:?}");
    };
    assert_eq!(end.usage, result.usage);
    assert_eq!(end.usage.input_tokens, 2_400);
    assert!((end.cost.unwrap() - turn_costs.iter().sum::<f64>()).abs() < 1e-9);
}
