//! Questions a durable run asks a person, answered from anywhere, waited for without a worker.
//!
//! A call that needs a person's yes (`--approve ask`, an ask rule, a hook that asks) starts a
//! `GolatoQuestion` workflow keyed `RUN/TURN/CALL` ([`question_key`]): it lists itself in the
//! run's `GolatoQuestions` object (where `golato submit` and [`Client::questions`] find it),
//! then waits on its durable promise `answer` or a durable timer (the deadline): the waiting is
//! Restate's, so the workflow holds no worker, and a restarted server still knows it. The
//! call's tool actor waits for the workflow's outcome through the ingress; the answer is then
//! recorded in the run's journal (`StepKey::Approval`, see golato's policy gate), so when the
//! worker dies while it waits, the run's next attempt asks the same workflow (keyed the same)
//! and gets the same answer, and a call answered no never runs.
//!
//! [`Client::questions`]: crate::Client::questions

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use futures::FutureExt;
use restate_sdk::prelude::*;

use golato::hook::HookContext;
use golato::policy::{Approval, Approver, Decision};

mod decision;

pub(crate) use decision::AnswersObject;
use decision::AnswersObjectClient;
pub use decision::{clean_reason, ANSWERS_OBJECT, MAX_REASON_CHARS};

/// The name of the question workflow, as registered.
pub const QUESTION_WORKFLOW: &str = "GolatoQuestion";
/// The name of the object listing a run's open questions, as registered.
pub const QUESTIONS_OBJECT: &str = "GolatoQuestions";
/// How long a durable run's question waits for an answer unless the worker says otherwise
/// ([`DurableApprover::with_deadline`]): a day.
pub const DEFAULT_ANSWER_WITHIN: Duration = Duration::from_secs(24 * 60 * 60);

/// What a durable run asks a person about one call.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct Question {
    /// The run that asks.
    pub run_id: String,
    /// The turn of the call, from 1.
    pub turn: usize,
    /// The call's ID, as the model gave it.
    pub call_id: String,
    /// The tool called.
    pub tool: String,
    /// The call's arguments.
    pub arguments: serde_json::Value,
    /// What the person must see whole to decide: the command, or the path written.
    pub detail: String,
    /// What an edit or a write would change, as a unified diff, when it could be worked out.
    pub preview: Option<String>,
    /// What asks: a rule, a hook, or the approval mode.
    pub why: String,
    /// How long it waits for an answer, in seconds; after that the call is refused.
    pub answer_within_s: u64,
}

impl Question {
    /// The key of its `GolatoQuestion` workflow.
    pub fn key(&self) -> String {
        question_key(&self.run_id, self.turn, &self.call_id)
    }
}

/// The key of the question workflow for call `call_id` of turn `turn` of run `run_id`:
/// `RUN/TURN/CALL` (a run ID holds no `/`, a turn is digits: the call's ID, last, may hold
/// anything).
pub fn question_key(run_id: &str, turn: usize, call_id: &str) -> String {
    format!("{run_id}/{turn}/{call_id}")
}

/// A person's answer.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "answer", rename_all = "snake_case")]
pub enum Answer {
    /// The call may run.
    Yes,
    /// The call must not run; `reason`, when given, is told to the model.
    No {
        /// Why, in the person's words.
        reason: Option<String>,
    },
}

/// How a question ended.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Verdict {
    /// Someone answered.
    Answered {
        /// What they said.
        answer: Answer,
    },
    /// Nobody answered within the deadline: the call is refused.
    NoAnswer {
        /// How long it waited, in seconds.
        waited_s: u64,
    },
    /// Closed without an answer (its run was cancelled): the call is refused.
    Closed {
        /// Why, in a few words.
        why: String,
    },
}

/// The state key of a question's verdict, once it has one.
const VERDICT: &str = "verdict";
/// The promise that hands the workflow the verdict its `GolatoAnswers` object made.
const DECIDED: &str = "decided";
/// The state key of a run's open questions.
const PENDING: &str = "pending";
/// The state key of a run whose questions were closed (it was cancelled): why.
const CLOSED: &str = "closed";

pub(crate) struct QuestionWorkflow;

// A question's verdict is kept a week: an answer given after that finds no question.
#[restate_sdk::workflow(
    name = "GolatoQuestion",
    client_visibility = "pub(crate)",
    workflow_completion_retention = "7 days"
)]
impl QuestionWorkflow {
    /// Opens the question in its `GolatoAnswers` object (where it is decided, once), lists it
    /// with its run, waits for the verdict or the deadline, and gives the verdict.
    #[handler]
    async fn run(
        &self,
        ctx: WorkflowContext<'_>,
        question: Json<Question>,
    ) -> Result<Json<Verdict>, HandlerError> {
        let Json(question) = question;
        let run_id = question.run_id.clone();
        let key = ctx.key().to_owned();
        let within = Duration::from_secs(question.answer_within_s);
        let decided = ctx
            .object_client::<AnswersObjectClient>(key.clone())
            .open()
            .call()
            .await?
            .into_inner();
        ctx.object_client::<QuestionsObjectClient>(run_id.clone())
            .add(Json(question))
            .send();
        let verdict = match decided {
            Some(verdict) => verdict,
            None => restate_sdk::select! {
                verdict = ctx.promise::<Json<Verdict>>(DECIDED) => verdict?.into_inner(),
                _ = ctx.sleep(within) => ctx
                    .object_client::<AnswersObjectClient>(key.clone())
                    .expire(within.as_secs())
                    .call()
                    .await?
                    .into_inner(),
            },
        };
        ctx.set(VERDICT, Json(verdict.clone()));
        ctx.object_client::<QuestionsObjectClient>(run_id)
            .remove(key)
            .send();
        Ok(Json(verdict))
    }

    /// Answers the question: decided by its `GolatoAnswers` object, where the first answer
    /// wins; refused (409, naming the verdict) once it has one, and (404) before it is asked.
    #[handler]
    async fn answer(
        &self,
        ctx: SharedWorkflowContext<'_>,
        answer: Json<Answer>,
    ) -> Result<(), HandlerError> {
        if let Some(Json(verdict)) = ctx.get::<Json<Verdict>>(VERDICT).await? {
            return Err(decision::closed(&verdict).into());
        }
        let verdict = ctx
            .object_client::<AnswersObjectClient>(ctx.key().to_owned())
            .decide(answer)
            .call()
            .await?;
        // This answer decided: the waiting workflow gets it now (the object's own `settle`,
        // sent for answers that reach it another way, comes a hop later and is dropped).
        ctx.resolve_promise(DECIDED, verdict);
        Ok(())
    }

    /// Hands the waiting workflow the verdict its object made (sent by the object only).
    #[handler]
    async fn settle(
        &self,
        ctx: SharedWorkflowContext<'_>,
        verdict: Json<Verdict>,
    ) -> Result<(), HandlerError> {
        if ctx.get::<Json<Verdict>>(VERDICT).await?.is_none() {
            ctx.resolve_promise(DECIDED, verdict);
        }
        Ok(())
    }
}

pub(crate) struct QuestionsObject;

/// A run's open questions, by their workflow's key.
type Pending = BTreeMap<String, Question>;

#[restate_sdk::object(name = "GolatoQuestions", client_visibility = "pub(crate)")]
impl QuestionsObject {
    /// Lists a question.
    #[handler]
    async fn add(
        &self,
        ctx: ObjectContext<'_>,
        question: Json<Question>,
    ) -> Result<(), HandlerError> {
        let Json(question) = question;
        if let Some(why) = ctx.get::<String>(CLOSED).await? {
            ctx.object_client::<AnswersObjectClient>(question.key())
                .close(why)
                .send();
            return Ok(());
        }
        let mut pending = ctx
            .get::<Json<Pending>>(PENDING)
            .await?
            .map(Json::into_inner)
            .unwrap_or_default();
        pending.insert(question.key(), question);
        ctx.set(PENDING, Json(pending));
        Ok(())
    }

    /// Closes every question of the run, open or still to come (it was cancelled): each is
    /// refused with `why` unless it was answered first.
    #[handler]
    async fn close(&self, ctx: ObjectContext<'_>, why: String) -> Result<(), HandlerError> {
        let pending = ctx
            .get::<Json<Pending>>(PENDING)
            .await?
            .map(Json::into_inner)
            .unwrap_or_default();
        for key in pending.keys() {
            ctx.object_client::<AnswersObjectClient>(key.clone())
                .close(why.clone())
                .send();
        }
        ctx.set(CLOSED, why);
        Ok(())
    }

    /// Takes a question off the list (it has its verdict).
    #[handler]
    async fn remove(&self, ctx: ObjectContext<'_>, key: String) -> Result<(), HandlerError> {
        let mut pending = ctx
            .get::<Json<Pending>>(PENDING)
            .await?
            .map(Json::into_inner)
            .unwrap_or_default();
        pending.remove(&key);
        match pending.is_empty() {
            true => ctx.clear(PENDING),
            false => ctx.set(PENDING, Json(pending)),
        }
        Ok(())
    }

    /// The run's open questions, oldest turn first.
    #[handler]
    async fn list(
        &self,
        ctx: SharedObjectContext<'_>,
    ) -> Result<Json<Vec<Question>>, HandlerError> {
        let pending = ctx
            .get::<Json<Pending>>(PENDING)
            .await?
            .map(Json::into_inner)
            .unwrap_or_default();
        Ok(Json(pending.into_values().collect()))
    }
}

/// What the person is shown of a call: its whole detail, and a diff when one can be made.
pub type Describe = dyn Fn(&HookContext) -> (String, Option<String>) + Send + Sync;

/// An [`Approver`] for durable runs: a question is a `GolatoQuestion` workflow on the Restate
/// server (see the module's docs), answered with [`Client::answer`](crate::Client::answer) or
/// `golato approve`, refused when nobody answers within its deadline. What needs asking is
/// `inner`'s decision (the approval mode); a run that is not durable is asked through `inner`.
pub struct DurableApprover {
    ingress: reqwest::Url,
    http: reqwest::Client,
    inner: Arc<dyn Approver>,
    within: Duration,
    describe: Option<Arc<Describe>>,
}

impl std::fmt::Debug for DurableApprover {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DurableApprover")
            .field("ingress", &self.ingress.as_str())
            .field("within", &self.within)
            .finish_non_exhaustive()
    }
}

impl DurableApprover {
    /// Asks through the Restate server whose ingress is at `ingress`; `inner` decides what
    /// needs asking and answers for runs that are not durable.
    ///
    /// # Errors
    /// [`Error::BadUrl`](crate::Error::BadUrl) when `ingress` is not an http(s) URL.
    pub fn new(ingress: &str, inner: Arc<dyn Approver>) -> Result<DurableApprover, crate::Error> {
        Ok(DurableApprover {
            ingress: crate::client::parse(ingress)?,
            http: reqwest::Client::new(),
            inner,
            within: DEFAULT_ANSWER_WITHIN,
            describe: None,
        })
    }

    /// How long a question waits for an answer before its call is refused
    /// ([`DEFAULT_ANSWER_WITHIN`] by default).
    pub fn with_deadline(mut self, within: Duration) -> DurableApprover {
        self.within = within;
        self
    }

    /// What the person is shown of a call (by default its tool and arguments).
    pub fn with_describe(mut self, describe: Arc<Describe>) -> DurableApprover {
        self.describe = Some(describe);
        self
    }

    /// Starts the question's workflow (a second start of the same key is the same question)
    /// and waits for its verdict, reconnecting while the server is away.
    async fn verdict(
        ingress: reqwest::Url,
        http: reqwest::Client,
        question: Question,
        cancel: tokio_util::sync::CancellationToken,
    ) -> Result<Verdict, String> {
        let key = question.key();
        let start = crate::url::with_segments(&ingress, &[QUESTION_WORKFLOW, &key, "run", "send"]);
        let attach = crate::url::with_segments(
            &ingress,
            &["restate", "workflow", QUESTION_WORKFLOW, &key, "attach"],
        );
        let mut started = false;
        let mut pause = Duration::from_millis(50);
        loop {
            let attempt = async {
                if !started {
                    let response = http
                        .post(start.clone())
                        .json(&question)
                        .send()
                        .await
                        .map_err(|error| crate::causes(&error))?;
                    let status = response.status();
                    // 409: started before (this question, asked by an earlier attempt).
                    if !status.is_success() && status != reqwest::StatusCode::CONFLICT {
                        return Err(format!("starting the question answered HTTP {status}"));
                    }
                    started = true;
                }
                let response = http
                    .get(attach.clone())
                    .send()
                    .await
                    .map_err(|error| crate::causes(&error))?;
                let status = response.status();
                if !status.is_success() {
                    return Err(format!("waiting for the answer answered HTTP {status}"));
                }
                response
                    .json::<Verdict>()
                    .await
                    .map_err(|error| crate::causes(&error))
            };
            let failed = tokio::select! {
                outcome = attempt => match outcome {
                    Ok(verdict) => return Ok(verdict),
                    Err(failed) => failed,
                },
                () = cancel.cancelled() => return Err("the run was cancelled while the call waited for an answer".to_owned()),
            };
            // The server restarting, or the question not started yet: ask again.
            tracing::debug!(question = %key, failed, "waiting for a durable question's answer again");
            tokio::select! {
                () = tokio::time::sleep(pause) => {}
                () = cancel.cancelled() => return Err("the run was cancelled while the call waited for an answer".to_owned()),
            }
            pause = (pause * 2).min(Duration::from_secs(2));
        }
    }
}

impl Approver for DurableApprover {
    fn default_decision(&self, ctx: &HookContext) -> Decision {
        self.inner.default_decision(ctx)
    }

    fn ask(&self, ctx: HookContext, why: String) -> BoxFuture<'static, Result<Approval, String>> {
        let (Some(run_id), Some(turn)) = (ctx.run_key.clone(), ctx.turn) else {
            return self.inner.ask(ctx, why);
        };
        let (detail, preview) = match &self.describe {
            Some(describe) => describe(&ctx),
            None => (format!("{} {}", ctx.call.name, ctx.arguments), None),
        };
        let tool = ctx.call.name.clone();
        let question = Question {
            run_id,
            turn,
            call_id: ctx.call.id.clone(),
            tool: tool.clone(),
            arguments: ctx.arguments.clone(),
            detail,
            preview,
            why,
            answer_within_s: self.within.as_secs().max(1),
        };
        tracing::info!(question = %question.key(), tool = %tool, "a call waits for a person's answer");
        let (ingress, http, cancel) = (self.ingress.clone(), self.http.clone(), ctx.cancel);
        async move {
            match DurableApprover::verdict(ingress, http, question, cancel).await? {
                Verdict::Answered { answer: Answer::Yes } => Ok(Approval::Allow),
                Verdict::Answered {
                    answer: Answer::No { reason },
                } => Ok(Approval::Refuse {
                    reason: reason.map(|reason| clean_reason(&reason)),
                }),
                Verdict::Closed { why } => Err(format!(
                    "This {tool} call was not run: it needed a person's yes and its question was closed ({why})."
                )),
                Verdict::NoAnswer { waited_s } => Err(format!(
                    "This {tool} call was not run: it needed a person's yes and nobody answered within {waited_s} s. Do it another way, or ask the user to allow it."
                )),
            }
        }
        .boxed()
    }

    fn note(&self, text: &str) {
        self.inner.note(text);
    }
}
