//! A tool call as the live view shows it: a spinner while it runs with its latest output, then
//! ✓ or ✗ with the first lines of its result, an edit's diff, what the diagnostics found.

use super::*;

impl Live {
    pub(super) fn tool_start(&mut self, index: usize, call: &ToolCall) {
        let label = call_label(call);
        let bar = match &self.bars {
            Some(bars) => {
                let bar = bars.add(ProgressBar::new_spinner());
                bar.set_style(spinner_style());
                bar.set_prefix(label.clone());
                bar.enable_steady_tick(Duration::from_millis(100));
                Some(bar)
            }
            None => {
                self.line(&format!("{DIM}→{DIM:#} {}", styled(&label)));
                None
            }
        };
        let started = Instant::now();
        self.calls.insert(
            index,
            Running {
                id: call.id.clone(),
                label,
                started,
                bar,
            },
        );
    }

    pub(super) fn tool_update(&mut self, index: usize, text: &str) {
        let latest = text.lines().rev().find(|line| !line.trim().is_empty());
        if let (Some(running), Some(latest)) = (self.calls.get(&index), latest) {
            if let Some(bar) = &running.bar {
                bar.set_message(clip(latest.trim_end()));
            }
        }
    }

    pub(super) fn tool_end(&mut self, index: usize, call: &ToolCall, result: &ToolResultMessage) {
        let (label, elapsed) = match self.calls.remove(&index) {
            Some(running) => {
                if let Some(bar) = &running.bar {
                    bar.finish_and_clear();
                    if let Some(bars) = &self.bars {
                        bars.remove(bar);
                    }
                }
                (running.label, running.started.elapsed())
            }
            None => (call_label(call), Duration::ZERO),
        };
        // Changed by the person before it ran: named as it ran.
        let label = match crate::view::label::as_ran(call, result.details.as_ref()) {
            std::borrow::Cow::Owned(ran) => call_label(&ran),
            std::borrow::Cow::Borrowed(_) => label,
        };
        let mark = if result.is_error {
            format!("{RED}✗{RED:#}")
        } else {
            format!("{GREEN}✓{GREEN:#}")
        };
        let mut text = format!(
            "{mark} {} {DIM}{:.1}s{DIM:#}",
            styled(&label),
            elapsed.as_secs_f64()
        );
        if let Some(attempt) = result.attempt {
            text.push_str(&format!(
                " {YELLOW}attempt {attempt}{YELLOW:#}{DIM} (an earlier one was cut off with its worker){DIM:#}"
            ));
        }
        let body = result.text();
        let lines: Vec<&str> = body.lines().collect();
        let diff = result
            .details
            .as_ref()
            .and_then(|details| details["diff"].as_str())
            .filter(|_| call.name == "edit" && !result.is_error);
        let plan = golato::builtin::plan_of(result);
        // What the change broke, under it: the model reads the lines, the person the count.
        let broke = golato::diagnostics::summary(result.details.as_ref())
            .map(|summary| format!("\n  {YELLOW}⚠ {}{YELLOW:#}", clip(summary)));
        match diff {
            // What changed, not just that it did.
            Some(diff) => text.push_str(&diff_lines(diff)),
            // The plan itself, every step.
            None if plan.is_some() => {
                for line in crate::view::plan::lines(plan.as_deref().unwrap_or_default()) {
                    text.push_str(&format!("\n  {DIM}│{DIM:#} {line}"));
                }
            }
            // A command's last lines say how it ended (errors come at the end).
            None if call.name == "bash" && lines.len() > RESULT_LINES => {
                let earlier = lines.len() - RESULT_LINES;
                text.push_str(&format!(
                    "\n  {DIM}│ … {}{DIM:#}",
                    crate::view::shown::count(earlier as u64, "earlier line")
                ));
                for line in &lines[earlier..] {
                    text.push_str(&format!("\n  {DIM}│{DIM:#} {}", clip(line)));
                }
            }
            None => {
                for line in lines.iter().take(RESULT_LINES) {
                    text.push_str(&format!("\n  {DIM}│{DIM:#} {}", clip(line)));
                }
                if lines.len() > RESULT_LINES {
                    let more = lines.len() - RESULT_LINES;
                    text.push_str(&format!(
                        "\n  {DIM}│ … {}{DIM:#}",
                        crate::view::shown::count(more as u64, "more line")
                    ));
                }
            }
        }
        if let Some(network) = crate::view::network::summary(result.details.as_ref()) {
            text.push_str(&format!("\n  {DIM}│{DIM:#} {}", clip(&network)));
        }
        if let Some(broke) = broke {
            text.push_str(&broke);
        }
        // A terminal cannot show the image the model gets, but it can say one came back.
        for part in &result.content {
            if let Content::Image { mime_type, data } = part {
                text.push_str(&format!(
                    "\n  {DIM}│ [image: {mime_type}, {}]{DIM:#}",
                    decoded_size(data)
                ));
            }
        }
        self.line(&text);
    }
}

/// Lines of an edit's diff shown under its ✓.
pub(super) const DIFF_LINES: usize = 12;

/// An edit's unified diff as the view shows it: the changed lines and their context, removed
/// lines red, added green, at most [`DIFF_LINES`] of them and then how many more.
pub(super) fn diff_lines(diff: &str) -> String {
    let body: Vec<&str> = diff
        .lines()
        .filter(|line| !line.starts_with("--- ") && !line.starts_with("+++ "))
        .collect();
    let mut text = String::new();
    for line in body.iter().take(DIFF_LINES) {
        let style = match line.as_bytes().first() {
            Some(b'+') => GREEN,
            Some(b'-') => RED,
            _ => DIM,
        };
        text.push_str(&format!("\n  {DIM}│{DIM:#} {style}{}{style:#}", clip(line)));
    }
    if body.len() > DIFF_LINES {
        let more = body.len() - DIFF_LINES;
        text.push_str(&format!(
            "\n  {DIM}│ … {}{DIM:#}",
            crate::view::shown::count(more as u64, "more diff line")
        ));
    }
    text
}

pub(super) fn spinner_style() -> ProgressStyle {
    // No styles in the template: indicatif's colours would not honour NO_COLOR. A fixed template
    // cannot fail to parse; the fallback keeps a bare spinner if it did.
    ProgressStyle::with_template("{spinner} {prefix} {elapsed} {wide_msg}")
        .unwrap_or_else(|_| ProgressStyle::default_spinner())
}
