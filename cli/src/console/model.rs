//! The viewer's state: the host's actors as the stream built them, and what the person looks at.

use std::collections::{BTreeMap, VecDeque};

use golato::host::console::{ActorView, Kind, Lint, LockView, Thresholds, Update};

/// Ended actors the viewer keeps, for a run's view.
const HISTORY: usize = 1_024;

/// Which list is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tab {
    Actors,
    Run,
    Locks,
    Lints,
}

/// How the actor list is ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sort {
    Busy,
    Depth,
    Age,
    Id,
}

impl Sort {
    pub(crate) fn next(self) -> Sort {
        match self {
            Sort::Busy => Sort::Depth,
            Sort::Depth => Sort::Age,
            Sort::Age => Sort::Id,
            Sort::Id => Sort::Busy,
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Sort::Busy => "busy time",
            Sort::Depth => "mailbox depth",
            Sort::Age => "age",
            Sort::Id => "id",
        }
    }
}

/// Everything the viewer knows and shows.
#[derive(Debug)]
pub(crate) struct Model {
    pub(crate) addr: String,
    pub(crate) actors: BTreeMap<u64, ActorView>,
    pub(crate) history: VecDeque<ActorView>,
    pub(crate) locks: Vec<LockView>,
    pub(crate) lints: Vec<Lint>,
    pub(crate) dropped: u64,
    pub(crate) at_ms: u64,
    pub(crate) rate: u32,
    pub(crate) thresholds: Option<Thresholds>,
    /// Why the stream ended, once it has.
    pub(crate) gone: Option<String>,
    pub(crate) tab: Tab,
    pub(crate) sort: Sort,
    pub(crate) filter: String,
    pub(crate) editing_filter: bool,
    pub(crate) selected: usize,
    /// The run the run view shows.
    pub(crate) run: Option<u64>,
}

impl Model {
    pub(crate) fn new(addr: String) -> Model {
        Model {
            addr,
            actors: BTreeMap::new(),
            history: VecDeque::new(),
            locks: Vec::new(),
            lints: Vec::new(),
            dropped: 0,
            at_ms: 0,
            rate: 0,
            thresholds: None,
            gone: None,
            tab: Tab::Actors,
            sort: Sort::Busy,
            filter: String::new(),
            editing_filter: false,
            selected: 0,
            run: None,
        }
    }

    pub(crate) fn apply(&mut self, update: Update) {
        match update {
            Update::Hello {
                rate, thresholds, ..
            } => {
                self.rate = rate;
                self.thresholds = Some(thresholds);
            }
            Update::Snapshot(snapshot) => {
                self.actors = snapshot
                    .actors
                    .into_iter()
                    .map(|actor| (actor.id, actor))
                    .collect();
                self.history = snapshot.ended.into_iter().collect();
                self.locks = snapshot.locks;
                self.lints = snapshot.lints;
                self.dropped = snapshot.dropped;
                self.at_ms = snapshot.at_ms;
            }
            Update::Delta(delta) => {
                // Actors the delta does not name did not change, but their clocks ran on.
                let elapsed = delta.at_ms.saturating_sub(self.at_ms);
                for ended in self.history.iter_mut() {
                    if let Some(ago) = ended.ended_ms_ago.as_mut() {
                        *ago += elapsed;
                    }
                }
                for actor in self.actors.values_mut() {
                    actor.age_ms += elapsed;
                    actor.for_ms += elapsed;
                    if let Some(since) = actor.since_event_ms.as_mut() {
                        *since += elapsed;
                    }
                    for held in &mut actor.holds {
                        held.for_ms += elapsed;
                    }
                }
                // An actor that ended is kept for its run's view, as last seen.
                for id in &delta.ended {
                    if let Some(mut actor) = self.actors.remove(id) {
                        actor.ended_ms_ago = Some(0);
                        self.history.push_back(actor);
                    }
                }
                for actor in delta.changed {
                    self.actors.insert(actor.id, actor);
                }
                self.history.extend(delta.history);
                while self.history.len() > HISTORY {
                    self.history.pop_front();
                }
                self.locks = delta.locks;
                self.lints = delta.lints;
                self.dropped = delta.dropped;
                self.at_ms = delta.at_ms;
            }
            _ => {}
        }
        self.clamp();
    }

    /// The actor list as filtered and sorted.
    pub(crate) fn visible(&self) -> Vec<&ActorView> {
        let mut shown: Vec<&ActorView> = self
            .actors
            .values()
            .filter(|actor| matches(actor, &self.filter))
            .collect();
        match self.sort {
            Sort::Busy => shown.sort_by_key(|actor| std::cmp::Reverse(busy_us(actor))),
            Sort::Depth => shown.sort_by_key(|actor| std::cmp::Reverse(actor.mailbox_depth)),
            Sort::Age => shown.sort_by_key(|actor| std::cmp::Reverse(actor.age_ms)),
            Sort::Id => shown.sort_by_key(|actor| actor.id),
        }
        shown
    }

    /// The run view's rows: the run, then its batches' calls (live and ended), by batch.
    pub(crate) fn run_rows(&self, run: u64) -> Vec<&ActorView> {
        let mut rows: Vec<&ActorView> = self
            .actors
            .values()
            .chain(self.history.iter())
            .filter(|actor| actor.identity.run == Some(run))
            .collect();
        rows.sort_by_key(|actor| {
            (
                actor.kind != Kind::Run,
                actor.identity.batch.unwrap_or(0),
                actor.kind != Kind::Batch,
                actor.id,
            )
        });
        rows.dedup_by_key(|actor| actor.id);
        rows
    }

    /// How many rows the current tab has.
    fn rows(&self) -> usize {
        match self.tab {
            Tab::Actors => self.visible().len(),
            Tab::Run => self.run.map_or(0, |run| self.run_rows(run).len()),
            Tab::Locks => self.locks.len(),
            Tab::Lints => self.lints.len(),
        }
    }

    fn clamp(&mut self) {
        self.selected = self.selected.min(self.rows().saturating_sub(1));
    }

    pub(crate) fn up(&mut self) {
        self.selected = self.selected.saturating_sub(1);
    }

    pub(crate) fn down(&mut self) {
        self.selected = (self.selected + 1).min(self.rows().saturating_sub(1));
    }

    pub(crate) fn show(&mut self, tab: Tab) {
        if tab == Tab::Run && self.run.is_none() {
            self.run = self.selected_actor().and_then(|actor| actor.identity.run);
        }
        self.tab = tab;
        self.selected = 0;
    }

    fn selected_actor(&self) -> Option<&ActorView> {
        match self.tab {
            Tab::Actors => self.visible().get(self.selected).copied(),
            Tab::Run => self
                .run
                .and_then(|run| self.run_rows(run).get(self.selected).copied()),
            _ => None,
        }
    }

    /// Enter: an actor opens its run; a lint jumps to the actor it names; a lock to its holder.
    pub(crate) fn enter(&mut self) {
        let target = match self.tab {
            Tab::Actors | Tab::Run => {
                if let Some(run) = self.selected_actor().and_then(|actor| actor.identity.run) {
                    self.run = Some(run);
                    self.tab = Tab::Run;
                    self.selected = 0;
                }
                return;
            }
            Tab::Lints => self.lints.get(self.selected).map(|lint| lint.actor),
            Tab::Locks => self
                .locks
                .get(self.selected)
                .and_then(|lock| lock.holder.as_ref().or(lock.waiting.first()))
                .map(|party| party.actor),
        };
        if let Some(actor) = target {
            self.filter.clear();
            self.tab = Tab::Actors;
            self.selected = self
                .visible()
                .iter()
                .position(|shown| shown.id == actor)
                .unwrap_or(0);
        }
    }
}

/// The time an actor has been busy: handling messages, or running now.
pub(crate) fn busy_us(actor: &ActorView) -> u64 {
    actor.busy.total_us
}

/// Whether `actor` passes the filter: each word a kind, a run's number, or part of its label.
fn matches(actor: &ActorView, filter: &str) -> bool {
    filter.split_whitespace().all(|word| {
        let word = word.to_lowercase();
        if let Ok(run) = word.trim_start_matches("run:").parse::<u64>() {
            return actor.identity.run == Some(run);
        }
        actor.kind.as_str().starts_with(&word) || actor.label().to_lowercase().contains(&word)
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn update(line: &str) -> Update {
        serde_json::from_str(line).unwrap()
    }

    #[test]
    fn a_delta_changes_ends_and_keeps_what_it_does_not_name() {
        let mut model = Model::new("x".into());
        let actor = |id: u64, run: u64, kind: &str| {
            format!(
                r#"{{"id":{id},"kind":"{kind}","name":"N","run":{run},"activity":{{"state":"idle"}},"for_ms":0,"mailbox_depth":0,"handled":0,"busy":{{"counts":[],"total_us":{id}}},"mailbox_wait":{{"counts":[],"total_us":0}},"age_ms":5}}"#
            )
        };
        model.apply(update(&format!(
            r#"{{"type":"snapshot","at_ms":1,"actors":[{},{}],"locks":[],"lints":[],"ended":[],"dropped":0}}"#,
            actor(1, 7, "run"),
            actor(2, 7, "call")
        )));
        assert_eq!(model.actors.len(), 2);
        model.apply(update(&format!(
            r#"{{"type":"delta","at_ms":2,"changed":[{}],"ended":[2],"history":[{}],"locks":[],"lints":[],"live":2,"dropped":3}}"#,
            actor(3, 8, "run"),
            actor(2, 7, "call")
        )));
        assert_eq!(model.actors.keys().copied().collect::<Vec<_>>(), [1, 3]);
        assert_eq!(model.dropped, 3);
        assert_eq!(
            model.run_rows(7).len(),
            2,
            "the ended call stays in its run's view"
        );
        model.filter = "8".into();
        assert_eq!(model.visible().len(), 1);
        model.filter = "call".into();
        assert!(model.visible().is_empty());
    }
}
