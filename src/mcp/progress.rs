//! A server's `notifications/progress`, bounded: a server may send hundreds of thousands
//! in one call, and each would otherwise be an event in `events.jsonl` (and, in the SDK's
//! own dispatcher, a task waiting on a full channel).
//!
//! [`ProgressBoard`] keeps only the latest report of each call (posting never waits, so the
//! SDK's notification tasks end at once), and [`Throttle`] passes reports on at most every
//! [`PROGRESS_INTERVAL`] and at most [`MAX_PROGRESS_EVENTS`] times a call; the last report
//! of a call always gets through when the call ends: the last value wins.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{ProgressNotificationParam, ProgressToken};
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::sync::lock;

/// The shortest time between two progress reports of one call that are passed on.
pub const PROGRESS_INTERVAL: Duration = Duration::from_millis(250);
/// The most progress reports of one call passed on before it ends (the last one comes on
/// top, when it ends).
pub const MAX_PROGRESS_EVENTS: u32 = 1000;

/// The latest report of each call in flight, by its progress token.
#[derive(Clone, Default)]
pub struct ProgressBoard {
    slots: Arc<Mutex<HashMap<ProgressToken, Arc<Slot>>>>,
}

#[derive(Default)]
struct Slot {
    latest: Mutex<Option<ProgressNotificationParam>>,
    posted: Notify,
}

impl ProgressBoard {
    /// Keeps `report` as its call's latest (a report for no call in flight is dropped).
    pub fn post(&self, report: ProgressNotificationParam) {
        let slot = lock(&self.slots).get(&report.progress_token).cloned();
        if let Some(slot) = slot {
            *lock(&slot.latest) = Some(report);
            slot.posted.notify_one();
        }
    }

    /// Follows the reports for `token` until the subscription is dropped.
    pub fn subscribe(&self, token: ProgressToken) -> Subscription {
        let slot = Arc::new(Slot::default());
        lock(&self.slots).insert(token.clone(), slot.clone());
        Subscription {
            board: self.clone(),
            token,
            slot,
        }
    }
}

/// One call's reports.
pub struct Subscription {
    board: ProgressBoard,
    token: ProgressToken,
    slot: Arc<Slot>,
}

impl Subscription {
    /// Resolves once a report was posted since the last [`take`](Self::take).
    pub async fn posted(&self) {
        self.slot.posted.notified().await;
    }

    /// The latest report not yet taken.
    pub fn take(&self) -> Option<ProgressNotificationParam> {
        lock(&self.slot.latest).take()
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        lock(&self.board.slots).remove(&self.token);
    }
}

/// Which of a call's reports are passed on: the first at once, then at most one per
/// [`PROGRESS_INTERVAL`] (the latest of those that came meanwhile), at most
/// [`MAX_PROGRESS_EVENTS`] in all, and the last one when the call ends.
#[derive(Default)]
pub struct Throttle {
    last_sent: Option<Instant>,
    sent: u32,
    pending: Option<ProgressNotificationParam>,
}

impl Throttle {
    /// Takes a report at `now`: passed on when it may be, else kept in place of the one
    /// kept.
    pub fn offer(
        &mut self,
        report: ProgressNotificationParam,
        now: Instant,
        pass_on: &impl Fn(ProgressNotificationParam),
    ) {
        self.keep(report);
        let may_send = self.sent < MAX_PROGRESS_EVENTS
            && self
                .last_sent
                .is_none_or(|last| now >= last + PROGRESS_INTERVAL);
        if may_send {
            self.send(now, pass_on);
        }
    }

    /// Keeps `report` in place of the one kept, to pass on later.
    pub fn keep(&mut self, report: ProgressNotificationParam) {
        self.pending = Some(report);
    }

    /// When the kept report may be passed on (`None`: nothing is kept, or the call has had
    /// its share).
    pub fn due(&self) -> Option<Instant> {
        if self.pending.is_none() || self.sent >= MAX_PROGRESS_EVENTS {
            return None;
        }
        self.last_sent.map(|last| last + PROGRESS_INTERVAL)
    }

    /// Passes the kept report on at `now`.
    pub fn send(&mut self, now: Instant, pass_on: &impl Fn(ProgressNotificationParam)) {
        if let Some(report) = self.pending.take() {
            pass_on(report);
            self.sent += 1;
            self.last_sent = Some(now);
        }
    }

    /// The call ended: the last report kept goes through, whatever the count.
    pub fn finish(mut self, pass_on: &impl Fn(ProgressNotificationParam)) {
        self.send(Instant::now(), pass_on);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    fn report(progress: f64) -> ProgressNotificationParam {
        let token = ProgressToken(rmcp::model::NumberOrString::Number(1));
        ProgressNotificationParam::new(token, progress)
    }

    #[test]
    fn a_flood_passes_on_the_first_and_the_last_report() {
        let seen = RefCell::new(Vec::new());
        let pass_on = |r: ProgressNotificationParam| seen.borrow_mut().push(r.progress);
        let mut throttle = Throttle::default();
        let now = Instant::now();
        for n in 0..10_000 {
            throttle.offer(report(n as f64), now, &pass_on);
        }
        throttle.finish(&pass_on);
        assert_eq!(*seen.borrow(), [0.0, 9999.0]);
    }

    #[test]
    fn reports_are_passed_on_at_most_once_an_interval_and_a_bounded_number_of_times() {
        let seen = RefCell::new(0u32);
        let pass_on = |_: ProgressNotificationParam| *seen.borrow_mut() += 1;
        let mut throttle = Throttle::default();
        let mut now = Instant::now();
        for n in 0..(MAX_PROGRESS_EVENTS * 3) {
            throttle.offer(report(n as f64), now, &pass_on);
            throttle.offer(report(n as f64 + 0.5), now, &pass_on);
            now += PROGRESS_INTERVAL;
        }
        throttle.finish(&pass_on);
        assert_eq!(*seen.borrow(), MAX_PROGRESS_EVENTS + 1);
    }
}
