//! `runner batch status ID --nats URL` and `runner batch results ID --nats URL`: following
//! a batch that `runner submit` published, from the envelopes its workers stored.

use std::time::Duration;

use async_nats::jetstream::kv::Store;
use clap::{Args, Subcommand};
use tokio::time::Instant;

use super::Exit;
use super::nats_runtime::nats_runtime;
use crate::batch::ledger::Ledger;
use crate::batch::summary::{LISTED, most_severe, name};
use crate::nats::buckets::{BATCHES, RESULTS, bucket};
use crate::nats::job::BatchRecord;
use crate::nats::kv::get;
use crate::nats::results::Envelopes;
use crate::nats::{NatsError, connect};

#[derive(Debug, Subcommand)]
pub enum NatsBatch {
    /// How a batch submitted to NATS stands: its inputs done, by status, and what it spent.
    Status(StatusArgs),
    /// The envelopes of a batch submitted to NATS, one JSON line per input, by line.
    Results(BatchOnNats),
}

#[derive(Debug, Args)]
pub struct BatchOnNats {
    /// The batch's id (`runner submit` printed it).
    pub batch_id: String,
    /// The NATS server it was submitted to.
    #[arg(long, value_name = "URL")]
    pub nats: String,
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    #[command(flatten)]
    pub batch: BatchOnNats,
    /// Follow it until every input has its envelope, then exit as a local batch does
    /// (0 when all completed, else the most severe status).
    #[arg(long)]
    pub wait: bool,
}

/// How often `--wait` looks again.
const POLL: Duration = Duration::from_millis(500);

pub fn run(command: NatsBatch) -> Exit {
    let Ok(runtime) = nats_runtime().inspect_err(|message| eprintln!("error: {message}")) else {
        return Exit::Failed;
    };
    let ran = runtime.block_on(async {
        match command {
            NatsBatch::Status(args) => status(&args).await,
            NatsBatch::Results(args) => results(&args).await,
        }
    });
    ran.unwrap_or_else(|error| {
        eprintln!("error: {error}");
        Exit::Failed
    })
}

/// A batch as stored: its record, and its envelopes as they come.
struct Stored {
    batches: Store,
    record: BatchRecord,
    envelopes: Envelopes,
}

async fn open(args: &BatchOnNats) -> Result<Option<Stored>, NatsError> {
    let client = connect(&args.nats, "runner batch").await?;
    let js = async_nats::jetstream::new(client);
    let batches = bucket(&js, BATCHES, Duration::ZERO).await?;
    let Some(record) = record(&batches, &args.batch_id).await? else {
        return Ok(None);
    };
    let results = bucket(&js, RESULTS, Duration::ZERO).await?;
    Ok(Some(Stored {
        envelopes: Envelopes::of(&results, &args.batch_id).await?,
        batches,
        record,
    }))
}

async fn record(batches: &Store, batch_id: &str) -> Result<Option<BatchRecord>, NatsError> {
    let Some(bytes) = get(batches, batch_id).await? else {
        return Ok(None);
    };
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|e| NatsError::new(format!("batch {batch_id}"), e))
}

fn no_such_batch(args: &BatchOnNats) -> Exit {
    eprintln!(
        "error: no batch `{}` was submitted to NATS at {} (`runner submit` prints the id)",
        args.batch_id, args.nats
    );
    Exit::Invalid
}

/// The status line; with `--wait`, one every [`POLL`] on stderr while the envelopes come
/// in (one consumer streams them: nothing is read twice), then the last on stdout.
async fn status(args: &StatusArgs) -> Result<Exit, NatsError> {
    let Some(mut stored) = open(&args.batch).await? else {
        return Ok(no_such_batch(&args.batch));
    };
    let mut ledger = Ledger::default();
    for _ in 0..stored.envelopes.stored {
        ledger.record(&stored.envelopes.next().await?);
    }
    let mut next_line = Instant::now() + POLL;
    while args.wait && stored.record.inputs != Some(ledger.inputs()) {
        tokio::select! {
            envelope = stored.envelopes.next() => ledger.record(&envelope?),
            () = tokio::time::sleep_until(next_line) => {
                eprintln!("{}", describe(&stored.record, &ledger));
                next_line += POLL;
                if stored.record.inputs.is_none() {
                    let id = &stored.record.batch_id;
                    stored.record = record(&stored.batches, id).await?.unwrap_or(stored.record);
                }
            }
        }
    }
    outln!("{}", describe(&stored.record, &ledger));
    Ok(match args.wait {
        true => most_severe(LISTED.into_iter().filter(|s| ledger.count(*s) > 0)),
        false => Exit::Completed,
    })
}

/// `batch ID · 200 inputs · 150 done · 148 completed · 2 failed · 50 to go · 3000 tokens`.
fn describe(record: &BatchRecord, ledger: &Ledger) -> String {
    let done = ledger.inputs();
    let mut line = format!("batch {}", record.batch_id);
    match record.inputs {
        Some(inputs) => line += &format!(" · {inputs} inputs · {done} done"),
        None => {
            line += &format!(
                " · still being submitted (or its submit stopped: run it again) · {done} done"
            )
        }
    }
    for status in LISTED {
        let count = ledger.count(status);
        if count > 0 {
            line += &format!(" · {count} {}", name(status));
        }
    }
    if let Some(inputs) = record.inputs.filter(|inputs| *inputs > done) {
        line += &format!(" · {} to go", inputs - done);
    }
    let spent = ledger.spent();
    line += &format!(" · {} tokens", spent.tokens);
    if spent.priced {
        line += &format!(" · ${:.4}", spent.cost_usd);
    }
    line
}

async fn results(args: &BatchOnNats) -> Result<Exit, NatsError> {
    let Some(stored) = open(args).await? else {
        return Ok(no_such_batch(args));
    };
    let envelopes = stored.envelopes.collect().await?;
    let mut ledger = Ledger::default();
    for envelope in &envelopes {
        let json = serde_json::to_string(envelope).map_err(|e| NatsError::new("an envelope", e))?;
        outln!("{json}");
        ledger.record(envelope);
    }
    if stored.record.inputs != Some(ledger.inputs()) {
        eprintln!("note: {}", describe(&stored.record, &ledger));
    }
    Ok(Exit::Completed)
}
