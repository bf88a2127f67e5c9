//! What golato keeps on disk: sessions, checkpoints and undo, recordings, bounded reads of its own
//! files.

pub(crate) mod checkpoints;
pub(crate) mod record;
pub(crate) mod session;
pub(crate) mod transcripts;
