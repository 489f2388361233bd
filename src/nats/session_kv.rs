//! What the KV session store (`NatsCheckpointStore`, `session_store.rs`) reads and writes: entries
//! of the bucket `runner_sessions`, and leases of `runner_leases`. A process reaches them
//! over its own connection ([`DirectKv`]), or, as a run started by `runner worker`,
//! through the worker (`relay`): one connection per worker instead of one per job.

use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream::kv;
use bytes::Bytes;
use futures_util::StreamExt;

use super::Lease;
use super::buckets::{LEASES, SESSIONS, Timing, bucket};
use super::{Blocking, NatsError, connect, kv as nats_kv};
use crate::checkpoint::{CheckpointError, SessionHold};

/// The entries of sessions, and their leases.
pub trait SessionKv: Send + Sync {
    /// The value at `key`, `None` when there is none.
    fn get(&self, key: &str) -> Result<Option<Bytes>, NatsError>;
    /// Writes `value` at `key`, stored by JetStream when this returns.
    fn put(&self, key: &str, value: Vec<u8>) -> Result<(), NatsError>;
    /// Removes `key` and what it held.
    fn purge(&self, key: &str) -> Result<(), NatsError>;
    /// Every key of the bucket.
    fn keys(&self) -> Result<Vec<String>, NatsError>;
    /// Holds the session until the hold is dropped; refused while another process holds it.
    fn hold(&self, session_id: &str) -> Result<SessionHold, CheckpointError>;
    /// Whether the session is lost to this process for good: the worker that relayed it
    /// died, or lost its lease to another process. A connection of the process's own rides
    /// out a server restart instead (and its lease is the checkpointer's to watch).
    fn lost(&self) -> bool {
        false
    }
}

/// The bucket over this process's own connection.
pub struct DirectKv {
    blocking: Arc<Blocking>,
    sessions: kv::Store,
    leases: kv::Store,
    /// How long a lease lives unrenewed (the bucket's, as whoever made it chose).
    lease_ttl: Duration,
    /// The largest message the server takes.
    max_payload: usize,
}

impl DirectKv {
    /// Connects to the server at `url`, creating the buckets when they do not exist.
    pub fn connect(url: &str) -> Result<Self, NatsError> {
        let blocking = Arc::new(Blocking::new()?);
        let url = url.to_string();
        let (sessions, (leases, lease_ttl), max_payload) = blocking.run(async move {
            let client = connect(&url, "runner session store").await?;
            let max_payload = client.server_info().max_payload;
            let js = async_nats::jetstream::new(client);
            let (sessions, leases) =
                tokio::try_join!(bucket(&js, SESSIONS, Duration::ZERO), leases(&js))?;
            Ok::<_, NatsError>((sessions, leases, max_payload))
        })??;
        Ok(DirectKv {
            blocking,
            sessions,
            leases,
            lease_ttl,
            max_payload,
        })
    }
}

/// The lease bucket, and the time to live of its entries (as opened: not read again at
/// each lease).
async fn leases(js: &async_nats::jetstream::Context) -> Result<(kv::Store, Duration), NatsError> {
    let store = bucket(js, LEASES, Timing::default().lease_ttl).await?;
    let ttl = store.stream.cached_info().config.max_age;
    Ok((store, ttl))
}

impl SessionKv for DirectKv {
    fn get(&self, key: &str) -> Result<Option<Bytes>, NatsError> {
        let (store, key) = (self.sessions.clone(), key.to_string());
        self.blocking
            .run(async move { nats_kv::get(&store, &key).await })?
    }

    fn put(&self, key: &str, value: Vec<u8>) -> Result<(), NatsError> {
        if value.len() > self.max_payload {
            let reason = format!(
                "{} bytes is more than the NATS server takes in a message ({} bytes): raise `max_payload` in its configuration",
                value.len(),
                self.max_payload
            );
            return Err(NatsError::new(format!("cannot write {key}"), reason));
        }
        let (store, key) = (self.sessions.clone(), key.to_string());
        self.blocking
            .run(async move { nats_kv::put(&store, &key, value.into()).await })?
            .map(drop)
    }

    fn purge(&self, key: &str) -> Result<(), NatsError> {
        let (store, key) = (self.sessions.clone(), key.to_string());
        self.blocking
            .run(async move { nats_kv::purge(&store, &key).await })?
    }

    fn keys(&self) -> Result<Vec<String>, NatsError> {
        let store = self.sessions.clone();
        let listed = self.blocking.run(async move {
            let mut keys = store.keys().await?;
            let mut found = Vec::new();
            while let Some(key) = keys.next().await {
                found.push(key?);
            }
            Ok::<_, async_nats::Error>(found)
        })?;
        listed.map_err(|e| NatsError::new(format!("cannot list the bucket {SESSIONS}"), e))
    }

    fn hold(&self, session_id: &str) -> Result<SessionHold, CheckpointError> {
        Lease::acquire(&self.blocking, (&self.leases, self.lease_ttl), session_id)
            .map(|lease| SessionHold::Remote(Box::new(lease)))
    }
}
