//! The runs this server hosts: each one's handle pieces (a reader of its events kept
//! unread, its stop signal) and, once it ends, its result. Ended runs are kept for a while
//! and then forgotten: their run directory still answers for them (`result.json`,
//! `events.jsonl`, `transcript.txt`), so memory does not grow with the runs served.

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, watch};

use super::lines::{LineReader, Lines};
use crate::output::result::RunResult;
use crate::session::{Cancel, RunHandle};
use crate::sync::lock;

/// How many ended runs stay in memory.
const KEEP_ENDED: usize = 64;

/// One run hosted here.
pub struct LiveRun {
    pub run_id: String,
    pub session_id: String,
    pub agent_file: PathBuf,
    /// Its events as the lines clients are sent, each serialized once.
    lines: Arc<Lines>,
    cancel: Cancel,
    ended: watch::Receiver<Option<Arc<RunResult>>>,
}

impl LiveRun {
    /// A reader of its events' lines, from line `from` (0: the first).
    pub fn lines(&self, from: usize) -> LineReader {
        self.lines.reader(from)
    }

    pub fn cancel(&self) {
        self.cancel.cancel();
    }

    /// The result, once the run has ended.
    pub fn result(&self) -> Option<Arc<RunResult>> {
        self.ended.borrow().clone()
    }

    /// Waits up to `limit` for the run to end; its result, if it did.
    pub async fn wait_ended(&self, limit: Duration) -> Option<Arc<RunResult>> {
        let mut ended = self.ended.clone();
        let waited = tokio::time::timeout(limit, ended.wait_for(Option::is_some)).await;
        match waited {
            Ok(Ok(result)) => result.clone(),
            _ => None,
        }
    }
}

#[derive(Default)]
pub struct Runs {
    runs: Mutex<HashMap<String, Arc<LiveRun>>>,
    ended: Mutex<VecDeque<String>>,
}

impl Runs {
    /// Hosts the run of `handle`: its outcome is awaited on a task of its own, which holds
    /// the run's slot until then.
    pub fn host(self: &Arc<Self>, handle: RunHandle, slot: OwnedSemaphorePermit) -> Arc<LiveRun> {
        let (sender, ended) = watch::channel(None);
        let run = Arc::new(LiveRun {
            run_id: handle.run_id().to_string(),
            session_id: handle.session_id().to_string(),
            agent_file: handle.agent_file().to_path_buf(),
            lines: Lines::of(handle.events()),
            cancel: handle.canceller(),
            ended,
        });
        lock(&self.runs).insert(run.run_id.clone(), run.clone());
        let runs = self.clone();
        let (run_id, session_id) = (run.run_id.clone(), run.session_id.clone());
        let agent = run.agent_file.display().to_string();
        tokio::spawn(async move {
            let result = match handle.outcome().await {
                Ok(ended) => ended.result,
                Err(stop) => RunResult::not_started(
                    stop.status,
                    &agent,
                    (&run_id, &session_id),
                    stop.code,
                    stop.message,
                ),
            };
            drop(slot);
            sender.send_replace(Some(Arc::new(result)));
            runs.forget_old(run_id);
        });
        run
    }

    /// Keeps the last [`KEEP_ENDED`] ended runs in memory.
    fn forget_old(&self, ended: String) {
        let mut order = lock(&self.ended);
        order.push_back(ended);
        while order.len() > KEEP_ENDED {
            if let Some(old) = order.pop_front() {
                lock(&self.runs).remove(&old);
            }
        }
    }

    pub fn get(&self, run_id: &str) -> Option<Arc<LiveRun>> {
        lock(&self.runs).get(run_id).cloned()
    }

    /// The run of `session_id` still going here, if there is one.
    pub fn going_in(&self, session_id: &str) -> Option<Arc<LiveRun>> {
        lock(&self.runs)
            .values()
            .find(|run| run.session_id == session_id && run.result().is_none())
            .cloned()
    }

    fn going(&self) -> Vec<Arc<LiveRun>> {
        lock(&self.runs)
            .values()
            .filter(|run| run.result().is_none())
            .cloned()
            .collect()
    }

    /// Interrupts every run going, and waits up to `limit` for them to end (checkpointed).
    pub async fn interrupt_all(&self, limit: Duration) {
        let going = self.going();
        for run in &going {
            run.cancel();
        }
        let all = futures_util::future::join_all(going.iter().map(|run| run.wait_ended(limit)));
        all.await;
    }
}
