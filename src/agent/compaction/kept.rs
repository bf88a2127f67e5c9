//! What a compaction keeps beside the model's summary, word for word: every message of the
//! user's (prompts, steering, follow-ups), newest first up to [`USER_MESSAGES_BUDGET`]
//! tokens; the plan as `update_plan` last set it; and the files the session changed (`edit`
//! and `write` calls, and what captured `bash` commands changed). A summary is written by a
//! model and may drop the goal; these are facts, and are never summarized.
//!
//! The instructions (the system prompt, with AGENTS.md and the skills list in golato's command
//! line) are never compacted: every request sends them as they are.

use crate::message::Message;

use super::TokenCounter;

/// Most tokens of the user's own messages kept word for word after a compaction (the newest
/// first; codex keeps 20,000 too). Older ones are left out with a note.
pub const USER_MESSAGES_BUDGET: u64 = 20_000;

/// Most changed paths listed (the newest changes kept).
const MAX_PATHS: usize = 500;

/// How the facts end and the model's summary begins, in a summary message's text.
pub(crate) const SUMMARIZED: &str = "What else happened, summarized:";

/// The facts of `replaced` (the messages a summary stands for), as the summary's first part;
/// empty when there are none.
pub(crate) fn facts(replaced: &[Message], counter: &dyn TokenCounter) -> String {
    let mut sections = Vec::new();
    // An earlier summary's kept messages stand for the messages before it.
    let earlier = replaced
        .first()
        .filter(|message| super::is_summary(message))
        .map(|message| earlier_messages(&text_of(message)))
        .filter(|earlier| !earlier.is_empty());
    let users: Vec<&Message> = replaced
        .iter()
        .filter(|message| matches!(message, Message::User(_)) && !super::is_summary(message))
        .collect();
    let mut kept: Vec<String> = Vec::new();
    let mut spent: u64 = 0;
    let mut left_out = 0;
    for message in users.iter().rev() {
        let tokens = counter.count_message(message);
        // The newest is kept whatever its size.
        if spent.saturating_add(tokens) > USER_MESSAGES_BUDGET && !kept.is_empty() {
            left_out += 1;
            continue;
        }
        spent = spent.saturating_add(tokens);
        kept.push(text_of(message));
    }
    kept.reverse();
    if !kept.is_empty() || earlier.is_some() {
        let mut section = String::from("The user's messages, word for word, oldest first:");
        if left_out > 0 {
            section.push_str(&format!(
                "\n\n[{left_out} older message(s) of the user left out: over {USER_MESSAGES_BUDGET} tokens]"
            ));
        } else if let Some(earlier) = earlier {
            section.push_str("\n\n");
            section.push_str(&earlier);
        }
        for text in kept {
            section.push_str("\n\n<user>\n");
            section.push_str(&text);
            section.push_str("\n</user>");
        }
        sections.push(section);
    }
    if let Some(plan) = newest_plan(replaced) {
        sections.push(format!("The plan, as last updated:\n{plan}"));
    }
    let paths = changed_paths(replaced);
    if !paths.is_empty() {
        sections.push(format!(
            "Files this session changed:\n{}",
            paths
                .iter()
                .map(|path| format!("- {path}"))
                .collect::<Vec<_>>()
                .join("\n")
        ));
    }
    sections.join("\n\n")
}

/// The user's messages an earlier summary kept, to carry over.
fn earlier_messages(summary: &str) -> String {
    let (Some(start), Some(end)) = (summary.find("<user>"), summary.rfind("</user>")) else {
        return String::new();
    };
    match end >= start {
        true => summary[start..end + "</user>".len()].to_owned(),
        false => String::new(),
    }
}

fn text_of(message: &Message) -> String {
    match message {
        Message::User(user) => super::content_text(&user.content),
        Message::Assistant(assistant) => super::content_text(&assistant.content),
        Message::ToolResult(result) => super::content_text(&result.content),
    }
}

/// The plan the newest successful `update_plan` result holds, one step a line.
fn newest_plan(replaced: &[Message]) -> Option<String> {
    let plan = replaced.iter().rev().find_map(|message| match message {
        Message::ToolResult(result) => crate::builtin::plan_of(result),
        _ => None,
    })?;
    Some(
        plan.iter()
            .map(|step| {
                let status = serde_json::to_value(step.status)
                    .ok()
                    .and_then(|status| status.as_str().map(str::to_owned))
                    .unwrap_or_default();
                format!("- [{status}] {}", step.step)
            })
            .collect::<Vec<_>>()
            .join("\n"),
    )
}

/// The paths `edit` and `write` calls that succeeded wrote, and what captured commands
/// changed, each once, in the order first changed.
fn changed_paths(replaced: &[Message]) -> Vec<String> {
    let mut paths: Vec<String> = Vec::new();
    let mut add = |path: String| {
        if !paths.contains(&path) {
            paths.push(path);
        }
    };
    let mut written: Vec<(&str, String)> = Vec::new();
    for message in replaced {
        match message {
            Message::Assistant(assistant) => {
                for call in &assistant.tool_calls {
                    if call.name != "edit" && call.name != "write" {
                        continue;
                    }
                    let path = serde_json::from_str::<serde_json::Value>(&call.arguments)
                        .ok()
                        .and_then(|arguments| arguments["path"].as_str().map(str::to_owned));
                    if let Some(path) = path {
                        written.push((call.id.as_str(), path));
                    }
                }
            }
            Message::ToolResult(result) if !result.is_error => {
                if let Some(index) = written
                    .iter()
                    .position(|(id, _)| *id == result.tool_call_id)
                {
                    add(written.swap_remove(index).1);
                }
                for change in
                    crate::builtin::captured_changes(result.details.as_ref()).unwrap_or_default()
                {
                    add(change.path.display().to_string());
                }
            }
            _ => {}
        }
    }
    if paths.len() > MAX_PATHS {
        let dropped = paths.len() - MAX_PATHS;
        paths.drain(..dropped);
        paths.insert(0, format!("[{dropped} earlier path(s) left out]"));
    }
    paths
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::UserMessage;

    struct Large;
    impl TokenCounter for Large {
        fn count_message(&self, _: &Message) -> u64 {
            6_000
        }
    }

    fn user(text: &str) -> Message {
        Message::User(UserMessage::new(text))
    }

    #[test]
    fn the_newest_user_messages_are_kept_within_the_budget_and_the_rest_counted() {
        let replaced: Vec<Message> = (0..5).map(|n| user(&format!("message {n}"))).collect();
        let facts = facts(&replaced, &Large);
        assert!(
            facts.contains("[2 older message(s) of the user left out"),
            "{facts}"
        );
        assert!(!facts.contains("message 1"), "{facts}");
        for kept in ["message 2", "message 3", "message 4"] {
            assert!(facts.contains(kept), "{facts}");
        }
        // One message over the budget alone is still kept: it is the newest.
        let facts = facts_of_one();
        assert!(facts.contains("the only one"), "{facts}");
    }

    fn facts_of_one() -> String {
        struct Huge;
        impl TokenCounter for Huge {
            fn count_message(&self, _: &Message) -> u64 {
                50_000
            }
        }
        facts(&[user("the only one")], &Huge)
    }

    #[test]
    fn an_earlier_summarys_kept_messages_are_carried_into_the_next() {
        let earlier = super::super::summary_text(
            &facts(&[user("the goal")], &super::super::EstimateTokens),
            "it went on",
        );
        let replaced = [
            Message::User(super::super::summary_message(&earlier)),
            user("a later requirement"),
        ];
        let facts = facts(&replaced, &super::super::EstimateTokens);
        let goal = facts.find("the goal").expect("the goal is carried");
        let later = facts
            .find("a later requirement")
            .expect("the new one is kept");
        assert!(goal < later, "{facts}");
        assert_eq!(facts.matches("The user's messages").count(), 1, "{facts}");
    }
}
