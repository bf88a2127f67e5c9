#![allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]

use super::*;
use crate::agent::event::{
    MessageUpdateEvent, RunEndEvent, ToolExecutionEndEvent, ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
};
use crate::generator::Delta;
use crate::message::{ToolCall, ToolResultMessage};
use crate::tool::ToolResult;

fn call(index: usize) -> ToolCall {
    ToolCall::new(format!("call-{index}"), "tool", "{}")
}

fn update(index: usize, text: &str) -> Event {
    Event::ToolExecutionUpdate(ToolExecutionUpdateEvent {
        index,
        call: call(index),
        partial_result: ToolResult::text(text),
    })
}

fn start(index: usize) -> Event {
    Event::ToolExecutionStart(ToolExecutionStartEvent {
        index,
        call: call(index),
    })
}

fn end(index: usize) -> Event {
    Event::ToolExecutionEnd(ToolExecutionEndEvent {
        index,
        call: call(index),
        result: ToolResultMessage {
            tool_call_id: call(index).id,
            tool_name: "tool".into(),
            content: Vec::new(),
            details: None,
            is_error: false,
            attempt: None,
        },
    })
}

fn drain(channel: &Channel) -> Vec<Event> {
    channel.finish(Err(crate::agent::Error::EmptyInput));
    std::iter::from_fn(|| channel.next_blocking()).collect()
}

#[test]
fn below_capacity_every_event_is_kept() {
    let channel = Channel::new(8);
    for i in 0..5 {
        channel.push(update(0, &i.to_string()));
    }
    assert_eq!(drain(&channel).len(), 5);
}

#[test]
fn when_full_updates_of_one_call_merge_into_the_newest() {
    let channel = Channel::new(4);
    channel.push(start(0));
    channel.push(start(1));
    for i in 0..10_000 {
        channel.push(update(0, &format!("a{i}")));
        channel.push(update(1, &format!("b{i}")));
    }
    channel.push(end(0));
    channel.push(end(1));
    let events = drain(&channel);
    let texts: Vec<String> = events
        .iter()
        .filter_map(|event| match event {
            Event::ToolExecutionUpdate(update) => Some(update.partial_result.text_content()),
            _ => None,
        })
        .collect();
    assert_eq!(texts, ["a9999", "b9999"]);
    assert_eq!(events.len(), 6, "two starts, two updates, two ends");
}

#[test]
fn lifecycle_events_are_kept_beyond_capacity() {
    let channel = Channel::new(1);
    for i in 0..100 {
        channel.push(start(i));
        channel.push(end(i));
    }
    channel.push(Event::RunEnd(RunEndEvent {
        error: None,
        usage: crate::message::Usage::default(),
        cost: None,
    }));
    assert_eq!(drain(&channel).len(), 201);
}

#[test]
fn message_updates_merge_their_deltas_in_order() {
    let channel = Channel::new(1);
    channel.push(start(0));
    for word in ["a", "b", "c"] {
        channel.push(Event::MessageUpdate(MessageUpdateEvent {
            turn: 1,
            deltas: vec![Delta::Text(word.into())],
        }));
    }
    channel.push(Event::MessageUpdate(MessageUpdateEvent {
        turn: 1,
        deltas: vec![Delta::Reasoning("r".into())],
    }));
    channel.push(Event::MessageUpdate(MessageUpdateEvent {
        turn: 1,
        deltas: vec![Delta::Text("d".into())],
    }));
    let events = drain(&channel);
    let Event::MessageUpdate(merged) = &events[1] else {
        panic!("expected a message update, got {events:?}")
    };
    assert_eq!(
        merged.deltas,
        [
            Delta::Text("abc".into()),
            Delta::Reasoning("r".into()),
            Delta::Text("d".into())
        ]
    );
}

#[test]
fn discarded_channels_keep_nothing() {
    let channel = Channel::new(4);
    channel.push(start(0));
    channel.discard_events();
    channel.push(start(1));
    assert!(drain(&channel).is_empty());
}
