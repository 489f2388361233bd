//! A client's follow-up message as the answer to what an `input-required` task waits for:
//! for a question, its text (or a data part `{"answer": "..."}`; another object is the
//! values of an MCP server's form); for calls awaiting approval, a data part
//! `{"approve": true}` or `{"approve": false, "reason": "..."}`, or the text `approve` or
//! `deny`. Every call waiting is approved or denied together. For external calls, a data
//! part `{"tool_outputs": {"CALL_ID": output}}`.

use serde_json::Value;

use super::inputs::{data_of, text_of};
use crate::a2a::{ErrorCode, JsonRpcError, Message};
use crate::engine::events::{ActionKind, RequiredAction};
use crate::session::{Answer, Denial, SubmittedOutput};

pub fn of_message(action: &RequiredAction, message: &Message) -> Result<Answer, JsonRpcError> {
    match action.kind {
        ActionKind::UserInput => question_answer(message),
        ActionKind::ToolApproval => decision(action, message),
        ActionKind::SubmitToolOutputs => outputs(message),
    }
}

/// A data part `{"tool_outputs": {"CALL_ID": output, ...}}`: the outputs of the external
/// calls the task waits on (the session checks they are all there).
fn outputs(message: &Message) -> Result<Answer, JsonRpcError> {
    let outputs = data_of(message)
        .and_then(|data| data.get("tool_outputs"))
        .and_then(Value::as_object)
        .ok_or_else(|| {
            invalid("the task waits for tool outputs: send a data part {\"tool_outputs\": {\"CALL_ID\": output}}")
        })?;
    let each = outputs
        .iter()
        .map(|(id, output)| SubmittedOutput::new(id.clone(), output.clone()));
    Ok(Answer::Outputs(each.collect()))
}

fn question_answer(message: &Message) -> Result<Answer, JsonRpcError> {
    if let Some(text) = text_of(message) {
        return Ok(Answer::Text(text));
    }
    match data_of(message) {
        Some(Value::Object(data)) => match data.get("answer") {
            Some(Value::String(text)) => Ok(Answer::Text(text.clone())),
            _ => Ok(Answer::Form(Value::Object(data.clone()))),
        },
        _ => Err(invalid(
            "the task waits for an answer: send it as a text part",
        )),
    }
}

fn decision(action: &RequiredAction, message: &Message) -> Result<Answer, JsonRpcError> {
    let (approve, reason) = match (data_of(message), text_of(message)) {
        (Some(data), _) => {
            let approve = data
                .get("approve")
                .and_then(Value::as_bool)
                .ok_or_else(|| invalid("the data part needs `approve`: true or false"))?;
            let reason = data
                .get("reason")
                .and_then(Value::as_str)
                .map(str::to_string);
            (approve, reason)
        }
        (None, Some(text)) => match text.trim().to_ascii_lowercase().as_str() {
            "approve" | "yes" => (true, None),
            "deny" | "no" => (false, None),
            _ => {
                return Err(invalid(
                    "the task waits for approval: send the text `approve` or `deny`, or a data \
                     part {\"approve\": true|false, \"reason\": \"...\"}",
                ));
            }
        },
        (None, None) => {
            return Err(invalid(
                "the task waits for approval: send `approve` or `deny`",
            ));
        }
    };
    let ids = action.calls.iter().map(|call| call.id.clone());
    Ok(match approve {
        true => Answer::Decide {
            approve: ids.collect(),
            deny: Vec::new(),
        },
        false => Answer::Decide {
            approve: Vec::new(),
            deny: ids.map(|id| Denial::new(id, reason.clone())).collect(),
        },
    })
}

fn invalid(message: &str) -> JsonRpcError {
    JsonRpcError::new(ErrorCode::InvalidParams, message)
}
