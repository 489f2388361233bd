//! The summary at the end of a batch, and its exit code: 0 when every input completed,
//! otherwise the most severe status among the inputs, in the order of [`SEVERITY`].

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use super::ledger::Ledger;
use super::scheduler::{Ran, Stopped};
use crate::output::result::Status;

/// From most to least severe: a batch that was interrupted has inputs left to run; a
/// failed input needs looking at; an invalid one is a bad line of input; a limit or a
/// question for a person are the agent working as told.
pub const SEVERITY: [Status; 5] = [
    Status::Interrupted,
    Status::Failed,
    Status::Invalid,
    Status::LimitReached,
    Status::InputRequired,
];

/// The status (and exit code) of a batch whose inputs ended with `statuses`: completed
/// when all did.
pub fn most_severe(statuses: impl Iterator<Item = Status>) -> Status {
    let seen: Vec<Status> = statuses.collect();
    SEVERITY
        .into_iter()
        .find(|severe| seen.contains(severe))
        .unwrap_or(Status::Completed)
}

/// Order of the counts in the summary line.
pub const LISTED: [Status; 6] = [
    Status::Completed,
    Status::Failed,
    Status::Invalid,
    Status::LimitReached,
    Status::InputRequired,
    Status::Interrupted,
];

pub struct Summary {
    pub batch_id: String,
    pub results: PathBuf,
    counts: Vec<(Status, u64)>,
    tokens: u64,
    cost_usd: Option<f64>,
    not_started: Option<u64>,
    stopped: Option<Stopped>,
    elapsed: Duration,
}

impl Summary {
    pub fn new(batch_id: &str, results: PathBuf, ran: &Ran, elapsed: Duration) -> Self {
        let ledger: &Ledger = &ran.ledger;
        let spent = ledger.spent();
        Summary {
            batch_id: batch_id.to_string(),
            results,
            counts: LISTED.map(|status| (status, ledger.count(status))).to_vec(),
            tokens: spent.tokens,
            cost_usd: spent.priced.then_some(spent.cost_usd),
            not_started: ran.not_started,
            stopped: ran.stopped.clone(),
            elapsed,
        }
    }

    /// The statuses the batch ended with: its inputs' and, for inputs that did not
    /// start, why (the budget counts as a limit); a stop for an error is a failure.
    fn statuses(&self) -> impl Iterator<Item = Status> + '_ {
        let recorded = self
            .counts
            .iter()
            .filter(|(_, count)| *count > 0)
            .map(|(status, _)| *status);
        let stop = match &self.stopped {
            Some(Stopped::Inputs(_) | Stopped::Results(_)) => Some(Status::Failed),
            Some(Stopped::Interrupted) => Some(Status::Interrupted),
            Some(Stopped::Budget(_)) if self.not_started != Some(0) => Some(Status::LimitReached),
            _ => None,
        };
        recorded.chain(stop)
    }

    /// How many inputs ended with each status, in the order of [`LISTED`].
    pub fn counts(&self) -> &[(Status, u64)] {
        &self.counts
    }

    /// Inputs that did not start (`None`: the rest of an unbounded input stream).
    pub fn not_started(&self) -> Option<u64> {
        self.not_started
    }

    /// Tokens spent, and dollars when every model was priced.
    pub fn spent(&self) -> (u64, Option<f64>) {
        (self.tokens, self.cost_usd)
    }

    pub fn elapsed(&self) -> Duration {
        self.elapsed
    }

    pub fn exit(&self) -> Status {
        most_severe(self.statuses())
    }

    /// Why the batch stopped early and how to go on, for stderr.
    pub fn stopped_note(&self) -> Option<String> {
        let reason = match self.stopped.as_ref()? {
            Stopped::Budget(reason) => format!(
                "{reason}; run the batch again with a higher bound (and --batch-id {}) to go on",
                self.batch_id
            ),
            Stopped::Interrupted => format!(
                "interrupted; run the batch again (with --batch-id {}) to go on",
                self.batch_id
            ),
            Stopped::Inputs(message) | Stopped::Results(message) => format!("error: {message}"),
        };
        Some(reason)
    }
}

impl fmt::Display for Summary {
    /// `batch `ID` · 200 inputs · 198 completed · 2 failed · 51200 tokens · 12.3 s`, then
    /// where the results are.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let recorded: u64 = self.counts.iter().map(|(_, count)| count).sum();
        write!(f, "batch {} · {recorded} inputs", self.batch_id)?;
        for (status, count) in &self.counts {
            if *count > 0 {
                write!(f, " · {count} {}", name(*status))?;
            }
        }
        match self.not_started {
            Some(0) => {}
            Some(count) => write!(f, " · {count} not started")?,
            None => write!(f, " · the rest not started")?,
        }
        write!(f, " · {} tokens", self.tokens)?;
        if let Some(cost) = self.cost_usd {
            write!(f, " · ${cost:.4}")?;
        }
        writeln!(f, " · {:.1} s", self.elapsed.as_secs_f64())?;
        write!(f, "results: {}", self.results.display())
    }
}

/// A status as the summary says it.
pub fn name(status: Status) -> &'static str {
    match status {
        Status::Completed => "completed",
        Status::Failed => "failed",
        Status::Invalid => "invalid",
        Status::LimitReached => "limit reached",
        Status::InputRequired => "input required",
        Status::Interrupted => "interrupted",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(counts: &[(Status, u64)], not_started: u64, stopped: Option<Stopped>) -> Summary {
        Summary {
            batch_id: "b".into(),
            results: "r".into(),
            counts: counts.to_vec(),
            tokens: 0,
            cost_usd: None,
            not_started: Some(not_started),
            stopped,
            elapsed: Duration::ZERO,
        }
    }

    #[test]
    fn the_most_severe_status_is_the_exit_code() {
        let all_done = summary(&[(Status::Completed, 3)], 0, None);
        assert_eq!(all_done.exit(), Status::Completed);
        let mixed = summary(
            &[
                (Status::Completed, 3),
                (Status::InputRequired, 1),
                (Status::Invalid, 1),
                (Status::Failed, 0),
            ],
            0,
            None,
        );
        assert_eq!(mixed.exit(), Status::Invalid);
        let budget = Some(Stopped::Budget("spent".into()));
        assert_eq!(
            summary(&[(Status::Completed, 3)], 2, budget.clone()).exit(),
            Status::LimitReached
        );
        assert_eq!(
            summary(&[(Status::Completed, 3)], 0, budget).exit(),
            Status::Completed,
            "a budget reached after the last input stopped nothing"
        );
        assert_eq!(
            summary(&[(Status::Failed, 1)], 5, Some(Stopped::Interrupted)).exit(),
            Status::Interrupted
        );
    }
}
