//! Helpers for middleware that manage the history: its size, and where it may be cut.

use crate::provider::Message;

/// A rough token estimate (4 characters per token), enough for context management.
pub fn estimate_tokens(message: &Message) -> u64 {
    serde_json::to_string(message).map_or(0, |text| text.len() as u64 / 4)
}

/// Indices where the history can be cut without separating an assistant's tool calls from
/// their results (providers reject orphaned tool messages): any index whose message is not
/// a tool result.
pub fn is_safe_cut(messages: &[Message], index: usize) -> bool {
    !matches!(messages.get(index), Some(Message::Tool(_)))
}
