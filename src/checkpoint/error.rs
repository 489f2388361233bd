//! What can go wrong with checkpoint files; every error names the file and the reason, and
//! a refusal says what to do instead.

use std::path::PathBuf;

use crate::engine::ErrorCode;

#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: not a valid checkpoint file: {reason}")]
    Corrupt { path: PathBuf, reason: String },
    #[error("{path}: checkpoint version {found} is not supported (this runner reads version 1)")]
    Version { path: PathBuf, found: String },
    #[error("{0:?} is not a valid session id: use 1 to 128 ASCII letters, digits, `-` and `_`")]
    InvalidSessionId(String),
    /// Another process holds the session's lock (`pid`: from its lock file, when written).
    #[error("session `{session_id}` is in use by another runner process{}", holder(.pid))]
    Held {
        session_id: String,
        pid: Option<u32>,
    },
    /// Another process holds the session's lease in NATS (`lease.rs`).
    #[error("session `{session_id}` is held by another runner process ({}): wait for it to finish; a holder that died lets go when its lease expires", .holder.as_deref().unwrap_or("its holder is not known"))]
    Leased {
        session_id: String,
        holder: Option<String>,
    },
    /// A new session was asked for with the id of one that exists.
    #[error("session `{0}` already exists: continue it with `runner resume {0}`, or give a new id")]
    Exists(String),
}

impl CheckpointError {
    /// The result's error code when a command stops on this error.
    pub fn code(&self) -> ErrorCode {
        match self {
            CheckpointError::Held { .. } | CheckpointError::Leased { .. } => {
                ErrorCode::SessionInUse
            }
            CheckpointError::Exists(_) => ErrorCode::SessionExists,
            CheckpointError::InvalidSessionId(_) => ErrorCode::InvalidSession,
            CheckpointError::Io { .. }
            | CheckpointError::Corrupt { .. }
            | CheckpointError::Version { .. } => ErrorCode::Checkpoint,
        }
    }
}

/// The end of a `Held` message: who holds the session and what to do about it.
fn holder(pid: &Option<u32>) -> String {
    match pid {
        Some(pid) => {
            format!(" (pid {pid}): wait for it to finish, or check that process (`ps -p {pid}`)")
        }
        None => " (its pid is not written yet): wait for it to finish, then try again".into(),
    }
}
