//! The line that says what a run uses: provider, model, endpoint, directory and tools. On stderr
//! before a run (so piped stdout stays the run's own), and in `--json`'s `run_start`.

use std::fmt;
use std::path::PathBuf;

use serde_json::{json, Value};

/// What a run uses.
#[derive(Debug, Clone)]
pub(crate) struct Header {
    /// `openai`, `anthropic`, `openai-responses`, or `script` for a replayed recording.
    pub(crate) provider: &'static str,
    /// The model ID asked for (none for a script).
    pub(crate) model: Option<String>,
    /// The server's host (and port), or the script's path.
    pub(crate) endpoint: String,
    /// The tools' working directory.
    pub(crate) cwd: PathBuf,
    /// The tools offered to the model, by name.
    pub(crate) tools: Vec<String>,
    /// What the built-ins may touch.
    pub(crate) sandbox: golato::sandbox::Policy,
    /// Which calls wait for a yes.
    pub(crate) approve: crate::args::Approve,
    /// The session the run is saved in, if any.
    pub(crate) session: Option<String>,
}

/// The host and port of `url`, or `url` itself when it does not parse.
pub(crate) fn host_of(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(parsed) => match (parsed.host_str(), parsed.port()) {
            (Some(host), Some(port)) => format!("{host}:{port}"),
            (Some(host), None) => host.to_owned(),
            _ => url.to_owned(),
        },
        Err(_) => url.to_owned(),
    }
}

impl Header {
    /// The fields `run_start` carries in `--json`.
    pub(crate) fn fields(&self) -> Value {
        json!({
            "provider": self.provider,
            "model": self.model,
            "endpoint": self.endpoint,
            "cwd": self.cwd,
            "tools": self.tools,
            "sandbox": self.sandbox.mode.name(),
            "network": self.sandbox.mode == golato::sandbox::Mode::Off || self.sandbox.allow_network,
            "network_by_domain": self.sandbox.domains.is_some() && !self.sandbox.allow_network,
            "pass_env": self.sandbox.pass_env,
            "approve": self.approve.name(),
            "session": self.session,
        })
    }
}

impl fmt::Display for Header {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "golato: {}", self.provider)?;
        if let Some(model) = &self.model {
            write!(f, " {model}")?;
        }
        write!(
            f,
            " at {} · cwd {} · tools {}",
            self.endpoint,
            self.cwd.display(),
            if self.tools.is_empty() {
                "none".to_owned()
            } else {
                self.tools.join(",")
            }
        )?;
        write!(f, " · sandbox {}", self.sandbox.mode)?;
        if self.sandbox.mode != golato::sandbox::Mode::Off {
            f.write_str(match (self.sandbox.allow_network, &self.sandbox.domains) {
                (true, _) => ", network",
                (false, Some(_)) => ", network by domain (through golato's proxy)",
                (false, None) => ", no network",
            })?;
            // Said up front: a command that needs a token fails otherwise without a clue.
            f.write_str(", secrets kept from bash")?;
            if !self.sandbox.pass_env.is_empty() {
                write!(f, " but {}", self.sandbox.pass_env.join(","))?;
            }
        }
        write!(f, " · approve {}", self.approve)?;
        if let Some(session) = &self.session {
            write!(f, " · session {session}")?;
        }
        Ok(())
    }
}
