//! The agent's `context` key: how the conversation is kept inside the model's window.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// When and how the history is compacted before a request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ContextSpec {
    /// The share of the model's window a request may fill before the history is compacted
    /// (default 0.8).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.05, max = 1.0))]
    pub threshold: Option<f64>,
    /// What compacting does (default `summarize`).
    #[serde(default)]
    pub strategy: ContextStrategy,
}

/// What compacting the history does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ContextStrategy {
    /// The agent's model summarises the older messages; the recent ones stay verbatim.
    #[default]
    Summarize,
    /// The older messages are dropped (the first user message stays).
    Truncate,
    /// The run fails (`context_overflow`) instead.
    Fail,
}
