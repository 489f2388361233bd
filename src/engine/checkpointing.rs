//! The engine's side of checkpoints: after every step of the root agent the state is handed
//! to a `Checkpointer` (the CLI's is the file store). Before a turn's tool calls run, the
//! state with those calls in flight is saved too, so a crash mid-tool is detected on resume
//! instead of the calls being run again blindly (docs/checkpoints.md has the rule).

use serde::{Deserialize, Serialize};

use super::outcome::RunStatus;
use super::state::AgentState;
use crate::provider::ToolCall;

/// What a checkpoint's state lacks that a resume must settle first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Pending {
    /// These calls were running: their results are missing, and they may have taken effect.
    ToolsInFlight { calls: Vec<ToolCall> },
    /// `ask_user` waits for an answer, which becomes the call's result.
    InputRequired {
        question: String,
        id: Option<String>,
        call: ToolCall,
    },
}

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
