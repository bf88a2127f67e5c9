//! Asking the client for permission to run a call: golato's four options, and the answer (or
//! its absence within the timeout) turned into the approvals' reply.

use agent_client_protocol::v1::schema::{
    PermissionOption, PermissionOptionKind, RequestPermissionOutcome, RequestPermissionRequest,
    ToolCallUpdate, ToolCallUpdateFields,
};
use tokio_util::sync::CancellationToken;

use super::{Connection, State};
use crate::setup::approve::{Question, Reply};
use crate::view::report::Answer;

/// The option IDs golato offers, and what each answers.
const OPTIONS: [(&str, &str, PermissionOptionKind); 4] = [
    ("allow-once", "Allow", PermissionOptionKind::AllowOnce),
    (
        "allow-always",
        "Allow always (this tool, this session)",
        PermissionOptionKind::AllowAlways,
    ),
    ("reject-once", "Reject", PermissionOptionKind::RejectOnce),
    (
        "reject-always",
        "Reject always (this tool, this session)",
        PermissionOptionKind::RejectAlways,
    ),
];

/// golato's decision for the option the client chose (an unknown one refuses).
fn reply_for(option: &str) -> Reply {
    match option {
        "allow-once" => Answer::Yes.into(),
        "allow-always" => Answer::Always.into(),
        "reject-always" => Reply::NeverAgain,
        _ => Answer::No.into(),
    }
}

/// Asks the client about a call, on a task of its own (the run goes on streaming meanwhile).
/// No answer within the timeout, a cancelled turn or a client gone away refuse the call.
pub(super) fn ask(
    state: &State,
    session: &str,
    question: Question,
    cx: Connection,
    cancel: CancellationToken,
) {
    let timeout = state.permission_timeout;
    let request = RequestPermissionRequest::new(
        session.to_owned(),
        ToolCallUpdate::new(
            question.call_id.clone(),
            ToolCallUpdateFields::new()
                .title(crate::view::shown::visible(&question.detail).into_owned())
                .raw_input(question.arguments.clone()),
        ),
        OPTIONS
            .iter()
            .map(|(id, name, kind)| PermissionOption::new(*id, *name, *kind))
            .collect(),
    );
    tokio::spawn(async move {
        let sent = cx.send_request(request).block_task();
        let reply: Reply = tokio::select! {
            answered = sent => match answered {
                Ok(response) => match response.outcome {
                    RequestPermissionOutcome::Selected(selected) => reply_for(&selected.option_id.0),
                    _ => Answer::No.into(),
                },
                Err(error) => Reply::Unanswered(format!(
                    "it needed permission and the client could not be asked ({error})"
                )),
            },
            () = tokio::time::sleep(timeout) => Reply::Unanswered(format!(
                "it needed permission and nobody answered the request within {} s",
                timeout.as_secs()
            )),
            () = cancel.cancelled() => Answer::No.into(),
        };
        let _ = question.reply.send(reply);
    });
}
