//! A session held through NATS: an entry `<session id>` in the bucket `runner_leases`, whose
//! entries expire (the bucket's `max_age`, the lease's time to live). It is created only
//! when absent (a revision check: two processes cannot both create it), renewed by its
//! holder a third of the time to live apart, each renewal checked against the revision the
//! holder last wrote, and deleted, again revision-checked, when the holder is done. A
//! holder that dies stops renewing: its lease expires, and another process may take the
//! session. A holder that finds its lease taken marks it lost, and its next checkpoint
//! fails rather than write over the new holder's (`SessionFiles`, the worker's relay).
//!
//! A holder that was stopped (a machine that stalled, a process frozen) cannot wait for
//! its next renewal to learn that: when it wakes up, its first write may come before the
//! renewal does. So a lease not confirmed by the server for [`VALID`] of its time to live
//! is lost to its holder, whoever holds the session now, and is never taken again by it:
//! someone else may have held the session meanwhile and let go of it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_nats::jetstream::kv::{self, CreateErrorKind, UpdateErrorKind};
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::Blocking;
use super::kv::retrying;
use crate::checkpoint::CheckpointError;
use crate::engine::clock::now_rfc3339;
use crate::sync::lock;

/// What a lease entry says: who holds the session, since when, and a token of this one
/// holding (a renewal that timed out but was written is recognised by it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Holder {
    holder: String,
    since: String,
    token: String,
}

/// The part of its time to live a lease is relied on after the server last confirmed it
/// (renewals come every third): past it, the entry may be about to expire, or gone.
const VALID: f64 = 2.0 / 3.0;

/// When the server last confirmed the lease (the instant its renewal was sent), and how
/// long after that its holder may rely on it.
#[derive(Clone)]
struct Confirmed {
    at: Arc<Mutex<Instant>>,
    valid: Duration,
}

impl Confirmed {
    fn new(sent: Instant, ttl: Duration) -> Self {
        Confirmed {
            at: Arc::new(Mutex::new(sent)),
            valid: ttl.mul_f64(VALID),
        }
    }

    fn set(&self, sent: Instant) {
        *lock(&self.at) = sent;
    }

    fn lapsed(&self) -> bool {
        lock(&self.at).elapsed() >= self.valid
    }
}

/// A session held, until dropped.
pub struct Lease {
    blocking: Arc<Blocking>,
    store: kv::Store,
    key: String,
    lost: Arc<AtomicBool>,
    confirmed: Confirmed,
    stop: Option<oneshot::Sender<()>>,
    /// Renews the lease until stopped; returns the revision it last wrote.
    renewer: Option<JoinHandle<u64>>,
}

impl Lease {
    /// Takes the session's lease in `store`, whose entries live `ttl`, or says who holds
    /// it. Never waits for it.
    pub fn acquire(
        blocking: &Arc<Blocking>,
        (store, ttl): (&kv::Store, Duration),
        session_id: &str,
    ) -> Result<Lease, CheckpointError> {
        let failed = |error: crate::nats::NatsError| CheckpointError::Io {
            path: format!("nats:{}/{session_id}", store.name).into(),
            source: std::io::Error::other(error.to_string()),
        };
        let holder = Holder {
            holder: holder_name(),
            since: now_rfc3339(),
            token: crate::engine::clock::new_id(),
        };
        let value = Bytes::from(serde_json::to_vec(&holder).unwrap_or_default());
        let (store_, key, value_) = (store.clone(), session_id.to_string(), value.clone());
        let sent = Instant::now();
        let created = blocking
            .run(async move { create(&store_, &key, value_).await })
            .map_err(failed)?
            .map_err(failed)?;
        let Some(revision) = created else {
            let (store_, key) = (store.clone(), session_id.to_string());
            let current = blocking.run(async move { store_.get(key).await }).ok();
            let held_by = current
                .and_then(Result::ok)
                .flatten()
                .and_then(|bytes| serde_json::from_slice::<Holder>(&bytes).ok());
            return Err(CheckpointError::Leased {
                session_id: session_id.to_string(),
                holder: held_by.map(|h| format!("{}, since {}", h.holder, h.since)),
            });
        };
        let lost = Arc::new(AtomicBool::new(false));
        let confirmed = Confirmed::new(sent, ttl);
        let (stop, stopped) = oneshot::channel();
        let renewal = Renewal {
            store: store.clone(),
            key: session_id.to_string(),
            value,
            revision,
            every: (ttl / 3).max(Duration::from_millis(100)),
            lost: lost.clone(),
            confirmed: confirmed.clone(),
        };
        let renewer = blocking.handle().spawn(renewal.run(stopped));
        Ok(Lease {
            blocking: blocking.clone(),
            store: store.clone(),
            key: session_id.to_string(),
            lost,
            confirmed,
            stop: Some(stop),
            renewer: Some(renewer),
        })
    }

    /// Whether another process took the session (this one stopped renewing in time), or
    /// may have: the server has not confirmed the lease for too long. Once lost, for good.
    pub fn is_lost(&self) -> bool {
        if !self.lost.load(Ordering::SeqCst) && self.confirmed.lapsed() {
            self.lost.store(true, Ordering::SeqCst);
        }
        self.lost.load(Ordering::SeqCst)
    }
}

impl crate::checkpoint::RemoteHold for Lease {
    fn is_lost(&self) -> bool {
        Lease::is_lost(self)
    }
}

impl Drop for Lease {
    /// Stops renewing and deletes the entry, if it is still this holder's.
    fn drop(&mut self) {
        let (Some(stop), Some(renewer)) = (self.stop.take(), self.renewer.take()) else {
            return;
        };
        let _ = stop.send(());
        let (store, key, lost) = (self.store.clone(), self.key.clone(), self.lost.clone());
        let _ = self.blocking.run(async move {
            let revision = renewer.await.unwrap_or(0);
            if !lost.load(Ordering::SeqCst) {
                let _ = store.delete_expect_revision(&key, Some(revision)).await;
            }
        });
    }
}

/// Creates the entry: `Some(revision)`, or `None` when it exists. Tried again while the
/// server is away.
async fn create(
    store: &kv::Store,
    key: &str,
    value: Bytes,
) -> Result<Option<u64>, crate::nats::NatsError> {
    let what = || format!("cannot take the lease {key} in the bucket {}", store.name);
    retrying(what, || async {
        match store.create(key, value.clone()).await {
            Ok(revision) => Ok(Some(revision)),
            Err(error) if error.kind() == CreateErrorKind::AlreadyExists => Ok(None),
            Err(error) => Err(error),
        }
    })
    .await
}

/// The renewing of one lease.
struct Renewal {
    store: kv::Store,
    key: String,
    value: Bytes,
    revision: u64,
    every: Duration,
    lost: Arc<AtomicBool>,
    confirmed: Confirmed,
}

impl Renewal {
    async fn run(mut self, mut stopped: oneshot::Receiver<()>) -> u64 {
        loop {
            tokio::select! {
                _ = &mut stopped => return self.revision,
                () = tokio::time::sleep(self.every) => {}
            }
            // Lapsed (this process was stopped, or the server away): lost, even if the
            // entry is still there to renew.
            if self.lost.load(Ordering::SeqCst) || self.confirmed.lapsed() || !self.renew().await {
                self.lost.store(true, Ordering::SeqCst);
                tracing::warn!(session = %self.key, "the session's lease lapsed, or another process took it");
                return self.revision;
            }
        }
    }

    /// One renewal; `false` when the lease is another holder's now. A renewal that fails
    /// for want of a server is tried at the next tick: the lease outlives a few.
    async fn renew(&mut self) -> bool {
        let sent = Instant::now();
        let error = match self
            .store
            .update(&self.key, self.value.clone(), self.revision)
            .await
        {
            Ok(revision) => {
                self.revision = revision;
                self.confirmed.set(sent);
                return true;
            }
            Err(error) => error,
        };
        if error.kind() != UpdateErrorKind::WrongLastRevision {
            return true;
        }
        // An earlier renewal written though its answer was lost: still ours. The entry
        // gone while the lease had not lapsed (the server lost it): taken again unless
        // someone else's is there. (Lapsed, it is lost before this: see `run`.)
        match self.store.entry(&self.key).await {
            Ok(Some(entry)) if entry.value == self.value => {
                self.revision = entry.revision;
                true
            }
            Ok(Some(entry)) if entry.operation != kv::Operation::Put => self.take_again().await,
            Ok(None) => self.take_again().await,
            Ok(Some(_)) => false,
            Err(_) => true,
        }
    }

    async fn take_again(&mut self) -> bool {
        if self.confirmed.lapsed() {
            return false;
        }
        let sent = Instant::now();
        match self.store.create(&self.key, self.value.clone()).await {
            Ok(revision) => {
                self.revision = revision;
                self.confirmed.set(sent);
                true
            }
            Err(error) => error.kind() != CreateErrorKind::AlreadyExists,
        }
    }
}

/// This process, for people: the host and the pid.
fn holder_name() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "this host".into());
    format!("runner on {host}, pid {}", std::process::id())
}
