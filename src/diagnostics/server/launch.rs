//! Starting a language server confined read-only, as `bash` is under the session's sandbox: its
//! input through a FIFO (the helper gives a confined command no standard input) and why it was
//! refused.

use std::path::Path;

/// `bash -c 'exec "$@" < FIFO'` in the sandbox's helper: the helper gives a confined command
/// no standard input (its own is golato's status pipe), so the server reads a FIFO golato
/// writes, made in a private folder.
pub(super) fn confined(
    sandbox: &golato_sandbox::Prepared,
    program: &str,
    arguments: &[String],
) -> Result<
    (
        tokio::process::Command,
        Option<tempfile::TempDir>,
        Option<std::io::PipeReader>,
    ),
    String,
> {
    let dir = tempfile::Builder::new()
        .prefix("golato-lsp-")
        .tempdir()
        .map_err(|error| format!("could not make its input pipe's folder: {error}"))?;
    rustix::fs::mknodat(
        rustix::fs::CWD,
        fifo_path(&dir),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .map_err(|error| format!("could not make its input pipe: {error}"))?;
    let (status, status_writer) = std::io::pipe()
        .map_err(|error| format!("could not make the sandbox's status pipe: {error}"))?;
    let mut command = reading_confined(sandbox, &fifo_path(&dir), program, arguments);
    command.stdin(status_writer);
    Ok((command, Some(dir), Some(status)))
}

/// `program` with `arguments` in `sandbox`, its standard input `input` (the helper gives a
/// confined command none of golato's: `bash -c 'exec "$@" < FILE'` opens it inside).
pub(crate) fn reading_confined(
    sandbox: &golato_sandbox::Prepared,
    input: &Path,
    program: &str,
    arguments: &[String],
) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(sandbox.helper());
    command
        .args(sandbox.helper_args())
        .args(["bash", "-c", "f=$1; shift; exec \"$@\" < \"$f\"", "golato"])
        .arg(input)
        .arg(program)
        .args(arguments);
    command
}

pub(super) fn fifo_path(dir: &tempfile::TempDir) -> std::path::PathBuf {
    dir.path().join("input")
}

/// What the sandbox's helper said before the server started: nothing, or why it could not
/// confine it.
pub(super) async fn refusal(status: std::io::PipeReader) -> Result<(), String> {
    let said = tokio::task::spawn_blocking(move || {
        let mut said = String::new();
        let _ = std::io::Read::read_to_string(&mut std::io::Read::take(status, 4096), &mut said);
        said
    })
    .await
    .unwrap_or_default();
    match said.trim() {
        "" => Ok(()),
        said => Err(format!(
            "the sandbox could not confine it, so it did not start: {said}"
        )),
    }
}
