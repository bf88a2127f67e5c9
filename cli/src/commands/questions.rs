//! What `golato submit` does with a durable run's questions (calls waiting for a person's yes):
//! finds them as they come, shows each once (a JSON line with `--json`), and on a terminal asks
//! the person and sends the answer; elsewhere it says how to answer with `golato approve`.

use std::collections::HashSet;

use golato_restate::{Answer, Client, Question};

/// How often a run being watched is asked for its open questions.
pub(crate) const POLL: std::time::Duration = std::time::Duration::from_millis(500);

/// The questions seen so far and the one the person is answering.
#[derive(Default)]
pub(crate) struct Questions {
    seen: HashSet<String>,
    /// Asked on the terminal, in the order they came.
    waiting: std::collections::VecDeque<Question>,
}

impl Questions {
    /// The run's open questions not seen before (none when they cannot be read now: the next
    /// poll tries again).
    pub(crate) async fn new_ones(&mut self, client: &Client, run_id: &str) -> Vec<Question> {
        // Bounded: a server that is away must not hold up the run's events (the next poll
        // asks again).
        let Ok(Ok(open)) = tokio::time::timeout(POLL * 4, client.questions(run_id)).await else {
            return Vec::new();
        };
        open.into_iter()
            .filter(|question| self.seen.insert(question.key()))
            .collect()
    }

    /// Queues `question` to be asked on the terminal; true when it is the one to ask now.
    pub(crate) fn queue(&mut self, question: Question) -> bool {
        self.waiting.push_back(question);
        self.waiting.len() == 1
    }

    /// The question being asked on the terminal.
    pub(crate) fn current(&self) -> Option<&Question> {
        self.waiting.front()
    }

    /// Done with the current question; the next one to ask, if any.
    pub(crate) fn next(&mut self) -> Option<&Question> {
        self.waiting.pop_front();
        self.waiting.front()
    }
}

/// The question as it is put to the person: what asks, the whole call, what it would change.
pub(crate) fn prompt(question: &Question) -> String {
    let visible = |text: &str| crate::view::shown::visible(text).into_owned();
    let mut text = format!(
        "Run {} waits for your yes (asked by {}; refused if nobody answers within {} s):\n",
        question.run_id,
        visible(&question.why),
        question.answer_within_s
    );
    for line in visible(&question.detail).lines() {
        text.push_str(&format!("  │ {line}\n"));
    }
    if let Some(preview) = &question.preview {
        for line in visible(preview).lines().take(40) {
            text.push_str(&format!("  │ {line}\n"));
        }
    }
    text.push_str("Allow it? [y]es, [n]o, or n REASON (told to the model): ");
    text
}

/// The line the person typed as an answer, if it is one: `y`, `yes`, `n`, `no`, or `n` / `no`
/// followed by a reason.
pub(crate) fn parse(line: &str) -> Option<Answer> {
    let line = line.trim();
    let (word, rest) = line
        .split_once(char::is_whitespace)
        .map_or((line, ""), |(word, rest)| (word, rest.trim()));
    match (word.to_ascii_lowercase().as_str(), rest) {
        ("y" | "yes", "") => Some(Answer::Yes),
        ("n" | "no", "") => Some(Answer::No { reason: None }),
        ("n" | "no", reason) => Some(Answer::No {
            reason: Some(reason.to_owned()),
        }),
        _ => None,
    }
}

/// What a watcher that cannot ask (not a terminal) says of a question.
pub(crate) fn how_to_answer(question: &Question, ingress: &str) -> String {
    format!(
        "golato: run {} waits for a yes on call {} ({}): {}; answer with `golato approve --restate {ingress} {} {} yes` (or `no --reason TEXT`)",
        question.run_id,
        crate::view::shown::visible(&question.call_id),
        question.tool,
        crate::view::shown::visible(&question.detail),
        question.run_id,
        crate::view::shown::visible(&question.call_id),
    )
}

/// The JSON line of a question, for programs (`--json`).
pub(crate) fn json_line(question: &Question) -> serde_json::Value {
    serde_json::json!({
        "type": "approval_request",
        "run_id": question.run_id,
        "turn": question.turn,
        "call_id": question.call_id,
        "tool_name": question.tool,
        "arguments": question.arguments,
        "detail": question.detail,
        "preview": question.preview,
        "why": question.why,
        "answer_within_s": question.answer_within_s,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_yes_no_or_no_with_a_reason() {
        assert_eq!(parse(" y "), Some(Answer::Yes));
        assert_eq!(parse("YES"), Some(Answer::Yes));
        assert_eq!(parse("n"), Some(Answer::No { reason: None }));
        assert_eq!(
            parse("no   use the staging database"),
            Some(Answer::No {
                reason: Some("use the staging database".to_owned())
            })
        );
        assert_eq!(parse("yes please"), None);
        assert_eq!(parse("maybe"), None);
        assert_eq!(parse(""), None);
    }
}
