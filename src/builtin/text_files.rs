//! Where `read`, `edit` and `write` take and put a text file's content when it is not the
//! disk: an editor's buffers, reached through its protocol (ACP's `fs/read_text_file` and
//! `fs/write_text_file`), so the model sees what the person sees, unsaved changes included.

use std::path::Path;

use futures::future::BoxFuture;

/// A text file's content held elsewhere than on disk.
///
/// golato still decides what may be touched: a path is handed over only after the checks a
/// disk access would pass (inside the workspace for a write, not denied by the sandbox, a
/// regular file), and only for text (images and binary files are read from disk). An error
/// becomes the call's error result, naming the file.
///
/// ```
/// use std::collections::HashMap;
/// use std::path::{Path, PathBuf};
/// use std::sync::{Arc, Mutex};
/// use futures::future::BoxFuture;
/// use golato::builtin::{self, TextFiles};
///
/// /// Buffers an editor holds, by path.
/// #[derive(Debug, Default)]
/// struct Buffers(Mutex<HashMap<PathBuf, String>>);
///
/// impl TextFiles for Buffers {
///     fn read(&self, path: &Path) -> BoxFuture<'static, Result<String, String>> {
///         let text = self.0.lock().unwrap().get(path).cloned();
///         Box::pin(async move { text.ok_or_else(|| "not open".to_owned()) })
///     }
///     fn write(&self, path: &Path, text: String) -> BoxFuture<'static, Result<(), String>> {
///         self.0.lock().unwrap().insert(path.to_owned(), text);
///         Box::pin(async { Ok(()) })
///     }
/// }
///
/// let tools = builtin::new(builtin::Config {
///     text_files: Some(Arc::new(Buffers::default())),
///     ..Default::default()
/// })?;
/// # Ok::<(), builtin::Error>(())
/// ```
pub trait TextFiles: std::fmt::Debug + Send + Sync + 'static {
    /// The text of `path` (absolute) as it stands there.
    fn read(&self, path: &Path) -> BoxFuture<'static, Result<String, String>>;

    /// Replaces the text of `path` (absolute) with `text`.
    fn write(&self, path: &Path, text: String) -> BoxFuture<'static, Result<(), String>>;
}
