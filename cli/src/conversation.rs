//! One conversation, whichever front end drives it: the agent built from the settings, the
//! transcript it goes on from, the session file it is saved into, the approvals waiting for an
//! answer, and what the session's hooks are told. `golato run`, the line chat, the front end and
//! ACP each start one and drive it; what they show of its events stays theirs.
//!
//! The order of a turn is the same everywhere: [`Conversation::send`] (UserPromptSubmit hooks,
//! the SessionStart context on the first prompt, the prompt saved, the run started from the
//! transcript and its summary), [`Conversation::keep`] for every event (saved; a compaction's
//! summary kept for the next turn), [`Conversation::went_on`] with the outcome (the next turn
//! starts from what this one left, whatever ended it), and [`Conversation::close`] once
//! (SessionEnd hooks).

pub(crate) mod expansion;

use std::sync::Arc;

use golato::agent::compaction::Summary;
use golato::agent::{Event, Input};
use golato::message::{Message, UserMessage};

use crate::error::CliError;
use crate::settings::Settings;
use crate::setup::agent::Built;
use crate::store::session::{Opened, Saved, Writer};

/// How a conversation opens.
#[derive(Default)]
pub(crate) struct Opening {
    /// The saved session it goes on with, if any.
    pub(crate) going_on: Option<Saved>,
    /// Save nothing (`--ephemeral`).
    pub(crate) ephemeral: bool,
    /// Whether a new prompt follows: the calls of the saved session that a stop cut off are
    /// then closed with an error result (and saved so).
    pub(crate) prompted: bool,
    /// Whether a person can answer questions.
    pub(crate) interactive: bool,
}

/// A conversation: see the module's documentation.
pub(crate) struct Conversation {
    pub(crate) agent: golato::Agent,
    /// What the agent was built from (`/model`, plan mode and ACP's modes build from it again).
    pub(crate) settings: Settings,
    /// What the run uses, shown before it starts.
    pub(crate) header: crate::view::header::Header,
    /// Calls waiting for a yes, when someone can answer.
    pub(crate) questions: Option<crate::setup::approve::Questions>,
    /// The model's price, when golato knows it.
    pub(crate) price: Option<golato::generator::Price>,
    /// The messages the next turn goes on from.
    pub(crate) transcript: Vec<Message>,
    /// What a compaction put in place of the oldest messages.
    pub(crate) summary: Option<Summary>,
    /// Where the session is saved (none when ephemeral, or when saving is not possible).
    pub(crate) saving: Option<Writer>,
    /// Whether nothing of the conversation is saved (`--ephemeral`).
    pub(crate) ephemeral: bool,
    /// The session as hooks see it.
    pub(crate) told: golato::policy::HookSession,
    /// What SessionStart hooks added, for the first prompt.
    context: Option<String>,
    /// Who answers for calls that ask (`/approve` changes its mode).
    pub(crate) approver: Arc<crate::setup::approve::Approvals>,
    /// How to make the plan-mode agent (`/plan`).
    pub(crate) plan_mode: Option<crate::setup::plan_mode::PlanMode>,
    /// The recording `--script` replays, if any.
    pub(crate) recording: Option<crate::store::record::Recording>,
    /// Where hooks and checkpoints learn which session is saved; told again when it changes.
    pub(crate) hook_session: tokio::sync::watch::Sender<golato::policy::HookSession>,
    /// The session's background commands (`/ps`), when bash may start them.
    pub(crate) background: Option<golato::builtin::Background>,
    /// The commands and skills a person may call by name (`/NAME`, `$NAME`).
    pub(crate) offered: expansion::Offered,
    /// The language servers (`/diagnostics`), unless `--no-lsp`.
    pub(crate) diagnostics: Option<golato::diagnostics::Diagnostics>,
}

impl Conversation {
    /// Builds the agent `settings` describe, opens the session (going on with a saved one when
    /// `opening` says so), tells the hooks which session it is and fires SessionStart.
    ///
    /// # Errors
    /// What building the agent or opening the session refused, naming what to change.
    pub(crate) async fn begin(settings: Settings, opening: Opening) -> Result<Self, CliError> {
        // A durable worker has no conversation: each run's transcript is its journal's.
        let built = crate::setup::agent::build_agent(&settings, None, opening.interactive).await?;
        let opened = crate::store::session::open(
            opening.going_on,
            &settings.cwd,
            opening.ephemeral,
            opening.prompted,
        )?;
        let mut conversation = Self::assemble(settings, built, opened, opening.ephemeral);
        conversation.start_session().await;
        Ok(conversation)
    }

    /// A conversation of an agent built and a session opened apart (ACP opens the session
    /// first: its ID names the client's files the agent's tools use). The hooks are told which
    /// session it is; SessionStart is [`start_session`](Conversation::start_session)'s.
    pub(crate) fn assemble(
        settings: Settings,
        built: Built,
        opened: Opened,
        ephemeral: bool,
    ) -> Self {
        let Built {
            agent,
            plan_mode,
            recording,
            mut header,
            questions,
            price,
            session: hook_session,
            approver,
            background,
            diagnostics,
            ..
        } = built;
        let Opened {
            transcript,
            summary,
            mut saving,
        } = opened;
        if let Some(saving) = &mut saving {
            saving.started_with(settings.model_origin());
        }
        header.session = saving.as_ref().map(Writer::id);
        let offered = expansion::Offered::gather(&settings.cwd, settings.trusted);
        let mut conversation = Conversation {
            agent,
            settings,
            header,
            questions,
            price,
            transcript,
            summary,
            saving,
            ephemeral,
            told: golato::policy::HookSession::default(),
            context: None,
            approver,
            plan_mode,
            recording,
            hook_session,
            background,
            offered,
            diagnostics,
        };
        conversation.tell_hooks();
        conversation
    }

    /// Fires the SessionStart hooks; what they add goes with the first prompt.
    pub(crate) async fn start_session(&mut self) {
        self.context = crate::setup::session_hooks::session_start(
            &self.settings.policy,
            &self.told,
            !self.transcript.is_empty(),
        )
        .await;
    }

    /// The agent built again from `settings` (ACP's modes): the transcript, the session file
    /// and what the hooks were told stay.
    pub(crate) fn rebuilt(&mut self, settings: Settings, built: Built) {
        self.agent = built.agent;
        self.questions = built.questions;
        self.price = built.price;
        self.approver = built.approver;
        self.plan_mode = built.plan_mode;
        self.hook_session = built.session;
        self.background = built.background;
        self.diagnostics = built.diagnostics;
        self.settings = settings;
        self.tell_hooks();
    }

    /// Tells the hooks (and checkpoints) which session file is saved, after it changed (none:
    /// an empty ID and path).
    pub(crate) fn tell_hooks(&mut self) {
        let (id, path) = match &self.saving {
            Some(saving) => (saving.id(), saving.path().to_owned()),
            None => (String::new(), std::path::PathBuf::new()),
        };
        self.hook_session.send_modify(|session| {
            session.session_id = id;
            session.transcript_path = path;
        });
        self.told = self.hook_session.borrow().clone();
    }

    /// The prompt as the model gets it: after the UserPromptSubmit hooks, with what the
    /// SessionStart hooks added on the first prompt.
    ///
    /// # Errors
    /// A hook that blocked the prompt, saying why.
    pub(crate) async fn submitted(&mut self, prompt: UserMessage) -> Result<UserMessage, CliError> {
        let prompt =
            crate::setup::session_hooks::prompt_submit(&self.settings.policy, &self.told, prompt)
                .await?;
        Ok(crate::setup::session_hooks::with_context(
            prompt,
            self.context.take(),
        ))
    }

    /// Starts a run of `prompt`, already [`submitted`](Conversation::submitted): saved first,
    /// then sent after the transcript (and its summary, where it still stands for the oldest
    /// messages).
    pub(crate) fn start(&mut self, prompt: UserMessage) -> golato::Run {
        let agent = self.agent.clone();
        self.start_with(&agent, prompt)
    }

    fn start_with(&mut self, agent: &golato::Agent, prompt: UserMessage) -> golato::Run {
        if let Some(saving) = &mut self.saving {
            saving.step(&Message::User(prompt.clone()));
        }
        // A run that failed without its transcript leaves nothing the summary could stand for.
        let summary = self
            .summary
            .clone()
            .filter(|summary| summary.fits(&self.transcript));
        agent.start(Input {
            prompts: vec![prompt],
            transcript: std::mem::take(&mut self.transcript),
            summary,
        })
    }

    /// What `text` names of the commands and skills offered, ready to fill; `None` for a
    /// plain prompt.
    pub(crate) fn prepare(&self, text: &str) -> Option<Result<expansion::Pending, String>> {
        expansion::prepare(&self.offered, text, &self.settings.cwd)
    }

    /// Starts filling `pending` with the session's tools, under its rules and approvals.
    pub(crate) fn fill(&self, pending: expansion::Pending) -> expansion::Filling {
        expansion::Filling::start(&self.agent, pending)
    }

    /// Starts a run of a command's `prompt` (already [`submitted`](Conversation::submitted))
    /// with the tools and model its file names, for this prompt only; what could not be
    /// honoured is returned as lines to show.
    pub(crate) fn start_expanded(
        &mut self,
        prompt: UserMessage,
        expanded: &expansion::Expanded,
    ) -> (golato::Run, Vec<String>) {
        let (agent, notes) = expanded.agent(&self.settings, &self.agent);
        (self.start_with(&agent, prompt), notes)
    }

    /// [`submitted`](Conversation::submitted), then [`start`](Conversation::start).
    ///
    /// # Errors
    /// A hook that blocked the prompt: nothing was saved or started.
    pub(crate) async fn send(&mut self, prompt: UserMessage) -> Result<golato::Run, CliError> {
        let prompt = self.submitted(prompt).await?;
        Ok(self.start(prompt))
    }

    /// Keeps what `event` changes of the conversation: it is saved (`cancelling` says whether
    /// the run is being cancelled, so that a cut-off call is saved as such), and a compaction's
    /// summary stands for the oldest messages in the next turn too.
    pub(crate) fn keep(&mut self, event: &Event, cancelling: bool) {
        if let Some(saving) = &mut self.saving {
            saving.save_event(event, cancelling);
        }
        if let Event::Compaction(compaction) = event {
            self.summary = Some(Summary::new(
                compaction.summary.clone(),
                compaction.replaced,
            ));
        }
    }

    /// The conversation goes on from what the run left, whatever ended it.
    pub(crate) fn went_on(&mut self, outcome: Result<golato::RunResult, golato::agent::Error>) {
        self.transcript = match outcome {
            Ok(result) => result.messages,
            Err(error) => error
                .messages()
                .map(<[Message]>::to_vec)
                .unwrap_or_default(),
        };
    }

    /// Fires the SessionEnd hooks.
    pub(crate) async fn close(&self) {
        crate::setup::session_hooks::session_end(&self.settings.policy, &self.told).await;
    }

    /// The next turns ask the model `name` of the same provider (its price with it); a mode
    /// rebuilt later keeps it. Returns the model, for an agent kept aside (plan mode's).
    pub(crate) fn switch_model(&mut self, name: &str) -> golato::generator::Model {
        let model = crate::setup::provider::model_named(&self.settings, name);
        self.price = model.price;
        self.agent = self.agent.with_model(model.clone());
        self.header.model = Some(name.to_owned());
        self.settings.model = Some(name.to_owned());
        // Kept in the session: going on with it later asks the model chosen last.
        if let (Some(saving), None) = (&mut self.saving, &self.settings.script) {
            saving.model_chosen(name);
        }
        model
    }

    /// A new session in the same folder: the conversation starts over.
    ///
    /// # Errors
    /// The new session file could not be made.
    pub(crate) fn start_over(&mut self) -> Result<(), CliError> {
        self.transcript.clear();
        self.summary = None;
        self.saving =
            crate::store::session::open(None, &self.settings.cwd, self.ephemeral, true)?.saving;
        if let Some(saving) = &mut self.saving {
            saving.started_with(self.settings.model_origin());
        }
        self.tell_hooks();
        Ok(())
    }

    /// Goes on with the saved session `id` instead (its transcript, its file).
    ///
    /// # Errors
    /// No such session, or it cannot be opened (another golato writes it).
    pub(crate) fn go_on_with(&mut self, id: &str) -> Result<(), CliError> {
        let saved = crate::store::session::find(Some(id), None)?;
        let opened = crate::store::session::open(Some(saved), &self.settings.cwd, false, true)?;
        self.transcript = opened.transcript;
        self.summary = opened.summary;
        self.saving = opened.saving;
        self.tell_hooks();
        Ok(())
    }

    /// Takes this session's last prompt back (its edits, writes and captured commands) and
    /// goes on from before it.
    ///
    /// # Errors
    /// Nothing is saved (`--ephemeral`), or undo refused (a file changed since), naming why.
    pub(crate) fn undo(&mut self) -> Result<crate::store::checkpoints::Undone, CliError> {
        let Some(id) = self.saving.as_ref().map(Writer::id) else {
            return Err(CliError::usage(
                "nothing saved (--ephemeral): there is nothing to undo",
            ));
        };
        if self.transcript.is_empty() {
            return Err(CliError::usage(
                "nothing to undo: no prompt in this session yet",
            ));
        }
        // The session's lock is let go for the undo, and taken again to go on.
        self.saving = None;
        let outcome = crate::store::session::find(Some(&id), None)
            .and_then(|saved| crate::store::checkpoints::undo(&saved, None));
        self.go_on_with(&id)?;
        outcome
    }

    /// Summarizes the conversation now, its recent messages kept; `None` when there is nothing
    /// old enough to summarize.
    ///
    /// # Errors
    /// The model could not summarize it.
    pub(crate) async fn compact(
        &mut self,
    ) -> Result<Option<golato::agent::compaction::Compacted>, golato::agent::Error> {
        let compacted = self.agent.compact(self.transcript.clone()).await?;
        if compacted.replaced == 0 {
            return Ok(None);
        }
        let summary = Summary::new(compacted.summary.clone(), compacted.replaced);
        if let Some(saving) = &mut self.saving {
            saving.compacted(&summary);
        }
        self.summary = Some(summary);
        Ok(Some(compacted))
    }

    /// A new session holding this conversation; the old one stays as it is. Returns the old
    /// session's ID, if any, and the new one's.
    ///
    /// # Errors
    /// Nothing is saved (`--ephemeral`), or the new file could not be made.
    pub(crate) fn fork(&mut self) -> Result<(Option<String>, String), CliError> {
        if self.ephemeral {
            return Err(CliError::usage(
                "nothing saved (--ephemeral): there is no session to fork",
            ));
        }
        let old = self.saving.as_ref().map(Writer::id);
        let mut writer = Writer::create(&self.settings.cwd)?;
        writer.started_with(self.settings.model_origin());
        for message in &self.transcript {
            writer.step(message);
        }
        if let Some(summary) = &self.summary {
            writer.compacted(summary);
        }
        let new = writer.id();
        self.saving = Some(writer);
        self.tell_hooks();
        Ok((old, new))
    }
}
