//! A client's message as a run's inputs: a free-text agent takes the message's text; an
//! agent with `inputs:` takes a data part (an object), checked by the run against the
//! declarations (as `POST /api/runs` inputs are), its text (if any) as `{{ input }}`.
//! Files are not taken.

use serde_json::{Map, Value};

use crate::a2a::{ErrorCode, JsonRpcError, Message, PartContent};

/// The values and the text a run is given.
pub struct RunInputs {
    pub values: Map<String, Value>,
    pub text: String,
}

/// The message's text parts, joined by newlines.
pub fn text_of(message: &Message) -> Option<String> {
    message.text()
}

/// The message's first data part.
pub fn data_of(message: &Message) -> Option<&Value> {
    message.parts.iter().find_map(|part| part.as_data())
}

/// Refuses a message with a file part, or none at all.
pub fn check_parts(message: &Message) -> Result<(), JsonRpcError> {
    if message.parts.is_empty() {
        return Err(JsonRpcError::new(
            ErrorCode::InvalidParams,
            "the message has no parts: send a text part (or a data part for an agent with inputs)",
        ));
    }
    let file = message
        .parts
        .iter()
        .any(|part| matches!(part.content, PartContent::Raw(_) | PartContent::Url(_)));
    if file {
        return Err(JsonRpcError::new(
            ErrorCode::ContentTypeNotSupported,
            "file parts are not taken: send text, or a data part for an agent with inputs",
        ));
    }
    Ok(())
}

/// The inputs of a run of `agent`, which has `inputs:` when `typed`.
pub fn of_message(agent: &str, typed: bool, message: &Message) -> Result<RunInputs, JsonRpcError> {
    let text = text_of(message).unwrap_or_default();
    if !typed {
        if text.is_empty() && data_of(message).is_some() {
            return Err(JsonRpcError::new(
                ErrorCode::InvalidParams,
                format!(
                    "agent `{agent}` takes free text (it declares no `inputs:`): send a text part"
                ),
            ));
        }
        return Ok(RunInputs {
            values: Map::new(),
            text,
        });
    }
    match data_of(message) {
        Some(Value::Object(values)) => Ok(RunInputs {
            values: values.clone(),
            text,
        }),
        Some(other) => Err(JsonRpcError::new(
            ErrorCode::InvalidParams,
            format!(
                "agent `{agent}` takes its inputs as a data part holding an object; got {}",
                kind_of(other)
            ),
        )),
        None => Err(JsonRpcError::new(
            ErrorCode::InvalidParams,
            format!(
                "agent `{agent}` declares `inputs:`: send them as a data part holding an object \
                 (its Agent Card's skill lists them)"
            ),
        )),
    }
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
