//! The file store (UAP §12.4.3): `<dir>/<session_id>/checkpoint.json` (latest),
//! `metadata.json`, and `steps/<step>.json` (one per step, for branching). Every file is
//! written atomically (temp file, fsync, rename); every load checks the JSON, the version and
//! the state inside, and names the file when it refuses it. `lock` (beside them) holds the
//! session for one process at a time.

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;

use super::error::CheckpointError;
use super::lock::SessionLock;
use super::session_id::check_session_id;
use super::store::{
    CHECKPOINT_VERSION, Checkpoint, CheckpointRef, CheckpointStore, SessionMetadata, SessionSummary,
};
use crate::engine::AgentState;
use crate::fsutil::write_atomically;

pub struct FileCheckpointStore {
    dir: PathBuf,
}

impl FileCheckpointStore {
    /// Opens (creating it when needed) the sessions directory.
    pub fn create(dir: impl AsRef<Path>) -> Result<Self, CheckpointError> {
        let dir = dir.as_ref().to_path_buf();
        std::fs::create_dir_all(&dir).map_err(|source| CheckpointError::Io {
            path: dir.clone(),
            source,
        })?;
        Ok(FileCheckpointStore { dir })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Takes the session's lock, for this process only (see `lock.rs`); refused while
    /// another process holds it.
    pub fn lock(&self, session_id: &str) -> Result<SessionLock, CheckpointError> {
        SessionLock::acquire(&self.session_dir(session_id)?, session_id)
    }

    /// Whether the session exists: it has metadata (what `list`, `show` and `resume` read).
    pub fn exists(&self, session_id: &str) -> Result<bool, CheckpointError> {
        Ok(self
            .session_dir(session_id)?
            .join("metadata.json")
            .is_file())
    }

    fn session_dir(&self, session_id: &str) -> Result<PathBuf, CheckpointError> {
        check_session_id(session_id)?;
        Ok(self.dir.join(session_id))
    }

    fn write_json<T: serde::Serialize>(path: &Path, value: &T) -> Result<(), CheckpointError> {
        let bytes = serde_json::to_vec_pretty(value).map_err(|e| CheckpointError::Corrupt {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
        Self::write_bytes(path, &bytes)
    }

    fn write_bytes(path: &Path, bytes: &[u8]) -> Result<(), CheckpointError> {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|source| CheckpointError::Io {
                path: parent.to_path_buf(),
                source,
            })?;
        }
        write_atomically(path, bytes).map_err(|source| CheckpointError::Io {
            path: path.to_path_buf(),
            source,
        })
    }

    /// Reads a JSON file; `None` when it does not exist.
    fn read_json<T: DeserializeOwned>(path: &Path) -> Result<Option<T>, CheckpointError> {
        let bytes = match std::fs::read(path) {
            Ok(bytes) => bytes,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => {
                return Err(CheckpointError::Io {
                    path: path.to_path_buf(),
                    source,
                });
            }
        };
        let value: serde_json::Value =
            serde_json::from_slice(&bytes).map_err(|e| CheckpointError::Corrupt {
                path: path.to_path_buf(),
                reason: format!("{e} (the file may be truncated)"),
            })?;
        let version = value
            .get("version")
            .cloned()
            .unwrap_or(serde_json::Value::Null);
        if version != CHECKPOINT_VERSION {
            return Err(CheckpointError::Version {
                path: path.to_path_buf(),
                found: version.to_string(),
            });
        }
        serde_json::from_value(value)
            .map(Some)
            .map_err(|e| CheckpointError::Corrupt {
                path: path.to_path_buf(),
                reason: e.to_string(),
            })
    }

    fn read_checkpoint(path: &Path) -> Result<Option<Checkpoint>, CheckpointError> {
        let Some(checkpoint) = Self::read_json::<Checkpoint>(path)? else {
            return Ok(None);
        };
        AgentState::from_json(&checkpoint.state).map_err(|e| CheckpointError::Corrupt {
            path: path.to_path_buf(),
            reason: format!("the saved state: {e}"),
        })?;
        Ok(Some(checkpoint))
    }
}

impl CheckpointStore for FileCheckpointStore {
    fn save(
        &self,
        session_id: &str,
        checkpoint: &CheckpointRef<'_>,
    ) -> Result<(), CheckpointError> {
        let dir = self.session_dir(session_id)?;
        let step = dir.join("steps").join(format!("{}.json", checkpoint.step));
        // Serialised once for both files: it holds the whole history.
        let bytes =
            serde_json::to_vec_pretty(checkpoint).map_err(|e| CheckpointError::Corrupt {
                path: step.clone(),
                reason: e.to_string(),
            })?;
        Self::write_bytes(&step, &bytes)?;
        Self::write_bytes(&dir.join("checkpoint.json"), &bytes)
    }

    fn load(&self, session_id: &str) -> Result<Option<Checkpoint>, CheckpointError> {
        Self::read_checkpoint(&self.session_dir(session_id)?.join("checkpoint.json"))
    }

    fn load_step(
        &self,
        session_id: &str,
        step: u64,
    ) -> Result<Option<Checkpoint>, CheckpointError> {
        Self::read_checkpoint(
            &self
                .session_dir(session_id)?
                .join("steps")
                .join(format!("{step}.json")),
        )
    }

    /// Refused while a process holds the session: its run would write the session again.
    fn delete(&self, session_id: &str) -> Result<(), CheckpointError> {
        let dir = self.session_dir(session_id)?;
        if !dir.exists() {
            return Err(CheckpointError::Io {
                path: dir,
                source: std::io::Error::new(std::io::ErrorKind::NotFound, "no such session"),
            });
        }
        // Held while the directory (lock file included) goes, so no one takes it meanwhile.
        let _lock = self.lock(session_id)?;
        std::fs::remove_dir_all(&dir).map_err(|source| CheckpointError::Io { path: dir, source })
    }

    fn list(&self) -> Result<Vec<SessionSummary>, CheckpointError> {
        let entries = std::fs::read_dir(&self.dir).map_err(|source| CheckpointError::Io {
            path: self.dir.clone(),
            source,
        })?;
        let mut sessions = Vec::new();
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().to_string();
            // A session whose metadata cannot be read is skipped here; `show` names the problem.
            if let Ok(Some(metadata)) = self.metadata(&name) {
                sessions.push(SessionSummary {
                    session_id: metadata.session_id,
                    agent: metadata.agent,
                    status: metadata.status,
                    steps: metadata.steps,
                    updated: metadata.updated,
                });
            }
        }
        sessions.sort_by(|a, b| b.updated.cmp(&a.updated));
        Ok(sessions)
    }

    fn metadata(&self, session_id: &str) -> Result<Option<SessionMetadata>, CheckpointError> {
        Self::read_json(&self.session_dir(session_id)?.join("metadata.json"))
    }

    fn save_metadata(&self, metadata: &SessionMetadata) -> Result<(), CheckpointError> {
        Self::write_json(
            &self
                .session_dir(&metadata.session_id)?
                .join("metadata.json"),
            metadata,
        )
    }
}
