//! A scripted model's answers (`model.script`): what the agent file says the model
//! replies, which `provider::scripted` gives out in order.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One scripted answer (the `model.script` entries of an agent file).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScriptedResponse {
    /// The reply's text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// The reply's reasoning, shown as thinking.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking: Option<String>,
    /// Tool calls the model makes in this reply.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ScriptedToolCall>,
    /// Token counts to report; zero when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<ScriptedUsage>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScriptedToolCall {
    /// The tool's name.
    pub name: String,
    /// A JSON value, or a string holding JSON text (which may be deliberately invalid,
    /// to test how the engine handles a model's broken arguments).
    #[serde(default)]
    pub arguments: Value,
    /// Defaults to `call_<response>_<call>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScriptedUsage {
    /// Prompt tokens to report.
    #[serde(default)]
    pub input_tokens: u64,
    /// Completion tokens to report.
    #[serde(default)]
    pub output_tokens: u64,
}
