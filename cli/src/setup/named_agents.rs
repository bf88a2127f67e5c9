//! Agents people keep as Markdown files: Claude Code's `.claude/agents/` and golato's
//! `.golato/agents/` (a trusted project's), the user's `~/.config/golato/agents/` and
//! `~/.claude/agents/`. Each is a choice of the `task` tool (`"agent": NAME`), described to the
//! model by its `description`, run with its body as instructions, its `tools` (never more
//! than the children's) and its `model`.

use std::path::{Path, PathBuf};

use golato::subagent::NamedAgent;

use crate::setup::kept_files::{self, bad_name, shown};

/// The largest agent file read.
const MAX_AGENT_BYTES: u64 = 64 * 1024;
/// The most agents offered (each is a line of the `task` tool's description).
const MAX_AGENTS: usize = 100;

/// The agents found, where each came from, and what was left out (each with why).
#[derive(Debug, Default)]
pub(crate) struct Found {
    pub(crate) agents: Vec<(NamedAgent, PathBuf)>,
    pub(crate) warnings: Vec<String>,
    /// The project's folders not read because the folder is not trusted.
    pub(crate) untrusted: Vec<PathBuf>,
}

/// The agents a session in `cwd` offers: a trusted project's, then the user's; a name found
/// twice keeps its first.
pub(crate) fn gather(cwd: &Path, trusted: bool) -> Found {
    let mut found = Found::default();
    for folder in kept_files::folders(cwd, trusted, "agents", &mut found.untrusted) {
        for path in kept_files::markdown_files(&folder.dir) {
            match read_agent(&folder, &path, &mut found.warnings) {
                Ok(agent) => match found
                    .agents
                    .iter()
                    .find(|(known, _)| known.name == agent.name)
                {
                    Some((_, first)) => found.warnings.push(format!(
                        "the agent {} was left out: {} is {} already",
                        shown(&path),
                        agent.name,
                        shown(first)
                    )),
                    None if found.agents.len() >= MAX_AGENTS => found.warnings.push(format!(
                        "the agent {} was left out: {MAX_AGENTS} agents are offered at most",
                        shown(&path)
                    )),
                    None => found.agents.push((agent, path)),
                },
                Err(why) => found
                    .warnings
                    .push(format!("the agent {} was left out: {why}", shown(&path))),
            }
        }
    }
    found
}

/// The agent in `path`, or why it is refused.
fn read_agent(
    folder: &kept_files::Folder,
    path: &Path,
    warnings: &mut Vec<String>,
) -> Result<NamedAgent, String> {
    let text = kept_files::read(folder, path, MAX_AGENT_BYTES)?;
    let parsed = crate::setup::front_matter::parse(&text, false)?;
    let name = parsed
        .text("name")
        .ok_or("its front matter has no `name` (a text)")?;
    if let Some(why) = bad_name(&name) {
        return Err(why);
    }
    let description = parsed.text("description").ok_or(
        "its front matter has no `description` (a text): the model chooses an agent by it",
    )?;
    let instructions = parsed.body.trim();
    if instructions.is_empty() {
        return Err("its body, the agent's instructions, is empty".into());
    }
    let owner = format!("the agent {name} ({})", shown(path));
    let ignored: Vec<String> = parsed
        .keys()
        .into_iter()
        .filter(|key| !matches!(key.as_str(), "name" | "description" | "tools" | "model"))
        .collect();
    if !ignored.is_empty() {
        warnings.push(format!(
            "{owner}: golato has no counterpart for {}; ignored",
            ignored.join(", ")
        ));
    }
    let mut agent = NamedAgent::new(name, description, instructions);
    if let Some(tools) =
        kept_files::claude_tools(&parsed.fields["tools"], "tools", &owner, warnings)?
    {
        agent = agent.with_tools(tools);
    }
    match parsed.text("model").as_deref() {
        None | Some("inherit") => {}
        Some(alias @ ("sonnet" | "opus" | "haiku")) => warnings.push(format!(
            "{owner}: model `{alias}` is Claude Code's alias; the children's model answers (name the model itself)"
        )),
        Some(model) => agent = agent.with_model(model),
    }
    Ok(agent)
}

/// The agents as lines: name, where from, what it is for, its tools and model; whether the
/// `task` tool that runs them is on, when known.
pub(crate) fn lines(found: &Found, task_on: Option<bool>) -> Vec<String> {
    let mut lines = Vec::new();
    if found.agents.is_empty() {
        lines.push(
            "no agents here: put a Markdown file with name and description in .golato/agents/ or .claude/agents/ (this project, when trusted), ~/.config/golato/agents/ or ~/.claude/agents/".to_owned(),
        );
    }
    for (agent, path) in &found.agents {
        lines.push(format!(
            "{}  {}",
            crate::view::shown::visible(&agent.name),
            shown(path)
        ));
        lines.push(format!(
            "    {}",
            crate::view::shown::visible(&agent.description.replace('\n', " "))
        ));
        let tools = agent
            .tools
            .as_ref()
            .map_or("the children's".to_owned(), |tools| tools.join(", "));
        let model = agent.model.as_deref().unwrap_or("the children's");
        lines.push(format!(
            "    tools: {}; model: {}",
            crate::view::shown::visible(&tools),
            crate::view::shown::visible(model)
        ));
    }
    match (found.agents.is_empty(), task_on) {
        (true, _) | (false, Some(true)) => {}
        (false, Some(false)) => lines.push(
            "the task tool is off, so no agent runs: --tools read,bash,edit,write,task (or tools in the configuration) turns it on".to_owned(),
        ),
        (false, None) => lines.push(
            "they run as choices of the task tool, which --tools read,bash,edit,write,task (or tools in the configuration) turns on".to_owned(),
        ),
    }
    lines
}

/// `golato agents`: the agents a session here offers, and what was left out with why.
pub(crate) fn command(
    cwd: &Path,
    trust_given: bool,
) -> Result<crate::error::Exit, crate::error::CliError> {
    use std::io::Write as _;
    let found = gather(cwd, crate::settings::trust::trusted(cwd, trust_given));
    let mut out = std::io::stdout().lock();
    for line in lines(&found, None) {
        let _ = writeln!(out, "{line}");
    }
    kept_files::say_left_out(&found.untrusted, &found.warnings);
    Ok(crate::error::Exit::Success)
}
