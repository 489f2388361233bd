//! How a run ended: its status, error and totals, and the state to go on from. The
//! driver (`run.rs`) produces it; the terminal events and the checkpoint carry its parts.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::limit::Limit;
use super::pending::Pending;
use super::state::AgentState;
use crate::provider::Usage;

/// How a run ended (the CLI adds `invalid` for runs that never started).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    Completed,
    Failed,
    LimitReached,
    InputRequired,
    Interrupted,
}

/// `{"code", "message"}` of a run that did not complete.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunError {
    pub code: String,
    pub message: String,
}

/// What the terminal event carries about the whole run tree (the result is folded from it).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunTotals {
    pub steps: u64,
    pub llm_calls: u64,
    pub tool_calls: u64,
    pub usage: Usage,
    pub cost_usd: Option<f64>,
}

/// How a run ended, with the state to checkpoint or continue from.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    pub status: RunStatus,
    pub state: AgentState,
    pub output: Option<String>,
    pub structured: Option<Value>,
    pub error: Option<RunError>,
    /// The bound that stopped the run (`limit_reached`).
    pub limit: Option<Limit>,
    /// What a resume must settle first (the question of an `input_required` run).
    pub pending: Option<Pending>,
}
