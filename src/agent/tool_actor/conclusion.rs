//! A call's end, the same whether the actor or the function's task concludes it: the gate closed,
//! what came back checked (an update refused or the timeout outranks it), one outcome reported.

use std::time::Duration;

use golato_actors::batch::{panic_message, JobOutcome, Reporter};

use super::super::batch_calls::SharedBatch;
use super::JournalError;
use crate::message::{Content, ToolCall, ToolResultMessage};
use crate::tool::{check_result, BoxError, CallHost, ToolResult};

/// Closes a call's gate when dropped: when its function returns, and while a panic unwinds.
pub(super) struct GateShutter<'a>(pub(super) &'a SharedBatch, pub(super) usize);

impl Drop for GateShutter<'_> {
    fn drop(&mut self) {
        self.0.shut_gate(self.1);
    }
}

/// A handed-off call's end, on its function's task (inside the call's span): what the function
/// did, concluded as the actor would have.
pub(super) fn conclude(
    shared: &SharedBatch,
    reporter: Reporter<CallOutcome>,
    joined: Result<Result<ToolResult, BoxError>, Box<dyn std::any::Any + Send>>,
) {
    let index = reporter.index();
    let call = shared.call(index);
    let joined = match joined {
        Ok(returned) => JobOutcome::Completed(returned),
        Err(panic) => JobOutcome::Panicked(panic_message(panic)),
    };
    let result = result_of(shared, index, None, returned(call, joined));
    report(&tracing::Span::current(), shared, reporter, result);
}

/// What the function's task came to: its result, or the error text for a failure, a panic or
/// a lost task.
pub(super) fn returned(
    call: &ToolCall,
    joined: JobOutcome<Result<ToolResult, BoxError>>,
) -> Result<ToolResult, String> {
    match joined {
        JobOutcome::Completed(returned) => returned.map_err(|error| error.to_string()),
        JobOutcome::Panicked(panic) => Err(format!("Tool {} panicked: {panic}", call.name)),
        JobOutcome::Lost | JobOutcome::NotStarted => Err(format!(
            "Tool {}'s task ended without a result (the host is shutting down).",
            call.name
        )),
    }
}

/// Call `index`'s result once its function is done: an update refused along the way, or the
/// timeout, outranks what came back; what came back must pass the result checks.
pub(super) fn result_of(
    shared: &SharedBatch,
    index: usize,
    timed_out: Option<Duration>,
    returned: Result<ToolResult, String>,
) -> ToolResult {
    let name = &shared.call(index).name;
    // Closed here too, for a function that panicked before its task could close it.
    if let Some(reason) = shared.close_gate(index) {
        return error_result(format!(
            "Tool {name} published an invalid partial result, so it was stopped: {reason}"
        ));
    }
    if let Some(timeout) = timed_out {
        let result = error_result(format!(
            "Tool {name} timed out after {} and was cancelled.",
            seconds(timeout)
        ));
        // What the function said of what it did before it stopped stays with the call (bash's
        // captured changes: an undo covers them).
        return match returned.ok().and_then(|returned| returned.details) {
            Some(details) => result.with_details(details),
            None => result,
        };
    }
    match returned {
        Ok(result) => match check_result(&result) {
            Ok(()) => result,
            Err(reason) => {
                error_result(format!("Tool {name} returned an invalid result: {reason}"))
            }
        },
        Err(text) => error_result(text),
    }
}

/// Reports the call's one outcome.
pub(super) fn report(
    span: &tracing::Span,
    shared: &SharedBatch,
    reporter: Reporter<CallOutcome>,
    result: ToolResult,
) {
    let call = shared.call(reporter.index());
    shared.end_probe(reporter.index());
    let _entered = span.enter();
    tracing::debug!(is_error = result.is_error, "call finished");
    if result.is_error {
        // OpenTelemetry's span status: an error result is a failed tool execution.
        span.record("otel.status_code", "ERROR");
    }
    reporter.report(JobOutcome::Completed(CallOutcome::from_result(
        call, result,
    )));
}

pub(super) fn seconds(duration: Duration) -> String {
    format!("{} s", duration.as_secs_f64())
}

/// A call's final result and whether it asked to end the run.
#[derive(Debug)]
pub(crate) struct CallOutcome {
    pub(crate) message: ToolResultMessage,
    pub(crate) terminate: bool,
    /// The run's journal could not record this call: the run ends once the batch is over.
    pub(crate) journal_error: Option<Box<JournalError>>,
}

impl CallOutcome {
    pub(crate) fn error(call: &ToolCall, text: impl Into<String>) -> CallOutcome {
        CallOutcome::from_result(call, error_result(text))
    }

    fn from_result(call: &ToolCall, result: ToolResult) -> CallOutcome {
        CallOutcome {
            message: ToolResultMessage {
                tool_call_id: call.id.clone(),
                tool_name: call.name.clone(),
                content: result.content,
                details: result.details,
                is_error: result.is_error,
                attempt: None,
            },
            terminate: result.terminate,
            journal_error: None,
        }
    }
}

pub(super) fn error_result(text: impl Into<String>) -> ToolResult {
    ToolResult {
        content: vec![Content::text(text)],
        is_error: true,
        ..ToolResult::default()
    }
}
