//! What the configuration files say and which folders are trusted to say it.

pub(crate) mod config;
pub(crate) mod trust;
