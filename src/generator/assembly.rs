//! The parts of an assistant message that a wire decoder gathers, and the message they make.

use crate::message::{AssistantMessage, Content, StopReason, ToolCall, Usage, WebSearch};

/// What a decoder has gathered so far.
#[derive(Debug, Default)]
pub(crate) struct Assembly {
    pub(crate) text: String,
    pub(crate) reasoning: String,
    pub(crate) calls: Vec<ToolCall>,
    pub(crate) usage: Usage,
    pub(crate) model: Option<String>,
    /// What the provider's own web search did, when it ran.
    pub(crate) web_search: WebSearch,
}

impl Assembly {
    /// The message, with `stop_reason`. A call whose arguments never arrived (streaming APIs send
    /// `""` for a call without arguments) gets `{}`.
    pub(crate) fn into_message(
        self,
        stop_reason: StopReason,
        error_message: Option<String>,
    ) -> AssistantMessage {
        let tool_calls = self
            .calls
            .into_iter()
            .map(|mut call| {
                if call.arguments.trim().is_empty() {
                    call.arguments = "{}".to_owned();
                }
                call
            })
            .collect();
        AssistantMessage {
            content: if self.text.is_empty() {
                Vec::new()
            } else {
                vec![Content::text(self.text)]
            },
            reasoning: self.reasoning,
            tool_calls,
            stop_reason,
            usage: self.usage,
            model: self.model,
            error_message,
            web_search: (!self.web_search.is_empty()).then_some(self.web_search),
        }
    }
}
