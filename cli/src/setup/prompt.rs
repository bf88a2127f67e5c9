//! Where `golato run`'s prompt comes from: the argument, `@FILE`, or standard input (`-`, or
//! piped with no argument); and the images `--image` attaches to it.

use std::io::{IsTerminal as _, Read as _};
use std::path::{Path, PathBuf};

use base64::Engine as _;
use golato::message::{Content, UserMessage};

use crate::error::CliError;

/// The largest prompt read from a file or standard input: 16 MiB.
const MAX_PROMPT_BYTES: u64 = 16 * 1024 * 1024;
/// The largest image attached: 20 MiB (providers refuse far smaller ones).
const MAX_IMAGE_BYTES: u64 = 20 * 1024 * 1024;

/// The prompt as a user message: its text, then the images.
pub(crate) fn user_message(
    argument: Option<String>,
    images: &[PathBuf],
) -> Result<UserMessage, CliError> {
    let Some(text) = text(argument)? else {
        return Err(CliError::usage(
            "no prompt: give it as an argument (golato run \"fix the build\"), as @FILE, or on standard input (echo \"fix the build\" | golato run)",
        ));
    };
    if text.trim().is_empty() && images.is_empty() {
        return Err(CliError::usage(
            "the prompt is empty; say what the agent should do",
        ));
    }
    with_images(text, images)
}

/// A prompt to go on with, if one was given (going on with a session needs none).
pub(crate) fn optional_user_message(
    argument: Option<String>,
    images: &[PathBuf],
) -> Result<Option<UserMessage>, CliError> {
    match text(argument)? {
        Some(text) if !text.trim().is_empty() || !images.is_empty() => {
            with_images(text, images).map(Some)
        }
        _ if !images.is_empty() => with_images(String::new(), images).map(Some),
        _ => Ok(None),
    }
}

/// The prompt's text: the argument, a file's or standard input's; `None` when there is no
/// argument and standard input is a terminal.
fn text(argument: Option<String>) -> Result<Option<String>, CliError> {
    Ok(Some(match argument.as_deref() {
        Some("-") => from_stdin()?,
        Some(argument) => match argument.strip_prefix('@') {
            Some(path) => read_bounded(Path::new(path), MAX_PROMPT_BYTES).map_err(|error| {
                CliError::usage(format!(
                    "cannot read the prompt from {path}: {error}; give the prompt itself, @FILE for a file's contents, or - for standard input"
                ))
            })?,
            None => argument.to_owned(),
        },
        None if std::io::stdin().is_terminal() => return Ok(None),
        None => from_stdin()?,
    }))
}

fn with_images(text: String, images: &[PathBuf]) -> Result<UserMessage, CliError> {
    let mut content = vec![Content::text(text)];
    for path in images {
        content.push(image(path)?);
    }
    Ok(UserMessage { content })
}

fn from_stdin() -> Result<String, CliError> {
    let mut bytes = Vec::new();
    std::io::stdin()
        .lock()
        .take(MAX_PROMPT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|error| {
            CliError::usage(format!(
                "could not read the prompt from standard input: {error}"
            ))
        })?;
    if bytes.len() as u64 > MAX_PROMPT_BYTES {
        return Err(CliError::usage(format!(
            "the prompt on standard input is larger than {} MiB, the most golato reads",
            MAX_PROMPT_BYTES / (1024 * 1024)
        )));
    }
    String::from_utf8(bytes)
        .map_err(|_| CliError::usage("the prompt on standard input is not UTF-8 text"))
}

/// The text of the file at `path` (an `@FILE` of a prompt or a system prompt), read no further
/// than `limit` bytes: a regular file only, opened without blocking (a FIFO would hang golato
/// at start, `/dev/zero` would be read without end), never one of the kernel's pseudo-files
/// (`/proc/self/environ` holds golato's whole environment, API keys included) and never a
/// credential path the sandbox denies (`~/.ssh`, `~/.aws`, …): whatever a file names is sent to
/// the model.
pub(crate) fn read_bounded(path: &Path, limit: u64) -> std::io::Result<String> {
    let refused = |why: String| std::io::Error::new(std::io::ErrorKind::PermissionDenied, why);
    let real = path.canonicalize()?;
    if let Some(denied) = golato::sandbox::CREDENTIAL_PATHS
        .iter()
        .map(|denied| golato::sandbox::resolve(Path::new("/"), Path::new(denied)))
        .find(|denied| real.starts_with(denied))
    {
        return Err(refused(format!(
            "it lies in {}, a credential folder the sandbox keeps from the model",
            denied.display()
        )));
    }
    let file = crate::bounded::open_regular(&real).map_err(|why| match why {
        crate::bounded::Unreadable::Io(error) => error,
        other => refused(other.to_string()),
    })?;
    // procfs and sysfs: files that say they are regular and empty, and hold the process's
    // secrets or the machine's state.
    const PROC: u64 = 0x9fa0;
    const SYS: u64 = 0x6265_6572;
    let kind = rustix::fs::fstatfs(&file)
        .map(|fs| fs.f_type as u64)
        .unwrap_or(0);
    if kind == PROC || kind == SYS {
        return Err(refused(format!(
            "{} is one of the kernel's files, not a file of text",
            real.display()
        )));
    }
    let mut text = String::new();
    file.take(limit + 1).read_to_string(&mut text)?;
    if text.len() as u64 > limit {
        return Err(std::io::Error::new(
            std::io::ErrorKind::FileTooLarge,
            match limit >= 1024 * 1024 {
                true => format!(
                    "it is larger than {} MiB, the most golato reads",
                    limit / (1024 * 1024)
                ),
                false => format!(
                    "it is larger than {} KiB, the most golato reads",
                    limit / 1024
                ),
            },
        ));
    }
    Ok(text)
}

/// `--image FILE` as an image part.
fn image(path: &Path) -> Result<Content, CliError> {
    image_part(path).map_err(|why| CliError::usage(format!("--image {}: {why}", path.display())))
}

/// The image file at `path` as a part of a prompt, or why it cannot be one (said so that the
/// person knows what to attach instead).
pub(crate) fn image_part(path: &Path) -> Result<Content, String> {
    let refuse = |why: String| {
        format!(
            "{why}; attach a PNG, JPEG, GIF or WebP file of at most {} MiB",
            MAX_IMAGE_BYTES / (1024 * 1024)
        )
    };
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|file| file.take(MAX_IMAGE_BYTES + 1).read_to_end(&mut bytes))
        .map_err(|error| refuse(format!("cannot read it ({error})")))?;
    if bytes.len() as u64 > MAX_IMAGE_BYTES {
        return Err(refuse("it is too large".into()));
    }
    let mime_type = match image::guess_format(&bytes) {
        Ok(image::ImageFormat::Png) => "image/png",
        Ok(image::ImageFormat::Jpeg) => "image/jpeg",
        Ok(image::ImageFormat::Gif) => "image/gif",
        Ok(image::ImageFormat::WebP) => "image/webp",
        _ => return Err(refuse("it is not an image of a kind models take".into())),
    };
    Ok(Content::Image {
        mime_type: mime_type.to_owned(),
        data: base64::engine::general_purpose::STANDARD.encode(&bytes),
    })
}
