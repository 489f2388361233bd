//! The scheduler: `-j N` worker threads take entries from the inputs file as they read it
//! (never more than N inputs in memory) and each runs one input at a time as a child
//! process; this thread records each envelope as it comes, updates the progress and
//! checks the budget. Stopping (the budget, an interrupt, an unreadable inputs file, a
//! results file that cannot be written) stops the reading: the inputs running finish.

use std::collections::HashSet;
use std::io;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};

use super::budget::Budget;
use super::children::Children;
use super::dir::BatchDir;
use super::inputs::Entry;
use super::job::{Launcher, run_entry};
use super::ledger::Ledger;
use super::progress::BatchProgress;
use super::results::{Envelope, ResultsFile};

/// Why no new input starts.
#[derive(Debug, Clone, PartialEq)]
pub enum Stopped {
    /// A bound of `--max-cost-usd` / `--max-tokens` was reached (said for people).
    Budget(String),
    /// SIGINT or SIGTERM.
    Interrupted,
    /// The inputs file could not be read on.
    Inputs(String),
    /// An envelope could not be appended to `results.jsonl`.
    Results(String),
}

/// The reason the batch stops, shared with the signal handler; the first one stays.
#[derive(Debug, Default)]
pub struct StopSignal(Mutex<Option<Stopped>>);

impl StopSignal {
    pub fn stop(&self, reason: Stopped) {
        let mut stopped = self.0.lock().unwrap_or_else(|e| e.into_inner());
        stopped.get_or_insert(reason);
    }

    pub fn reason(&self) -> Option<Stopped> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// The entries still to run: the inputs file, less the lines already over.
struct Feed<I> {
    entries: Mutex<I>,
    skip: HashSet<u64>,
    stop: Arc<StopSignal>,
}

impl<I: Iterator<Item = io::Result<Entry>>> Feed<I> {
    /// The next entry to run, unless the batch stops.
    fn next(&self) -> Option<Entry> {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if self.stop.reason().is_some() {
                return None;
            }
            match entries.next()? {
                Ok(entry) if self.skip.contains(&entry.line()) => continue,
                Ok(entry) => return Some(entry),
                Err(error) => {
                    let message = format!("cannot read the inputs on: {error}");
                    self.stop.stop(Stopped::Inputs(message));
                    return None;
                }
            }
        }
    }

    /// How many entries are left unrun (read to the end, nothing kept); `None` when the
    /// file cannot be read to its end.
    fn count_rest(self) -> Option<u64> {
        let entries = self.entries.into_inner().unwrap_or_else(|e| e.into_inner());
        let mut rest = 0;
        for entry in entries {
            if !self.skip.contains(&entry.ok()?.line()) {
                rest += 1;
            }
        }
        Some(rest)
    }
}

/// What a worker reports.
enum Report {
    Started,
    Finished(Box<Envelope>),
    /// The batch stopped before the entry's run could start.
    NotStarted,
}

/// Everything one run of the batch works with.
pub struct Batch<'a> {
    pub dir: &'a BatchDir,
    pub launcher: &'a Launcher,
    pub jobs: usize,
    pub budget: Budget,
    pub children: &'a Children,
    pub stop: Arc<StopSignal>,
}

/// How the run of the batch went.
pub struct Ran {
    pub ledger: Ledger,
    /// Inputs that did not run (the batch stopped first); `None` when the rest of the
    /// inputs file could not be read to count them.
    pub not_started: Option<u64>,
    pub stopped: Option<Stopped>,
}

/// Runs every entry not over yet, appending each envelope to `results` as it comes.
pub fn run<I>(
    batch: &Batch<'_>,
    entries: I,
    results: &mut ResultsFile,
    mut ledger: Ledger,
    progress: &mut BatchProgress,
) -> Ran
where
    I: Iterator<Item = io::Result<Entry>> + Send,
{
    if let Some(reason) = batch.budget.reached(&ledger.spent()) {
        batch.stop.stop(Stopped::Budget(reason));
    }
    let feed = Feed {
        entries: Mutex::new(entries),
        skip: ledger.final_lines().collect(),
        stop: batch.stop.clone(),
    };
    let mut not_started = 0;
    let (sender, reports) = mpsc::channel();
    std::thread::scope(|scope| {
        for _ in 0..batch.jobs.max(1) {
            let sender = sender.clone();
            let feed = &feed;
            scope.spawn(move || work(batch, feed, &sender));
        }
        drop(sender);
        for report in reports {
            match report {
                Report::Started => progress.started(),
                Report::NotStarted => {
                    not_started += 1;
                    progress.not_started();
                }
                Report::Finished(envelope) => {
                    record(batch, &envelope, results, &mut ledger);
                    progress.finished(&envelope, &ledger);
                }
            }
        }
    });
    let rest = feed.count_rest();
    Ran {
        ledger,
        not_started: rest.map(|rest| rest + not_started),
        stopped: batch.stop.reason(),
    }
}

/// A worker: runs entries one at a time until there are none to take.
fn work<I>(batch: &Batch<'_>, feed: &Feed<I>, reports: &mpsc::Sender<Report>)
where
    I: Iterator<Item = io::Result<Entry>>,
{
    while let Some(entry) = feed.next() {
        let _ = reports.send(Report::Started);
        let report = match run_entry(&entry, batch.dir, batch.launcher, batch.children) {
            Some(envelope) => Report::Finished(Box::new(envelope)),
            None => Report::NotStarted,
        };
        if reports.send(report).is_err() {
            return;
        }
    }
}

/// Appends the envelope and takes it into the ledger; stops the batch when the budget
/// is reached or the results file cannot be written.
fn record(batch: &Batch<'_>, envelope: &Envelope, results: &mut ResultsFile, ledger: &mut Ledger) {
    if let Err(error) = results.append(envelope) {
        let message = format!("cannot write {}: {error}", results.path().display());
        batch.stop.stop(Stopped::Results(message));
        batch.children.stop();
    }
    ledger.record(envelope);
    if let Some(reason) = batch.budget.reached(&ledger.spent()) {
        batch.stop.stop(Stopped::Budget(reason));
    }
}
