//! Runs that outlive their process: golato's agent runs made durable on a
//! [Restate](https://restate.dev) server. The command line's `golato serve` and `golato submit`
//! are this crate.
//!
//! A durable run is a Restate workflow, `GolatoRun`, keyed by the run's ID (it runs once per
//! ID; its outcome is kept 365 days after it ended). Its `run`
//! handler starts an ordinary run of the worker's [`Agent`] with a journal
//! ([`Journal`](golato::journal::Journal)) kept in the Restate invocation: each model turn (the
//! finished assistant message) and each tool call's result is an entry there. When the worker
//! dies, Restate runs the handler again on another worker behind the same address: the run
//! replays its recorded turns and results without asking the model or running the tools again,
//! and goes on from where it stopped. A call that was running when its worker died runs again
//! there, told its attempt number ([`ToolContext::attempt`](golato::tool::ToolContext::attempt));
//! its result says which attempt produced it.
//!
//! Guarantees: a recorded step (turn or call result) happens exactly once; a call interrupted
//! mid-flight runs at least once. Calls of a batch run in parallel or serially as in any run,
//! results land in source order, and every validation rule holds (the run is the same run).
//!
//! While it goes on, [`Client::steer`] and [`Client::follow_up`] reach it (each message is read
//! by the run or refused because it ended, never accepted and dropped), and, when its workers
//! publish them ([`Worker::publish_events`]), [`Client::watch`] shows its events as they come,
//! numbered, none lost or repeated across a worker's death.
//!
//! A `task` call of a durable run (golato's subagents) starts a durable run of its own, keyed
//! under its parent's ([`child_run_id`]), when the workers' `task` tool runs its children with
//! [`DurableChildren`] and the workers know what children are made of
//! ([`Worker::with_subagents`]): a worker's death then costs the child nothing, and the call's
//! next attempt attaches to it.
//!
//! ```no_run
//! use std::sync::Arc;
//! use golato::agent::{self, Agent};
//! use golato_restate::{Client, Worker};
//! use golato::generator::Scripted;
//! use golato::message::AssistantMessage;
//!
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! // A worker: an agent served as a Restate endpoint on port 9080.
//! let agent = Agent::new(agent::Config {
//!     generator: Some(Arc::new(Scripted::new([AssistantMessage::with_text("done")]))),
//!     ..Default::default()
//! })?;
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:9080").await?;
//! tokio::spawn(Worker::new(agent).serve(listener, std::future::pending::<()>()));
//! // Once, tell the Restate server where the workers are (the address of one worker, or of
//! // the load balancer in front of several).
//! golato_restate::register("http://127.0.0.1:9070", "http://127.0.0.1:9080").await?;
//! // Submit a run through the server's ingress; the same ID again gives the same outcome.
//! let outcome = Client::new("http://127.0.0.1:8080")?.submit("run-1", "hello").await?;
//! println!("{}", outcome.final_text().unwrap_or_default());
//! # Ok(())
//! # }
//! ```

mod approvals;
mod children;
mod client;
mod events;
mod inbox;
mod journal;
mod object;
mod path_lock;
mod publish;
mod slots;
mod url;

pub use approvals::{
    clean_reason, question_key, Answer, Describe, DurableApprover, Question, Verdict,
    ANSWERS_OBJECT, DEFAULT_ANSWER_WITHIN, MAX_REASON_CHARS, QUESTIONS_OBJECT, QUESTION_WORKFLOW,
};
pub use children::{child_run_id, DurableChildren};
pub use client::{check_run_id, register, Client, Error, MAX_RUN_ID, REGISTER_TIME};
pub use events::{EventPage, RunEvent, EVENTS_OBJECT, KEPT_BYTES, KEPT_EVENTS};
pub use inbox::INBOX_OBJECT;
pub use path_lock::{SharedPathLock, LEASE_TTL, LEASE_WORKFLOW, PATH_LOCK_OBJECT};

use std::sync::Arc;

use restate_sdk::prelude::*;

use golato::agent::{Agent, RunResult};
use golato::message::{AssistantMessage, Message, Usage};
use golato::subagent::{self, Child};

/// The name of the workflow durable runs are, as registered with Restate.
pub const RUN_OBJECT: &str = "GolatoRun";

/// What a client submits: the prompt that starts the run, and for a subagent's run what its
/// `task` call asked for.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct Submission {
    /// The user's prompt (a subagent's: the call's).
    pub prompt: String,
    /// The child this run is, when a `task` call of another durable run submitted it: the
    /// worker builds its agent from it ([`Worker::with_subagents`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub child: Option<Child>,
    /// The conversation the run goes on from (an editor's session's earlier turns, see
    /// [`Submission::with_transcript`]); the prompt, when not empty, comes after it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub transcript: Vec<Message>,
}

impl Submission {
    /// A run of `prompt`.
    pub fn new(prompt: impl Into<String>) -> Submission {
        Submission {
            prompt: prompt.into(),
            child: None,
            transcript: Vec::new(),
        }
    }

    /// A run that goes on from `transcript` (an earlier run's messages, ending with the new
    /// user message when the prompt is empty: a prompt with images goes that way).
    pub fn with_transcript(mut self, transcript: Vec<Message>) -> Submission {
        self.transcript = transcript;
        self
    }

    /// What the worker's run starts from.
    fn into_input(self) -> golato::agent::Input {
        let prompts = match (self.prompt.is_empty(), self.transcript.is_empty()) {
            (true, false) => Vec::new(),
            _ => vec![golato::message::UserMessage::new(self.prompt)],
        };
        golato::agent::Input {
            prompts,
            transcript: self.transcript,
            summary: None,
        }
    }
}

/// How a durable run ended, as its worker reported it and Restate kept it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Outcome {
    /// The run's ID (the object's key).
    pub run_id: String,
    /// The whole transcript.
    pub messages: Vec<Message>,
    /// The last assistant message, when the run ended normally.
    pub final_message: Option<AssistantMessage>,
    /// Why the run did not end normally (cancelled, the model failed, too many turns...).
    pub error: Option<String>,
    /// Model turns in the transcript.
    pub turns: usize,
    /// Every token the run used (its summaries' and subagents' included).
    #[serde(default)]
    pub usage: Usage,
    /// What they cost; `None` when a model involved has no price.
    #[serde(default)]
    pub cost: Option<f64>,
}

impl Outcome {
    /// How run `run_id` ended with `result`, having spent `spent` (as its end event said, when
    /// it was read: a failed run's result does not say).
    fn from_result(
        run_id: String,
        result: Result<RunResult, golato::agent::Error>,
        spent: Option<(Usage, Option<f64>)>,
    ) -> Outcome {
        match result {
            Ok(result) => Outcome {
                run_id,
                turns: result.turns,
                messages: result.messages,
                final_message: Some(result.final_message),
                error: None,
                usage: result.usage,
                cost: result.cost,
            },
            Err(error) => {
                let messages = error
                    .messages()
                    .map(<[Message]>::to_vec)
                    .unwrap_or_default();
                // Without its end event, what its own turns used (its subagents' are not in
                // its transcript), at no known price.
                let (usage, cost) = spent.unwrap_or_else(|| {
                    let mut usage = Usage::default();
                    for message in &messages {
                        if let Message::Assistant(answer) = message {
                            usage += answer.usage;
                        }
                    }
                    (usage, None)
                });
                Outcome {
                    run_id,
                    turns: messages
                        .iter()
                        .filter(|message| matches!(message, Message::Assistant(_)))
                        .count(),
                    messages,
                    final_message: None,
                    error: Some(error.to_string()),
                    usage,
                    cost,
                }
            }
        }
    }

    /// A run that could not start, for `why`.
    fn refused(run_id: String, why: String) -> Outcome {
        Outcome {
            run_id,
            messages: Vec::new(),
            final_message: None,
            error: Some(why),
            turns: 0,
            usage: Usage::default(),
            cost: Some(0.0),
        }
    }

    /// The final message's text, when the run ended normally.
    pub fn final_text(&self) -> Option<String> {
        self.final_message.as_ref().map(AssistantMessage::text)
    }
}

/// A worker: serves the `GolatoRun` object for Restate, running each durable run with its
/// agent. Start as many as the load needs behind one address (a load balancer that passes
/// HTTP/2 through) and register that address once: Restate pins a run to the deployment it
/// started on, so workers registered at separate addresses do not take over each other's runs.
#[derive(Debug, Clone)]
pub struct Worker {
    agent: Arc<Agent>,
    subagents: Option<Arc<subagent::Config>>,
    events: Option<object::EventsTo>,
}

impl Worker {
    /// A worker running durable runs with `agent` (its generator, tools, hooks and limits).
    pub fn new(agent: Agent) -> Worker {
        Worker {
            agent: Arc::new(agent),
            subagents: None,
            events: None,
        }
    }

    /// Runs the subagents of durable runs: a run a `task` call submitted
    /// ([`DurableChildren`]) gets the agent [`subagent::child_agent`] makes of `config` for what
    /// the call asked. Give the configuration the worker's agent's `task` tool was made with
    /// (its runner a [`DurableChildren`]), so a child's own `task` calls are durable too. A
    /// worker without it refuses such runs (their outcome says why).
    pub fn with_subagents(mut self, config: Arc<subagent::Config>) -> Worker {
        self.subagents = Some(config);
        self
    }

    /// Publishes the events of the runs this worker runs through the Restate ingress at
    /// `ingress` (port 8080 by default), where [`Client::events`] and `golato submit` read
    /// them while the run goes on. Without it a run's events stay in its worker.
    ///
    /// Events travel outside the run's journal, so publishing costs the run no recorded step;
    /// a replay publishes again what it replays, and the events object drops those copies
    /// (see [`RunEvent`]). An ingress that does not take a batch for 10 s loses that batch
    /// (the worker's log says how many events); the run itself never waits for it.
    ///
    /// # Errors
    /// [`Error::BadUrl`] when `ingress` is not an http(s) URL.
    pub fn publish_events(mut self, ingress: &str) -> Result<Worker, Error> {
        self.events = Some(object::EventsTo {
            ingress: client::parse(ingress)?,
            http: reqwest::Client::new(),
        });
        Ok(self)
    }

    /// Serves Restate's requests on `listener` until `shutdown` resolves. Runs in flight when
    /// the worker stops go on elsewhere: Restate retries them on the workers left.
    pub async fn serve(
        self,
        listener: tokio::net::TcpListener,
        shutdown: impl std::future::Future,
    ) {
        let endpoint = Endpoint::builder()
            .bind(object::RunObject {
                agent: self.agent,
                subagents: self.subagents,
                events: self.events,
            })
            .bind(inbox::InboxObject)
            .bind(events::EventsObject)
            .bind(path_lock::PathLockObject)
            .bind(path_lock::LeaseWorkflow)
            .bind(approvals::QuestionWorkflow)
            .bind(approvals::QuestionsObject)
            .bind(approvals::AnswersObject)
            .build();
        HttpServer::new(endpoint)
            .serve_with_cancel(listener, shutdown)
            .await;
    }
}

/// An error and its causes in one line, without the HTTP client's generic outer text.
fn causes(error: &(dyn std::error::Error + 'static)) -> String {
    golato::generator::causes(error)
}
