//! What a client call can fail with, and the checks of what a caller gives it: a run ID, a URL.

use std::time::Duration;

/// Why a durable run could not be submitted, or a worker registered.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The URL given is not one.
    #[error(
        "{url:?} is not a URL: {reason}; give the server's address, such as http://127.0.0.1:8080"
    )]
    BadUrl {
        /// What was given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Nothing answered at the address for as long as the client waits.
    #[error("could not reach the Restate server at {url} (tried for {waited:?}): {reason}; is it running (`restate-server`, or `npx @restatedev/restate-server`), and is this its {api} address?")]
    Unreachable {
        /// The address tried.
        url: String,
        /// `ingress` or `admin`.
        api: &'static str,
        /// How long the client kept trying.
        waited: Duration,
        /// The last connection error.
        reason: String,
    },
    /// The server answered with an error.
    #[error("the Restate server at {url} refused the request (HTTP {status}): {message}{hint}")]
    Refused {
        /// The address asked.
        url: String,
        /// The HTTP status.
        status: u16,
        /// What the server said.
        message: String,
        /// What to do about it, when known.
        hint: &'static str,
    },
    /// A run ID golato does not send: it must name one run, the same in a URL and a header.
    #[error("{shown} is not a run ID: {why}; an ID is 1 to {max} letters, digits, '-', '_', '.' and ':' (golato's own look like run-18c3f…)", max = MAX_RUN_ID)]
    BadRunId {
        /// The ID, made visible and cut (control characters escaped).
        shown: String,
        /// What is wrong with it.
        why: String,
    },
    /// No run was submitted under this ID (or its outcome is older than what the server
    /// keeps: 365 days).
    #[error("no run {run_id} is known to the Restate server at {url}: was it submitted there under this ID? (an outcome is kept 365 days after its run ended)")]
    UnknownRun {
        /// The ID asked for.
        run_id: String,
        /// The server's ingress.
        url: String,
    },
    /// The run waits on no question of the call.
    #[error("run {run_id} waits on no question of call {call_id}: it was answered already, passed its deadline, or was never asked (`golato submit --id {run_id}` shows the run's open questions)")]
    NoQuestion {
        /// The run.
        run_id: String,
        /// The call.
        call_id: String,
    },
    /// The question was answered (or refused at its deadline) before this answer came.
    #[error("the question of call {call_id} of run {run_id} is closed: {message}")]
    Closed {
        /// The run.
        run_id: String,
        /// The call.
        call_id: String,
        /// What the server said.
        message: String,
    },
    /// The server answered something that is not a durable run's outcome.
    #[error("the Restate server at {url} answered something that is not a golato outcome ({reason}); is the deployment there golato's, of the same version?")]
    Malformed {
        /// The address asked.
        url: String,
        /// What could not be read.
        reason: String,
    },
}

/// The longest run ID golato takes: it is a URL segment and a header value, and Restate keys
/// objects by it.
pub const MAX_RUN_ID: usize = 128;

/// Refuses a run ID that would not name one run the same way everywhere: empty, starting with
/// `.` (`.` and `..` are dot segments a URL collapses), longer than [`MAX_RUN_ID`], or holding
/// anything but ASCII letters, digits, `-`, `_`, `.` and `:` ([`golato::name::why_not_plain`])
/// (whitespace and control characters were folded or refused by servers and proxies on the way,
/// so that two IDs became one run, or none).
///
/// ```
/// use golato_restate::check_run_id;
/// assert!(check_run_id("run-18c3f-2a").is_ok());
/// assert!(check_run_id("tab\tid").is_err());
/// assert!(check_run_id("café").is_err());
/// assert!(check_run_id("..").is_err());
/// assert!(check_run_id("a..b").is_ok());
/// ```
///
/// # Errors
/// [`Error::BadRunId`], naming the ID and what is wrong.
pub fn check_run_id(id: &str) -> Result<(), Error> {
    match golato::name::why_not_plain(id, MAX_RUN_ID, &[':']) {
        None => Ok(()),
        Some(why) => Err(Error::BadRunId {
            shown: golato::name::shown(id),
            why,
        }),
    }
}

pub(crate) fn parse(url: &str) -> Result<reqwest::Url, Error> {
    let parsed = reqwest::Url::parse(url).map_err(|error| Error::BadUrl {
        url: url.to_owned(),
        reason: error.to_string(),
    })?;
    if parsed.cannot_be_a_base() || !matches!(parsed.scheme(), "http" | "https") {
        return Err(Error::BadUrl {
            url: url.to_owned(),
            reason: "it is not an http:// or https:// address".to_owned(),
        });
    }
    Ok(parsed)
}
