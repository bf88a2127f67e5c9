//! What the configuration files say and which folders are trusted to say it.

pub(crate) mod config;
pub(crate) mod resolved;
pub(crate) mod trust;

pub(crate) use resolved::{resolve, Settings};
