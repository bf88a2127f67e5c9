//! The library's integration tests, one binary (`tests/suite/*.rs`, one file per area) so that
//! they link once. Tests that need a process of their own stay beside this file: see the README.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

mod suite {
    mod abandoned;
    mod background;
    mod bash;
    mod batch;
    mod budget;
    mod builtin;
    mod callers;
    mod cancel;
    mod caps;
    mod compaction;
    mod compaction_task;
    mod console;
    mod edit_properties;
    mod examples;
    mod hooks;
    mod hostile_providers;
    mod journal;
    mod llmock;
    mod properties;
    mod providers;
    mod proxy;
    mod proxy_hostile;
    mod resume;
    mod search_properties;
    mod setup;
    mod shell_rules;
    mod slow_consumer;
    mod steering;
    mod structured_output;
    mod subagent;
    mod timeouts;
    mod validation;
    mod web_fetch;
}
