//! The `CheckpointStore` trait and the data it keeps. Synchronous on purpose: checkpoints
//! are small files written between steps, where an async hop buys nothing.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::error::CheckpointError;
use super::thread_tree::ThreadTree;

/// The version of checkpoint and metadata files.
pub const CHECKPOINT_VERSION: u32 = 1;

/// How a session stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionStatus {
    Running,
    Completed,
    Failed,
    LimitReached,
    InputRequired,
    Interrupted,
}

/// One saved state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Checkpoint {
    pub version: u32,
    pub session_id: String,
    pub checkpoint_id: String,
    pub timestamp: String,
    pub step: u64,
    pub agent: String,
    pub status: SessionStatus,
    /// The `AgentState` JSON.
    pub state: Value,
    /// What the engine needs to resume (calls in flight, an unanswered question, inputs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending: Option<Value>,
}

/// Where a branch came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ParentRef {
    pub session_id: String,
    pub step: u64,
}

/// A session's `metadata.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionMetadata {
    pub version: u32,
    pub session_id: String,
    pub agent: String,
    /// The agent file, as given on the command line (resume reads it again).
    pub agent_file: String,
    pub created: String,
    pub updated: String,
    pub status: SessionStatus,
    pub steps: u64,
    /// Every run of the session, in order.
    pub run_ids: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<ParentRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch_name: Option<String>,
    pub thread_tree: ThreadTree,
}

/// A line of `runner sessions list`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionSummary {
    pub session_id: String,
    pub agent: String,
    pub status: SessionStatus,
    pub steps: u64,
    pub updated: String,
}

/// Saves and loads checkpoints (UAP §12.4.1, plus per-step access for branching).
pub trait CheckpointStore: Send + Sync {
    /// Saves `checkpoint` as the session's latest and as the one of its step.
    fn save(&self, session_id: &str, checkpoint: &Checkpoint) -> Result<(), CheckpointError>;
    /// The latest checkpoint.
    fn load(&self, session_id: &str) -> Result<Option<Checkpoint>, CheckpointError>;
    /// The checkpoint taken after `step`.
    fn load_step(&self, session_id: &str, step: u64)
    -> Result<Option<Checkpoint>, CheckpointError>;
    /// Deletes the session and all its checkpoints.
    fn delete(&self, session_id: &str) -> Result<(), CheckpointError>;
    /// Every session, most recently updated first.
    fn list(&self) -> Result<Vec<SessionSummary>, CheckpointError>;
    fn metadata(&self, session_id: &str) -> Result<Option<SessionMetadata>, CheckpointError>;
    fn save_metadata(&self, metadata: &SessionMetadata) -> Result<(), CheckpointError>;
}
