//! `runner worker`: pulls jobs from the stream `RUNNER_JOBS` and runs each as a local batch
//! runs an input (`batch::job`): a child `runner exec`, or `runner resume` when the job's
//! session exists already (a worker that had it died: its calls in flight are reported to
//! the model as interrupted, never run again). The child reaches the session store through
//! the worker's connection, the worker holding its lease (`relay`). While the child runs, the
//! job's delivery is kept alive (in-progress acknowledgements a third of `ack_wait` apart);
//! its envelope is stored in `runner_results`, then the job is acknowledged. A worker that
//! dies leaves the job unacknowledged: JetStream delivers it again after `ack_wait`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_nats::jetstream::message::Message;
use async_nats::jetstream::{self, AckKind, kv};
use futures_util::StreamExt;
use tokio::sync::{Mutex, Semaphore, watch};
use tokio::task::JoinSet;

use super::buckets::{self, BATCHES, BUNDLES, RESULTS, Timing, bucket};
use super::bundle::Bundle;
use super::job::{BatchRecord, Job};
use super::kv::{get, retrying};
use super::results::{add_spending, recorded, spending, store_once};
use super::session_kv::{DirectKv, SessionKv};
use super::{NatsCheckpointStore, relay};
use super::{NatsError, connect};
use crate::batch::children::Children;
use crate::batch::job::{ChildSessions, InputPlace, Launcher, Sessions, run_checked};
use crate::batch::results::{Envelope, InputRef, session_was_held};
use crate::engine::ErrorCode;
use crate::engine::clock::new_id;
use crate::output::result::{RunResult, Status};
use crate::spec::AgentSpec;

/// How `runner worker` runs.
#[derive(Debug, Clone)]
pub struct WorkerOptions {
    pub url: String,
    /// Jobs run at once.
    pub jobs: usize,
    pub timing: Timing,
    /// The `runner` binary the jobs run with.
    pub exe: PathBuf,
    /// Where bundles and run directories go (`.runner` under the working directory).
    pub dir: PathBuf,
}

/// How long one pull waits for a job before asking again.
const PULL_WAIT: Duration = Duration::from_secs(5);
/// How long a slot waits after a job it could not run for the worker's own trouble (its
/// directory cannot be written, the server is away).
const TROUBLE_PAUSE: Duration = Duration::from_secs(5);
/// How long to wait before pulling again after a failed pull (the server is away).
const PULL_PAUSE: Duration = Duration::from_millis(500);

/// What every job of the worker shares.
struct Shared {
    options: WorkerOptions,
    results: kv::Store,
    batches: kv::Store,
    bundles: kv::Store,
    /// The session store the worker asks whether a job's session exists, and the entries
    /// under it, which the worker's children reach through it (`relay`).
    sessions: Arc<NatsCheckpointStore>,
    entries: Arc<dyn SessionKv>,
    children: Arc<Children>,
    /// The batches this worker ran jobs of, by id (each read once).
    batches_seen: Mutex<std::collections::HashMap<String, Arc<Batch>>>,
    heartbeat: Duration,
}

/// Runs jobs until `stop` turns true; then the children running are interrupted (their
/// sessions saved) and their jobs handed back to the stream for another worker.
pub async fn run(options: WorkerOptions, stop: watch::Receiver<bool>) -> Result<(), NatsError> {
    let client = connect(&options.url, "runner worker").await?;
    let js = jetstream::new(client);
    let consumer = buckets::workers(&js, options.timing).await?;
    let ack_wait = consumer.cached_info().config.ack_wait;
    // Made here first, so the lease time to live is this worker's `--lease-ttl`.
    bucket(&js, buckets::LEASES, options.timing.lease_ttl).await?;
    let url = options.url.clone();
    let entries: Arc<dyn SessionKv> =
        tokio::task::spawn_blocking(move || DirectKv::connect(&url).map(Arc::new))
            .await
            .map_err(|e| NatsError::new("the session store", e))??;
    let shared = Arc::new(Shared {
        results: bucket(&js, RESULTS, Duration::ZERO).await?,
        batches: bucket(&js, BATCHES, Duration::ZERO).await?,
        bundles: bucket(&js, BUNDLES, Duration::ZERO).await?,
        sessions: Arc::new(NatsCheckpointStore::over(entries.clone())),
        entries,
        children: Arc::new(Children::new()),
        batches_seen: Mutex::default(),
        heartbeat: (ack_wait / 3).max(Duration::from_millis(100)),
        options,
    });
    eprintln!(
        "worker: pulling jobs from {} at {} ({} at once; a job not heard of for {:?} goes to another worker)",
        buckets::JOBS_STREAM,
        shared.options.url,
        shared.options.jobs,
        ack_wait
    );
    let slots = Arc::new(Semaphore::new(shared.options.jobs));
    let mut running = JoinSet::new();
    let mut stop = stop;
    loop {
        let permit = tokio::select! {
            permit = slots.clone().acquire_owned() => permit.expect("the semaphore is never closed"),
            _ = stop.wait_for(|s| *s) => break,
        };
        let pulled = tokio::select! {
            pulled = pull_one(&consumer) => pulled,
            _ = stop.wait_for(|s| *s) => break,
        };
        match pulled {
            Ok(Some(message)) => {
                let shared = shared.clone();
                running.spawn(async move {
                    handle(&shared, message).await;
                    drop(permit);
                });
            }
            Ok(None) => {}
            Err(error) => {
                tracing::debug!(%error, "pulling a job failed");
                tokio::time::sleep(PULL_PAUSE).await;
            }
        }
        while running.try_join_next().is_some() {}
    }
    eprintln!("worker: stopping; jobs running are interrupted and handed back");
    shared.children.stop();
    while running.join_next().await.is_some() {}
    // The last acknowledgements and hand-backs reach the server before the worker exits.
    let _ = js.client().flush().await;
    Ok(())
}

/// One job, waiting at most [`PULL_WAIT`] for it.
async fn pull_one(
    consumer: &jetstream::consumer::PullConsumer,
) -> Result<Option<Message>, async_nats::Error> {
    let mut batch = consumer
        .batch()
        .max_messages(1)
        .expires(PULL_WAIT)
        .messages()
        .await?;
    match batch.next().await {
        Some(message) => Ok(Some(message?)),
        None => Ok(None),
    }
}

/// Runs one delivered job to its acknowledgement (or hands it back).
async fn handle(shared: &Shared, message: Message) {
    let job = match Job::parse(&message.payload) {
        Ok(job) => job,
        Err(error) => {
            eprintln!(
                "worker: a message on {} is refused: {error}; dropped",
                message.subject
            );
            let _ = message.ack_with(AckKind::Term).await;
            return;
        }
    };
    let name = format!("{} line {}", job.batch_id, job.line);
    let delivered = message.info().map(|i| i.delivered).unwrap_or(1);
    match settle(shared, &message, &job, delivered).await {
        Ok(Settled::Recorded(status, took)) => {
            eprintln!(
                "worker: {name}: {} in {:.1}s",
                status.name(),
                took.as_secs_f64()
            );
            acknowledge(&message, &name).await;
        }
        Ok(Settled::AlreadyRecorded) => {
            eprintln!("worker: {name}: its result is stored already (delivered again)");
            acknowledge(&message, &name).await;
        }
        Ok(Settled::HandedBack(why)) => {
            eprintln!("worker: {name}: handed back ({why})");
            let _ = message
                .ack_with(AckKind::Nak(Some(Duration::from_secs(1))))
                .await;
        }
        Ok(Settled::CannotWrite(why)) => {
            eprintln!(
                "worker: {name}: handed back: this worker cannot write its directory ({why}); the slot pauses {TROUBLE_PAUSE:?}"
            );
            let _ = message
                .ack_with(AckKind::Nak(Some(Duration::from_secs(1))))
                .await;
            // Its slot stays taken meanwhile: a worker that cannot write would otherwise
            // take every job of the queue only to hand it back.
            tokio::time::sleep(TROUBLE_PAUSE).await;
        }
        Err(error) => {
            eprintln!("worker: {name}: {error}; handed back");
            let _ = message
                .ack_with(AckKind::Nak(Some(Duration::from_secs(2))))
                .await;
            // The same trouble (the server away, a bundle that cannot be written) would
            // hand back every job this slot takes meanwhile.
            tokio::time::sleep(TROUBLE_PAUSE).await;
        }
    }
}

/// How a job ended for this worker.
enum Settled {
    /// Its envelope is stored: acknowledge it.
    Recorded(Status, Duration),
    AlreadyRecorded,
    /// Not finished here: another delivery goes on with it.
    HandedBack(String),
    /// Not run: this worker cannot write its own directory (a full disk).
    CannotWrite(String),
}

async fn settle(
    shared: &Shared,
    message: &Message,
    job: &Job,
    delivered: i64,
) -> Result<Settled, NatsError> {
    if recorded(&shared.results, &job.batch_id, job.line).await? {
        return Ok(Settled::AlreadyRecorded);
    }
    let started = Instant::now();
    let batch = match shared.batch(&job.batch_id).await {
        Ok(batch) => batch,
        Err(BatchTrouble::Away(error)) => return Err(error),
        Err(BatchTrouble::Refused(error)) => return refuse(shared, job, &error).await,
    };
    let budget = batch.record.budget();
    let envelope = |result: RunResult| Envelope {
        input: InputRef {
            line: job.line,
            id: job.input().name(),
        },
        result,
    };
    // A batch without a budget keeps no running total: its status sums its envelopes.
    let reached = match budget.is_unlimited() {
        true => None,
        false => budget.reached(&spending(&shared.batches, &job.batch_id).await?.into()),
    };
    let result = match reached {
        Some(reason) => RunResult::not_started(
            Status::LimitReached,
            &batch.record.agent_name,
            (&new_id(), &job.session_id()),
            ErrorCode::BatchBudget,
            format!("not run: the batch's budget is spent ({reason})"),
        ),
        None => {
            if delivered > 1 {
                eprintln!(
                    "worker: {} line {}: delivery {delivered}: going on with its session",
                    job.batch_id, job.line
                );
            } else {
                eprintln!("worker: {} line {}: started", job.batch_id, job.line);
            }
            match run_job(shared, (message, delivered), job, batch.launcher.clone()).await {
                Some(result) => result,
                None => return Ok(Settled::HandedBack("the worker is stopping".into())),
            }
        }
    };
    // This worker cannot write its own directory (its disk is full?): the job is not the
    // input's to fail, another worker takes it.
    if result
        .error
        .as_ref()
        .is_some_and(|e| e.code == ErrorCode::BatchDir)
    {
        let why = result.error.map(|e| e.message).unwrap_or_default();
        return Ok(Settled::CannotWrite(why));
    }
    if result.status == Status::Interrupted || session_was_held(&result) {
        let why = result
            .error
            .as_ref()
            .map_or("interrupted".to_string(), |e| e.message.clone());
        return Ok(Settled::HandedBack(why));
    }
    let status = result.status;
    let envelope = envelope(result);
    // Another delivery of the job may have finished it meanwhile (this one waited for its
    // session): its envelope stands.
    if !store_once(&shared.results, &job.batch_id, &envelope).await? {
        return Ok(Settled::AlreadyRecorded);
    }
    if !budget.is_unlimited() {
        add_spending(&shared.batches, &job.batch_id, &envelope).await?;
    }
    Ok(Settled::Recorded(status, started.elapsed()))
}

/// Records the job as invalid: what was published for its batch can run nowhere, so
/// handing it back would only make every worker take it again, forever.
async fn refuse(shared: &Shared, job: &Job, error: &NatsError) -> Result<Settled, NatsError> {
    eprintln!(
        "worker: {} line {}: refused: {error}",
        job.batch_id, job.line
    );
    let envelope = Envelope {
        input: InputRef {
            line: job.line,
            id: job.input().name(),
        },
        result: RunResult::invalid(
            "",
            &new_id(),
            &job.session_id(),
            ErrorCode::InvalidBatch,
            error.to_string(),
        ),
    };
    match store_once(&shared.results, &job.batch_id, &envelope).await? {
        true => Ok(Settled::Recorded(Status::Invalid, Duration::ZERO)),
        false => Ok(Settled::AlreadyRecorded),
    }
}

/// Why a job's batch cannot run here.
enum BatchTrouble {
    /// What was published cannot run on any worker: a record, bundle or agent file that
    /// does not hold.
    Refused(NatsError),
    /// The server's trouble or this worker's: another delivery may do better.
    Away(NatsError),
}

/// Runs the job's child, keeping its delivery alive meanwhile; `None` when the worker
/// stopped before it could start.
async fn run_job(
    shared: &Shared,
    (message, delivered): (&Message, i64),
    job: &Job,
    launcher: Arc<Launcher>,
) -> Option<RunResult> {
    let place = InputPlace {
        dir: shared
            .options
            .dir
            .join("jobs")
            .join(&job.batch_id)
            .join(job.line.to_string()),
        session: job.session_id(),
        // Only a job delivered again can have a session (or one published twice: its run
        // is refused as existing, and resumed).
        fresh: delivered == 1,
        trace: job.trace.clone(),
    };
    let (input, children) = (job.input(), shared.children.clone());
    let mut child =
        tokio::task::spawn_blocking(move || run_checked(&input, &place, &launcher, &children));
    loop {
        tokio::select! {
            finished = &mut child => return finished.ok().flatten(),
            () = tokio::time::sleep(shared.heartbeat) => {
                let _ = message.ack_with(AckKind::Progress).await;
            }
        }
    }
}

/// Acknowledges the job, without waiting for the server's word: its envelope is stored,
/// so an acknowledgement that is lost only has the job delivered again, and the stored
/// envelope ends it there.
async fn acknowledge(message: &Message, name: &str) {
    let what = || format!("cannot acknowledge {name}");
    if let Err(error) = retrying(what, || message.ack()).await {
        eprintln!("worker: {error}");
    }
}

async fn batch_record(batches: &kv::Store, batch_id: &str) -> Result<BatchRecord, BatchTrouble> {
    let what = || format!("batch {batch_id}");
    // No record yet is the server's trouble: it may come (a submit that is starting over).
    let bytes = get(batches, batch_id)
        .await
        .map_err(BatchTrouble::Away)?
        .ok_or_else(|| BatchTrouble::Away(NatsError::new(what(), "no such batch was submitted")))?;
    BatchRecord::parse(&bytes, batch_id)
        .map_err(|e| BatchTrouble::Refused(NatsError::new(what(), e)))
}

/// A batch as a worker knows it, read at its first job: what was submitted, and how its
/// jobs start.
struct Batch {
    record: BatchRecord,
    launcher: Arc<Launcher>,
}

impl Shared {
    /// The batch: its record read, its agent's files written out, its agent read.
    async fn batch(&self, batch_id: &str) -> Result<Arc<Batch>, BatchTrouble> {
        let mut seen = self.batches_seen.lock().await;
        if let Some(batch) = seen.get(batch_id) {
            return Ok(batch.clone());
        }
        let record = batch_record(&self.batches, batch_id).await?;
        let agent = self.bundle(&record.bundle).await?;
        let spec = load_spec(&agent)
            .map_err(|e| BatchTrouble::Refused(NatsError::new(format!("batch {batch_id}"), e)))?;
        let launcher = Arc::new(Launcher {
            exe: self.options.exe.clone(),
            agent,
            agent_name: spec.name.clone(),
            declared: spec.inputs.clone(),
            sessions: Some(Sessions {
                at: ChildSessions::Given(Arc::new(relay::Relayed(self.entries.clone()))),
                store: self.sessions.clone(),
            }),
            // A dead worker's session is free once its lease expires.
            wait_held: self.options.timing.lease_ttl * 2,
            passed: Vec::new(),
            model: record.model.clone(),
            // The worker's spans are its runs'; each job names its caller's (`trace`).
            trace: None,
        });
        let batch = Arc::new(Batch { record, launcher });
        seen.insert(batch_id.to_string(), batch.clone());
        Ok(batch)
    }

    /// The bundle's agent file, its files written under the worker's directory first.
    /// The path is relative to the working directory, and the same on every worker: a job
    /// resumed elsewhere finds its agent file where its session says.
    async fn bundle(&self, id: &str) -> Result<PathBuf, BatchTrouble> {
        let what = || format!("bundle {id}");
        let bytes = get(&self.bundles, id)
            .await
            .map_err(BatchTrouble::Away)?
            .ok_or_else(|| {
                BatchTrouble::Away(NatsError::new(
                    what(),
                    "not stored (was the batch submitted to this server?)",
                ))
            })?;
        let bundle = Bundle::decode(&bytes, id)
            .map_err(|e| BatchTrouble::Refused(NatsError::new(what(), e)))?;
        let dir = self.options.dir.join("bundles").join(id);
        bundle
            .write_to(&dir)
            .map_err(|e| BatchTrouble::Away(NatsError::new(what(), e)))?;
        Ok(dir.join(&bundle.agent))
    }
}

fn load_spec(agent: &Path) -> Result<AgentSpec, String> {
    crate::spec::load::load_agent(agent)
        .map(|(spec, _warnings)| spec)
        .map_err(|diagnostics| {
            let first = diagnostics
                .first()
                .map(ToString::to_string)
                .unwrap_or_default();
            format!("{} is not a valid agent file: {first}", agent.display())
        })
}
