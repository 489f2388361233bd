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

/// What a reload poll found: the new agent and the keys that changed, or the diagnostics of
/// an invalid save.
pub type ReloadOutcome = Result<(super::agent::Agent, Vec<String>), Vec<String>>;

/// Hot reload at step boundaries: the engine asks after each step of the root agent whether
/// a new definition is ready.
pub trait Reloader: Send + Sync {
    /// `Some(Ok((agent, changes)))`: swap in `agent` (`changes` names what differs);
    /// `Some(Err(diagnostics))`: the saved file is invalid, keep running the old one;
    /// `None`: nothing changed.
    fn poll(&self) -> Option<ReloadOutcome>;
}
