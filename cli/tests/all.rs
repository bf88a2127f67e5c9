//! The command line's tests, one binary (`suite/*.rs`): they drive the built `golato` and
//! `golato-sandbox` binaries as a person or a script would. The helpers they share with the
//! library's tests (the fake provider, scripted models, recorded streams) are in `../../tests/support/`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../../tests/support/mod.rs"]
mod support;

mod suite {
    mod acp;
    mod approve;
    mod background;
    mod capture;
    mod chat;
    mod claude_files;
    mod cli;
    mod config;
    mod console;
    mod demo;
    mod diagnostics;
    #[cfg(feature = "durable")]
    mod durable;
    #[cfg(feature = "durable")]
    mod durable_acp;
    #[cfg(feature = "durable")]
    mod durable_answers;
    #[cfg(feature = "durable")]
    mod durable_approvals;
    mod durable_children;
    #[cfg(feature = "durable")]
    mod durable_scale;
    mod faults;
    mod file_ownership;
    mod front;
    mod front_habits;
    mod hostile_terminal;
    mod journal;
    mod kept_files;
    mod mcp;
    mod mcp_hostile;
    mod mcp_start;
    mod network;
    mod policy;
    mod providers;
    mod reviewer;
    mod run;
    mod sandbox;
    mod sandbox_surroundings;
    mod seams;
    mod sessions;
    mod sessions_hostile;
    mod signals;
    mod subagents;
    mod trust;
    mod undo;
    mod web_fetch;
    mod web_search;
}
