//! The provider-neutral vocabulary: what the engine asks a model ([`ModelRequest`]),
//! what comes back ([`ModelResponse`]) and what arrives on the way ([`StreamDelta`]).
//!
//! Every type here is plain data with serde support, so requests and responses can be
//! checkpointed and written to cassettes unchanged. Each wire format (OpenAI,
//! Anthropic) maps these types in its own module; nothing here knows HTTP.

use schemars::JsonSchema;

use std::sync::Arc;

use super::history::History;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One model call: the conversation so far plus what the model may use.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelRequest {
    /// The system prompt. `Message::System` entries in `messages` are also accepted;
    /// providers that take a single system prompt join them all, this one first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    pub messages: History,
    /// The tools offered. Shared: an agent offers the same tools at every call, and
    /// copying their schemas into each request cost more than the rest of a step.
    #[serde(default, skip_serializing_if = "no_tools")]
    pub tools: Arc<[ToolSpec]>,
    /// Ask for JSON output matching a schema (see docs/providers.md per provider).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_format: Option<ResponseFormat>,
    /// Texts that end the reply where they would begin (the text protocol's closing tags,
    /// so a slow server stops after the first action); they are not part of the reply.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stop: Vec<String>,
    /// Per-request API body fields, merged over the configured `params`.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub params: Map<String, Value>,
    /// Where in the model's fallback chain the call starts (the engine keeps it with the
    /// agent's state); only the fallback chain (`provider::fallback`) reads it. Never sent.
    #[serde(skip)]
    pub route: Option<super::fallback::ChainPosition>,
}

fn no_tools(tools: &Arc<[ToolSpec]>) -> bool {
    tools.is_empty()
}

impl ModelRequest {
    /// What the request holds, in a line: `system prompt, 4 messages (user, assistant
    /// calling read_file, tool, user), 2 tools, stop sequences`.
    pub fn outline(&self) -> String {
        let roles: Vec<String> = self.messages.iter().map(Message::outline).collect();
        let mut parts = Vec::new();
        if self.system.is_some() {
            parts.push("system prompt".to_string());
        }
        parts.push(format!(
            "{} ({})",
            count(roles.len(), "message"),
            roles.join(", ")
        ));
        if !self.tools.is_empty() {
            parts.push(count(self.tools.len(), "tool"));
        }
        if let Some(format) = &self.response_format {
            parts.push(format!("response format `{}`", format.name));
        }
        if !self.stop.is_empty() {
            parts.push("stop sequences".into());
        }
        parts.join(", ")
    }
}

/// `1 tool`, `2 tools`.
fn count(n: usize, noun: &str) -> String {
    match n {
        1 => format!("1 {noun}"),
        n => format!("{n} {noun}s"),
    }
}

/// A message of the conversation, tagged by role.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    System { content: String },
    User { content: String },
    Assistant(AssistantMessage),
    Tool(ToolResult),
}

impl Message {
    /// The role, and the calls an assistant message makes.
    fn outline(&self) -> String {
        match self {
            Message::System { .. } => "system".into(),
            Message::User { .. } => "user".into(),
            Message::Tool(_) => "tool".into(),
            Message::Assistant(a) if a.tool_calls.is_empty() => "assistant".into(),
            Message::Assistant(a) => {
                let names: Vec<&str> = a.tool_calls.iter().map(|c| c.name.as_str()).collect();
                format!("assistant calling {}", names.join(" and "))
            }
        }
    }

    pub fn system(content: impl Into<String>) -> Self {
        Message::System {
            content: content.into(),
        }
    }
    pub fn user(content: impl Into<String>) -> Self {
        Message::User {
            content: content.into(),
        }
    }
    pub fn assistant(text: impl Into<String>) -> Self {
        Message::Assistant(AssistantMessage {
            text: text.into(),
            ..Default::default()
        })
    }
    pub fn tool_result(call: &ToolCall, content: impl Into<String>, is_error: bool) -> Self {
        Message::Tool(ToolResult {
            tool_call_id: call.id.clone(),
            name: call.name.clone(),
            content: content.into(),
            is_error,
        })
    }
}

/// What the model said in an earlier turn. Thinking blocks are kept because Anthropic
/// requires them (with their signatures) before the tool calls they led to.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AssistantMessage {
    #[serde(default)]
    pub text: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thinking: Vec<ThinkingBlock>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
}

/// The answer to one tool call, fed back to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolResult {
    pub tool_call_id: String,
    pub name: String,
    pub content: String,
    #[serde(default)]
    pub is_error: bool,
}

/// A tool the model may call; `parameters` is a JSON Schema object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    #[serde(default)]
    pub description: String,
    pub parameters: Value,
}

/// Structured-output request: the reply must be JSON matching `schema`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResponseFormat {
    /// A short identifier (OpenAI requires one); `[a-zA-Z0-9_-]`.
    pub name: String,
    pub schema: Value,
    /// OpenAI strict mode (the schema must then follow OpenAI's strict rules).
    #[serde(default)]
    pub strict: bool,
}

/// A reasoning block. `signature` (Anthropic) must be sent back verbatim;
/// `redacted` holds the opaque data of an Anthropic `redacted_thinking` block;
/// `reasoning_item` is set when the block is an OpenAI Responses reasoning item (its
/// `text` is then the item's summary). Each wire sends back only the kind it made.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ThinkingBlock {
    #[serde(default)]
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redacted: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_item: Option<ReasoningItem>,
}

/// What identifies an OpenAI Responses reasoning item so it can be carried into the next
/// request: the server keeps nothing (`store: false`), so only an item with its
/// `encrypted_content` can be sent back.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReasoningItem {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encrypted_content: Option<String>,
}

/// A complete tool call. When the model produced arguments that are not valid JSON,
/// `arguments` is `null` and `invalid_arguments` keeps the raw text and the parse error,
/// so the engine can answer with a tool error instead of crashing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    // Shared, not copied: a call's arguments are read by its message, its events, its
    // guard, its transcript entry and its tool, and never change once parsed. (Not a doc
    // comment: it would become the schemas' description of a model-facing field.)
    pub arguments: Arc<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invalid_arguments: Option<InvalidArguments>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct InvalidArguments {
    pub raw: String,
    pub error: String,
}

impl ToolCall {
    /// Builds a call from the raw argument text a model streamed. Empty text means `{}`
    /// (Anthropic sends only `""` for a tool without arguments).
    pub fn from_raw(id: String, name: String, raw: &str) -> Self {
        let trimmed = raw.trim();
        if trimmed.is_empty() {
            return ToolCall {
                id,
                name,
                arguments: Value::Object(Map::new()).into(),
                invalid_arguments: None,
            };
        }
        match serde_json::from_str::<Value>(trimmed) {
            Ok(arguments) => ToolCall {
                id,
                name,
                arguments: arguments.into(),
                invalid_arguments: None,
            },
            Err(e) => ToolCall {
                id,
                name,
                arguments: Value::Null.into(),
                invalid_arguments: Some(InvalidArguments {
                    raw: raw.to_string(),
                    error: format!("they are not valid JSON ({e})"),
                }),
            },
        }
    }

    /// The arguments as the model wrote them: the raw text when it never parsed (a
    /// cassette replays it as it was; requests send `{}` instead, see `wire_body`).
    pub fn arguments_text(&self) -> String {
        match &self.invalid_arguments {
            Some(invalid) => invalid.raw.clone(),
            None => self.arguments.to_string(),
        }
    }
}

/// Token counts of one call. `input_tokens` includes cached prompt tokens
/// (Anthropic reports those separately; they are added in).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Usage {
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
    #[serde(default)]
    pub total_tokens: u64,
}

impl Usage {
    pub fn new(input_tokens: u64, output_tokens: u64) -> Self {
        Usage {
            input_tokens,
            output_tokens,
            total_tokens: input_tokens.saturating_add(output_tokens),
        }
    }

    /// Both counts together; a count that would overflow stays at the maximum.
    pub fn plus(&self, other: &Usage) -> Usage {
        Usage::new(
            self.input_tokens.saturating_add(other.input_tokens),
            self.output_tokens.saturating_add(other.output_tokens),
        )
    }
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    Stop,
    Length,
    ToolCalls,
    ContentFilter,
    /// A reason this crate does not know, kept verbatim.
    Other(String),
}

impl FinishReason {
    /// The reason's name as it is serialized (`stop`, `tool_calls`, …); an unknown one's
    /// own text.
    pub fn as_str(&self) -> &str {
        match self {
            FinishReason::Stop => "stop",
            FinishReason::Length => "length",
            FinishReason::ToolCalls => "tool_calls",
            FinishReason::ContentFilter => "content_filter",
            FinishReason::Other(other) => other,
        }
    }

    /// Maps the OpenAI-style `finish_reason` strings (also used by most compatible
    /// servers).
    pub fn from_openai(s: &str) -> Self {
        match s {
            "stop" | "eos" | "end_turn" => FinishReason::Stop,
            "length" | "max_tokens" => FinishReason::Length,
            "tool_calls" | "function_call" | "tool_use" => FinishReason::ToolCalls,
            "content_filter" => FinishReason::ContentFilter,
            other => FinishReason::Other(other.to_string()),
        }
    }

    /// Maps Anthropic's `stop_reason`.
    pub fn from_anthropic(s: &str) -> Self {
        match s {
            "end_turn" | "stop_sequence" => FinishReason::Stop,
            "max_tokens" | "model_context_window_exceeded" => FinishReason::Length,
            "tool_use" => FinishReason::ToolCalls,
            "refusal" => FinishReason::ContentFilter,
            other => FinishReason::Other(other.to_string()),
        }
    }
}

/// The assembled answer of one model call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelResponse {
    pub text: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thinking: Vec<ThinkingBlock>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    pub usage: Usage,
    pub finish_reason: FinishReason,
    /// The model that answered, as the server named it (may differ from the request).
    pub model: String,
    /// The server's id of this response (`chatcmpl-...`, `resp_...`, `msg_...`), when it
    /// gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

impl ModelResponse {
    /// The response as the assistant message to append to the conversation.
    pub fn to_message(&self) -> Message {
        Message::Assistant(AssistantMessage {
            text: self.text.clone(),
            thinking: self.thinking.clone(),
            tool_calls: self.tool_calls.clone(),
        })
    }
}

/// An increment of a streamed answer, delivered to the caller's sink as it arrives.
/// The final [`ModelResponse`] is authoritative; deltas are for live display.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum StreamDelta {
    Text {
        text: String,
    },
    Thinking {
        text: String,
    },
    /// A tool call began; `index` is its position among this response's calls.
    ToolCallStart {
        index: usize,
        id: String,
        name: String,
    },
    ToolCallArguments {
        index: usize,
        fragment: String,
    },
    Usage {
        usage: Usage,
    },
    /// The attempt failed with an error worth retrying; attempt `attempt` (2, 3, ...) starts
    /// after `wait_ms`. Sent whether or not the failed attempt had streamed anything.
    Retrying {
        attempt: u32,
        wait_ms: u64,
        reason: String,
    },
    /// Discard every delta received so far for this call: the attempt failed and is
    /// being retried from scratch. `attempt` is the attempt about to start (2, 3, ...).
    Reset {
        attempt: u32,
        reason: String,
    },
    /// The call moved to another model of the fallback chain: the current one failed after
    /// its retries (`reason`), or its cooldown is over and the first model is tried again.
    /// `to` is where the next call of this agent starts too.
    Fallback {
        from: String,
        to: String,
        reason: String,
        position: super::fallback::ChainPosition,
    },
    /// Everything received so far has been passed on, and the stream waits for more of
    /// the reply: a consumer that holds what it was given writes it out now.
    Idle,
}

#[cfg(test)]
mod finish_reason_tests {
    use super::FinishReason;

    #[test]
    fn a_finish_reasons_name_is_what_it_serializes_as() {
        let reasons = [
            FinishReason::Stop,
            FinishReason::Length,
            FinishReason::ToolCalls,
            FinishReason::ContentFilter,
            FinishReason::Other("pause_turn".into()),
        ];
        for reason in reasons {
            let json = serde_json::to_value(&reason).unwrap();
            let serialized = json
                .as_str()
                .or_else(|| json.get("other").and_then(|v| v.as_str()));
            assert_eq!(serialized, Some(reason.as_str()), "{reason:?}");
        }
    }
}
