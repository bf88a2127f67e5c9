//! `update_plan`: the model keeps a short plan of steps with their status, which the views
//! show as it changes (the call's end event carries it in the result's details).

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Workspace;
use crate::message::ToolResultMessage;
use crate::tool::{Tool, ToolContext, ToolResult};

/// Most steps of a plan.
pub const MAX_PLAN_STEPS: usize = 50;

/// Most characters of one step.
pub const MAX_STEP_CHARS: usize = 500;

/// Where a step stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    /// Not begun.
    Pending,
    /// Being worked on (at most one step at a time).
    InProgress,
    /// Done.
    Completed,
}

/// One step of a plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanStep {
    /// What the step does, in a short sentence.
    pub step: String,
    /// Where it stands.
    pub status: StepStatus,
}

/// Arguments of `update_plan`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct PlanArgs {
    /// Why the plan changed, if it did (optional).
    explanation: Option<String>,
    /// The whole plan, every step, in order.
    plan: Vec<PlanStep>,
}

/// The plan an `update_plan` call's result carries, if `result` is one that succeeded.
///
/// ```
/// use golato::builtin::{plan_of, StepStatus};
/// use golato::message::ToolResultMessage;
///
/// let result: ToolResultMessage = serde_json::from_value(serde_json::json!({
///     "tool_call_id": "p",
///     "tool_name": "update_plan",
///     "details": {"plan": [{"step": "Read the code", "status": "completed"}]},
/// }))?;
/// assert_eq!(plan_of(&result).unwrap()[0].status, StepStatus::Completed);
/// # Ok::<(), serde_json::Error>(())
/// ```
pub fn plan_of(result: &ToolResultMessage) -> Option<Vec<PlanStep>> {
    if result.tool_name != "update_plan" || result.is_error {
        return None;
    }
    let plan = result.details.as_ref()?.get("plan")?;
    serde_json::from_value(plan.clone()).ok()
}

pub(super) fn tool(_workspace: Arc<Workspace>) -> Tool {
    Tool::typed(
        "update_plan",
        format!(
            "Keep the user informed of your plan: send the whole plan, every step with its \
             status (pending, in_progress, completed), whenever it changes. At most one step \
             is in_progress; at most {MAX_PLAN_STEPS} steps of {MAX_STEP_CHARS} characters. \
             Use it for work of several steps, not for a single action."
        ),
        |_ctx: ToolContext, args: PlanArgs| async move { update(args).map_err(Into::into) },
    )
    .with_replay(crate::tool::Replay::Safe)
}

fn update(args: PlanArgs) -> Result<ToolResult, String> {
    if args.plan.is_empty() {
        return Err("the plan has no steps; send every step of the plan".into());
    }
    if args.plan.len() > MAX_PLAN_STEPS {
        return Err(format!(
            "the plan has {} steps; keep it to {MAX_PLAN_STEPS} (merge small steps)",
            args.plan.len()
        ));
    }
    for (number, step) in args.plan.iter().enumerate() {
        let chars = step.step.trim().chars().count();
        if chars == 0 {
            return Err(format!("step {} is empty; say what it does", number + 1));
        }
        if chars > MAX_STEP_CHARS {
            return Err(format!(
                "step {} has {chars} characters; keep each step under {MAX_STEP_CHARS}",
                number + 1
            ));
        }
    }
    let running = args
        .plan
        .iter()
        .filter(|step| step.status == StepStatus::InProgress)
        .count();
    if running > 1 {
        return Err(format!(
            "{running} steps are in_progress; mark at most one (the one being worked on now)"
        ));
    }
    let done = args
        .plan
        .iter()
        .filter(|step| step.status == StepStatus::Completed)
        .count();
    let text = format!(
        "Plan updated: {done} of {} steps completed.",
        args.plan.len()
    );
    Ok(ToolResult::text(text).with_details(serde_json::json!({
        "plan": args.plan,
        "explanation": args.explanation,
    })))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn step(text: &str, status: StepStatus) -> PlanStep {
        PlanStep {
            step: text.into(),
            status,
        }
    }

    #[test]
    fn a_plan_is_checked_and_carried_in_the_details() {
        let result = update(PlanArgs {
            explanation: None,
            plan: vec![
                step("read", StepStatus::Completed),
                step("fix", StepStatus::InProgress),
                step("test", StepStatus::Pending),
            ],
        })
        .unwrap();
        assert_eq!(
            result.text_content(),
            "Plan updated: 1 of 3 steps completed."
        );
        let message = ToolResultMessage {
            tool_call_id: "p".into(),
            tool_name: "update_plan".into(),
            content: result.content,
            details: result.details,
            is_error: false,
            attempt: None,
        };
        assert_eq!(plan_of(&message).unwrap().len(), 3);
    }

    #[test]
    fn bad_plans_are_refused_saying_what_to_change() {
        let refused = |plan: Vec<PlanStep>| {
            update(PlanArgs {
                explanation: None,
                plan,
            })
            .unwrap_err()
        };
        assert!(refused(vec![]).contains("no steps"));
        assert!(refused(vec![step("  ", StepStatus::Pending)]).contains("step 1 is empty"));
        assert!(refused(vec![step(&"x".repeat(501), StepStatus::Pending)])
            .contains("keep each step under 500"));
        assert!(refused(vec![step("a", StepStatus::Pending); 51]).contains("keep it to 50"));
        assert!(refused(vec![
            step("a", StepStatus::InProgress),
            step("b", StepStatus::InProgress)
        ])
        .contains("2 steps are in_progress"));
    }
}
