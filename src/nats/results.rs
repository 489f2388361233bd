//! The envelopes of a batch in `runner_results`, one per input under `<batch id>.<line>`
//! (the envelope of `results.jsonl`), and its spending in `runner_batches` under
//! `<batch id>.spent`, which the workers check against the batch's budget.

use async_nats::jetstream::kv::{Store, UpdateErrorKind};
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};

use super::NatsError;
use super::job::spent_key;
use super::kv::{get, put, retrying};
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

/// Stores an input's envelope (JetStream has it when this returns).
pub async fn store(results: &Store, batch_id: &str, envelope: &Envelope) -> Result<(), NatsError> {
    let bytes = serde_json::to_vec(envelope).map_err(|e| NatsError::new("an envelope", e))?;
    put(
        results,
        &result_key(batch_id, envelope.input.line),
        bytes.into(),
    )
    .await
    .map(drop)
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

/// Every envelope of the batch, by line.
pub async fn collect(results: &Store, batch_id: &str) -> Result<Vec<Envelope>, NatsError> {
    let prefix = format!("{batch_id}.");
    let what = || format!("cannot list the bucket {}", results.name);
    let keys = retrying(what, || async {
        let mut keys = results.keys().await?;
        let mut found = Vec::new();
        while let Some(key) = keys.next().await {
            let key = key?;
            if key
                .strip_prefix(&prefix)
                .is_some_and(|line| line.parse::<u64>().is_ok())
            {
                found.push(key);
            }
        }
        Ok::<_, async_nats::Error>(found)
    })
    .await?;
    let mut envelopes = Vec::with_capacity(keys.len());
    for key in keys {
        if let Some(bytes) = get(results, &key).await? {
            let envelope: Envelope = serde_json::from_slice(&bytes)
                .map_err(|e| NatsError::new(format!("the envelope {key}"), e))?;
            envelopes.push(envelope);
        }
    }
    envelopes.sort_by_key(|e| e.input.line);
    Ok(envelopes)
}
