//! Entry points for the fuzz targets in `fuzz/` (cargo feature `fuzzing`): the private parsers
//! and matchers, reachable without an agent. Not an API; nothing here is stable.

use serde_json::Value;

use crate::agent::validation::{prepare, Prepared, Registry};
use crate::message::ToolCall;
use crate::tool::{self, Tool, ToolResult};

/// edit's matcher on `original`: the edited text, or the error the model would get.
pub fn edit(original: &str, edits: &[(&str, &str)]) -> Result<String, String> {
    crate::builtin::fuzz_edit(original, edits)
}

/// read's image path on `bytes`: whether they decoded and fit the limits.
pub fn image(bytes: &[u8]) -> bool {
    crate::builtin::fuzz_image(bytes)
}

/// Validation of `calls` against one tool named `tool` with `schema`: for each call, `None` if
/// it may run or its error text. `Err` when the schema does not compile.
pub fn validate(schema: &Value, calls: &[ToolCall]) -> Result<Vec<Option<String>>, String> {
    let tool = Tool::new(
        "tool",
        "A fuzzed tool.",
        schema.clone(),
        |_ctx, _args| async { Ok(ToolResult::text("ran")) },
    );
    let tools = vec![tool];
    let schemas = tool::compile(&tools).map_err(|error| error.to_string())?;
    let registry = Registry::new(tools, schemas);
    Ok(prepare(&registry, calls)
        .into_iter()
        .map(|prepared| match prepared {
            Prepared::Invalid(text) => Some(text),
            Prepared::Valid { .. } => None,
        })
        .collect())
}
