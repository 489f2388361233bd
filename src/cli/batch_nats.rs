//! `runner batch status ID --nats URL` and `runner batch results ID --nats URL`: following
//! a batch that `runner submit` published, from the envelopes its workers stored.

use std::time::Duration;

use clap::{Args, Subcommand};

use super::Exit;
use crate::batch::results::Envelope;
use crate::batch::summary::{LISTED, most_severe, name};
use crate::nats::buckets::{BATCHES, RESULTS, bucket};
use crate::nats::job::BatchRecord;
use crate::nats::kv::get;
use crate::nats::results::{Spending, collect, spending};
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
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start: {error}");
            return Exit::Failed;
        }
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

/// What a batch is, as stored.
struct Stored {
    record: BatchRecord,
    envelopes: Vec<Envelope>,
    spending: Spending,
}

async fn read(args: &BatchOnNats) -> Result<Option<Stored>, NatsError> {
    let client = connect(&args.nats, "runner batch").await?;
    let js = async_nats::jetstream::new(client);
    let batches = bucket(&js, BATCHES, Duration::ZERO).await?;
    let Some(bytes) = get(&batches, &args.batch_id).await? else {
        return Ok(None);
    };
    let record: BatchRecord = serde_json::from_slice(&bytes)
        .map_err(|e| NatsError::new(format!("batch {}", args.batch_id), e))?;
    let results = bucket(&js, RESULTS, Duration::ZERO).await?;
    Ok(Some(Stored {
        record,
        envelopes: collect(&results, &args.batch_id).await?,
        spending: spending(&batches, &args.batch_id).await?,
    }))
}

fn no_such_batch(args: &BatchOnNats) -> Exit {
    eprintln!(
        "error: no batch `{}` was submitted to NATS at {} (`runner submit` prints the id)",
        args.batch_id, args.nats
    );
    Exit::Invalid
}

async fn status(args: &StatusArgs) -> Result<Exit, NatsError> {
    loop {
        let Some(stored) = read(&args.batch).await? else {
            return Ok(no_such_batch(&args.batch));
        };
        let line = describe(&stored);
        let done = stored.record.inputs == Some(stored.envelopes.len() as u64);
        if !args.wait {
            outln!("{line}");
            return Ok(Exit::Completed);
        }
        if done {
            outln!("{line}");
            return Ok(most_severe(
                stored.envelopes.iter().map(|e| e.result.status),
            ));
        }
        eprintln!("{line}");
        tokio::time::sleep(POLL).await;
    }
}

/// `batch ID · 200 inputs · 150 done · 148 completed · 2 failed · 50 to go · 3000 tokens`.
fn describe(stored: &Stored) -> String {
    let done = stored.envelopes.len() as u64;
    let mut line = format!("batch {}", stored.record.batch_id);
    match stored.record.inputs {
        Some(inputs) => line += &format!(" · {inputs} inputs · {done} done"),
        None => {
            line += &format!(
                " · still being submitted (or its submit stopped: run it again) · {done} done"
            )
        }
    }
    for status in LISTED {
        let count = stored
            .envelopes
            .iter()
            .filter(|e| e.result.status == status)
            .count();
        if count > 0 {
            line += &format!(" · {count} {}", name(status));
        }
    }
    if let Some(inputs) = stored.record.inputs.filter(|inputs| *inputs > done) {
        line += &format!(" · {} to go", inputs - done);
    }
    line += &format!(" · {} tokens", stored.spending.tokens);
    if stored.spending.priced {
        line += &format!(" · ${:.4}", stored.spending.cost_usd);
    }
    line
}

async fn results(args: &BatchOnNats) -> Result<Exit, NatsError> {
    let Some(stored) = read(args).await? else {
        return Ok(no_such_batch(args));
    };
    for envelope in &stored.envelopes {
        let json = serde_json::to_string(envelope).map_err(|e| NatsError::new("an envelope", e))?;
        outln!("{json}");
    }
    if stored.record.inputs != Some(stored.envelopes.len() as u64) {
        eprintln!("note: {}", describe(&stored));
    }
    Ok(Exit::Completed)
}
