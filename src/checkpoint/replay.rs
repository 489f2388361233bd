//! Rebuilding states from a snapshot and the journal records after it, for every store.

use std::path::Path;

use super::delta::Rebuilt;
use super::error::CheckpointError;
use super::journal::Record;
use super::store::{CHECKPOINT_VERSION, Checkpoint};
use crate::engine::AgentState;

/// The state as the journal's records rebuild it.
pub struct Replay {
    rebuilt: Rebuilt,
}

impl Replay {
    pub fn new() -> Self {
        Replay {
            rebuilt: Rebuilt::default(),
        }
    }

    pub fn from_checkpoint(checkpoint: &Checkpoint, path: &Path) -> Result<Self, CheckpointError> {
        let state =
            AgentState::from_json(&checkpoint.state).map_err(|e| CheckpointError::Corrupt {
                path: path.to_path_buf(),
                reason: format!("the saved state: {e}"),
            })?;
        Ok(Replay {
            rebuilt: Rebuilt::from_state(&state, checkpoint.pending.as_ref()),
        })
    }

    /// Takes in `record` (of the journal at `path`, for errors).
    pub fn apply(&mut self, record: &Record<'_>, path: &Path) -> Result<(), CheckpointError> {
        self.rebuilt
            .apply(&record.state, &record.pending)
            .map_err(|reason| CheckpointError::Corrupt {
                path: path.to_path_buf(),
                reason,
            })
    }

    /// The checkpoint `record` ends at (the records before it taken in).
    pub fn checkpoint(&self, record: &Record<'_>, session_id: &str) -> Checkpoint {
        Checkpoint {
            version: CHECKPOINT_VERSION,
            session_id: session_id.to_string(),
            checkpoint_id: record.checkpoint_id.to_string(),
            timestamp: record.timestamp.to_string(),
            step: record.step,
            agent: record.agent.to_string(),
            status: record.status,
            state: self.rebuilt.state(&record.state.rest).to_json(),
            pending: self.rebuilt.pending(),
            journal: None,
        }
    }
}
