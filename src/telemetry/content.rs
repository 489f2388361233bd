//! Message content on spans, only when `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`
//! is `true`: the opening messages, the model's replies, tool arguments and results, in the
//! GenAI semantic conventions' JSON shapes, each passed through the redactor first (the
//! built-in token formats, the secret values this process holds, the agent's `redact:`).

use serde_json::{Value, json};

use crate::policy::Redactor;
use crate::provider::{Message, ToolCall};

/// `value` as JSON text with every secret replaced by `[REDACTED]`.
pub fn redacted(redactor: &Redactor, value: &Value) -> String {
    let text = match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    redactor.redact_text(&text).unwrap_or(text)
}

/// `gen_ai.input.messages`: the messages a run opens with.
pub fn input_messages(messages: &[Message]) -> Value {
    Value::Array(messages.iter().filter_map(message).collect())
}

/// `gen_ai.output.messages`: one reply, its text and the calls it makes.
pub fn output_message(text: &str, calls: &[ToolCall], finish_reason: &str) -> Value {
    let mut parts = Vec::new();
    if !text.is_empty() {
        parts.push(json!({"type": "text", "content": text}));
    }
    for call in calls {
        parts.push(json!({
            "type": "tool_call", "id": call.id, "name": call.name, "arguments": call.arguments,
        }));
    }
    json!([{"role": "assistant", "parts": parts, "finish_reason": finish_reason}])
}

fn message(message: &Message) -> Option<Value> {
    let (role, text) = match message {
        Message::System { content } => ("system", content.as_str()),
        Message::User { content } => ("user", content.as_str()),
        Message::Assistant(reply) => ("assistant", reply.text.as_str()),
        Message::Tool(_) => return None,
    };
    Some(json!({"role": role, "parts": [{"type": "text", "content": text}]}))
}
