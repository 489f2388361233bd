//! Where sessions are kept: a directory (the file store), the NATS server at a URL
//! (`--nats`: the key-value store of `session_store.rs`), or that store reached through the
//! worker that started this run (`--sessions-fd`: `nats::relay`).

use std::path::PathBuf;
use std::sync::Arc;

use super::relay::RelayedKv;
use super::session_store::NatsCheckpointStore;
use crate::checkpoint::{CheckpointError, CheckpointStore, FileCheckpointStore};

#[derive(Debug, Clone)]
pub enum SessionsAt {
    Dir(PathBuf),
    Nats(String),
    Relayed(RelayedKv),
}

impl SessionsAt {
    /// The sessions the command line names: at `--nats URL`, or through the worker that
    /// gave this run `--sessions-fd FD`; `None` when it names neither.
    pub fn remote(nats: Option<&str>, sessions_fd: Option<i32>) -> Result<Option<Self>, String> {
        Ok(match (nats, sessions_fd) {
            (_, Some(fd)) => Some(SessionsAt::Relayed(RelayedKv::adopt(fd)?)),
            (Some(url), None) => Some(SessionsAt::Nats(url.to_string())),
            (None, None) => None,
        })
    }

    pub fn open(&self) -> Result<Box<dyn CheckpointStore>, CheckpointError> {
        Ok(match self {
            SessionsAt::Dir(dir) => Box::new(FileCheckpointStore::create(dir)?),
            SessionsAt::Nats(url) => Box::new(NatsCheckpointStore::connect(url)?),
            SessionsAt::Relayed(kv) => Box::new(NatsCheckpointStore::over(Arc::new(kv.clone()))),
        })
    }

    /// Where they are, for people: the directory, or `NATS at <url>`.
    pub fn describe(&self) -> String {
        match self {
            SessionsAt::Dir(dir) => dir.display().to_string(),
            SessionsAt::Nats(url) => format!("NATS at {url}"),
            SessionsAt::Relayed(_) => "NATS, through the worker that started this run".into(),
        }
    }
}
