//! What the events of the thread's messages and the model calls say: messages made,
//! streamed and completed, usage, retries, fallbacks, compaction, reasoning.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::engine::request_params::RequestParams;
use crate::provider::{FinishReason, ToolCall, Usage};

/// The only author of model messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Assistant,
}

/// Who a message of the thread is from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MessageRole {
    System,
    User,
    Assistant,
    /// A tool call's result, as the model gets it back.
    Tool,
}

/// A message that joined the thread: the assistant message a model call starts (no
/// `provider`, `model` or `params` on the others).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MessageCreated {
    /// The step it joined in; absent for a run's opening message (before its first step).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_id: Option<String>,
    pub message: MessageStarted,
    /// The provider the call goes to (`openai`, `anthropic`, `ollama`, `scripted`, ...);
    /// absent from events written before it was added.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// The model the call is sent for (the server may answer with another: `agent.llm.usage`
    /// names that one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The sampling parameters the call is sent with, those that were set; absent when none
    /// were (and from events written before it was added).
    #[serde(default, skip_serializing_if = "RequestParams::is_empty")]
    pub params: RequestParams,
}

impl MessageCreated {
    /// Whether it starts a model call (the assistant message whose text is to come), rather
    /// than announcing a message that is whole.
    pub fn starts_model_call(&self) -> bool {
        self.message.role == MessageRole::Assistant && self.message.metadata.in_progress
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MessageStarted {
    pub id: String,
    pub role: MessageRole,
    /// The text of a message that is whole (user, tool, an assistant message the strategy
    /// restates); absent for a model call's reply, which streams and is in
    /// `thread.message.completed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// A tool message: the call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// A tool message: the tool's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// A tool message: the call failed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
    /// `inProgress: true` for a model call's reply (its content is to come), else false.
    pub metadata: InProgress,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InProgress {
    pub in_progress: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MessageDelta {
    pub message_id: String,
    pub delta: Delta,
}

/// A piece of streamed text or thinking, or a restart: consumers drop what they showed of
/// the failed attempt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Delta {
    #[serde(rename_all = "camelCase")]
    Chunk { content_chunk: String },
    /// The model's reasoning, where the server streams it (Anthropic thinking, reasoning
    /// content of OpenAI-compatible servers, Responses reasoning summaries).
    #[serde(rename_all = "camelCase")]
    Thinking { thinking_chunk: String },
    /// Pieces of tool calls as the model writes them: a call's `id` and `name` when it
    /// starts, then its arguments' text in pieces.
    #[serde(rename_all = "camelCase")]
    ToolCalls {
        tool_calls_chunk: Vec<ToolCallChunk>,
    },
    Reset {
        reset: bool,
        attempt: u32,
        reason: String,
    },
}

/// A piece of one tool call of a streaming reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallChunk {
    /// The call's position among the reply's calls (0, 1, ...).
    pub index: usize,
    /// Set on the piece that starts the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Set on the piece that starts the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The next piece of the arguments' JSON text, on the pieces after the start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments_chunk: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MessageCompleted {
    pub step_id: String,
    pub message: ModelMessage,
    pub purpose: Purpose,
    /// The server's id of the response (`chatcmpl-...`, `resp_...`, `msg_...`); absent when
    /// it gave none (and from events written before it was added).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelMessage {
    pub id: String,
    pub role: Role,
    pub content: String,
    pub thinking: Vec<String>,
    pub tool_calls: Vec<ToolCall>,
    pub finish_reason: FinishReason,
}

/// What a model call was for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Purpose {
    /// react's reasoning call: the transcript shows its text once, as thinking.
    Reasoning,
    Reply,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LlmRetry {
    /// The assistant message the call is for.
    pub message_id: String,
    /// The attempt about to start (2, 3, ...).
    pub attempt: u32,
    /// How long runner waits before it (backoff, or the server's `Retry-After`).
    pub wait_ms: u64,
    /// Why the attempt before it failed.
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContextCompacted {
    /// `summarize` or `truncate`.
    pub strategy: String,
    /// What set it off: `threshold` (the estimate before a call) or `provider` (the model
    /// refused the request as too long).
    pub reason: String,
    /// The estimated size of the request before and after, in tokens.
    pub tokens_before: u64,
    pub tokens_after: u64,
    /// Messages taken out of the history (summarised or dropped).
    pub removed_messages: u64,
    /// The summary that replaced them (`summarize`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LlmFallback {
    /// The assistant message the call is for.
    pub message_id: String,
    /// The model the call leaves (`provider/name`).
    pub from: String,
    /// The model that takes the call, and the calls after it until the cooldown is over.
    pub to: String,
    /// Why: the error of `from` after its retries, or that the cooldown is over.
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LlmUsage {
    pub model: String,
    /// This call.
    pub usage: Usage,
    /// The whole run tree so far.
    pub total_usage: Usage,
    /// `null` without pricing.
    pub cost_usd: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReasoningCreated {
    pub step_id: String,
    pub reasoning: String,
}
