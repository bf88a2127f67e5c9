//! Argument schemas, compiled once at `Agent::new`, and the checks on what tools return.

use std::fmt;
use std::fmt::Write as _;

use base64::Engine as _;
use serde_json::Value;

use super::{Error, ToolResult};
use crate::message::Content;

/// A tool's argument schema, compiled.
pub(crate) struct CompiledSchema {
    validator: jsonschema::Validator,
}

impl fmt::Debug for CompiledSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CompiledSchema").finish_non_exhaustive()
    }
}

impl CompiledSchema {
    pub(crate) fn compile(name: &str, schema: &Value) -> Result<CompiledSchema, Error> {
        let root_type = schema.get("type");
        if root_type != Some(&Value::String("object".to_owned())) {
            return Err(Error::SchemaRootNotObject {
                name: name.to_owned(),
                found: root_type.map_or_else(|| "no type".to_owned(), Value::to_string),
            });
        }
        let validator =
            jsonschema::validator_for(schema).map_err(|error| Error::InvalidSchema {
                name: name.to_owned(),
                reason: error.to_string(),
            })?;
        Ok(CompiledSchema { validator })
    }

    /// Checks `arguments`; the error text names each failing path and what was expected, then
    /// shows the arguments received.
    pub(crate) fn check(&self, arguments: &Value) -> Result<(), String> {
        // The common case allocates nothing; the errors are collected only when there are some.
        if self.validator.is_valid(arguments) {
            return Ok(());
        }
        let errors = self.validator.iter_errors(arguments);
        let mut text = String::from("Validation failed:");
        for error in errors {
            let path = error.instance_path().to_string();
            let path = if path.is_empty() {
                "/".to_owned()
            } else {
                path
            };
            let _ = write!(text, "\n  - at {path}: ");
            write_cut(&mut text, &error, SHOWN_CHARS);
        }
        text.push_str("\n\nReceived arguments:\n");
        write_cut(&mut text, arguments, SHOWN_CHARS);
        Err(text)
    }
}

/// How much of an offending value an error text shows: a model that sent a huge argument
/// needs to see what was wrong with it, not to receive it back.
const SHOWN_CHARS: usize = 2_000;

/// `value` as displayed, cut as an error text shows it.
pub(crate) fn shown(value: impl fmt::Display) -> String {
    let mut text = String::new();
    write_cut(&mut text, value, SHOWN_CHARS);
    text
}

/// Appends `value` as displayed, cut after `limit` characters. The formatting stops there,
/// so a huge value is never formatted whole.
fn write_cut(text: &mut String, value: impl fmt::Display, limit: usize) {
    struct Budget<'a> {
        text: &'a mut String,
        left: usize,
        cut: bool,
    }
    impl fmt::Write for Budget<'_> {
        fn write_str(&mut self, piece: &str) -> fmt::Result {
            match piece.char_indices().nth(self.left) {
                None => {
                    self.left -= piece.chars().count();
                    self.text.push_str(piece);
                    Ok(())
                }
                Some((end, _)) => {
                    self.text.push_str(&piece[..end]);
                    self.left = 0;
                    self.cut = true;
                    Err(fmt::Error)
                }
            }
        }
    }
    let mut budget = Budget {
        text,
        left: limit,
        cut: false,
    };
    let _ = write!(budget, "{value}");
    if budget.cut {
        let _ = write!(budget.text, "… (cut after {limit} characters)");
    }
}

pub(crate) const IMAGE_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];

/// Checks that every content part of a (final or partial) result is well-formed.
pub(crate) fn check_result(result: &ToolResult) -> Result<(), String> {
    for (index, part) in result.content.iter().enumerate() {
        if let Content::Image { mime_type, data } = part {
            if !IMAGE_TYPES.contains(&mime_type.as_str()) {
                return Err(format!(
                    "content[{index}] is an image of unsupported type {mime_type:?}; use one of {}",
                    IMAGE_TYPES.join(", ")
                ));
            }
            if data.is_empty() {
                return Err(format!("content[{index}] is an image with empty data"));
            }
            if let Err(error) = base64::engine::general_purpose::STANDARD.decode(data) {
                return Err(format!(
                    "content[{index}] is an image whose data is not valid standard base64: {error}"
                ));
            }
        }
    }
    Ok(())
}
