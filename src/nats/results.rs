//! The envelopes of a batch in `runner_results`, one per input under `<batch id>.<line>`
//! (the envelope of `results.jsonl`), and its spending in `runner_batches` under
//! `<batch id>.spent`, which the workers keep and check only for a batch with a budget
//! (`runner batch status` sums the envelopes).

use async_nats::jetstream::consumer::{DeliverPolicy, ReplayPolicy, push};
use async_nats::jetstream::kv::{CreateErrorKind, Store, UpdateErrorKind};
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};

use super::NatsError;
use super::job::spent_key;
use super::kv::{get, retrying};
use crate::batch::ledger::Spent;
use crate::batch::results::Envelope;

/// What a batch spent, as stored.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Spending {
    pub tokens: u64,
    pub cost_usd: f64,
    pub priced: bool,
}

impl From<Spending> for Spent {
    fn from(s: Spending) -> Spent {
        Spent {
            tokens: s.tokens,
            cost_usd: s.cost_usd,
            priced: s.priced,
        }
    }
}

pub fn result_key(batch_id: &str, line: u64) -> String {
    format!("{batch_id}.{line}")
}

/// Whether the input of `line` has its envelope.
pub async fn recorded(results: &Store, batch_id: &str, line: u64) -> Result<bool, NatsError> {
    Ok(get(results, &result_key(batch_id, line)).await?.is_some())
}

/// Stores an input's envelope unless one is stored already (JetStream has it when this
/// returns): `false` when another delivery of the job stored one first, which stands.
pub async fn store_once(
    results: &Store,
    batch_id: &str,
    envelope: &Envelope,
) -> Result<bool, NatsError> {
    let bytes = serde_json::to_vec(envelope).map_err(|e| NatsError::new("an envelope", e))?;
    let key = result_key(batch_id, envelope.input.line);
    let what = || format!("cannot write {key} in the bucket {}", results.name);
    retrying(what, || async {
        match results.create(&key, bytes.clone().into()).await {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == CreateErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(e),
        }
    })
    .await
}

/// Adds an envelope's usage to its batch's spending: read, add, write back if nobody wrote
/// in between (else again).
pub async fn add_spending(
    batches: &Store,
    batch_id: &str,
    envelope: &Envelope,
) -> Result<(), NatsError> {
    let key = spent_key(batch_id);
    let usage = &envelope.result.usage;
    let what = || format!("cannot add to {key} in the bucket {}", batches.name);
    retrying(what, || async {
        let entry = batches.entry(&key).await.map_err(|e| e.to_string())?;
        let (mut spending, revision) = match &entry {
            Some(entry) => (
                serde_json::from_slice::<Spending>(&entry.value).unwrap_or_default(),
                entry.revision,
            ),
            None => (Spending::default(), 0),
        };
        spending.tokens += usage.total_tokens;
        spending.cost_usd += usage.cost_usd.unwrap_or(0.0);
        spending.priced |= usage.cost_usd.is_some();
        let bytes = serde_json::to_vec(&spending).unwrap_or_default();
        match batches.update(&key, bytes.into(), revision).await {
            Ok(_) => Ok(()),
            Err(e) if e.kind() == UpdateErrorKind::WrongLastRevision => {
                Err("written meanwhile".to_string())
            }
            Err(e) => Err(e.to_string()),
        }
    })
    .await
}

/// What the batch spent so far.
pub async fn spending(batches: &Store, batch_id: &str) -> Result<Spending, NatsError> {
    Ok(get(batches, &spent_key(batch_id))
        .await?
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default())
}

/// A batch's envelopes as its workers store them: first the ones stored already
/// (`stored` of them), then each new one as it is stored. One consumer streams them all,
/// rather than a read per input.
pub struct Envelopes {
    pub stored: u64,
    messages: push::Ordered,
}

impl Envelopes {
    pub async fn of(results: &Store, batch_id: &str) -> Result<Self, NatsError> {
        let what = || format!("cannot read the envelopes of batch {batch_id}");
        let config = push::OrderedConfig {
            deliver_subject: format!("_INBOX.{}", crate::engine::clock::new_id()),
            // Every `<batch id>.<line>` of the batch (`result_key`).
            filter_subject: format!("{}{batch_id}.*", results.prefix),
            deliver_policy: DeliverPolicy::LastPerSubject,
            replay_policy: ReplayPolicy::Instant,
            ..Default::default()
        };
        let consumer = retrying(what, || results.stream.create_consumer(config.clone())).await?;
        Ok(Envelopes {
            stored: consumer.cached_info().num_pending,
            messages: consumer
                .messages()
                .await
                .map_err(|e| NatsError::new(what(), e))?,
        })
    }

    /// The next envelope, waiting for it when every stored one was read.
    pub async fn next(&mut self) -> Result<Envelope, NatsError> {
        let message = match self.messages.next().await {
            Some(Ok(message)) => message,
            Some(Err(error)) => return Err(NatsError::new("reading an envelope", error)),
            None => {
                return Err(NatsError::new(
                    "reading an envelope",
                    "the server went away",
                ));
            }
        };
        serde_json::from_slice(&message.payload)
            .map_err(|e| NatsError::new(format!("the envelope {}", message.subject), e))
    }

    /// The envelopes stored already, by line.
    pub async fn collect(mut self) -> Result<Vec<Envelope>, NatsError> {
        let mut envelopes = Vec::with_capacity(self.stored as usize);
        for _ in 0..self.stored {
            envelopes.push(self.next().await?);
        }
        envelopes.sort_by_key(|e| e.input.line);
        Ok(envelopes)
    }
}
