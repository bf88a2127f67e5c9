//! Where a question's verdict is made, once: the `GolatoAnswers` object, one per question
//! (keyed as its workflow). Its handlers are exclusive, so two answers sent at once are taken
//! one after the other: the first decides and every later one is refused naming what was
//! decided. The deadline and a cancelled run decide through the same object, so a "yes" can
//! never be told "it runs" after the deadline refused the call, nor a "no" after a "yes".
//!
//! The workflow's durable promise only carries the verdict the object made to the waiting
//! workflow: the Restate SDK does not say whether resolving a promise won (a second resolve is
//! dropped unseen), so the promise cannot be the place a decision is made.

use restate_sdk::prelude::*;

use super::{Answer, QuestionWorkflowClient, Verdict};

/// The name of the object deciding each question, as registered.
pub const ANSWERS_OBJECT: &str = "GolatoAnswers";

/// The most characters of a refusal's reason the model is told.
pub const MAX_REASON_CHARS: usize = 2_000;

/// The state key: the question's workflow has started (an answer before it decides nothing).
const ASKED: &str = "asked";
/// The state key: the verdict, once made.
const DECIDED: &str = "decided";

pub(crate) struct AnswersObject;

#[restate_sdk::object(name = "GolatoAnswers", client_visibility = "pub(crate)")]
impl AnswersObject {
    /// The question's workflow has started: from now on an answer decides it. The verdict
    /// made already, when one was (the run was cancelled before it asked).
    #[handler]
    async fn open(&self, ctx: ObjectContext<'_>) -> Result<Json<Option<Verdict>>, HandlerError> {
        ctx.set(ASKED, true);
        Ok(Json(
            ctx.get::<Json<Verdict>>(DECIDED)
                .await?
                .map(Json::into_inner),
        ))
    }

    /// A person's answer: it decides the question when it is the first word on it, and the
    /// verdict it made is returned (the workflow's `answer` hands it to the waiting workflow
    /// at once; `settle` is sent too, for an answer that reached this object another way).
    ///
    /// Refused with 404 when the question was never asked (an answer sent before its question
    /// exists decides nothing), with 409 naming the verdict when one was made.
    #[handler]
    async fn decide(
        &self,
        ctx: ObjectContext<'_>,
        answer: Json<Answer>,
    ) -> Result<Json<Verdict>, HandlerError> {
        if let Some(Json(verdict)) = ctx.get::<Json<Verdict>>(DECIDED).await? {
            return Err(closed(&verdict).into());
        }
        if ctx.get::<bool>(ASKED).await?.is_none() {
            return Err(TerminalError::new_with_code(
                404,
                format!(
                    "no question {} is waiting: nothing was decided (was it asked yet?)",
                    ctx.key()
                ),
            )
            .into());
        }
        let answer = match answer.into_inner() {
            Answer::Yes => Answer::Yes,
            Answer::No { reason } => Answer::No {
                reason: reason.map(|reason| clean_reason(&reason)),
            },
        };
        let verdict = Verdict::Answered { answer };
        ctx.set(DECIDED, Json(verdict.clone()));
        ctx.workflow_client::<QuestionWorkflowClient>(ctx.key())
            .settle(Json(verdict.clone()))
            .send();
        Ok(Json(verdict))
    }

    /// The deadline passed: nobody answered, unless someone did first (then that answer).
    #[handler]
    async fn expire(
        &self,
        ctx: ObjectContext<'_>,
        waited_s: u64,
    ) -> Result<Json<Verdict>, HandlerError> {
        let verdict = match ctx.get::<Json<Verdict>>(DECIDED).await? {
            Some(Json(verdict)) => verdict,
            None => {
                let verdict = Verdict::NoAnswer { waited_s };
                ctx.set(DECIDED, Json(verdict.clone()));
                verdict
            }
        };
        Ok(Json(verdict))
    }

    /// Closes the question without an answer (its run was cancelled): the verdict it has.
    #[handler]
    async fn close(
        &self,
        ctx: ObjectContext<'_>,
        why: String,
    ) -> Result<Json<Verdict>, HandlerError> {
        if let Some(Json(verdict)) = ctx.get::<Json<Verdict>>(DECIDED).await? {
            return Ok(Json(verdict));
        }
        let verdict = Verdict::Closed { why };
        ctx.set(DECIDED, Json(verdict.clone()));
        if ctx.get::<bool>(ASKED).await?.is_some() {
            ctx.workflow_client::<QuestionWorkflowClient>(ctx.key())
                .settle(Json(verdict.clone()))
                .send();
        }
        Ok(Json(verdict))
    }
}

/// The refusal of a word on a question that has its verdict, naming it.
pub(super) fn closed(verdict: &Verdict) -> TerminalError {
    let said = match verdict {
        Verdict::Answered {
            answer: Answer::Yes,
        } => "it was answered yes, and the call runs".to_owned(),
        Verdict::Answered {
            answer: Answer::No { .. },
        } => "it was answered no, and the call does not run".to_owned(),
        Verdict::NoAnswer { waited_s } => {
            format!("nobody answered within {waited_s} s, so the call was refused")
        }
        Verdict::Closed { why } => format!("{why}, so the call does not run"),
    };
    TerminalError::new_with_code(409, format!("the question is closed: {said}"))
}

/// A refusal's reason as the model may read it: control characters but line breaks and tabs
/// taken out (a terminal's escape sequences among them), and at most [`MAX_REASON_CHARS`].
pub fn clean_reason(reason: &str) -> String {
    let mut kept: String = reason
        .chars()
        .filter(|c| !c.is_control() || matches!(c, '\n' | '\t'))
        .take(MAX_REASON_CHARS)
        .collect();
    if reason
        .chars()
        .filter(|c| !c.is_control() || matches!(c, '\n' | '\t'))
        .nth(MAX_REASON_CHARS)
        .is_some()
    {
        kept.push_str(" […]");
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reason_is_bounded_and_loses_its_control_characters() {
        assert_eq!(
            clean_reason("no\x1b[2J, not\tthis\r\nway\u{7}"),
            "no[2J, not\tthis\nway"
        );
        let long = "x".repeat(100_000);
        let cleaned = clean_reason(&long);
        assert_eq!(
            cleaned.chars().count(),
            MAX_REASON_CHARS + " […]".chars().count()
        );
        assert_eq!(
            clean_reason(&"y".repeat(MAX_REASON_CHARS)),
            "y".repeat(MAX_REASON_CHARS)
        );
    }
}
