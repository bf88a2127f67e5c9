//! `--approve ask|edits|never`: which tool calls wait for a yes on the terminal, built on
//! golato's hooks.
//!
//! The hook decides whether a call needs asking; the question goes to the loop that drives the
//! run (`golato run`'s drive loop, the front end), which shows it, reads the answer from the terminal and sends it
//! back. Where nobody can answer (standard input is not a terminal, `--json`, a worker), a call
//! that needs asking is refused with a result that says how to allow it: never a hang.

mod terminal;

pub(crate) use terminal::{ask, terminal_lines, Typed, NOT_TEXT};

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use futures::future::BoxFuture;
use golato::hook::HookContext;
use golato::policy::{Approval, Decision};
use tokio::sync::{mpsc, oneshot};

use super::remember::{self, web_host};
use crate::args::Approve;
use crate::view::report::Answer;

/// A call waiting for the person's answer.
#[derive(Debug)]
pub(crate) struct Question {
    /// The tool's name.
    pub(crate) tool: String,
    /// The call's ID, as the model gave it.
    pub(crate) call_id: String,
    /// What the person must see whole to decide: the command, or the path written.
    pub(crate) detail: String,
    /// What asks: a rule, a hook, or the approval mode.
    pub(crate) why: String,
    /// The call's arguments, which an edited command replaces.
    pub(crate) arguments: serde_json::Value,
    /// What an edit or a write would change, as a unified diff, when it can be worked out.
    pub(crate) preview: Option<String>,
    /// The allow rules a "don't ask again" may remember, narrowest first
    /// (`bash(cargo test:*)`, then `bash(cargo:*)`).
    pub(crate) remember: Option<remember::Offer>,
    pub(crate) reply: oneshot::Sender<Reply>,
}

/// A person's reply to a question.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Reply {
    Answer(Answer),
    /// Yes, with the command as the person changed it.
    Edited(String),
    /// No, and why, to tell the model.
    RefusedBecause(String),
    /// No, to this call and every later one of this tool in this session, unasked.
    NeverAgain,
    /// Yes, and to every later call the allow rule allows (one the question offered), in this
    /// session (the front end writes it to a configuration file too).
    Remember(String),
    /// Nobody answered (why, to tell the model): the call is not run.
    Unanswered(String),
}

impl From<Answer> for Reply {
    fn from(answer: Answer) -> Reply {
        Reply::Answer(answer)
    }
}

/// Lines of a call's detail shown before the question; more are shown on `v`.
const DETAIL_LINES: usize = 20;

/// What a call does, whole, as the question shows it (made visible when shown): `bash $ …`
/// with the whole command, `write PATH (N bytes)`, `edit PATH (N edit(s))`.
pub(crate) fn detail(call: &golato::message::ToolCall, arguments: &serde_json::Value) -> String {
    let text = |name: &str| arguments[name].as_str().map(str::to_owned);
    match call.name.as_str() {
        "bash" => text("command").map(|command| format!("bash $ {command}")),
        "web_fetch" => text("url").map(|url| format!("web_fetch {url}")),
        "write" => text("path").map(|path| {
            let bytes = text("content").map_or(0, |content| content.len());
            format!("write {path} ({bytes} bytes)")
        }),
        "edit" => text("path").map(|path| {
            let edits = arguments["edits"].as_array().map_or(0, Vec::len);
            format!(
                "edit {path} ({})",
                crate::view::shown::count(edits as u64, "edit")
            )
        }),
        _ => None,
    }
    .unwrap_or_else(|| format!("{} {}", call.name, call.arguments))
}

/// The questions of a run, for the loop that drives it.
pub(crate) type Questions = mpsc::UnboundedReceiver<Question>;

/// The hook: asks (or refuses) the calls `mode` says need a yes.
pub(crate) struct Approvals {
    /// The mode; `/approve MODE` changes it mid-session.
    mode: Mutex<Approve>,
    /// Where `--approve edits` lets writes and edits through.
    roots: Vec<PathBuf>,
    cwd: PathBuf,
    /// Where questions go; `None` when nobody can answer.
    questions: Option<mpsc::UnboundedSender<Question>>,
    /// Tools answered "always".
    always: Arc<Mutex<HashSet<String>>>,
    /// Tools answered "never again".
    never: Arc<Mutex<HashSet<String>>>,
    /// Allow rules answered "don't ask again for this".
    remembered: Arc<Mutex<golato::policy::Rules>>,
    /// The domains web_fetch reaches unasked (and the denied ones, which it never reaches).
    web_domains: golato::sandbox::network::NetworkPolicy,
    /// Whether the sandbox confines commands (`--approve auto` then reviews only what reaches
    /// past it).
    sandboxed: bool,
    /// Who decides first under `--approve auto`.
    reviewer: std::sync::OnceLock<Arc<crate::setup::reviewer::Reviewer>>,
    /// Who a question goes to instead of the terminal: a durable run's server (`golato serve
    /// --approve auto`).
    person: std::sync::OnceLock<Arc<dyn golato::policy::Approver>>,
    /// This, for a question asked after a review (the review is awaited first).
    me: std::sync::Weak<Approvals>,
}

impl Approvals {
    /// The hook, and the receiving end of its questions when `interactive`.
    pub(crate) fn new(
        mode: Approve,
        cwd: &Path,
        writable: &[PathBuf],
        interactive: bool,
        web_domains: golato::sandbox::network::NetworkPolicy,
        sandboxed: bool,
    ) -> (Arc<Approvals>, Option<Questions>) {
        let (sender, receiver) = match interactive {
            true => {
                let (sender, receiver) = mpsc::unbounded_channel();
                (Some(sender), Some(receiver))
            }
            false => (None, None),
        };
        let cwd = cwd.canonicalize().unwrap_or_else(|_| cwd.to_owned());
        let roots = std::iter::once(cwd.clone())
            .chain(
                writable
                    .iter()
                    .map(|root| golato::sandbox::resolve(&cwd, root)),
            )
            .collect();
        let approver = Arc::new_cyclic(|me| Approvals {
            mode: Mutex::new(mode),
            roots,
            cwd,
            questions: sender,
            always: Arc::default(),
            never: Arc::default(),
            remembered: Arc::default(),
            web_domains,
            sandboxed,
            reviewer: std::sync::OnceLock::new(),
            person: std::sync::OnceLock::new(),
            me: me.clone(),
        });
        (approver, receiver)
    }

    /// Gives `--approve auto` its reviewer (once).
    pub(crate) fn set_reviewer(&self, reviewer: Arc<crate::setup::reviewer::Reviewer>) {
        let _ = self.reviewer.set(reviewer);
    }

    /// Sends the questions the reviewer leaves to `person` (a durable run's server).
    pub(crate) fn set_person(&self, person: Arc<dyn golato::policy::Approver>) {
        let _ = self.person.set(person);
    }

    /// The reviewer, when there is one.
    pub(crate) fn reviewer(&self) -> Option<&Arc<crate::setup::reviewer::Reviewer>> {
        self.reviewer.get()
    }

    /// The person said `text`, as typed: what the reviewer takes as their intent.
    pub(crate) fn heard(&self, text: &str) {
        if let Some(reviewer) = self.reviewer.get() {
            reviewer.heard(text);
        }
    }

    /// The approval mode now.
    pub(crate) fn mode(&self) -> Approve {
        *self.mode.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Changes the mode for the calls to come; "always" answers given so far are forgotten
    /// when the mode gets stricter, so `/approve ask` means every call asks again.
    pub(crate) fn set_mode(&self, mode: Approve) {
        *self.mode.lock().unwrap_or_else(PoisonError::into_inner) = mode;
        if mode == Approve::Ask {
            self.always
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clear();
        }
    }

    /// Whether a "don't ask again" answer allows the call.
    fn remembered(&self, ctx: &HookContext) -> bool {
        let remembered = self
            .remembered
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        remembered
            .decide(&ctx.call.name, &ctx.arguments, &self.cwd)
            .is_some_and(|verdict| verdict.decision == Decision::Allow)
    }

    /// What "always" remembers of the call: its tool, or for web_fetch its tool and domain (a
    /// yes to one site is no yes to every site).
    fn always_key(ctx: &HookContext) -> String {
        match ctx.call.name.as_str() {
            "web_fetch" => format!("web_fetch {}", web_host(&ctx.arguments).unwrap_or_default()),
            tool => tool.to_owned(),
        }
    }

    /// Whether the call must wait for a yes.
    fn needs_asking(&self, ctx: &HookContext) -> bool {
        let tool = ctx.call.name.as_str();
        // A domain the allowed domains do not list is asked about whatever the mode: a page
        // read is what a prompt injection would exfiltrate through.
        if tool == "web_fetch" {
            let listed = web_host(&ctx.arguments).is_some_and(|host| {
                let port = reqwest::Url::parse(ctx.arguments["url"].as_str().unwrap_or_default())
                    .ok()
                    .and_then(|url| url.port_or_known_default())
                    .unwrap_or(443);
                self.web_domains.judge_host(&host, port).is_ok()
            });
            return !listed
                && !self
                    .always
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .contains(&Self::always_key(ctx))
                && !self.remembered(ctx);
        }
        if !matches!(tool, "bash" | "write" | "edit") {
            return false;
        }
        if self
            .always
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(tool)
            || self.remembered(ctx)
        {
            return false;
        }
        match self.mode() {
            Approve::Never => false,
            Approve::Ask => true,
            // Reviewed: what reaches past the sandbox (a write outside the writable folders),
            // or everything when nothing confines it.
            Approve::Auto if !self.sandboxed => true,
            Approve::Auto => match (tool, ctx.arguments["path"].as_str()) {
                ("write" | "edit", Some(path)) => {
                    let path = golato::sandbox::resolve(&self.cwd, Path::new(path));
                    !self.roots.iter().any(|root| path.starts_with(root))
                }
                ("write" | "edit", None) => true,
                _ => false,
            },
            Approve::Edits => match (tool, ctx.arguments["path"].as_str()) {
                ("write" | "edit", Some(path)) => {
                    let path = golato::sandbox::resolve(&self.cwd, Path::new(path));
                    !self.roots.iter().any(|root| path.starts_with(root))
                }
                _ => true,
            },
        }
    }
}

impl golato::policy::Approver for Approvals {
    fn default_decision(&self, ctx: &HookContext) -> Decision {
        match self.needs_asking(ctx) {
            true => Decision::Ask,
            false => Decision::Allow,
        }
    }

    fn ask(&self, ctx: HookContext, why: String) -> BoxFuture<'static, Result<Approval, String>> {
        let tool = ctx.call.name.clone();
        let always_yes = self
            .always
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(&Self::always_key(&ctx));
        let web_host = (tool == "web_fetch").then(|| web_host(&ctx.arguments).unwrap_or_default());
        let why = match &web_host {
            Some(host) if why == "the approval mode" => {
                format!("{host} is a new domain: not among the allowed domains")
            }
            _ => why,
        };
        if always_yes || self.remembered(&ctx) {
            return Box::pin(async { Ok(Approval::Allow) });
        }
        let never = self
            .never
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(&tool);
        if never {
            return Box::pin(async move {
                Ok(Approval::Refuse {
                    reason: Some(format!(
                        "they refused every {tool} call in this session; do it another way"
                    )),
                })
            });
        }
        if let (Approve::Auto, Some(reviewer), Some(me)) =
            (self.mode(), self.reviewer.get(), self.me.upgrade())
        {
            if reviewer.paused() {
                let why = format!(
                    "the reviewer refused {} calls in a row or {} in this session, so the person decides again ({why})",
                    crate::setup::reviewer::DENIALS_IN_A_ROW,
                    crate::setup::reviewer::DENIALS_IN_A_SESSION
                );
                return self.ask_person(ctx, why, web_host);
            }
            {
                let reviewer = Arc::clone(reviewer);
                return Box::pin(async move {
                    use crate::setup::reviewer::Outcome;
                    use golato::host::console::WaitingOn;
                    let probe = ctx.probe();
                    probe.waiting(|| WaitingOn::Other {
                        what: "the reviewer model".into(),
                    });
                    let outcome = reviewed(reviewer, &ctx, &why).await;
                    let why = match outcome {
                        Outcome::Allow(_) => return Ok(Approval::Allow),
                        Outcome::Deny(review) => {
                            return Err(format!(
                                "This {tool} call was not run: golato's reviewer refused it (risk {}): {} Take a safer way to do the task, or ask the person.",
                                review.risk, review.rationale
                            ))
                        }
                        Outcome::Ask(review) => format!("the reviewer asks: {}", review.rationale),
                        Outcome::Failed(review) => format!(
                            "{}; the person decides",
                            review.failure.unwrap_or_default()
                        ),
                        Outcome::Paused => format!(
                            "the reviewer refused {} calls in a row or {} in this session, so the person decides again",
                            crate::setup::reviewer::DENIALS_IN_A_ROW,
                            crate::setup::reviewer::DENIALS_IN_A_SESSION
                        ),
                    };
                    probe.waiting(|| WaitingOn::Person);
                    me.ask_person(ctx, why, web_host).await
                });
            }
        }
        self.ask_person(ctx, why, web_host)
    }

    fn note(&self, text: &str) {
        eprintln!("golato: {}", crate::view::shown::visible(text));
    }
}

/// The reviewer's outcome for the call, decided once: in a journaled (durable) run it is a step
/// of the run's journal, so a run picked up again replays the decision, and a review cut short
/// (its worker died during it) is not asked again: the person decides. What a review the model
/// answered used counts for the run's budget (`--max-tokens`, `--max-cost`).
async fn reviewed(
    reviewer: Arc<crate::setup::reviewer::Reviewer>,
    ctx: &HookContext,
    why: &str,
) -> crate::setup::reviewer::Outcome {
    use crate::setup::reviewer::Outcome;
    let tool = ctx.call.name.clone();
    let call = detail(&ctx.call, &ctx.arguments);
    let work = {
        let (reviewer, ctx, why) = (Arc::clone(&reviewer), ctx.clone(), why.to_owned());
        let (tool, call) = (tool.clone(), call.clone());
        golato::journal::StepWork::with_attempt(move |attempt| async move {
            let outcome = match attempt {
                1 => reviewer.review(&tool, call, &ctx.arguments, &why).await,
                _ => reviewer.cut_short(&tool, call),
            };
            if let Outcome::Allow(review)
            | Outcome::Deny(review)
            | Outcome::Ask(review)
            | Outcome::Failed(review) = &outcome
            {
                if let Some(usage) = &review.usage {
                    ctx.spend(usage, review.cost);
                }
            }
            serde_json::to_value(&outcome).map_err(|_| golato::journal::NotRecorded)
        })
    };
    let recorded = ctx.step("review", work).await.map_err(|error| match error {
        golato::journal::StepError::Journal(error) => error.to_string(),
        golato::journal::StepError::NotRecorded => "nothing was recorded".to_owned(),
    });
    match recorded.and_then(|value| {
        serde_json::from_value::<Outcome>(value).map_err(|error| error.to_string())
    }) {
        Ok(outcome) => outcome,
        Err(reason) => reviewer.unrecorded(&tool, call, &reason),
    }
}

impl Approvals {
    /// The question to the person, or the refusal when nobody can answer.
    fn ask_person(
        &self,
        ctx: HookContext,
        why: String,
        web_host: Option<String>,
    ) -> BoxFuture<'static, Result<Approval, String>> {
        let tool = ctx.call.name.clone();
        if let Some(person) = self.person.get() {
            return person.ask(ctx, why);
        }
        let Some(questions) = &self.questions else {
            if let Some(host) = web_host {
                let reason = format!(
                    "This web_fetch call was not run: {host} is not among the allowed domains and nobody can answer here. The person can allow it with --allow-domain {host}, or a rule web_fetch({host})."
                );
                return Box::pin(async move { Err(reason) });
            }
            let reason = format!(
                "This {tool} call was not run: it needs approval ({why}; --approve {}) and no terminal can answer (standard input is not a terminal, or --json). Allow it with --allow RULE or --approve never, or run golato on a terminal.",
                self.mode()
            );
            return Box::pin(async move { Err(reason) });
        };
        let (reply, answer) = oneshot::channel();
        let asked = questions.send(Question {
            tool: tool.clone(),
            call_id: ctx.call.id.clone(),
            detail: detail(&ctx.call, &ctx.arguments),
            why,
            preview: crate::view::preview::change(&self.cwd, &tool, &ctx.arguments),
            remember: remember::offer(&tool, &ctx.arguments, &self.cwd),
            arguments: ctx.arguments.clone(),
            reply,
        });
        let remembered = Arc::clone(&self.remembered);
        let cwd = self.cwd.clone();
        let always = Arc::clone(&self.always);
        let always_key = Self::always_key(&ctx);
        let never = Arc::clone(&self.never);
        Box::pin(async move {
            if asked.is_err() {
                return Err(format!(
                    "This {tool} call was not run: the run is ending and nobody can approve it."
                ));
            }
            let reply = tokio::select! {
                reply = answer => reply.unwrap_or(Reply::Answer(Answer::No)),
                () = ctx.cancel.cancelled() => Reply::Answer(Answer::No),
            };
            Ok(match reply {
                Reply::Unanswered(why) => {
                    return Err(format!("This {tool} call was not run: {why}."))
                }
                Reply::Answer(Answer::Yes) => Approval::Allow,
                Reply::Answer(Answer::Always) => {
                    always
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .insert(always_key);
                    Approval::Allow
                }
                Reply::Remember(rule) => {
                    let mut rules = remembered.lock().unwrap_or_else(PoisonError::into_inner);
                    let source = golato::policy::Source::flag("your answer");
                    if let Err(error) = rules.add(Decision::Allow, &rule, source, &cwd) {
                        tracing::debug!(%error, "a remembered rule did not parse");
                    }
                    Approval::Allow
                }
                Reply::Answer(Answer::No) => Approval::Refuse { reason: None },
                Reply::Edited(command) => {
                    let mut arguments = ctx.arguments.clone();
                    arguments["command"] = serde_json::Value::String(command);
                    Approval::AllowWith(arguments)
                }
                Reply::RefusedBecause(reason) => Approval::Refuse {
                    reason: Some(reason),
                },
                Reply::NeverAgain => {
                    never
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .insert(tool.clone());
                    Approval::Refuse {
                        reason: Some(format!(
                            "they refused this and every later {tool} call in this session"
                        )),
                    }
                }
            })
        })
    }
}

/// Nobody: what a durable run's questions fall back to when the run has no key (never, for a
/// durable run; the refusal says so if it ever is).
pub(crate) struct NobodyHere;

impl golato::policy::Approver for NobodyHere {
    fn default_decision(&self, _ctx: &HookContext) -> Decision {
        Decision::Ask
    }

    fn ask(&self, ctx: HookContext, why: String) -> BoxFuture<'static, Result<Approval, String>> {
        let tool = ctx.call.name;
        Box::pin(async move {
            Err(format!(
                "This {tool} call was not run: it needs a person's yes ({why}) and this run has no server to ask through."
            ))
        })
    }
}

pub(crate) async fn next_question(questions: &mut Option<Questions>) -> Option<Question> {
    match questions {
        Some(questions) => questions.recv().await,
        None => std::future::pending().await,
    }
}
