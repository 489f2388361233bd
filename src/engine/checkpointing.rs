//! The engine's side of checkpoints: after every step of the root agent the state is handed
//! to a `Checkpointer` (the CLI's is the file store). Before a turn's tool calls run, the
//! state with those calls in flight is saved too, so a crash mid-tool is detected on resume
//! instead of the calls being run again blindly (docs/checkpoints.md has the rule).

use super::outcome::RunStatus;
use super::pending::Pending;
use super::state::AgentState;

/// Saves states for resume.
pub trait Checkpointer: Send + Sync {
    /// Saves `state` of a running run. Returns the checkpoint's name.
    fn save(&self, state: &AgentState, pending: Option<&Pending>) -> Result<String, String>;
    /// Saves the final state of run `run_id` with how it ended. Returns the checkpoint's name.
    fn finish(
        &self,
        state: &AgentState,
        status: RunStatus,
        pending: Option<&Pending>,
        run_id: &str,
    ) -> Result<String, String>;
}
