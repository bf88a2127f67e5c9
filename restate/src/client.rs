//! Talking to a Restate server from outside: registering workers (admin API) and submitting
//! runs (ingress).

mod error;
mod register;

pub(crate) use error::parse;
pub use error::{check_run_id, Error, MAX_RUN_ID};
pub use register::{register, REGISTER_TIME};

use std::time::Duration;

use register::retrying;

use super::{Outcome, Submission, RUN_OBJECT};
use crate::url::with_segments;

/// How often [`Client::watch`] asks for events while they flow, and at most while none do.
const WATCH_PAUSE: Duration = Duration::from_millis(50);
const WATCH_IDLE_PAUSE: Duration = Duration::from_millis(500);

/// Submits durable runs through a Restate server's ingress and waits for their outcome.
#[derive(Debug, Clone)]
pub struct Client {
    ingress: reqwest::Url,
    admin: Option<reqwest::Url>,
    http: reqwest::Client,
    reconnect_for: Duration,
}

impl Client {
    /// A client of the ingress at `ingress` (Restate's port 8080 by default).
    pub fn new(ingress: &str) -> Result<Client, Error> {
        Ok(Client {
            ingress: parse(ingress)?,
            admin: None,
            http: reqwest::Client::new(),
            reconnect_for: Duration::from_secs(60),
        })
    }

    /// Whether [`with_admin`](Self::with_admin) gave the admin API.
    pub(crate) fn has_admin(&self) -> bool {
        self.admin.is_some()
    }

    /// The server's admin API (port 9070 by default), which [`cancel`](Self::cancel) needs.
    pub fn with_admin(mut self, admin: &str) -> Result<Client, Error> {
        self.admin = Some(parse(admin)?);
        Ok(self)
    }

    /// Cancels run `run_id` if it is going on: its running tools are cancelled (bash's
    /// processes killed) within a few seconds, and the run ends with a cancellation error in
    /// its outcome, its transcript so far kept. Returns whether a running invocation was found.
    /// Needs the admin API ([`with_admin`](Self::with_admin)).
    pub async fn cancel(&self, run_id: &str) -> Result<bool, Error> {
        check_run_id(run_id)?;
        let Some(admin) = &self.admin else {
            return Err(Error::BadUrl {
                url: String::new(),
                reason: "cancelling needs the server's admin API: give it with Client::with_admin"
                    .to_owned(),
            });
        };
        let query = with_segments(admin, &["query"]);
        // Keys are the caller's text: quoted as an SQL string literal.
        let key = run_id.replace('\'', "''");
        let sql = format!(
            "SELECT id FROM sys_invocation WHERE target_service_name = '{RUN_OBJECT}' AND target_service_key = '{key}' AND target_handler_name = 'run' AND status <> 'completed'"
        );
        let body = serde_json::json!({ "query": sql });
        let response = retrying(self.reconnect_for, &query, "admin", || {
            self.http
                .post(query.clone())
                .header("accept", "application/json")
                .json(&body)
                .send()
        })
        .await?;
        let rows: serde_json::Value = self.read(&query, response).await?;
        let ids: Vec<String> = rows
            .get("rows")
            .and_then(serde_json::Value::as_array)
            .map(|rows| {
                rows.iter()
                    .filter_map(|row| row.get("id").and_then(serde_json::Value::as_str))
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        for id in &ids {
            let url = with_segments(admin, &["invocations", id, "cancel"]);
            let response = retrying(self.reconnect_for, &url, "admin", || {
                self.http.patch(url.clone()).send()
            })
            .await?;
            let status = response.status();
            // 404/409: it ended meanwhile.
            if !status.is_success() && !matches!(status.as_u16(), 404 | 409) {
                let message = response.text().await.unwrap_or_default();
                return Err(Error::Refused {
                    url: url.to_string(),
                    status: status.as_u16(),
                    message: message.chars().take(2_000).collect(),
                    hint: "",
                });
            }
        }
        // Its questions are closed with it: an answer given after the cancel decides nothing.
        let url = with_segments(&self.ingress, &[crate::QUESTIONS_OBJECT, run_id, "close"]);
        let response = retrying(self.reconnect_for, &url, "ingress", || {
            self.http
                .post(url.clone())
                .json("the run was cancelled")
                .send()
        })
        .await?;
        self.read_nothing(&url, response).await?;
        Ok(!ids.is_empty())
    }

    /// How long to keep trying when the server cannot be reached (down, restarting): 60 s by
    /// default. A run in flight goes on on the server meanwhile; the client attaches to it
    /// again once the server answers.
    pub fn with_reconnect_for(mut self, wait: Duration) -> Client {
        self.reconnect_for = wait;
        self
    }

    /// Runs `prompt` as the durable run `run_id` and waits for its outcome. The ID makes the
    /// submission idempotent: submitting an ID again (from this process or another, while the
    /// run goes on or after it ended, for 365 days) gives that run's outcome and starts
    /// nothing.
    pub async fn submit(&self, run_id: &str, prompt: &str) -> Result<Outcome, Error> {
        self.submit_with(run_id, &Submission::new(prompt)).await
    }

    /// [`submit`](Self::submit) with a whole [`Submission`] (a subagent's run carries what its
    /// `task` call asked for).
    pub async fn submit_with(
        &self,
        run_id: &str,
        submission: &Submission,
    ) -> Result<Outcome, Error> {
        check_run_id(run_id)?;
        let url = with_segments(&self.ingress, &[RUN_OBJECT, run_id, "run"]);
        let body = submission;
        let response = retrying(self.reconnect_for, &url, "ingress", || {
            self.http.post(url.clone()).json(&body).send()
        })
        .await?;
        // A run is a workflow keyed by its ID: the server refuses to start it twice, and the
        // caller gets the first run's outcome.
        if response.status() == reqwest::StatusCode::CONFLICT {
            return self.attach(run_id).await;
        }
        self.read(&url, response).await
    }

    /// Waits for run `run_id`, submitted before (by this process or another), and gives its
    /// outcome; at once if it ended.
    ///
    /// # Errors
    /// [`Error::UnknownRun`] when nothing was submitted under the ID; the others as
    /// [`submit`](Self::submit).
    pub async fn attach(&self, run_id: &str) -> Result<Outcome, Error> {
        check_run_id(run_id)?;
        let url = with_segments(
            &self.ingress,
            &["restate", "workflow", RUN_OBJECT, run_id, "attach"],
        );
        let response = retrying(self.reconnect_for, &url, "ingress", || {
            self.http.get(url.clone()).send()
        })
        .await?;
        if response.status() == reqwest::StatusCode::NOT_FOUND {
            return Err(Error::UnknownRun {
                run_id: run_id.to_owned(),
                url: self.ingress.to_string(),
            });
        }
        self.read(&url, response).await
    }

    /// Steers run `run_id`: `text` joins its transcript as a user message after the batch of
    /// tool calls that is running (or the next one), before the next model turn. Refused once
    /// the run has ended. A message posted before the run starts joins it after its first batch.
    pub async fn steer(&self, run_id: &str, text: &str) -> Result<(), Error> {
        self.post(run_id, text, false).await
    }

    /// Queues a follow-up for run `run_id`: when the run would end, it goes on with `text` as a
    /// user message instead. Refused once the run has ended.
    pub async fn follow_up(&self, run_id: &str, text: &str) -> Result<(), Error> {
        self.post(run_id, text, true).await
    }

    async fn post(&self, run_id: &str, text: &str, follow_up: bool) -> Result<(), Error> {
        check_run_id(run_id)?;
        let url = with_segments(&self.ingress, &[super::INBOX_OBJECT, run_id, "post"]);
        let body = crate::slots::Post {
            text: text.to_owned(),
            follow_up,
        };
        let response = retrying(self.reconnect_for, &url, "ingress", || {
            self.http.post(url.clone()).json(&body).send()
        })
        .await?;
        self.read_nothing(&url, response).await
    }

    /// The questions run `run_id` waits on: calls that need a person's yes (see
    /// [`DurableApprover`](crate::DurableApprover)), oldest turn first.
    pub async fn questions(&self, run_id: &str) -> Result<Vec<crate::Question>, Error> {
        check_run_id(run_id)?;
        let url = with_segments(&self.ingress, &[crate::QUESTIONS_OBJECT, run_id, "list"]);
        let response = retrying(self.reconnect_for, &url, "ingress", || {
            self.http.post(url.clone()).send()
        })
        .await?;
        self.read(&url, response).await
    }

    /// Answers the question of call `call_id` of run `run_id` (the open one: a call ID the
    /// model used in two turns names the newest).
    ///
    /// # Errors
    /// [`Error::NoQuestion`] when the run waits on no question of that call (answered
    /// already, past its deadline, or never asked); the others as [`submit`](Self::submit).
    pub async fn answer(
        &self,
        run_id: &str,
        call_id: &str,
        answer: &crate::Answer,
    ) -> Result<(), Error> {
        let Some(question) = self
            .questions(run_id)
            .await?
            .into_iter()
            .filter(|question| question.call_id == call_id)
            .max_by_key(|question| question.turn)
        else {
            return Err(Error::NoQuestion {
                run_id: run_id.to_owned(),
                call_id: call_id.to_owned(),
            });
        };
        let key = question.key();
        let url = with_segments(&self.ingress, &[crate::QUESTION_WORKFLOW, &key, "answer"]);
        // Sent again after a lost connection, the same answer is the same request: the server
        // answers it as it answered the first (which may have decided), not as a second word.
        let once = answer_key();
        let response = retrying(self.reconnect_for, &url, "ingress", || {
            self.http
                .post(url.clone())
                .header("idempotency-key", &once)
                .json(answer)
                .send()
        })
        .await?;
        if response.status() == reqwest::StatusCode::CONFLICT {
            let message = response.text().await.unwrap_or_default();
            let message = serde_json::from_str::<serde_json::Value>(&message)
                .ok()
                .and_then(|body| body["message"].as_str().map(str::to_owned))
                .unwrap_or(message);
            return Err(Error::Closed {
                run_id: run_id.to_owned(),
                call_id: call_id.to_owned(),
                message,
            });
        }
        self.read_nothing(&url, response).await
    }

    /// The outcome of run `run_id` if it ended, `None` if it is running or unknown.
    pub async fn outcome(&self, run_id: &str) -> Result<Option<Outcome>, Error> {
        check_run_id(run_id)?;
        let url = with_segments(&self.ingress, &[RUN_OBJECT, run_id, "outcome"]);
        // The handler takes no input: Restate refuses a body (even `null`) there.
        let response = retrying(self.reconnect_for, &url, "ingress", || {
            self.http.post(url.clone()).send()
        })
        .await?;
        self.read(&url, response).await
    }

    /// Run `run_id`'s events from number `from` on (a bounded page: ask again from
    /// [`EventPage::next`](crate::EventPage::next) for more). Events appear while the run goes
    /// on, when its workers publish them
    /// ([`Worker::publish_events`](crate::Worker::publish_events)); a run nobody published
    /// events of has none. An event this golato cannot read (published by a newer one, or by
    /// someone else through the ingress) is left out, its number with it, and a `tracing`
    /// warning names it.
    pub async fn events(&self, run_id: &str, from: u64) -> Result<crate::EventPage, Error> {
        check_run_id(run_id)?;
        let url = with_segments(&self.ingress, &[crate::EVENTS_OBJECT, run_id, "read"]);
        let response = retrying(self.reconnect_for, &url, "ingress", || {
            self.http.post(url.clone()).json(&from).send()
        })
        .await?;
        let answer: crate::events::Answer = self.read(&url, response).await?;
        let events = answer
            .events
            .into_iter()
            .filter_map(|numbered| {
                match serde_json::from_value::<golato::agent::Event>(numbered.event) {
                    Ok(event) => Some(crate::RunEvent {
                        seq: numbered.seq,
                        event,
                    }),
                    Err(error) => {
                        tracing::warn!(run = run_id, seq = numbered.seq, %error, "an event this golato cannot read was skipped");
                        None
                    }
                }
            })
            .collect();
        Ok(crate::EventPage {
            events,
            next: answer.next,
            first_kept: answer.first_kept,
            ended: answer.ended,
        })
    }

    /// Run `run_id`'s events from number `from` on, as they come: the stream asks the server
    /// for more every 50 ms while events flow, less often (up to every 500 ms) while none do,
    /// and ends after the run's last event (`run_end`). A run whose workers publish no events
    /// gives none, and the stream does not end by itself: wait for the outcome beside it.
    ///
    /// ```no_run
    /// use futures::StreamExt as _;
    /// # async fn example() -> Result<(), golato_restate::Error> {
    /// let client = golato_restate::Client::new("http://127.0.0.1:8080")?;
    /// let mut events = std::pin::pin!(client.watch("run-1", 0));
    /// while let Some(event) = events.next().await {
    ///     let event = event?;
    ///     println!("{} {:?}", event.seq, event.event);
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn watch(
        &self,
        run_id: &str,
        from: u64,
    ) -> impl futures::Stream<Item = Result<crate::RunEvent, Error>> + Send + 'static {
        struct Watching {
            client: Client,
            run_id: String,
            next: u64,
            queued: std::collections::VecDeque<crate::RunEvent>,
            ended: bool,
            pause: Duration,
        }
        let watching = Watching {
            client: self.clone(),
            run_id: run_id.to_owned(),
            next: from,
            queued: std::collections::VecDeque::new(),
            ended: false,
            pause: Duration::ZERO,
        };
        futures::stream::unfold(Some(watching), |watching| async move {
            let mut watching = watching?;
            loop {
                if let Some(event) = watching.queued.pop_front() {
                    return Some((Ok(event), Some(watching)));
                }
                if watching.ended {
                    return None;
                }
                tokio::time::sleep(watching.pause).await;
                match watching
                    .client
                    .events(&watching.run_id, watching.next)
                    .await
                {
                    Ok(page) => {
                        watching.pause = match page.events.is_empty() && page.next == watching.next
                        {
                            true => (watching.pause * 2).clamp(WATCH_PAUSE, WATCH_IDLE_PAUSE),
                            false => WATCH_PAUSE,
                        };
                        watching.next = page.next;
                        watching.ended = page.ended;
                        watching.queued.extend(page.events);
                    }
                    // The stream ends after an error.
                    Err(error) => return Some((Err(error), None)),
                }
            }
        })
    }

    /// The answer of a handler that returns nothing: success, or the server's refusal.
    async fn read_nothing(
        &self,
        url: &reqwest::Url,
        response: reqwest::Response,
    ) -> Result<(), Error> {
        match self.read::<serde_json::Value>(url, response).await {
            // The handler answers nothing: an empty body is not JSON.
            Ok(_) | Err(Error::Malformed { .. }) => Ok(()),
            Err(other) => Err(other),
        }
    }

    async fn read<T: serde::de::DeserializeOwned>(
        &self,
        url: &reqwest::Url,
        response: reqwest::Response,
    ) -> Result<T, Error> {
        let status = response.status();
        let text = response.text().await.map_err(|error| Error::Malformed {
            url: url.to_string(),
            reason: crate::causes(&error),
        })?;
        if !status.is_success() {
            let message = serde_json::from_str::<serde_json::Value>(&text)
                .ok()
                .and_then(|body| {
                    body.get("message")
                        .and_then(|m| m.as_str())
                        .map(str::to_owned)
                })
                .unwrap_or(text);
            return Err(Error::Refused {
                url: url.to_string(),
                status: status.as_u16(),
                message: message.chars().take(2_000).collect(),
                hint: if status.as_u16() == 404 {
                    "; no worker is registered for GolatoRun: start `golato serve` and register it (`--restate-admin`)"
                } else {
                    ""
                },
            });
        }
        serde_json::from_str(&text).map_err(|error| Error::Malformed {
            url: url.to_string(),
            reason: error.to_string(),
        })
    }
}

/// A key no other answer of this process (or, by its time and process ID, of another) uses.
fn answer_key() -> String {
    static COUNT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|since| since.as_nanos())
        .unwrap_or_default();
    let count = COUNT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("golato-answer-{}-{now}-{count}", std::process::id())
}
