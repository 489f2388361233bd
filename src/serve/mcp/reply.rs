//! A run's result as a tool result: the answer as text, and as `structuredContent` when
//! the agent declares `output.schema`; a run that did not complete is `isError: true` with
//! its error code and message. Every text goes through `runner serve`'s last redaction
//! pass, as its answers do.

use rmcp::model::CallToolResult;
use serde_json::{Value, json};

use crate::output::result::{RunResult, Status};
use crate::serve::redact::clean_value;

/// The tool result of a run that ended (not paused).
pub fn of_result(result: &RunResult, object_output: Option<bool>) -> CallToolResult {
    if result.status != Status::Completed {
        let (code, message) = match &result.error {
            Some(error) => (error.code.name().into_owned(), error.message.clone()),
            None => (result.status.name().to_string(), String::new()),
        };
        return error(&format!(
            "{code}: {message} (run {}, session {})",
            result.run_id, result.session_id
        ));
    }
    let text = result.output.clone().unwrap_or_default();
    let mut reply = json!({"content": [{"type": "text", "text": text}], "isError": false});
    if let (Some(object), Some(structured)) = (object_output, &result.structured) {
        reply["structuredContent"] = match object {
            true => structured.clone(),
            false => json!({"value": structured}),
        };
    }
    from_json(reply)
}

/// A tool result that reports a problem to the client's model.
pub fn error(text: &str) -> CallToolResult {
    from_json(json!({"content": [{"type": "text", "text": text}], "isError": true}))
}

fn from_json(value: Value) -> CallToolResult {
    serde_json::from_value(clean_value(value))
        .expect("a text tool result is a valid CallToolResult")
}
