//! Argument validation: arbitrary argument strings (and IDs and names taken from the input)
//! against a schema with nested objects, arrays, enums and numbers. Nothing may panic; every
//! call gets a verdict.
#![no_main]

use golato::message::ToolCall;
use libfuzzer_sys::fuzz_target;
use serde_json::json;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let schema = json!({
        "type": "object",
        "properties": {
            "path": {"type": "string", "maxLength": 64},
            "count": {"type": "integer", "minimum": 0},
            "mode": {"enum": ["a", "b"]},
            "items": {"type": "array", "items": {"type": "object", "properties": {"x": {"type": "number"}}}},
        },
        "required": ["path"],
        "additionalProperties": false,
    });
    // Three calls: the input as arguments; as arguments again with the same ID; and as the ID
    // and name of a call with valid arguments.
    let calls = vec![
        ToolCall::new("a", "tool", text.as_ref()),
        ToolCall::new("a", "tool", text.as_ref()),
        ToolCall::new(text.as_ref(), text.as_ref(), r#"{"path": "p"}"#),
    ];
    let verdicts = golato::fuzzing::validate(&schema, &calls).expect("the schema compiles");
    assert_eq!(verdicts.len(), calls.len());
    // The duplicated ID fails both calls that carry it.
    assert!(verdicts[0].is_some() && verdicts[1].is_some());
});
