//! Payloads written by other producers of the reference format, read into our model.
//!
//! The reference format (SPEC §8) fixes the tags but not the JSON inside them: its own
//! examples carry a tool result that is any JSON (`{"temperature": …}`) and error details
//! with keys of their own (`traceback`). The strict parser keeps our shapes (what the
//! runner writes, so a file that strays from them is a bug); the tolerant parser
//! (`runner render` without `--strict`) maps foreign payloads onto them with these
//! functions, losing nothing: what does not fit a field is kept as data or details.

use serde_json::Value;

use super::model::{ErrorJson, ToolResult, UserInput};
use crate::tools::ToolOutput;

/// A tool result: ours when it has our shape, otherwise a successful result whose data is
/// the whole value (the reference says nothing of success or failure).
pub fn tool_result(value: Value) -> ToolResult {
    if let Ok(ours) = serde_json::from_value::<ToolResult>(value.clone()) {
        return ours;
    }
    ToolResult::from(ToolOutput::ok(value))
}

/// Error details: ours when they have our shape; otherwise `error`, `code` and `timestamp`
/// taken when they are strings, every other key kept in `details` (an object), and the
/// block's message as `error` when the details have none.
pub fn error_json(value: Value, message: &str) -> ErrorJson {
    if let Ok(ours) = serde_json::from_value::<ErrorJson>(value.clone()) {
        return ours;
    }
    let Value::Object(mut fields) = value else {
        return ErrorJson {
            error: message.to_owned(),
            code: None,
            details: value,
            timestamp: None,
        };
    };
    let mut take_string = |key: &str| match fields.remove(key) {
        Some(Value::String(s)) => Some(s),
        Some(other) => {
            fields.insert(key.to_owned(), other);
            None
        }
        None => None,
    };
    let error = take_string("error").unwrap_or_else(|| message.to_owned());
    let code = take_string("code");
    let timestamp = take_string("timestamp");
    ErrorJson {
        error,
        code,
        details: if fields.is_empty() {
            Value::Null
        } else {
            Value::Object(fields)
        },
        timestamp,
    }
}

/// An error block with no details block: its message is all there is.
pub fn error_without_details(message: &str) -> ErrorJson {
    ErrorJson {
        error: message.to_owned(),
        code: None,
        details: Value::Null,
        timestamp: None,
    }
}

/// A user's input: ours when it is `{input, type}`, otherwise the whole value as text input.
pub fn user_input(value: Value) -> UserInput {
    if let Ok(ours) = serde_json::from_value::<UserInput>(value.clone()) {
        return ours;
    }
    UserInput {
        input: value,
        kind: "text".to_owned(),
    }
}
