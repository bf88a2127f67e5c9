//! The footer: the model, the modes and the context left, at the right of the line of keys.

/// The model, the modes and the context left, at the right of the line of keys (as codex's
/// footer): what the next prompt will run under.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Footer {
    pub(crate) model: String,
    /// The approval mode, or `plan`.
    pub(crate) approve: String,
    pub(crate) sandbox: String,
    /// The context window in tokens, when known.
    pub(crate) window: Option<u64>,
    /// Tokens the last request and its answer took of it.
    pub(crate) used: u64,
    /// Background commands running now.
    pub(crate) background: usize,
}

impl Footer {
    /// The footer in at most `room` cells: `model · approve M · sandbox S · N% context left`,
    /// the model left out first when narrow, then the context, then the sandbox.
    pub(crate) fn text(&self, room: usize) -> String {
        let context = self
            .window
            .filter(|window| *window > 0 && self.used > 0)
            .map(|window| {
                let left = 100u64.saturating_sub(self.used.saturating_mul(100) / window);
                format!("{left}% context left")
            });
        let approve = format!("approve {}", self.approve);
        let sandbox = format!("sandbox {}", self.sandbox);
        let model = (!self.model.is_empty()).then(|| self.model.clone());
        // Running background commands stay in sight longest after the approval mode: they are
        // what keeps working when nothing seems to.
        let background =
            (self.background > 0).then(|| format!("{} running (/ps)", self.background));
        let choices = [
            vec![
                model,
                background.clone(),
                Some(approve.clone()),
                Some(sandbox.clone()),
                context.clone(),
            ],
            vec![
                None,
                background.clone(),
                Some(approve.clone()),
                Some(sandbox.clone()),
                context,
            ],
            vec![
                None,
                background.clone(),
                Some(approve.clone()),
                Some(sandbox),
                None,
            ],
            vec![None, background.clone(), Some(approve.clone()), None, None],
            vec![None, background, None, None, None],
            vec![None, None, Some(approve), None, None],
        ];
        choices
            .into_iter()
            .map(|parts| parts.into_iter().flatten().collect::<Vec<_>>().join(" · "))
            .find(|text| text.chars().count() <= room)
            .unwrap_or_default()
    }
}
