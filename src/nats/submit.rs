//! `runner submit`: a batch onto NATS. The agent's files go into `runner_bundles` (once per
//! content), the batch's record into `runner_batches`, each input's job onto
//! `runner.jobs.<batch id>` (with its session id as the message id, so publishing a job
//! twice within JetStream's duplicate window stores it once). A line that is not an input,
//! whose values do not fit the agent's inputs, or whose job is more than the server takes
//! in a message, gets its invalid envelope at once and no job. The record says how many inputs there were once every job is published: a submit
//! that died midway can be run again with the same batch id.

use std::io;

use async_nats::jetstream::{self, context::PublishAckFuture};
use indexmap::IndexMap;

use super::buckets::{BATCHES, BUNDLES, RESULTS, bucket, jobs_stream, jobs_subject};
use super::bundle::Bundle;
use super::job::{BatchRecord, JOB_VERSION, Job};
use super::kv::{get, put};
use super::results::store_once;
use super::{NatsError, connect};
use crate::batch::inputs::{Entry, Input};
use crate::batch::job::check_values;
use crate::batch::results::{Envelope, InputRef};
use crate::engine::ErrorCode;
use crate::engine::clock::{new_id, now_rfc3339};
use crate::output::result::RunResult;
use crate::spec::agent::InputSpec;
use crate::trace_env::Carried;

/// Jobs published before their acknowledgements are awaited.
const IN_FLIGHT: usize = 256;

/// What to submit.
pub struct Submission {
    pub url: String,
    pub batch_id: String,
    pub bundle: Bundle,
    pub agent_name: String,
    pub declared: IndexMap<String, InputSpec>,
    pub model: Option<String>,
    pub max_cost_usd: Option<f64>,
    pub max_tokens: Option<u64>,
    /// The span every job's run is a child of (`TRACEPARENT` of `runner submit`).
    pub trace: Option<Carried>,
}

/// What was submitted.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Submitted {
    pub jobs: u64,
    /// Lines recorded as invalid at once.
    pub invalid: u64,
}

/// Why a submit did not happen.
#[derive(Debug, thiserror::Error)]
pub enum SubmitError {
    #[error(
        "batch `{0}` was submitted already: follow it with `runner batch status {0} --nats {1}`, or give a new --batch-id"
    )]
    Exists(String, String),
    #[error(
        "batch `{0}` was begun with other agent files or options: submit it again as it began, or give a new --batch-id"
    )]
    Changed(String),
    #[error("{0}")]
    Nats(#[from] NatsError),
    #[error("cannot read the inputs: {0}")]
    Inputs(io::Error),
}

pub async fn submit(
    submission: Submission,
    entries: impl Iterator<Item = io::Result<Entry>> + Send + 'static,
) -> Result<Submitted, SubmitError> {
    let client = connect(&submission.url, "runner submit").await?;
    let max_payload = client.server_info().max_payload;
    let js = jetstream::new(client);
    jobs_stream(&js).await?;
    let batches = bucket(&js, BATCHES, std::time::Duration::ZERO).await?;
    let results = bucket(&js, RESULTS, std::time::Duration::ZERO).await?;
    let batch_id = submission.batch_id.clone();
    let earlier = get(&batches, &batch_id)
        .await?
        .map(|bytes| serde_json::from_slice::<BatchRecord>(&bytes).ok());
    let unfinished = match earlier {
        None => None,
        Some(Some(earlier)) if earlier.inputs.is_none() => Some(earlier),
        Some(_) => return Err(SubmitError::Exists(batch_id, submission.url.clone())),
    };
    let bundle = store_bundle(&js, &submission.bundle, max_payload).await?;
    let mut record = BatchRecord {
        version: JOB_VERSION,
        batch_id: batch_id.clone(),
        agent_name: submission.agent_name.clone(),
        bundle,
        model: submission.model.clone(),
        max_cost_usd: submission.max_cost_usd,
        max_tokens: submission.max_tokens,
        created: now_rfc3339(),
        inputs: None,
    };
    // Workers read a batch's record once: a batch goes on as it began.
    if unfinished.is_some_and(|earlier| !earlier.same_submission(&record)) {
        return Err(SubmitError::Changed(batch_id));
    }
    put(&batches, &batch_id, to_json(&record)?.into()).await?;
    let mut submitted = Submitted::default();
    let mut acks: Vec<PublishAckFuture> = Vec::with_capacity(IN_FLIGHT);
    let mut entries = read_aside(entries);
    while let Some(entry) = entries.recv().await {
        let entry = entry.map_err(SubmitError::Inputs)?;
        let job = match &entry {
            Entry::Bad(bad) => Err((bad.name.clone(), bad.message.clone())),
            Entry::Input(input) => check_values(input, &submission.declared)
                .and_then(|()| job_message(&batch_id, input, &submission.trace, max_payload))
                .map_err(|message| (input.name(), message)),
        };
        match job {
            Err((id, message)) => {
                let line = entry.line();
                let session = format!("{batch_id}-{line}");
                let result = RunResult::invalid(
                    &submission.agent_name,
                    &new_id(),
                    &session,
                    ErrorCode::InvalidInput,
                    message,
                );
                // Stored by an earlier run of this submit, it stands.
                store_once(
                    &results,
                    &batch_id,
                    &Envelope {
                        input: InputRef { line, id },
                        result,
                    },
                )
                .await?;
                submitted.invalid += 1;
            }
            Ok((job, payload)) => {
                let publish = jetstream::message::PublishMessage::build()
                    .payload(payload.into())
                    .message_id(job.message_id());
                let ack = js
                    .send_publish(jobs_subject(&batch_id), publish)
                    .await
                    .map_err(|e| {
                        NatsError::new(format!("cannot publish the job of line {}", job.line), e)
                    })?;
                acks.push(ack);
                submitted.jobs += 1;
                if acks.len() >= IN_FLIGHT {
                    confirm(&mut acks).await?;
                }
            }
        }
    }
    confirm(&mut acks).await?;
    record.inputs = Some(submitted.jobs + submitted.invalid);
    put(&batches, &batch_id, to_json(&record)?.into()).await?;
    Ok(submitted)
}

/// The inputs, read on a thread of their own: a read that waits (stdin fed by a slow
/// program) must not stop the runtime's one thread, which meanwhile sends the jobs read so
/// far and takes in their acknowledgements. Otherwise a submit killed while it waits would
/// have published nothing of what it read.
fn read_aside(
    entries: impl Iterator<Item = io::Result<Entry>> + Send + 'static,
) -> tokio::sync::mpsc::Receiver<io::Result<Entry>> {
    let (send, receive) = tokio::sync::mpsc::channel(IN_FLIGHT);
    std::thread::spawn(move || {
        for entry in entries {
            if send.blocking_send(entry).is_err() {
                break;
            }
        }
    });
    receive
}

/// The input's job and the bytes published; refused, like an input whose values do not
/// fit, when the message would be more than the server takes (the server would refuse it,
/// and every run of the submit would stop at that line).
fn job_message(
    batch_id: &str,
    input: &Input,
    trace: &Option<Carried>,
    max_payload: usize,
) -> Result<(Job, Vec<u8>), String> {
    let job = Job::of(batch_id, input, trace.clone());
    let payload = serde_json::to_vec(&job).map_err(|e| format!("line {}: {e}", job.line))?;
    // The server counts the headers too: the message id JetStream deduplicates by.
    let headers = format!("NATS/1.0\r\nNats-Msg-Id: {}\r\n\r\n", job.message_id()).len();
    if payload.len() + headers > max_payload {
        return Err(format!(
            "line {}: its job is {} bytes, more than the NATS server takes in a message ({max_payload}): shorten the line's values, or raise the server's `max_payload`",
            job.line,
            payload.len() + headers
        ));
    }
    Ok((job, payload))
}

/// Stores the bundle unless it is there; returns its content address.
async fn store_bundle(
    js: &jetstream::Context,
    bundle: &Bundle,
    max_payload: usize,
) -> Result<String, NatsError> {
    let bundles = bucket(js, BUNDLES, std::time::Duration::ZERO).await?;
    let (bytes, id) = bundle.encode();
    if bytes.len() > max_payload {
        return Err(NatsError::new(
            "cannot submit the agent's files",
            format!(
                "together they are {} bytes, more than the NATS server takes in a message ({max_payload}): raise its `max_payload`",
                bytes.len()
            ),
        ));
    }
    if get(&bundles, &id).await?.is_none() {
        put(&bundles, &id, bytes.into()).await?;
    }
    Ok(id)
}

/// Waits until JetStream has stored every job published.
async fn confirm(acks: &mut Vec<PublishAckFuture>) -> Result<(), NatsError> {
    for ack in acks.drain(..) {
        ack.await
            .map_err(|e| NatsError::new("a job was not stored", e))?;
    }
    Ok(())
}

fn to_json<T: serde::Serialize>(value: &T) -> Result<Vec<u8>, NatsError> {
    serde_json::to_vec(value).map_err(|e| NatsError::new("cannot write JSON", e))
}
