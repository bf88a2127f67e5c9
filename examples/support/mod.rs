//! The `lookup_customer` tool the documentation page's examples share ("Defining tools").

use golato::generator::Scripted;
use golato::message::{AssistantMessage, ToolCall};
use golato::tool::{Tool, ToolContext, ToolResult};
use schemars::JsonSchema;
use serde::Deserialize;

/// Arguments of `lookup_customer`.
#[derive(Debug, Deserialize, JsonSchema)]
struct LookupArgs {
    /// The customer ID, such as `C-100`.
    customer_id: String,
}

/// The `lookupTool` from "Defining tools": finds a customer's plan, publishing progress.
pub(crate) fn lookup_tool() -> Tool {
    Tool::typed(
        "lookup_customer",
        "Looks up a customer by ID and returns their plan.",
        |ctx: ToolContext, args: LookupArgs| async move {
            ctx.update(ToolResult::text(format!(
                "Searching for {}…",
                args.customer_id
            )));
            match args.customer_id.as_str() {
                "C-100" => Ok(
                    ToolResult::text("Customer C-100 (Acme Corp) is on the Pro plan.")
                        .with_details(serde_json::json!({"customer_id": "C-100", "plan": "pro"})),
                ),
                other => Err(format!("no customer with ID {other}").into()),
            }
        },
    )
}

/// What a model would answer to "Which plan does C-100 use?": one `lookup_customer` call, then
/// the answer. The examples share it.
#[allow(dead_code)] // Each example compiles its own copy of this module; not all use it.
pub(crate) fn lookup_script() -> Scripted {
    Scripted::new([
        AssistantMessage::with_tool_calls([ToolCall::new(
            "call-1",
            "lookup_customer",
            r#"{"customer_id":"C-100"}"#,
        )]),
        AssistantMessage::with_text("C-100 uses the Pro plan."),
    ])
}
