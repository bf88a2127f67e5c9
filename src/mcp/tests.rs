use serde_json::json;

use super::*;
use crate::message::Content;

#[test]
fn names_are_prefixed_and_fit_what_providers_accept() {
    assert_eq!(tool_name("everything", "get-sum"), "everything_get-sum");
    assert_eq!(tool_name("my server", "a.b/c"), "my_server_a_b_c");
    assert_eq!(tool_name("p", &"x".repeat(100)).len(), 64);
}

#[test]
fn mcp_content_maps_to_golato_content() {
    let result = to_tool_result(&json!({
        "content": [
            {"type": "text", "text": "hi"},
            {"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="},
            {"type": "image", "mimeType": "image/svg+xml", "data": "PHN2Zz4="},
            {"type": "resource_link", "uri": "file:///a.txt", "name": "a.txt"},
            {"type": "resource", "resource": {"uri": "file:///b.txt", "text": "bee"}},
        ],
        "isError": true,
    }));
    assert!(result.is_error);
    assert_eq!(result.content[0], Content::text("hi"));
    assert_eq!(
        result.content[1],
        Content::image("image/png", "iVBORw0KGgo=")
    );
    assert!(result.content[2]
        .as_text()
        .unwrap_or_default()
        .contains("left out"));
    assert_eq!(
        result.content[3],
        Content::text("Resource: a.txt <file:///a.txt>")
    );
    assert_eq!(
        result.content[4],
        Content::text("Resource file:///b.txt:\nbee")
    );
    let structured = to_tool_result(&json!({"content": [], "structuredContent": {"t": 1}}));
    assert_eq!(structured.content, vec![Content::text(r#"{"t":1}"#)]);
    assert!(!structured.is_error);
}
