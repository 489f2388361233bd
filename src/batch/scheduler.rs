//! The scheduler: `-j N` worker threads take entries from the inputs file as they read it
//! (never more than N inputs in memory), each runs one input at a time as a child
//! process, then records its envelope, updates the progress and checks the budget. Stopping (the budget, an interrupt, an unreadable inputs file, a
//! results file that cannot be written) stops the reading: the inputs running finish.

use std::collections::HashSet;
use std::io;
use std::sync::{Arc, Mutex};

use super::budget::Budget;
use super::children::Children;
use super::dir::BatchDir;
use super::inputs::Entry;
use super::job::{Launcher, run_entry};
use super::ledger::Ledger;
use super::progress::BatchProgress;
use super::results::{Envelope, ResultsFile};
use crate::sync::lock;

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
        let mut stopped = lock(&self.0);
        stopped.get_or_insert(reason);
    }

    pub fn reason(&self) -> Option<Stopped> {
        lock(&self.0).clone()
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
        let mut entries = lock(&self.entries);
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

/// What the workers record as inputs start and end, one at a time: an envelope is
/// appended, counted and checked against the budget before its worker takes the next
/// input, so a batch with `-j 1` never starts an input past its budget.
struct Books<'r> {
    results: &'r mut ResultsFile,
    ledger: Ledger,
    progress: &'r mut BatchProgress,
    not_started: u64,
}

impl Books<'_> {
    /// Appends the envelope and takes it into the ledger; stops the batch when the budget
    /// is reached or the results file cannot be written.
    fn record(&mut self, batch: &Batch<'_>, envelope: &Envelope) {
        if let Err(error) = self.results.append(envelope) {
            let message = format!("cannot write {}: {error}", self.results.path().display());
            batch.stop.stop(Stopped::Results(message));
            batch.children.stop();
        }
        self.ledger.record(envelope);
        self.progress.finished(envelope, &self.ledger);
        if let Some(reason) = batch.budget.reached(&self.ledger.spent()) {
            batch.stop.stop(Stopped::Budget(reason));
        }
    }
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
    ledger: Ledger,
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
    let books = Mutex::new(Books {
        results,
        ledger,
        progress,
        not_started: 0,
    });
    std::thread::scope(|scope| {
        for _ in 0..batch.jobs.max(1) {
            let (feed, books) = (&feed, &books);
            scope.spawn(move || work(batch, feed, books));
        }
    });
    let books = books.into_inner().unwrap_or_else(|e| e.into_inner());
    let rest = feed.count_rest();
    Ran {
        ledger: books.ledger,
        not_started: rest.map(|rest| rest + books.not_started),
        stopped: batch.stop.reason(),
    }
}

/// A worker: runs entries one at a time until there are none to take.
fn work<I>(batch: &Batch<'_>, feed: &Feed<I>, books: &Mutex<Books<'_>>)
where
    I: Iterator<Item = io::Result<Entry>>,
{
    let books = || lock(books);
    while let Some(entry) = feed.next() {
        books().progress.started();
        match run_entry(&entry, batch.dir, batch.launcher, batch.children) {
            Some(envelope) => books().record(batch, &envelope),
            None => {
                let mut books = books();
                books.not_started += 1;
                books.progress.not_started();
            }
        }
    }
}
