//! Sub-agent execution traces (UAP §8.8), kept in the parent's state.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::provider::Usage;

/// What one sub-agent run did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubagentTrace {
    pub subagent_id: String,
    pub subagent_type: String,
    pub parent_tool_call_id: String,
    pub prompt: String,
    pub start_time: u64,
    pub end_time: u64,
    pub success: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default)]
    pub tool_executions: Vec<ToolExecutionTrace>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
}

/// One tool call inside a sub-agent run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolExecutionTrace {
    pub tool_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    pub arguments: Value,
    pub result: String,
    #[serde(default)]
    pub is_error: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<u64>,
}
