//! The `CheckpointStore` trait and the data it keeps. Synchronous on purpose: checkpoints
//! are small files written between steps, where an async hop buys nothing.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::error::CheckpointError;
use super::hold::SessionHold;
use super::journal::JournalPosition;
use super::pending_fields::PendingFields;
use super::thread_tree::ThreadTree;
use crate::engine::checkpointing::Durability;
use crate::engine::{AgentState, RunStatus};

/// The version of checkpoint and metadata files.
pub const CHECKPOINT_VERSION: u32 = 1;

/// How a session stands: a run is going on in it, or its last run ended (spelt as its
/// status).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum SessionStatus {
    Running,
    #[serde(untagged)]
    Ended(RunStatus),
}

impl From<RunStatus> for SessionStatus {
    fn from(status: RunStatus) -> Self {
        SessionStatus::Ended(status)
    }
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
    /// In a snapshot (`checkpoint.json`): the journal records it holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub journal: Option<JournalPosition>,
}

/// A checkpoint to save: the JSON of a [`Checkpoint`], with the state borrowed and
/// serialised as it is (converting it to a `Value` first copied the whole history on
/// every save, twice per step).
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckpointRef<'a> {
    pub version: u32,
    pub session_id: &'a str,
    pub checkpoint_id: &'a str,
    pub timestamp: &'a str,
    pub step: u64,
    pub agent: &'a str,
    pub status: SessionStatus,
    pub state: &'a AgentState,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pending: Option<&'a PendingFields>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub journal: Option<JournalPosition>,
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
    /// The root agent's stable id (UAP §3.4, from its file and name); absent in sessions
    /// of older versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
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
    /// Where the journal stood when this was written: the records after it may say more
    /// (steps, status) than this file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub journal_offset: Option<u64>,
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

/// The listing of stores' `list`: each session that has metadata, most recently updated
/// first (a session whose metadata cannot be read is left out; `show` names the problem).
pub fn summaries(
    ids: impl Iterator<Item = impl AsRef<str>>,
    metadata: impl Fn(&str) -> Result<Option<SessionMetadata>, CheckpointError>,
) -> Vec<SessionSummary> {
    let mut sessions: Vec<SessionSummary> = ids
        .filter_map(|id| metadata(id.as_ref()).ok().flatten())
        .map(|metadata| SessionSummary {
            session_id: metadata.session_id,
            agent: metadata.agent,
            status: metadata.status,
            steps: metadata.steps,
            updated: metadata.updated,
        })
        .collect();
    sessions.sort_by(|a, b| b.updated.cmp(&a.updated));
    sessions
}

/// What a save did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Saved {
    /// Where the journal stands after the save.
    pub position: JournalPosition,
    /// The metadata is due (a snapshot is, or the session's first record or its end was
    /// written): write it, with this position.
    pub metadata_due: bool,
    /// A new snapshot is due: after the metadata, call [`CheckpointStore::snapshot`].
    pub snapshot_due: bool,
}

/// Saves and loads checkpoints (UAP §12.4.1, plus per-step access for branching).
pub trait CheckpointStore: Send + Sync {
    /// Saves `checkpoint` as the session's latest and as the one of its step.
    fn save(
        &self,
        session_id: &str,
        checkpoint: &CheckpointRef<'_>,
        durability: Durability,
    ) -> Result<Saved, CheckpointError>;
    /// Writes `checkpoint` (the one just saved, at `position`) as the session's snapshot, so
    /// a load replays only what comes after it.
    fn snapshot(
        &self,
        session_id: &str,
        checkpoint: &CheckpointRef<'_>,
        position: JournalPosition,
    ) -> Result<(), CheckpointError>;
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
    /// Whether the session exists: it has metadata (what `list`, `show` and `resume` read).
    fn exists(&self, session_id: &str) -> Result<bool, CheckpointError>;
    /// Holds the session for this process until the hold is dropped; refused while
    /// another process holds it.
    fn hold(&self, session_id: &str) -> Result<SessionHold, CheckpointError>;
    /// Starts a new session, which this process holds: refused when it exists. Its
    /// journal then starts empty (nothing of a session without metadata is kept).
    fn begin_new(&self, session_id: &str) -> Result<(), CheckpointError> {
        match self.exists(session_id)? {
            true => Err(CheckpointError::Exists(session_id.to_string())),
            false => Ok(()),
        }
    }
    /// What loads had to drop since the last call (a torn journal tail), to report.
    fn take_warnings(&self) -> Vec<String> {
        Vec::new()
    }
    /// Whether this process lost the store for good (the worker that relayed it died, or
    /// took the session's lease and lost it), rather than failing for a while or for a
    /// reason.
    fn lost(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_session_that_ended_is_spelt_as_its_status() {
        use serde_json::json;

        use super::{RunStatus, SessionStatus};
        for status in RunStatus::ALL {
            let name = json!(status.name());
            let ended = SessionStatus::Ended(status);
            assert_eq!(serde_json::to_value(ended).unwrap(), name);
            assert_eq!(
                serde_json::from_value::<SessionStatus>(name).unwrap(),
                ended
            );
        }
        assert_eq!(
            serde_json::to_value(SessionStatus::Running).unwrap(),
            json!("running")
        );
        assert!(serde_json::from_value::<SessionStatus>(json!("paused")).is_err());
    }

    use super::*;
    use crate::provider::{Message, ToolCall};
    use serde_json::json;

    #[test]
    fn a_checkpoint_ref_writes_the_bytes_of_the_checkpoint_it_reads_back_as() {
        let call = ToolCall::from_raw("c1".into(), "read_file".into(), r#"{"path": "a"}"#);
        let mut assistant = Message::assistant("Reading.");
        if let Message::Assistant(a) = &mut assistant {
            a.tool_calls.push(call.clone());
        }
        let state = AgentState::initial()
            .with_message(Message::user("Hi é\n"))
            .with_message(assistant)
            .with_message(Message::tool_result(&call, "text", false))
            .with_metadata("k", json!({"n": 1.5}))
            .next_step();
        let pending = json!({"inputs": {"x": 1}, "input_text": "", "engine": null});
        let fields = PendingFields::from_value(pending.clone());
        let borrowed = CheckpointRef {
            version: CHECKPOINT_VERSION,
            session_id: "s",
            checkpoint_id: "c",
            timestamp: "t",
            step: state.step,
            agent: "a",
            status: SessionStatus::Running,
            state: &state,
            pending: Some(&fields),
            journal: None,
        };
        let owned = Checkpoint {
            version: CHECKPOINT_VERSION,
            session_id: "s".into(),
            checkpoint_id: "c".into(),
            timestamp: "t".into(),
            step: state.step,
            agent: "a".into(),
            status: SessionStatus::Running,
            state: state.to_json(),
            pending: Some(pending.clone()),
            journal: None,
        };
        let bytes = serde_json::to_vec(&borrowed).unwrap();
        assert_eq!(bytes, serde_json::to_vec(&owned).unwrap());
        let read: Checkpoint = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(read, owned);
        assert_eq!(AgentState::from_json(&read.state).unwrap(), state);
    }
}
