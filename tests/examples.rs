//! The examples, run by the tests: each is included as a module and its output checked.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../examples/registering_a_tool.rs"]
#[allow(dead_code)]
mod registering_a_tool;

#[test]
fn registering_a_tool_prints_the_lifecycle_and_the_answer() {
    let mut out = Vec::new();
    registering_a_tool::run(&mut out).unwrap();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        concat!(
            "[start] lookup_customer {\"customer_id\":\"C-100\"}\n",
            "[update] lookup_customer parts=1\n",
            "[end] lookup_customer error=false result=\"Customer C-100 (Acme Corp) is on the Pro plan.\"\n",
            "C-100 uses the Pro plan.\n",
        )
    );
}
