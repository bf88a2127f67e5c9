//! What an application gives `bash` to capture its commands' changes: see [`Checkpoints`].

use std::fmt;
use std::path::PathBuf;

/// Where `bash` keeps what a sandboxed command changed in the working directory, so an
/// application can take it back later ([`Config::bash_checkpoints`](super::Config::bash_checkpoints)).
///
/// Under [`sandbox::Mode::WorkspaceWrite`](crate::sandbox::Mode::WorkspaceWrite) a captured
/// command writes into an overlay (see [`sandbox::capture`](crate::sandbox::capture)); when it
/// ends, golato applies its changes to the working directory, hands each changed file's
/// content before and after to [`Checkpoints::keep`], and lists the changes in the result's
/// details:
///
/// - `details.capture`: `"captured"`, or why the command was not (`{"uncaptured": REASON}`:
///   no sandbox, the staging area inside the working directory, a kernel that refused);
/// - `details.changes`: one `{"path", "before", "after"}` per file, each state `"absent"`,
///   `{"kept": NAME}`, `{"link": TARGET}` or `"unkept"`
///   ([`sandbox::capture::Change`](crate::sandbox::capture::Change));
/// - `details.conflicts`: files something else changed while the command ran (left as that
///   change made them; the command's version is put beside, and the result says where).
///
/// The git repository (`.git`) and build output (`target`, `node_modules`, `.venv`) change in
/// place and are not captured ([`sandbox::capture::PASSED_THROUGH`](crate::sandbox::capture::PASSED_THROUGH)),
/// nor is anything outside the working directory.
pub trait Checkpoints: Send + Sync + fmt::Debug + 'static {
    /// The folder for this call's staging area (made when missing): on a file system with
    /// user extended attributes, not inside the working directory. `None` leaves the call
    /// uncaptured.
    fn staging_area(&self) -> Option<PathBuf>;

    /// Keeps a file's `bytes` and returns the name they go by (a content hash, say): what
    /// `details.changes` lists as `{"kept": NAME}`.
    fn keep(&self, bytes: &[u8]) -> std::io::Result<String>;
}
