//! A hosted run's events as the lines its event streams send: each event serialized and
//! redacted once, by the one task that reads the run's events, and shared by every client
//! (200 clients of one run cost one serialization per event, not 200). A client that joins
//! late reads the lines it missed, then the live ones, in order.

use std::sync::{Arc, Mutex};

use tokio::sync::watch;

use super::redact::clean_text;
use crate::session::EventStream;
use crate::sync::lock;

#[derive(Default)]
struct Kept {
    lines: Vec<Arc<str>>,
    /// The run is over: no more lines will come.
    closed: bool,
}

/// Every line of a run so far.
pub struct Lines {
    kept: Mutex<Kept>,
    /// Bumped at each line, and once more when closed: wakes the readers.
    changed: watch::Sender<usize>,
}

impl Lines {
    /// The lines of `events`, filled by a task of their own until the run is over.
    pub fn of(mut events: EventStream) -> Arc<Self> {
        let lines = Arc::new(Lines {
            kept: Mutex::default(),
            changed: watch::Sender::new(0),
        });
        let filling = lines.clone();
        tokio::spawn(async move {
            while let Some(event) = events.next().await {
                // An event always serializes; one that did not would be a line of `null`.
                let json = serde_json::to_string(&event).unwrap_or_else(|_| "null".into());
                filling.push(Arc::from(clean_text(&json)));
            }
            filling.close();
        });
        lines
    }

    fn push(&self, line: Arc<str>) {
        lock(&self.kept).lines.push(line);
        self.changed.send_modify(|count| *count += 1);
    }

    fn close(&self) {
        lock(&self.kept).closed = true;
        self.changed.send_modify(|count| *count += 1);
    }

    /// The line at `index`, or whether none will ever come there (`Err(true)`).
    fn at(&self, index: usize) -> Result<Arc<str>, bool> {
        let kept = lock(&self.kept);
        kept.lines.get(index).cloned().ok_or(kept.closed)
    }

    /// A reader from line `from` (0: the first).
    pub fn reader(self: &Arc<Self>, from: usize) -> LineReader {
        LineReader {
            lines: self.clone(),
            next: from,
            changed: self.changed.subscribe(),
        }
    }
}

/// One client's place in a run's lines.
pub struct LineReader {
    lines: Arc<Lines>,
    next: usize,
    changed: watch::Receiver<usize>,
}

impl LineReader {
    /// The next line, waiting for it; `None` once the run is over and all are read.
    pub async fn next(&mut self) -> Option<Arc<str>> {
        loop {
            // Marked seen before reading: a line that lands after the read wakes us.
            self.changed.borrow_and_update();
            match self.lines.at(self.next) {
                Ok(line) => {
                    self.next += 1;
                    return Some(line);
                }
                Err(true) => return None,
                Err(false) => {
                    if self.changed.changed().await.is_err() {
                        return self.lines.at(self.next).ok();
                    }
                }
            }
        }
    }
}
