//! Messages joining the thread. Every message added to a run's history is announced by a
//! `thread.message.created` event as it joins (the agent-events reference): the opening
//! prompt, each tool result, each message the engine or a strategy writes to the model
//! (a format error, a plan step), and an assistant message a strategy restates. The
//! model's own replies are announced when their call starts (`step/model_call.rs`), as
//! their text is yet to stream.

use super::agent::RunContext;
use super::clock::new_id;
use super::events::{InProgress, MessageCreated, MessageRole, MessageStarted, RequestParams};
use super::state::AgentState;
use crate::provider::Message;

/// `state` with `messages` appended, each announced in `step_id` (`None`: before the run's
/// first step).
pub fn add(
    ctx: &RunContext,
    state: AgentState,
    step_id: Option<&str>,
    messages: impl IntoIterator<Item = Message>,
) -> AgentState {
    let messages: Vec<Message> = messages.into_iter().collect();
    for message in &messages {
        announce(ctx, step_id, message);
    }
    state.with_messages(messages)
}

/// `state` with `message` appended and announced.
pub fn add_one(
    ctx: &RunContext,
    state: AgentState,
    step_id: Option<&str>,
    message: Message,
) -> AgentState {
    announce(ctx, step_id, &message);
    state.with_message(message)
}

/// The `thread.message.created` event of a message that is whole.
fn announce(ctx: &RunContext, step_id: Option<&str>, message: &Message) {
    let mut started = MessageStarted {
        id: new_id(),
        role: MessageRole::User,
        content: None,
        tool_call_id: None,
        name: None,
        is_error: false,
        metadata: InProgress { in_progress: false },
    };
    match message {
        Message::System { content } => {
            started.role = MessageRole::System;
            started.content = Some(content.clone());
        }
        Message::User { content } => started.content = Some(content.clone()),
        Message::Assistant(reply) => {
            started.role = MessageRole::Assistant;
            started.content = Some(reply.text.clone());
        }
        Message::Tool(result) => {
            started.role = MessageRole::Tool;
            started.content = Some(result.content.clone());
            started.tool_call_id = Some(result.tool_call_id.clone());
            started.name = Some(result.name.clone());
            started.is_error = result.is_error;
        }
    }
    ctx.emitter.emit(MessageCreated {
        step_id: step_id.map(str::to_string),
        message: started,
        provider: None,
        model: None,
        params: RequestParams::default(),
    });
}
