//! `golato acp --restate URL`: each prompt of a session is a durable run on the Restate server,
//! served by `golato serve` workers; this process only follows it.
//!
//! Prompt `N` of session `S` is the run `S.N` (from 1), submitted with the session's conversation so far
//! (`Submission::with_transcript`). Its events come from the run's published events and become
//! the same `session/update`s as a local run's; its questions (see golato-restate's
//! `DurableApprover`) become `session/request_permission`s; `session/cancel` cancels the run. A
//! prompt sent while a run goes on steers it, and is answered when the run ends. The session's
//! file keeps the conversation as it streams, so that after this process dies, `session/load`
//! (of a new process) replays the conversation up to the last prompt, then follows the run `S.N`
//! from its first event: to its end if it still goes on, or at once if it ended meanwhile.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use agent_client_protocol::v1::schema::{PromptResponse, SessionNotification, StopReason};
use futures::StreamExt as _;
use golato::message::{Message, UserMessage};
use golato_restate::{Answer, Client, Submission};
use tokio_util::sync::CancellationToken;

use super::{invalid_params, updates::Updates, Connection, Session};
use crate::setup::approve::Reply;
use crate::view::report::Answer as Said;

/// What a durable ACP process shares: the client of the server, and the run each busy session
/// follows.
pub(crate) struct Durable {
    client: Client,
    /// Per session, the run it follows and how that run ended, once it has.
    following: Mutex<HashMap<String, Following>>,
}

#[derive(Clone)]
struct Following {
    run_id: String,
    ended: tokio::sync::watch::Receiver<Option<Result<StopReason, String>>>,
}

impl Durable {
    /// A follower of runs on the server at `ingress` (`admin` to cancel them).
    pub(crate) fn new(
        ingress: &str,
        admin: Option<&str>,
    ) -> Result<Durable, crate::error::CliError> {
        let usage = |error: golato_restate::Error| crate::error::CliError::usage(error.to_string());
        let mut client = Client::new(ingress)
            .map_err(usage)?
            .with_reconnect_for(std::time::Duration::from_secs(120));
        if let Some(admin) = admin {
            client = client.with_admin(admin).map_err(usage)?;
        }
        Ok(Durable {
            client,
            following: Mutex::default(),
        })
    }

    /// Whether run `run` was submitted: it ended, or it has published events.
    async fn exists(&self, run: &str) -> bool {
        if let Ok(Some(_)) = self.client.outcome(run).await {
            return true;
        }
        self.client
            .events(run, 0)
            .await
            .is_ok_and(|page| !page.events.is_empty())
    }

    fn following(&self, session: &str) -> Option<Following> {
        self.following
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(session)
            .cloned()
    }
}

/// The run of prompt `n` (from 1) of session `session`.
fn run_id(session: &str, n: usize) -> Result<String, agent_client_protocol::Error> {
    let id = format!("{session}.{n}");
    golato_restate::check_run_id(&id).map_err(|error| {
        invalid_params(format!(
            "this session's ID cannot name a durable run ({error}); start a new session"
        ))
    })?;
    Ok(id)
}

/// Where the conversation's last prompt is: its last user message that does not follow a
/// tool's result (a message steering a run joins after its batch's results).
fn last_prompt(transcript: &[Message]) -> Option<usize> {
    (0..transcript.len()).rev().find(|&at| {
        matches!(transcript[at], Message::User(_))
            && (at == 0 || !matches!(transcript[at - 1], Message::ToolResult(_)))
    })
}

/// A prompt to a session whose run goes on: it steers the run, and is answered when the run
/// ends. `None` when the session follows no run.
pub(crate) async fn steer(
    durable: &Durable,
    session: &str,
    prompt: &UserMessage,
    cx: &Connection,
) -> Option<Result<PromptResponse, agent_client_protocol::Error>> {
    use agent_client_protocol::v1::schema::{
        ContentBlock, ContentChunk, SessionUpdate, TextContent,
    };
    let following = durable.following(session)?;
    let text = prompt.text();
    if let Err(error) = durable.client.steer(&following.run_id, &text).await {
        return Some(Err(invalid_params(format!(
            "the session's run {} did not take the prompt: {error}",
            following.run_id
        ))));
    }
    // Delivered: the run takes it after its running calls. The client shows it now.
    let delivered = SessionUpdate::UserMessageChunk(ContentChunk::new(ContentBlock::Text(
        TextContent::new(text),
    )));
    let _ = cx.send_notification(SessionNotification::new(session.to_owned(), delivered));
    let mut ended = following.ended;
    let outcome = ended
        .wait_for(Option::is_some)
        .await
        .map(|ended| ended.clone())
        .ok()
        .flatten();
    Some(match outcome {
        Some(Ok(stop)) => Ok(PromptResponse::new(stop)),
        Some(Err(error)) => Err(agent_client_protocol::Error::new(-32603, error)),
        None => Ok(PromptResponse::new(StopReason::Cancelled)),
    })
}

/// A prompt: submitted as the session's next run, followed to its end.
pub(crate) async fn drive(
    durable: &Durable,
    state: &super::State,
    session: &mut Session,
    prompt: UserMessage,
    cancel: &CancellationToken,
    cx: &Connection,
) -> Result<PromptResponse, agent_client_protocol::Error> {
    let prompt = session
        .conversation
        .submitted(prompt)
        .await
        .map_err(|error| invalid_params(crate::view::shown::visible(&error.to_string())))?;
    let n = session.durable_runs + 1;
    let run = run_id(&session.id, n)?;
    session.durable_runs = n;
    if let Some(saving) = &mut session.conversation.saving {
        saving.step(&Message::User(prompt.clone()));
    }
    let mut transcript = std::mem::take(&mut session.conversation.transcript);
    transcript.push(Message::User(prompt));
    let submission = Submission::new("").with_transcript(transcript);
    follow(
        durable,
        state,
        session,
        &run,
        Some(submission),
        true,
        cancel,
        cx,
    )
    .await
}

/// After `session/load`: the session's last run, followed from its first event (its part of
/// the conversation was left out of the replay), to its end.
pub(crate) async fn attach(
    durable: &Durable,
    state: &super::State,
    session: &mut Session,
    cancel: &CancellationToken,
    cx: &Connection,
) -> Result<PromptResponse, agent_client_protocol::Error> {
    // The server knows the session's runs: 1, 2, … as far as one exists.
    let mut runs = 0;
    while durable.exists(&run_id(&session.id, runs + 1)?).await {
        runs += 1;
    }
    session.durable_runs = runs;
    if runs == 0 {
        return Ok(PromptResponse::new(StopReason::EndTurn));
    }
    let run = run_id(&session.id, runs)?;
    follow(durable, state, session, &run, None, false, cancel, cx).await
}

/// The conversation a loaded durable session replays: up to its last prompt, whose run
/// [`attach`] follows (the whole conversation when it has no prompt).
pub(crate) fn before_last_run(transcript: &[Message]) -> &[Message] {
    match last_prompt(transcript) {
        Some(at) => &transcript[..=at],
        None => transcript,
    }
}

/// Submits `submission` as run `run` (or attaches to it), shows its events, asks its questions,
/// cancels it with the turn, and keeps what it left as the conversation. `saving` says whether
/// its events go to the session's file (a run followed again after a load was saved before).
#[allow(clippy::too_many_arguments)]
async fn follow(
    durable: &Durable,
    state: &super::State,
    session: &mut Session,
    run: &str,
    submission: Option<Submission>,
    saving: bool,
    cancel: &CancellationToken,
    cx: &Connection,
) -> Result<PromptResponse, agent_client_protocol::Error> {
    let client = &durable.client;
    let (ended, following) = tokio::sync::watch::channel(None);
    durable
        .following
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(
            session.id.clone(),
            Following {
                run_id: run.to_owned(),
                ended: following,
            },
        );
    let submitted = async {
        match &submission {
            Some(submission) => client.submit_with(run, submission).await,
            None => client.attach(run).await,
        }
    };
    let mut submitted = Box::pin(submitted);
    let mut events = Box::pin(client.watch(run, 0));
    let mut watching = true;
    let mut updates = Updates::new(
        &session.cwd,
        session.conversation.agent.context_window(),
        session.conversation.price,
        session.spent,
    );
    let mut poll = tokio::time::interval(crate::commands::questions::POLL);
    let mut questions = crate::commands::questions::Questions::default();
    let mut cancelled = false;
    // The number of the next event to show (a page read after the stream may repeat some).
    let mut next = 0;
    let id = session.id.clone();
    let outcome = loop {
        tokio::select! {
            outcome = &mut submitted => break outcome,
            () = cancel.cancelled(), if !cancelled => {
                cancelled = true;
                if let Err(error) = client.cancel(run).await {
                    tracing::warn!(%error, run, "the durable run could not be cancelled");
                }
            }
            event = events.next(), if watching => match event {
                Some(Ok(event)) if event.seq >= next => {
                    next = event.seq + 1;
                    show(session, &mut updates, &event.event, saving, cancelled, cx);
                }
                Some(Ok(_)) => {}
                Some(Err(error)) => {
                    tracing::warn!(%error, run, "the durable run's events cannot be shown");
                    watching = false;
                }
                None => watching = false,
            },
            _ = poll.tick() => {
                for question in questions.new_ones(client, run).await {
                    ask(state, durable, &id, run, question, cx.clone(), cancel.clone());
                }
            }
        }
    };
    drop(submitted);
    // The run's last events, which its workers sent before it answered.
    while watching {
        let Ok(page) = client.events(run, next).await else {
            break;
        };
        for event in &page.events {
            if event.seq >= next {
                next = event.seq + 1;
                show(session, &mut updates, &event.event, saving, cancelled, cx);
            }
        }
        watching = !page.ended && page.next > next.saturating_sub(1) && !page.events.is_empty();
    }
    session.spent = updates.spent;
    let result = match outcome {
        Err(error) => {
            // Nothing of the run came back: the conversation is what was submitted.
            if let Some(submission) = submission {
                session.conversation.transcript = submission.transcript;
            }
            Err(agent_client_protocol::Error::new(
                -32603,
                format!("the durable run {run} could not be followed: {error}"),
            ))
        }
        Ok(outcome) => {
            session.conversation.transcript = outcome.messages.clone();
            match (&outcome.error, cancelled) {
                (_, true) => Ok(StopReason::Cancelled),
                (None, false) => Ok(StopReason::EndTurn),
                (Some(error), false) => Err(agent_client_protocol::Error::new(
                    -32603,
                    crate::view::shown::visible(error).into_owned(),
                )),
            }
        }
    };
    let _ = ended.send(Some(result.clone().map_err(|error| error.message)));
    durable
        .following
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .remove(&id);
    result.map(PromptResponse::new)
}

/// One event of the run: to the client, and to the session's file.
fn show(
    session: &mut Session,
    updates: &mut Updates,
    event: &golato::agent::Event,
    saving: bool,
    cancelled: bool,
    cx: &Connection,
) {
    if saving {
        session.conversation.keep(event, cancelled);
    }
    for update in updates.of(event) {
        let _ = cx.send_notification(SessionNotification::new(session.id.clone(), update));
    }
}

/// Asks the client about a durable run's question, and sends its answer to the server. An
/// answer the client does not give (it went away, it timed out) leaves the question open: it
/// can still be answered elsewhere (`golato approve`) before its deadline.
fn ask(
    state: &super::State,
    durable: &Durable,
    session: &str,
    run: &str,
    question: golato_restate::Question,
    cx: Connection,
    cancel: CancellationToken,
) {
    let (reply, answered) = tokio::sync::oneshot::channel();
    let asked = crate::setup::approve::Question {
        tool: question.tool.clone(),
        call_id: question.call_id.clone(),
        detail: question.detail.clone(),
        why: question.why.clone(),
        arguments: question.arguments.clone(),
        preview: question.preview.clone(),
        remember: None,
        reply,
    };
    super::permission::ask(state, session, asked, cx, cancel);
    let (client, run, call) = (durable.client.clone(), run.to_owned(), question.call_id);
    tokio::spawn(async move {
        let answer = match answered.await {
            Ok(Reply::Answer(Said::Yes | Said::Always)) | Ok(Reply::Remember(_)) => Answer::Yes,
            Ok(Reply::RefusedBecause(reason)) => Answer::No {
                reason: Some(reason),
            },
            Ok(Reply::Answer(Said::No) | Reply::NeverAgain) => Answer::No { reason: None },
            Ok(Reply::Edited(_) | Reply::Unanswered(_)) | Err(_) => return,
        };
        if let Err(error) = client.answer(&run, &call, &answer).await {
            tracing::warn!(%error, run, "a durable run's question could not be answered");
        }
    });
}
