//! The floor the architecture sets for a batch, and the per-call work every dispatch bench does.

use std::hint::black_box;
use std::sync::Arc;

use actix::fut::ActorFutureExt;
use actix::{Actor, ActorContext, AsyncContext, Context, Handler, Message, WrapFuture};
use golato::message::{ToolCall, ToolResultMessage};
use golato::tool::{Tool, ToolContext};
use golato::Host;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// Which actors carry a floor batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// One actor per batch, awaiting the calls' join handles.
    SupervisorOnly,
    /// One actor per batch and one per call.
    PerCallActors,
    /// A run actor, a supervisor actor, and one actor per call reporting to the run actor.
    RunSupervisorCalls,
    /// As [`Shape::RunSupervisorCalls`], with the two model turns of a run around the batch:
    /// each a future polled on the run actor that yields a message (the calls, then a text).
    RunTurnsSupervisorCalls,
}

/// The floor the architecture sets: the bare actor mechanics of a batch with no golato logic.
/// A parent actor on a host arbiter (standing in for the run actor and the batch supervisor
/// at once) starts one actor per call; each runs the same per-call work as the tokio baseline
/// where the host puts a tool's task ([`Host::spawn_tool`]) and reports back; the parent tells the caller when all have. No
/// generator, transcript, validation order, events, cancellation or tracing.
///
/// Without per-call actors ([`Shape::SupervisorOnly`]) the parent spawns each call's work
/// itself and awaits its join handle: the alternative design, measured for comparison. With
/// [`Shape::RunSupervisorCalls`] the parent is a run actor that starts a supervisor actor, which
/// starts the call actors, and each call reports straight back to the run actor: the actors and
/// messages golato's shape has for a run of one batch (a run actor, a batch supervisor, a tool
/// actor per call reporting through its reporter), still with no golato logic.
struct FloorBatch {
    shape: Shape,
    calls: Vec<ToolCall>,
    tool: Tool,
    validator: Arc<jsonschema::Validator>,
    host: Host,
    remaining: usize,
    done: std::sync::mpsc::Sender<()>,
}

impl Actor for FloorBatch {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        if self.shape == Shape::RunTurnsSupervisorCalls {
            // The first turn: a future on this actor hands over the message with the calls.
            let message = std::mem::take(&mut self.calls);
            let turn = async move { black_box(message) };
            ctx.spawn(turn.into_actor(self).map(|calls, this, ctx| {
                this.calls = calls;
                this.start_supervisor(ctx);
            }));
            return;
        }
        if self.shape == Shape::RunSupervisorCalls {
            return self.start_supervisor(ctx);
        }
        for call in std::mem::take(&mut self.calls) {
            if self.shape == Shape::SupervisorOnly {
                let (tool, validator) = (self.tool.clone(), Arc::clone(&self.validator));
                let work = self
                    .host
                    .spawn_tool(async move { run_plain(call, &tool, &validator).await });
                ctx.spawn(work.into_actor(self).map(|result, this, ctx| {
                    this.handle(FloorResult(result.unwrap()), ctx);
                }));
                continue;
            }
            FloorCall::spawn(call, &self.tool, &self.validator, &self.host, ctx.address());
        }
    }
}

impl FloorBatch {
    fn start_supervisor(&mut self, ctx: &mut Context<Self>) {
        FloorSupervisor {
            calls: std::mem::take(&mut self.calls),
            tool: self.tool.clone(),
            validator: Arc::clone(&self.validator),
            host: self.host.clone(),
            run: ctx.address(),
        }
        .start();
    }

    fn finish(&mut self, ctx: &mut Context<Self>) {
        self.done.send(()).unwrap();
        ctx.stop();
    }
}

/// Starts the call actors of a batch, which report to the run actor, then stops.
struct FloorSupervisor {
    calls: Vec<ToolCall>,
    tool: Tool,
    validator: Arc<jsonschema::Validator>,
    host: Host,
    run: actix::Addr<FloorBatch>,
}

impl Actor for FloorSupervisor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        for call in std::mem::take(&mut self.calls) {
            FloorCall::spawn(
                call,
                &self.tool,
                &self.validator,
                &self.host,
                self.run.clone(),
            );
        }
        ctx.stop();
    }
}

struct FloorCall {
    call: Option<ToolCall>,
    tool: Tool,
    validator: Arc<jsonschema::Validator>,
    host: Host,
    batch: actix::Addr<FloorBatch>,
}

impl FloorCall {
    /// Starts the actor of one call, reporting to `batch`.
    fn spawn(
        call: ToolCall,
        tool: &Tool,
        validator: &Arc<jsonschema::Validator>,
        host: &Host,
        batch: actix::Addr<FloorBatch>,
    ) {
        FloorCall {
            call: Some(call),
            tool: tool.clone(),
            validator: Arc::clone(validator),
            host: host.clone(),
            batch,
        }
        .start();
    }
}

impl Actor for FloorCall {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        let (Some(call), tool, validator) = (
            self.call.take(),
            self.tool.clone(),
            Arc::clone(&self.validator),
        ) else {
            return;
        };
        let work = self
            .host
            .spawn_tool(async move { run_plain(call, &tool, &validator).await });
        // As golato's tool actor does: the work's join handle is spawned on the actor (its
        // mailbox stays open while the work runs) and the one result goes straight back.
        ctx.spawn(work.into_actor(self).map(|result, this, ctx| {
            this.batch.do_send(FloorResult(result.unwrap()));
            ctx.stop();
        }));
    }
}

#[derive(Message)]
#[rtype(result = "()")]
struct FloorResult(ToolResultMessage);

impl Handler<FloorResult> for FloorBatch {
    type Result = ();

    fn handle(&mut self, result: FloorResult, ctx: &mut Context<Self>) {
        black_box(result.0);
        self.remaining -= 1;
        if self.remaining > 0 {
            return;
        }
        if self.shape != Shape::RunTurnsSupervisorCalls {
            return self.finish(ctx);
        }
        // The second turn: a future on this actor hands over the final text.
        let turn = async { black_box(String::from("done")) };
        ctx.spawn(turn.into_actor(self).map(|text, this, ctx| {
            black_box(text);
            this.finish(ctx);
        }));
    }
}

/// The floor's fixed inputs: the host, a batch's calls, the trivial tool and its schema.
pub struct Floor {
    host: Host,
    calls: Vec<ToolCall>,
    tool: Tool,
    validator: Arc<jsonschema::Validator>,
}

impl Floor {
    /// Batches of `count` trivial calls on `host`.
    pub fn new(host: &Host, count: usize) -> Floor {
        Floor {
            host: host.clone(),
            calls: calls(count),
            tool: super::trivial_tool(),
            validator: validator(),
        }
    }

    /// Runs `batches` [`FloorBatch`]es of the given shape at once and waits for all of them.
    pub fn run(&self, shape: Shape, batches: usize) {
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        for _ in 0..batches {
            self.start_batch(shape, done_tx.clone());
        }
        for _ in 0..batches {
            done_rx.recv().unwrap();
        }
    }

    /// Starts one [`FloorBatch`]; it signals `done` when every call reported.
    fn start_batch(&self, shape: Shape, done: std::sync::mpsc::Sender<()>) {
        let (calls, tool, validator) = (
            self.calls.clone(),
            self.tool.clone(),
            Arc::clone(&self.validator),
        );
        let host = self.host.clone();
        golato_actors::embed::start(&self.host, move |_: &mut Context<FloorBatch>| FloorBatch {
            shape,
            remaining: calls.len(),
            calls,
            tool,
            validator,
            host,
            done,
        })
        .unwrap();
    }
}

/// `count` calls of the trivial tool, each with valid arguments, as the script of
/// [`super::agent`] asks for them.
pub fn calls(count: usize) -> Vec<ToolCall> {
    (0..count)
        .map(|i| ToolCall::new(format!("call-{i}"), "noop", format!("{{\"n\":{i}}}")))
        .collect()
}

/// The trivial tool's schema, compiled.
pub fn validator() -> Arc<jsonschema::Validator> {
    Arc::new(jsonschema::validator_for(&super::schema()).unwrap())
}

/// The plain-tokio baseline for one batch: each call's work spawned on the current runtime,
/// then the join handles awaited in order.
pub async fn tokio_batch(
    calls: impl IntoIterator<Item = ToolCall>,
    tool: Tool,
    validator: Arc<jsonschema::Validator>,
) -> Vec<ToolResultMessage> {
    let handles: Vec<_> = calls
        .into_iter()
        .map(|call| {
            let (tool, validator) = (tool.clone(), Arc::clone(&validator));
            tokio::spawn(async move { run_plain(call, &tool, &validator).await })
        })
        .collect();
    let mut results = Vec::with_capacity(handles.len());
    for handle in handles {
        results.push(handle.await.unwrap());
    }
    results
}

/// What the pipeline does for one valid call, minus the actors: parse, check, call, record.
pub async fn run_plain(
    call: ToolCall,
    tool: &Tool,
    validator: &jsonschema::Validator,
) -> ToolResultMessage {
    let arguments: Value = serde_json::from_str(&call.arguments).unwrap();
    assert!(validator.is_valid(&arguments));
    let context = ToolContext::detached(call.clone(), CancellationToken::new());
    let result = tool.invoke(context, arguments).await.unwrap();
    ToolResultMessage {
        tool_call_id: call.id,
        tool_name: call.name,
        content: result.content,
        details: result.details,
        is_error: result.is_error,
        attempt: None,
    }
}
