//! Structured output: a JSON Schema the final answer must satisfy.
//!
//! The providers that can are asked for it natively (OpenAI Chat's `response_format`, the
//! Responses API's `text.format`); Anthropic's request says it in the system prompt. golato
//! validates the answer itself either way: an answer that is not valid JSON against the schema
//! gets one more turn, with what was wrong, before the run fails with
//! [`Error::InvalidOutput`](super::Error::InvalidOutput).

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

/// The schema of `T`'s JSON form, for `agent::Config::output_schema`.
///
/// ```
/// #[derive(schemars::JsonSchema, serde::Deserialize)]
/// struct Verdict {
///     passed: bool,
///     reasons: Vec<String>,
/// }
///
/// let config = golato::agent::Config {
///     output_schema: Some(golato::agent::output_schema::<Verdict>()),
///     ..Default::default()
/// };
/// # let _ = config;
/// ```
pub fn output_schema<T: schemars::JsonSchema>() -> Value {
    Value::from(schemars::schema_for!(T))
}

/// A compiled output schema.
#[derive(Clone)]
pub(crate) struct OutputCheck {
    pub(crate) schema: Arc<Value>,
    validator: Arc<jsonschema::Validator>,
}

impl fmt::Debug for OutputCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OutputCheck").finish_non_exhaustive()
    }
}

impl OutputCheck {
    /// Compiles `schema`, or says why it does not compile.
    pub(crate) fn compile(schema: Value) -> Result<OutputCheck, String> {
        let validator = jsonschema::validator_for(&schema).map_err(|error| error.to_string())?;
        Ok(OutputCheck {
            schema: Arc::new(schema),
            validator: Arc::new(validator),
        })
    }

    /// The answer's JSON value, or what is wrong with it (for the model to fix).
    pub(crate) fn check(&self, answer: &str) -> Result<Value, String> {
        let text = unfenced(answer.trim());
        let value: Value = serde_json::from_str(text).map_err(|error| {
            format!("the answer is not JSON ({error}); answer with the JSON value alone")
        })?;
        let errors: Vec<String> = self
            .validator
            .iter_errors(&value)
            .map(|error| {
                let path = error.instance_path().to_string();
                format!(
                    "at {}: {}",
                    if path.is_empty() { "/" } else { &path },
                    crate::agent::validation::excerpt(&error.to_string())
                )
            })
            .collect();
        if errors.is_empty() {
            Ok(value)
        } else {
            Err(format!(
                "the answer does not match the output schema: {}",
                errors.join("; ")
            ))
        }
    }
}

/// The JSON inside a Markdown code fence, which models add even when asked not to.
fn unfenced(text: &str) -> &str {
    let Some(inner) = text.strip_prefix("```") else {
        return text;
    };
    let inner = inner.strip_prefix("json").unwrap_or(inner);
    inner.strip_suffix("```").unwrap_or(inner).trim()
}
