//! What a run looks like: the live view, `--json`, the end report, the header line, previews of
//! changes, and text made safe to show.

pub(crate) mod header;
pub(crate) mod json;
pub(crate) mod label;
pub(crate) mod live;
pub(crate) mod network;
pub(crate) mod plan;
pub(crate) mod preview;
pub(crate) mod report;
pub(crate) mod shown;
pub(crate) mod sources;
pub(crate) mod wrap;
