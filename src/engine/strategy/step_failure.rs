//! How a plan step fails (UAP §5.4, `allow_replan`): the model says so by calling the
//! `step_failed` tool the strategy offers during plan steps, or the step's last tool call
//! failed and the model answered without trying again. Either way the step's result is
//! the reason, which the next plan is told.

use serde_json::{Value, json};

use crate::provider::{Message, ToolCall, ToolSpec};

/// The tool's name; an agent tool of the same name takes precedence (it is not offered).
pub const STEP_FAILED: &str = "step_failed";

/// The longest tool error quoted in a step's failure.
const MAX_REASON_CHARS: usize = 500;

/// The `step_failed` tool as offered to the model.
pub fn step_failed_spec() -> ToolSpec {
    ToolSpec {
        name: STEP_FAILED.into(),
        description: "Call this when the current plan step cannot be done, with the reason. \
                      The step fails; a new plan may be made for what is left."
            .into(),
        parameters: json!({
            "type": "object",
            "required": ["reason"],
            "properties": {
                "reason": {"type": "string", "description": "Why the step cannot be done."}
            }
        }),
    }
}

/// The reason of the first `step_failed` call of a reply, if it makes one.
pub fn declared_failure(calls: &[ToolCall]) -> Option<String> {
    let call = calls.iter().find(|c| c.name == STEP_FAILED)?;
    let reason = call.arguments.get("reason").and_then(Value::as_str);
    Some(match reason.map(str::trim).filter(|r| !r.is_empty()) {
        Some(reason) => format!("the model gave up: {reason}"),
        None => "the model gave up (no reason given)".into(),
    })
}

/// The failure of a turn's last tool call, from the messages the turn added (the results
/// come last, in the calls' order); `None` when it succeeded.
pub fn last_call_failure(messages: &[Message]) -> Option<String> {
    match messages.last()? {
        Message::Tool(result) if result.is_error => {
            let mut error: String = result.content.chars().take(MAX_REASON_CHARS).collect();
            if result.content.chars().nth(MAX_REASON_CHARS).is_some() {
                error.push('…');
            }
            Some(format!(
                "its last tool call (`{}`) failed and the model did not try again: {error}",
                result.name
            ))
        }
        _ => None,
    }
}
