//! The documentation page's third example: select only some tools, then validate the set.
//!
//! ```text
//! cargo run -p golato --example selecting_tools
//! ```

use std::io::Write;
use std::path::Path;

use golato::builtin;
use golato::tool;

mod support;
use support::lookup_tool;

fn main() -> anyhow::Result<()> {
    run(Path::new("."), &mut std::io::stdout().lock())
}

/// The example proper, writing the selected tools' names to `out` (the tests read it).
pub(crate) fn run(workspace: &Path, out: &mut impl Write) -> anyhow::Result<()> {
    let tools = builtin::new(builtin::Config {
        working_directory: workspace.into(),
        allowed_tool_names: Some(vec!["read".into(), "lookup_customer".into()]),
        excluded_tool_names: vec!["bash".into()],
        custom_tools: vec![lookup_tool()],
        ..Default::default()
    })?;
    tool::validate(&tools)?;

    let names: Vec<&str> = tools.iter().map(|tool| tool.name()).collect();
    writeln!(out, "selected: {}", names.join(", "))?;
    Ok(())
}
