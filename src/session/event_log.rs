//! Every event of a run, kept from the first, for its handle's subscribers: one that joins
//! late reads the events it missed, then the live ones, in order. The log holds the run's
//! events in memory until the handle and its streams are dropped (what `events.jsonl` holds).

use std::sync::{Arc, Condvar, Mutex, PoisonError};

use tokio::sync::watch;

use crate::engine::events::{Event, EventSink};
use crate::sync::lock;

/// The events so far, and whether the run is over (no more will come).
#[derive(Default)]
struct Kept {
    events: Vec<Event>,
    closed: bool,
}

/// A subscriber of the run's bus that keeps what it gets.
pub(crate) struct EventLog {
    kept: Mutex<Kept>,
    /// Wakes blocking readers.
    arrived: Condvar,
    /// Wakes async readers: how many events there are (and one more change when closed).
    count: watch::Sender<usize>,
}

impl EventLog {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(EventLog {
            kept: Mutex::default(),
            arrived: Condvar::new(),
            count: watch::Sender::new(0),
        })
    }

    /// The run is over: readers get `None` once they have read everything.
    pub(crate) fn close(&self) {
        self.lock().closed = true;
        self.wake();
    }

    /// A reader from the first event.
    pub(crate) fn stream(self: &Arc<Self>) -> EventStream {
        EventStream {
            log: self.clone(),
            next: 0,
            changed: self.count.subscribe(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Kept> {
        // The log only appends: what a panicking writer left is still a valid prefix.
        lock(&self.kept)
    }

    fn wake(&self) {
        self.arrived.notify_all();
        self.count.send_modify(|count| *count += 1);
    }

    /// The event at `index`, or whether none will ever come there (`Err(true)`).
    fn at(&self, index: usize) -> Result<Event, bool> {
        let kept = self.lock();
        kept.events.get(index).cloned().ok_or(kept.closed)
    }
}

impl EventSink for EventLog {
    fn emit(&self, event: &Event) {
        self.lock().events.push(event.clone());
        self.wake();
    }
}

/// One reader of a run's events: every event from the first, then the live ones, then
/// `None` when the run is over. A clone is a reader of its own at the same place (a server
/// keeps one unread and clones it for each client that joins).
#[derive(Clone)]
pub struct EventStream {
    log: Arc<EventLog>,
    next: usize,
    changed: watch::Receiver<usize>,
}

impl EventStream {
    /// The next event, waiting for it (async callers).
    pub async fn next(&mut self) -> Option<Event> {
        loop {
            // Marked seen before reading: an event that lands after the read wakes us.
            self.changed.borrow_and_update();
            match self.log.at(self.next) {
                Ok(event) => {
                    self.next += 1;
                    return Some(event);
                }
                Err(true) => return None,
                Err(false) => {
                    if self.changed.changed().await.is_err() {
                        return self.log.at(self.next).ok();
                    }
                }
            }
        }
    }

    /// The next event, blocking this thread until it comes (sync callers; never inside an
    /// async runtime).
    pub fn next_blocking(&mut self) -> Option<Event> {
        let mut kept = self.log.lock();
        loop {
            if let Some(event) = kept.events.get(self.next) {
                self.next += 1;
                return Some(event.clone());
            }
            if kept.closed {
                return None;
            }
            kept = self
                .log
                .arrived
                .wait(kept)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }
}

impl Iterator for EventStream {
    type Item = Event;

    fn next(&mut self) -> Option<Event> {
        self.next_blocking()
    }
}
