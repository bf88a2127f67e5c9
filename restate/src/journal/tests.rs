use super::*;
use crate::journal::entry::parse_entry;

#[test]
fn an_entry_of_another_version_is_named_not_misread() {
    let done = serde_json::json!({"entry": "done", "step": "turn-1", "value": 1});
    assert!(matches!(parse_entry(done), Ok(Entry::Done { .. })));
    let future = serde_json::json!({"entry": "paused", "until": 3});
    let reason = parse_entry(future).err().unwrap_or_default();
    assert!(reason.contains("paused"), "{reason}");
}
