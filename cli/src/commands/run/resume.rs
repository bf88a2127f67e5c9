//! `golato resume`: a saved session's flags and model given back, so going on reaches the same
//! model without the flags typed again.

use std::path::Path;

use crate::args::{ResumeArgs, RunArgs};
use crate::error::{CliError, Exit};
use crate::run::start;
use crate::settings::Settings;
use crate::store::session::Saved;

/// `golato resume [ID]`: a saved session goes on, in its own directory unless `-C` says
/// otherwise.
///
/// `ask` says whether a person at the terminal may be asked to trust the session's folder.
pub(crate) async fn resume(args: ResumeArgs, ask: bool) -> Result<Exit, CliError> {
    let (run, settings, saved) = resumed(args, ask)?;
    start(run, settings, Some(saved)).await
}

/// The session `golato resume` names, and the settings it goes on with: in its own directory
/// unless `-C` says otherwise.
pub(crate) fn resumed(args: ResumeArgs, ask: bool) -> Result<(RunArgs, Settings, Saved), CliError> {
    let saved = crate::store::session::find(args.id.as_deref(), None)?;
    let mut run = *args.run;
    if run.agent.cwd == Path::new(".") {
        run.agent.cwd = saved.header.cwd.clone();
    }
    same_model(&mut run.agent, &saved.header);
    let mut settings = crate::settings::resolve(run.agent.clone(), ask)?;
    crate::setup::instructions::ask_once(&mut settings, ask)?;
    Ok((run, settings, saved))
}

/// The model a session was started with, for the flags that do not name one now: its API and
/// server unless `--provider` or `--base-url` is given (they go together), its model unless
/// `--model` or `--provider` is.
fn same_model(agent: &mut crate::args::AgentArgs, header: &crate::store::session::Header) {
    if agent.script.is_some() {
        return;
    }
    let server_given = agent.provider.is_some() || agent.base_url.is_some();
    if agent.model.is_none() && agent.provider.is_none() {
        agent.model.clone_from(&header.model);
    }
    if !server_given {
        agent.provider = header
            .provider
            .as_deref()
            .and_then(crate::args::ProviderKind::named);
        agent.base_url.clone_from(&header.base_url);
    }
}

/// Before `-c` resolves its flags: the model of the session it goes on with (the folder's
/// newest), as `golato resume` takes it. A folder with no session is said so later, by the
/// search that opens it.
pub(crate) fn same_model_as_newest(agent: &mut crate::args::AgentArgs) {
    let Ok(cwd) = crate::settings::resolved::canonical_directory(&agent.cwd) else {
        return;
    };
    if let Ok(saved) = crate::store::session::find(None, Some(&cwd)) {
        same_model(agent, &saved.header);
    }
}
