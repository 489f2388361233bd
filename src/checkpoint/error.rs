//! What can go wrong with checkpoint files; every error names the file and the reason.

use std::path::PathBuf;

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
}
