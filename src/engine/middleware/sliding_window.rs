//! `sliding_window`: sends at most `max_messages` messages. The first user message (the
//! task) stays pinned, because providers expect a conversation to open with the user and
//! the model needs its task; the rest is the most recent messages, cut where no tool result
//! would lose the assistant message that called it (providers reject orphaned results).

use super::chain::{CallContext, Middleware};
use super::history::is_safe_cut;
use crate::provider::{BoxFuture, Message};

pub struct SlidingWindow {
    max_messages: usize,
}

impl SlidingWindow {
    pub fn new(max_messages: u64) -> Self {
        SlidingWindow {
            max_messages: max_messages.max(1) as usize,
        }
    }
}

/// The messages to keep: the pinned task (when the history opens with a user message) and
/// a tail that starts at a safe cut.
pub fn window(messages: &[Message], max_messages: usize) -> Vec<Message> {
    if messages.len() <= max_messages {
        return messages.to_vec();
    }
    let pinned =
        usize::from(matches!(messages.first(), Some(Message::User { .. })) && max_messages > 1);
    let mut cut = messages.len() - (max_messages - pinned);
    // Moving the cut later drops a little more but never orphans a tool result.
    while cut < messages.len() && !is_safe_cut(messages, cut) {
        cut += 1;
    }
    let mut kept = messages[..pinned].to_vec();
    kept.extend_from_slice(&messages[cut.max(pinned)..]);
    kept
}

impl Middleware for SlidingWindow {
    fn name(&self) -> &str {
        "sliding_window"
    }

    fn before<'a>(&'a self, mut ctx: CallContext) -> BoxFuture<'a, CallContext> {
        Box::pin(async move {
            if ctx.state.messages.len() > self.max_messages {
                let kept = window(&ctx.state.messages, self.max_messages);
                ctx.state = ctx.state.with_context(kept);
            }
            ctx
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::{AssistantMessage, ToolCall};

    fn call(id: &str) -> Message {
        Message::Assistant(AssistantMessage {
            tool_calls: vec![ToolCall::from_raw(id.into(), "t".into(), "{}")],
            ..Default::default()
        })
    }

    fn result(id: &str) -> Message {
        Message::tool_result(
            &ToolCall::from_raw(id.into(), "t".into(), "{}"),
            "ok",
            false,
        )
    }

    #[test]
    fn keeps_the_task_and_never_orphans_a_result() {
        let history = vec![
            Message::user("task"),
            call("a"),
            result("a"),
            call("b"),
            result("b"),
            call("c"),
            result("c"),
        ];
        let kept = window(&history, 4);
        assert!(kept.len() <= 4);
        assert_eq!(kept[0], Message::user("task"));
        assert!(!matches!(kept[1], Message::Tool(_)));
        assert_eq!(window(&history, 10), history);
    }
}
