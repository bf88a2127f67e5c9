//! What the configuration files say and which folders are trusted to say it.

pub(crate) mod config;
pub(crate) mod file_settings;
pub(crate) mod project_files;
pub(crate) mod resolved;
pub(crate) mod trust;
pub(crate) mod trust_question;

pub(crate) use resolved::{resolve, Settings};
