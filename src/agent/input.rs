//! What a run starts from, and where a transcript leaves off.

use super::Error;
use crate::message::{Message, StopReason, ToolCall, UserMessage};

/// What a run starts from: new prompts, and optionally an earlier transcript to continue.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Input {
    /// Prompts appended after the transcript.
    pub prompts: Vec<UserMessage>,
    /// An earlier run's transcript (from [`RunResult::messages`](super::RunResult::messages)
    /// or [`Error::messages`]), possibly saved and loaded in another process. A transcript ending in an assistant
    /// message with unanswered tool calls continues by running those calls; one ending in tool
    /// results or a user message continues by asking the generator.
    pub transcript: Vec<Message>,
    /// How an earlier run compacted `transcript` ([`RunResult::summary`](super::RunResult::summary)):
    /// requests send the summary in place of the messages it replaces, as that run did. `None`
    /// sends the whole transcript (compacting it again if it is too long).
    pub summary: Option<super::Summary>,
}

impl From<UserMessage> for Input {
    fn from(prompt: UserMessage) -> Self {
        Input {
            prompts: vec![prompt],
            transcript: Vec::new(),
            summary: None,
        }
    }
}

impl Input {
    /// The messages the run starts with, or why they cannot be continued.
    pub(crate) fn into_messages(self) -> Result<Vec<Message>, Error> {
        if let Some(summary) = &self.summary {
            summary
                .check(&self.transcript)
                .map_err(|reason| Error::NotContinuable { reason })?;
        }
        let no_prompts = self.prompts.is_empty();
        let mut messages = self.transcript;
        messages.extend(self.prompts.into_iter().map(Message::User));
        match messages.last() {
            None => Err(Error::EmptyInput),
            Some(Message::Assistant(last)) if no_prompts => {
                let pending = pending_calls(&messages).map_or(0, |(_, calls)| calls.len());
                let cut_short = matches!(last.stop_reason, StopReason::Aborted | StopReason::Error);
                if pending == 0 && cut_short {
                    Err(Error::NotContinuable {
                        reason: format!(
                            "it ends with an answer cut short (stop reason {:?}); add a prompt to agent::Input::prompts (for example, asking the model to go on), or drop that message from the transcript to ask again",
                            last.stop_reason
                        ),
                    })
                } else if pending == 0 {
                    Err(Error::NotContinuable {
                        reason: format!(
                            "it ends with an assistant message without tool calls (stop reason {:?}), so the model has already answered; add a prompt to agent::Input::prompts",
                            last.stop_reason
                        ),
                    })
                } else {
                    Ok(messages)
                }
            }
            Some(_) => Ok(messages),
        }
    }
}

/// The calls of a trailing assistant message that have no result yet.
pub(crate) fn pending_calls(messages: &[Message]) -> Option<(usize, Vec<ToolCall>)> {
    let (index, assistant) = messages
        .iter()
        .enumerate()
        .rev()
        .find_map(|(index, message)| match message {
            Message::Assistant(assistant) => Some((index, assistant)),
            _ => None,
        })?;
    let answered: Vec<&str> = messages[index + 1..]
        .iter()
        .filter_map(|message| match message {
            Message::ToolResult(result) => Some(result.tool_call_id.as_str()),
            _ => None,
        })
        .collect();
    if messages[index + 1..]
        .iter()
        .any(|message| matches!(message, Message::User(_)))
    {
        return None;
    }
    let pending = assistant
        .tool_calls
        .iter()
        .filter(|call| !answered.contains(&call.id.as_str()))
        .cloned()
        .collect();
    Some((index, pending))
}
