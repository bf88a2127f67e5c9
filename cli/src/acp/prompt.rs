//! `session/prompt`: one run, driven by a task of its own so that the connection goes on
//! serving other sessions (and this one's `session/cancel`) while it works.

use std::sync::Arc;

use agent_client_protocol::v1::schema::{
    ContentBlock, EmbeddedResourceResource, PromptRequest, PromptResponse, SessionNotification,
    StopReason,
};
use golato::agent::Event;
use golato::message::{Content, UserMessage};
use tokio_util::sync::CancellationToken;

use super::{invalid_params, updates::Updates, Connection, Session, State};

type Responder = agent_client_protocol::v1::Responder<PromptResponse>;

/// The prompt's content blocks as golato's user message: text as text, images as images, a
/// linked resource as its URI, an embedded one as its text with where it comes from.
fn user_message(blocks: Vec<ContentBlock>) -> Result<UserMessage, agent_client_protocol::Error> {
    let mut content = Vec::new();
    for block in blocks {
        match block {
            ContentBlock::Text(text) => content.push(Content::text(text.text)),
            ContentBlock::Image(image) => content.push(Content::image(image.mime_type, image.data)),
            ContentBlock::ResourceLink(link) => {
                content.push(Content::text(format!("[{}]({})", link.name, link.uri)));
            }
            ContentBlock::Resource(embedded) => match embedded.resource {
                EmbeddedResourceResource::TextResourceContents(resource) => {
                    content.push(Content::text(format!(
                        "<resource uri=\"{}\">\n{}\n</resource>",
                        resource.uri, resource.text
                    )));
                }
                _ => {
                    return Err(invalid_params(
                        "a binary embedded resource: golato takes text resources, images and links",
                    ))
                }
            },
            _ => {
                return Err(invalid_params(
                    "a content block golato does not take (audio, or a kind it does not know): send text, images, resource links or text resources",
                ))
            }
        }
    }
    if content.is_empty() {
        return Err(invalid_params(
            "an empty prompt: send at least one content block",
        ));
    }
    Ok(UserMessage { content })
}

/// Takes the prompt: checks it, marks the session busy, and leaves the run to a task.
pub(crate) async fn start(
    state: Arc<State>,
    request: PromptRequest,
    responder: Responder,
    cx: Connection,
) -> Result<(), agent_client_protocol::Error> {
    let id = request.session_id.0.to_string();
    let session = match state.session(&id) {
        Ok(session) => session,
        Err(error) => return responder.respond_with_error(error),
    };
    let prompt = match user_message(request.prompt) {
        Ok(prompt) => prompt,
        Err(error) => return responder.respond_with_error(error),
    };
    let Some(cancel) = state.begin_prompt(&id) else {
        let busy = invalid_params(format!(
            "the session {id} is working on a prompt already; wait for its answer, or send session/cancel first"
        ));
        // A durable session's run takes it as steering.
        #[cfg(feature = "durable")]
        if let Some(durable) = state.durable.clone() {
            tokio::spawn(async move {
                let _ = match super::durable::steer(&durable, &id, &prompt, &cx).await {
                    Some(answer) => responder.respond_with_result(answer),
                    None => responder.respond_with_error(busy),
                };
            });
            return Ok(());
        }
        return responder.respond_with_error(busy);
    };
    let driver = tokio::spawn({
        let state = Arc::clone(&state);
        async move {
            let mut session = session.lock().await;
            let outcome = drive(&state, &mut session, prompt, &cancel, &cx).await;
            state.end_prompt(&session.id);
            let _ = responder.respond_with_result(outcome);
        }
    });
    let mut drivers = state
        .drivers
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    drivers.retain(|driver| !driver.is_finished());
    drivers.push(driver);
    Ok(())
}

/// Runs the prompt to its end, telling the client what happens.
async fn drive(
    state: &State,
    session: &mut Session,
    prompt: UserMessage,
    cancel: &CancellationToken,
    cx: &Connection,
) -> Result<PromptResponse, agent_client_protocol::Error> {
    session.conversation.approver.heard(&prompt.text());
    // `/NAME ARGS` of a command file or skill: filled first, its calls asked about as any.
    let expanded = match session.conversation.prepare(&prompt.text()) {
        Some(Ok(pending)) => Some(fill(state, session, pending, cancel, cx).await?),
        Some(Err(why)) => {
            return Err(invalid_params(
                crate::view::shown::visible(&why).into_owned(),
            ))
        }
        None => None,
    };
    let prompt = match &expanded {
        Some(expanded) => {
            // The typed text gives way to the filled one; images and resources stay.
            let mut message = expanded.message();
            message.content.extend(
                prompt
                    .content
                    .into_iter()
                    .filter(|part| !matches!(part, golato::message::Content::Text { .. })),
            );
            message
        }
        None => prompt,
    };
    // A durable run takes the filled prompt; its tools and model are the workers' to choose.
    #[cfg(feature = "durable")]
    if let Some(durable) = &state.durable {
        if let Some(expanded) = expanded
            .as_ref()
            .filter(|e| e.tools.is_some() || e.model.is_some())
        {
            use agent_client_protocol::v1::schema::{ContentChunk, SessionUpdate, TextContent};
            let note = format!(
                "{}: its allowed-tools and model are not applied to a durable run (the workers' agent runs it)\n",
                expanded.name
            );
            let update = SessionUpdate::AgentThoughtChunk(ContentChunk::new(ContentBlock::Text(
                TextContent::new(note),
            )));
            let _ = cx.send_notification(SessionNotification::new(session.id.clone(), update));
        }
        return super::durable::drive(durable, state, session, prompt, cancel, cx).await;
    }
    // UserPromptSubmit hooks may block the prompt: the client hears why.
    let prompt = session
        .conversation
        .submitted(prompt)
        .await
        .map_err(|error| invalid_params(crate::view::shown::visible(&error.to_string())))?;
    let run = match &expanded {
        Some(expanded) => {
            let (run, notes) = session.conversation.start_expanded(prompt, expanded);
            let mut told: Vec<String> = expanded
                .ran
                .iter()
                .map(|(call, _)| {
                    format!("{}: {}", expanded.name, crate::view::live::call_label(call))
                })
                .collect();
            told.extend(notes);
            if !told.is_empty() {
                use agent_client_protocol::v1::schema::{ContentChunk, SessionUpdate, TextContent};
                let text = ContentBlock::Text(TextContent::new(format!("{}\n", told.join("\n"))));
                let update = SessionUpdate::AgentThoughtChunk(ContentChunk::new(text));
                let _ = cx.send_notification(SessionNotification::new(session.id.clone(), update));
            }
            run
        }
        None => session.conversation.start(prompt),
    };
    let mut updates = Updates::new(
        &session.cwd,
        session.conversation.agent.context_window(),
        session.conversation.price,
        session.spent,
    );
    let id = session.id.clone();
    if let Some(notice) = session.notice.take() {
        use agent_client_protocol::v1::schema::{ContentChunk, SessionUpdate, TextContent};
        let text = ContentBlock::Text(TextContent::new(format!("{notice}\n")));
        let update = SessionUpdate::AgentMessageChunk(ContentChunk::new(text));
        let _ = cx.send_notification(SessionNotification::new(id.clone(), update));
    }
    let mut cancelled = false;
    // What the reviewer of `--approve auto` decides is told as the agent's thoughts (editors hide
    // an agent's stderr) and kept in the session.
    let mut reviews = session.conversation.approver.reviewer().map(|reviewer| {
        let (told, reviews) = tokio::sync::mpsc::unbounded_channel();
        reviewer.tell(crate::setup::reviewer::Told::Channel(told));
        reviews
    });
    loop {
        tokio::select! {
            biased;
            () = cancel.cancelled(), if !cancelled => {
                cancelled = true;
                run.cancel();
            }
            Some(review) = crate::setup::reviewer::next(&mut reviews) => {
                use agent_client_protocol::v1::schema::{ContentChunk, SessionUpdate, TextContent};
                let line = format!("{}\n", crate::setup::reviewer::line(&review));
                let update = SessionUpdate::AgentThoughtChunk(ContentChunk::new(ContentBlock::Text(TextContent::new(line))));
                let _ = cx.send_notification(SessionNotification::new(id.clone(), update));
                if let Some(saving) = &mut session.conversation.saving {
                    saving.reviewed(&serde_json::to_value(&review).unwrap_or_default());
                }
            }
            event = run.next_event() => {
                let Some(event) = event else { break };
                session.conversation.keep(&event, cancelled);
                if let (Event::ToolExecutionEnd(end), Some(background)) = (&event, &session.conversation.background) {
                    if let Some(started) = super::updates::background_started(&end.result) {
                        follow_background(background.ended(started), end.call.id.clone(), id.clone(), cx.clone());
                    }
                }
                for update in updates.of(&event) {
                    // A client gone away ends the connection; the run is cancelled then.
                    let _ = cx.send_notification(SessionNotification::new(id.clone(), update));
                }
                if matches!(event, Event::RunEnd(_)) {
                    break;
                }
            }
            Some(question) = crate::setup::approve::next_question(&mut session.conversation.questions) => {
                super::permission::ask(state, &id, question, cx.clone(), cancel.clone());
            }
        }
    }
    session.spent = updates.spent;
    let outcome = run.finish().await;
    let stop = match (&outcome, cancelled) {
        (_, true) => Ok(StopReason::Cancelled),
        (Ok(_), false) => Ok(StopReason::EndTurn),
        (Err(golato::agent::Error::MaxTurns { .. }), false) => Ok(StopReason::MaxTurnRequests),
        (Err(golato::agent::Error::Budget { .. }), false) => Ok(StopReason::MaxTokens),
        (Err(error), false) => Err(agent_client_protocol::Error::new(
            -32603,
            crate::view::report::describe(error),
        )),
    };
    session.conversation.went_on(outcome);
    stop.map(PromptResponse::new)
}

/// `pending` filled with the session's tools; the questions its calls ask go to the client,
/// and a cancel stops it.
async fn fill(
    state: &State,
    session: &mut Session,
    pending: crate::conversation::expansion::Pending,
    cancel: &CancellationToken,
    cx: &Connection,
) -> Result<crate::conversation::expansion::Expanded, agent_client_protocol::Error> {
    let mut filling = Some(session.conversation.fill(pending));
    let id = session.id.clone();
    let mut stopped = false;
    loop {
        tokio::select! {
            () = cancel.cancelled(), if !stopped => {
                stopped = true;
                if let Some(filling) = &filling {
                    filling.cancel.cancel();
                }
            }
            filled = crate::conversation::expansion::Filling::finished(&mut filling) => {
                return filled.map_err(|why| invalid_params(crate::view::shown::visible(&why).into_owned()));
            }
            Some(question) = crate::setup::approve::next_question(&mut session.conversation.questions) => {
                super::permission::ask(state, &id, question, cx.clone(), cancel.clone());
            }
        }
    }
}

/// Tells the client when the background command of call `call_id` has `ended`: its call
/// stays in progress until then. The task ends with the command, which ends with the session.
fn follow_background(
    ended: impl std::future::Future<Output = Option<String>> + Send + 'static,
    call_id: String,
    session_id: String,
    cx: Connection,
) {
    tokio::spawn(async move {
        if let Some(how) = ended.await {
            let update = super::updates::background_ended(&call_id, &how);
            let _ = cx.send_notification(SessionNotification::new(session_id, update));
        }
    });
}
