//! The engine's side of `tool_protocol: xml`: the model gets no native tools but a prompt
//! section; its reply is parsed as it streams; a tool call found in the text becomes an
//! ordinary `ToolCall`, so the scheduler, events and transcript see the same shapes as a
//! native run; results go back as `<tool_result>` user messages.

use serde_json::Value;

use super::clock::new_id;
use crate::protocol::{
    Action, COMPLETION, ParseOutcome, ToolDescription, coerce_params, no_action_feedback,
    protocol_section, tool_result_message,
};
use crate::provider::{
    AssistantMessage, InvalidArguments, Message, ModelResponse, ThinkingBlock, ToolCall, ToolSpec,
};

/// What an agent using the text protocol carries.
#[derive(Debug, Clone)]
pub struct XmlTools {
    /// The system-prompt section describing the protocol and the tools.
    pub prompt: String,
    pub names: Vec<String>,
    /// Each tool's parameter schema, by which the text values of a call are typed.
    schemas: Vec<Value>,
    /// Replies in a row without a valid action that are answered with what was wrong
    /// before the run fails (`execution.format_retries`).
    pub retries: u32,
}

/// `execution.format_retries` when the file does not say.
pub const DEFAULT_FORMAT_RETRIES: u32 = 4;

impl XmlTools {
    pub fn new(tools: &[ToolSpec], retries: u32) -> Self {
        let descriptions: Vec<ToolDescription> = tools
            .iter()
            .map(|tool| ToolDescription {
                name: tool.name.clone(),
                description: tool.description.clone(),
                parameters: tool.parameters.clone(),
            })
            .collect();
        XmlTools {
            prompt: protocol_section(&descriptions),
            names: tools.iter().map(|t| t.name.clone()).collect(),
            schemas: tools.iter().map(|t| t.parameters.clone()).collect(),
            retries,
        }
    }

    /// The closing tags of every action, sent as stop sequences: the first action ends the
    /// turn, so whatever a model writes after it is waste (on a slow local server, seconds).
    pub fn stop_sequences(&self) -> Vec<String> {
        let actions = self.names.iter().map(String::as_str);
        actions
            .chain([COMPLETION])
            .map(|name| format!("</{name}>"))
            .collect()
    }

    fn schema(&self, name: &str) -> Value {
        let index = self.names.iter().position(|n| n == name);
        index.map_or(Value::Null, |i| self.schemas[i].clone())
    }
}

/// The history as the model sees it: its own replies as the text it wrote, tool results as
/// `<tool_result>` user messages (consecutive user messages joined into one).
pub fn wire_history(messages: &[Message]) -> Vec<Message> {
    let mut wire: Vec<Message> = Vec::with_capacity(messages.len());
    for message in messages {
        let next = match message {
            Message::Assistant(assistant) => Message::Assistant(AssistantMessage {
                text: assistant.text.clone(),
                ..AssistantMessage::default()
            }),
            Message::Tool(result) => Message::user(tool_result_message(
                &result.name,
                &result.content,
                result.is_error,
            )),
            other => other.clone(),
        };
        match (wire.last_mut(), &next) {
            (Some(Message::User { content }), Message::User { content: more }) => {
                content.push_str("\n\n");
                content.push_str(more);
            }
            _ => wire.push(next),
        }
    }
    wire
}

/// Turns a parsed reply into the response the engine works with, and the message to keep
/// in the history (the raw text, plus the call for the engine's own bookkeeping). Returns
/// the feedback for the model when the reply had no valid action.
pub fn apply(
    xml: &XmlTools,
    mut response: ModelResponse,
    outcome: ParseOutcome,
) -> (ModelResponse, Message, Option<String>) {
    let raw = std::mem::take(&mut response.text);
    response
        .thinking
        .extend(outcome.thinking.iter().map(|text| ThinkingBlock {
            text: text.clone(),
            ..ThinkingBlock::default()
        }));
    let mut feedback = None;
    response.tool_calls.clear();
    response.text = outcome.text.trim().to_string();
    match outcome.action {
        Some(Action::Completion { result }) => response.text = result,
        Some(Action::ToolCall { name, params }) => {
            let schema = xml.schema(&name);
            let id = format!("xml_{}", &new_id()[..8]);
            let call = match coerce_params(&params, &schema) {
                Ok(arguments) => ToolCall {
                    id,
                    name,
                    arguments: Value::Object(arguments).into(),
                    invalid_arguments: None,
                },
                Err(error) => ToolCall {
                    id,
                    name,
                    arguments: Value::Null.into(),
                    invalid_arguments: Some(InvalidArguments {
                        raw: serde_json::to_string(&params).unwrap_or_default(),
                        error,
                    }),
                },
            };
            response.tool_calls.push(call);
        }
        None => feedback = Some(no_action_feedback(outcome.error.as_ref())),
    }
    let message = Message::Assistant(AssistantMessage {
        text: raw,
        thinking: Vec::new(),
        tool_calls: response.tool_calls.clone(),
    });
    (response, message, feedback)
}
