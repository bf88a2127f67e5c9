//! The subcommands that are not a front end of their own: `run` and `resume`, the line chat,
//! `demo`, the durable `serve`/`submit`/control commands, `tool`.

pub(crate) mod chat;
pub(crate) mod config;
pub(crate) mod demo;
pub(crate) mod durable;
#[cfg(feature = "durable")]
pub(crate) mod questions;
pub(crate) mod review;
pub(crate) mod run;
pub(crate) mod sessions;
#[cfg(feature = "durable")]
pub(crate) mod submit;
pub(crate) mod tool;
pub(crate) mod undo;
