//! Reads and writes of key-value entries that ride out a server restart: a write that
//! fails for want of a server (the connection is down, JetStream is not up yet, the
//! acknowledgement timed out) is tried again for a while, so a restart of NATS pauses a
//! run instead of failing it. Writing an entry twice writes the same bytes: harmless.

use std::future::Future;
use std::time::{Duration, Instant};

use async_nats::jetstream::kv::Store;
use bytes::Bytes;

use super::NatsError;

/// How long an operation is tried before it fails.
const RETRY_FOR: Duration = Duration::from_secs(60);
const RETRY_PAUSE: Duration = Duration::from_millis(250);

/// Calls `attempt` until it succeeds or [`RETRY_FOR`] has passed.
pub async fn retrying<T, E, F, Fut>(what: impl Fn() -> String, attempt: F) -> Result<T, NatsError>
where
    E: std::fmt::Display,
    F: Fn() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    let start = Instant::now();
    loop {
        match attempt().await {
            Ok(value) => return Ok(value),
            Err(error) if start.elapsed() >= RETRY_FOR => {
                return Err(NatsError::new(what(), error));
            }
            Err(error) => {
                tracing::debug!(%error, what = what(), "NATS operation failed; trying again");
                tokio::time::sleep(RETRY_PAUSE).await;
            }
        }
    }
}

/// Writes `value` at `key`; returns the entry's revision.
pub async fn put(store: &Store, key: &str, value: Bytes) -> Result<u64, NatsError> {
    let what = || format!("cannot write {} in the bucket {}", key, store.name);
    retrying(what, || store.put(key, value.clone())).await
}

/// The value at `key`, `None` when there is none.
pub async fn get(store: &Store, key: &str) -> Result<Option<Bytes>, NatsError> {
    let what = || format!("cannot read {} in the bucket {}", key, store.name);
    retrying(what, || store.get(key)).await
}

/// Removes `key` (and what it held).
pub async fn purge(store: &Store, key: &str) -> Result<(), NatsError> {
    let what = || format!("cannot remove {} in the bucket {}", key, store.name);
    retrying(what, || store.purge(key)).await
}
