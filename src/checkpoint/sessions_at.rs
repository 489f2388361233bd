//! Where sessions are kept: a directory (the file store), or the NATS server at a URL
//! (`--nats`: the key-value store of `nats_store.rs`).

use std::path::PathBuf;

use super::error::CheckpointError;
use super::file_store::FileCheckpointStore;
use super::nats_store::NatsCheckpointStore;
use super::store::CheckpointStore;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionsAt {
    Dir(PathBuf),
    Nats(String),
}

impl SessionsAt {
    pub fn open(&self) -> Result<Box<dyn CheckpointStore>, CheckpointError> {
        Ok(match self {
            SessionsAt::Dir(dir) => Box::new(FileCheckpointStore::create(dir)?),
            SessionsAt::Nats(url) => Box::new(NatsCheckpointStore::connect(url)?),
        })
    }

    /// Where they are, for people: the directory, or `NATS at <url>`.
    pub fn describe(&self) -> String {
        match self {
            SessionsAt::Dir(dir) => dir.display().to_string(),
            SessionsAt::Nats(url) => format!("NATS at {url}"),
        }
    }
}
