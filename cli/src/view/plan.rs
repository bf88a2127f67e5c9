//! A plan (`update_plan`) as lines a person reads: a box per step, ticked when done.

use golato::builtin::{PlanStep, StepStatus};

/// A plan as lines a person reads: a box per step, ticked when done.
pub(crate) fn lines(plan: &[PlanStep]) -> Vec<String> {
    plan.iter()
        .map(|step| {
            let mark = match step.status {
                StepStatus::Completed => "[x]",
                StepStatus::InProgress => "[>]",
                _ => "[ ]",
            };
            format!("{mark} {}", crate::view::label::clip(&step.step))
        })
        .collect()
}
