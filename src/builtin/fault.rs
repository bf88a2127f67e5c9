//! Test-only fault hooks of the file tools (the `fault-injection` feature): hold a write or an
//! edit at the moment it is about to change a file, to prove what happens to a call that golato
//! gives up on meanwhile. Never enable it in production.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, PoisonError};

#[derive(Debug, Default)]
struct State {
    arrived: bool,
    released: bool,
    done: bool,
}

#[derive(Debug, Default)]
struct Shared {
    state: Mutex<State>,
    changed: Condvar,
}

impl Shared {
    fn wait_for(&self, until: impl Fn(&State) -> bool) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        while !until(&state) {
            state = self
                .changed
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    fn set(&self, change: impl FnOnce(&mut State)) {
        change(&mut self.state.lock().unwrap_or_else(PoisonError::into_inner));
        self.changed.notify_all();
    }
}

static PAUSES: Mutex<Option<HashMap<PathBuf, Arc<Shared>>>> = Mutex::new(None);

/// A pause set on one file: the next `write` or `edit` that opens it to replace it stops there,
/// after its checks and before it changes anything, until [`Pause::release`].
///
/// ```no_run
/// # // Needs the `fault-injection` feature; see tests/abandoned.rs.
/// let pause = golato::builtin::fault::Pause::before_replacing("/tmp/file.txt".as_ref());
/// // … start a run that writes the file …
/// pause.wait_arrived();
/// pause.release();
/// pause.wait_done();
/// ```
#[derive(Debug)]
pub struct Pause {
    path: PathBuf,
    shared: Arc<Shared>,
}

impl Pause {
    /// Sets a pause on `path` (as write and edit see it after following links: use a canonical
    /// path).
    pub fn before_replacing(path: &Path) -> Pause {
        let shared = Arc::new(Shared::default());
        PAUSES
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get_or_insert_with(HashMap::new)
            .insert(path.to_owned(), Arc::clone(&shared));
        Pause {
            path: path.to_owned(),
            shared,
        }
    }

    /// Blocks until a write or edit reached the pause.
    pub fn wait_arrived(&self) {
        self.shared.wait_for(|state| state.arrived);
    }

    /// Lets the held write or edit go on.
    pub fn release(&self) {
        self.shared.set(|state| state.released = true);
    }

    /// Blocks until the released write or edit has returned (whatever it did).
    pub fn wait_done(&self) {
        self.shared.wait_for(|state| state.done);
    }
}

impl Drop for Pause {
    fn drop(&mut self) {
        if let Some(pauses) = PAUSES
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_mut()
        {
            pauses.remove(&self.path);
        }
        self.release();
    }
}

/// Marks the end of a paused replacement when dropped.
#[derive(Debug)]
pub(super) struct Arrived(Option<Arc<Shared>>);

impl Drop for Arrived {
    fn drop(&mut self) {
        if let Some(shared) = self.0.take() {
            shared.set(|state| state.done = true);
        }
    }
}

/// Called by a replacement of `path`: waits at a pause set on it, if any.
pub(super) fn arrive(path: &Path) -> Arrived {
    let shared = PAUSES
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .as_ref()
        .and_then(|pauses| pauses.get(path).cloned());
    if let Some(shared) = &shared {
        shared.set(|state| state.arrived = true);
        shared.wait_for(|state| state.released);
    }
    Arrived(shared)
}
