//! The engine's side of checkpoints: after every step of the root agent the state is handed
//! to a `Checkpointer` (the CLI's is the file store). Before a turn's tool calls run, the
//! state with those calls in flight is saved too, so a crash mid-tool is detected on resume
//! instead of the calls being run again blindly (docs/checkpoints.md has the rule).

use serde_json::Value;

use super::state::AgentState;

/// Saves states for resume.
pub trait Checkpointer: Send + Sync {
    /// Saves `state`; `pending` is engine data the resume needs (calls in flight, an
    /// unanswered question). Returns the checkpoint's name.
    fn save(&self, state: &AgentState, pending: Option<&Value>) -> Result<String, String>;
}

/// `pending` for a turn whose tool calls are running.
pub fn in_flight(calls: &[crate::provider::ToolCall]) -> Value {
    serde_json::json!({"kind": "tools_in_flight", "calls": calls})
}
