//! The `limits` key: bounds of a run. Every bound is optional; absent means unbounded.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::duration::HumanDuration;

/// Bounds of a run, shared by the agent and all its sub-agents. Absent means unbounded.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// The most model calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_llm_calls: Option<u64>,
    /// The most tool calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tool_calls: Option<u64>,
    /// The most tokens (input + output), this agent and all its sub-agents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// The most dollars spent; needs `model.pricing`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub max_cost_usd: Option<f64>,
    /// Wall clock for the whole run, e.g. `15m`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<HumanDuration>,
    /// Wall clock for one tool call, e.g. `60s`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_timeout: Option<HumanDuration>,
    /// The deepest sub-agent nesting (the root agent is depth 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_depth: Option<u32>,
    /// A tool result longer than this is cut, with a marker saying how much was cut.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_output_chars: Option<u64>,
}

/// The variables a `stop_when` expression can read.
pub const STOP_WHEN_VARIABLES: &[&str] = &[
    "step",
    "usage",
    "llm_calls",
    "tool_calls",
    "elapsed_ms",
    "metadata",
];
