//! The names of what `runner` keeps in JetStream, and opening it (created by whoever comes
//! first, so a fresh server needs no setup):
//!
//! * the stream `RUNNER_JOBS` (subjects `runner.jobs.<batch id>`, work-queue retention: a
//!   job leaves the stream when a worker acknowledges it) and its pull consumer
//!   `runner_workers`, shared by every worker;
//! * the key-value buckets `runner_sessions` (checkpoints), `runner_leases` (who holds a
//!   session; entries expire after the lease's time to live), `runner_bundles` (agent
//!   files), `runner_batches` (what was submitted, what was spent) and `runner_results`
//!   (one envelope per input).

use std::time::Duration;

use async_nats::jetstream::consumer::{self, AckPolicy, pull};
use async_nats::jetstream::stream::{self, DiscardPolicy, RetentionPolicy, StorageType};
use async_nats::jetstream::{Context, kv};

use super::NatsError;

pub const SESSIONS: &str = "runner_sessions";
pub const LEASES: &str = "runner_leases";
pub const BUNDLES: &str = "runner_bundles";
pub const BATCHES: &str = "runner_batches";
pub const RESULTS: &str = "runner_results";
pub const JOBS_STREAM: &str = "RUNNER_JOBS";
pub const WORKERS: &str = "runner_workers";

/// The subject of a batch's jobs.
pub fn jobs_subject(batch_id: &str) -> String {
    format!("runner.jobs.{batch_id}")
}

/// What the first process to create them gives the lease bucket and the consumer; later
/// ones use what is there (`runner worker --ack-wait`, `--lease-ttl`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    /// How long a job may go without a word from its worker before it is delivered again.
    pub ack_wait: Duration,
    /// How long a session stays held by a process that stopped renewing its lease.
    pub lease_ttl: Duration,
}

impl Default for Timing {
    fn default() -> Self {
        Timing {
            ack_wait: Duration::from_secs(30),
            lease_ttl: Duration::from_secs(15),
        }
    }
}

/// The bucket `name`, created (with `max_age`, zero for none) when it does not exist.
///
/// Created as the stream a key-value bucket is (`KV_<name>`, one message kept per key,
/// direct gets, rollups, no deletes of single messages): the client's own
/// `create_key_value` first asks for account details in a shape servers older than 2.10
/// (Debian's nats-server 2.9) do not send.
pub async fn bucket(js: &Context, name: &str, max_age: Duration) -> Result<kv::Store, NatsError> {
    if let Ok(store) = js.get_key_value(name).await {
        return Ok(store);
    }
    let default_window = Duration::from_secs(120);
    let config = stream::Config {
        name: format!("KV_{name}"),
        subjects: vec![format!("$KV.{name}.>")],
        max_messages_per_subject: 1,
        max_age,
        duplicate_window: match max_age.is_zero() {
            true => default_window,
            false => max_age.min(default_window),
        },
        storage: StorageType::File,
        allow_rollup: true,
        deny_delete: true,
        allow_direct: true,
        discard: DiscardPolicy::New,
        ..Default::default()
    };
    js.get_or_create_stream(config)
        .await
        .map_err(|e| NatsError::new(format!("cannot create the bucket {name}"), e))?;
    js.get_key_value(name)
        .await
        .map_err(|e| NatsError::new(format!("cannot open the bucket {name}"), e))
}

/// The jobs stream.
pub async fn jobs_stream(js: &Context) -> Result<stream::Stream, NatsError> {
    js.get_or_create_stream(stream::Config {
        name: JOBS_STREAM.to_string(),
        subjects: vec!["runner.jobs.>".to_string()],
        retention: RetentionPolicy::WorkQueue,
        storage: StorageType::File,
        ..Default::default()
    })
    .await
    .map_err(|e| NatsError::new(format!("cannot open the stream {JOBS_STREAM}"), e))
}

/// The workers' consumer of the jobs stream.
pub async fn workers(js: &Context, timing: Timing) -> Result<consumer::PullConsumer, NatsError> {
    jobs_stream(js)
        .await?
        .get_or_create_consumer(
            WORKERS,
            pull::Config {
                durable_name: Some(WORKERS.to_string()),
                ack_policy: AckPolicy::Explicit,
                ack_wait: timing.ack_wait,
                // Delivered again until done: a job is only given up by its result.
                max_deliver: -1,
                ..Default::default()
            },
        )
        .await
        .map_err(|e| NatsError::new(format!("cannot open the consumer {WORKERS}"), e))
}
