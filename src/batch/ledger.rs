//! What the batch has recorded so far, over all its runs: for each input line in
//! `results.jsonl`, the status, tokens and cost of its last envelope. A few dozen bytes
//! per input recorded (the envelopes themselves stay on disk), from which come the
//! inputs a rerun skips, the batch-wide spending the budget checks, and the summary.

use std::collections::HashMap;

use super::results::{Envelope, is_final};
use crate::output::result::Status;

/// The last envelope of one input, in brief.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Recorded {
    status: Status,
    /// Whether a rerun skips the input.
    is_final: bool,
    tokens: u64,
    cost_usd: f64,
}

/// What the whole batch spent: the sum over inputs of their last envelopes' usage (a
/// resumed run's usage counts its session from the start, so it replaces the earlier one).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Spent {
    pub tokens: u64,
    pub cost_usd: f64,
    /// Whether some input's cost is known (its model has `pricing`).
    pub priced: bool,
}

#[derive(Debug, Default)]
pub struct Ledger {
    by_line: HashMap<u64, Recorded>,
    spent: Spent,
}

impl Ledger {
    /// Takes in an envelope, replacing the input's earlier one.
    pub fn record(&mut self, envelope: &Envelope) {
        let usage = &envelope.result.usage;
        let recorded = Recorded {
            status: envelope.result.status,
            is_final: is_final(&envelope.result),
            tokens: usage.total_tokens,
            cost_usd: usage.cost_usd.unwrap_or(0.0),
        };
        self.spent.priced |= usage.cost_usd.is_some();
        if let Some(before) = self.by_line.insert(envelope.input.line, recorded) {
            self.spent.tokens -= before.tokens;
            self.spent.cost_usd -= before.cost_usd;
        }
        self.spent.tokens += recorded.tokens;
        self.spent.cost_usd += recorded.cost_usd;
    }

    /// Whether the input of this line is over (a rerun skips it).
    #[cfg(test)]
    pub fn is_final(&self, line: u64) -> bool {
        self.by_line.get(&line).is_some_and(|r| r.is_final)
    }

    /// The lines a rerun skips.
    pub fn final_lines(&self) -> impl Iterator<Item = u64> + '_ {
        self.by_line
            .iter()
            .filter(|(_, recorded)| recorded.is_final)
            .map(|(line, _)| *line)
    }

    pub fn spent(&self) -> Spent {
        self.spent
    }

    /// How many inputs have an envelope.
    pub fn inputs(&self) -> u64 {
        self.by_line.len() as u64
    }

    /// How many inputs' last envelope has this status.
    pub fn count(&self, status: Status) -> u64 {
        self.by_line
            .values()
            .filter(|recorded| recorded.status == status)
            .count() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::results::InputRef;
    use crate::output::result::RunResult;

    fn envelope(line: u64, status: Status, tokens: u64, cost: f64) -> Envelope {
        let mut result = RunResult::not_started(
            status,
            "agent",
            ("run", "session"),
            crate::engine::ErrorCode::Internal,
            "y".into(),
        );
        result.usage.total_tokens = tokens;
        result.usage.cost_usd = Some(cost);
        Envelope {
            input: InputRef {
                line,
                id: line.to_string(),
            },
            result,
        }
    }

    #[test]
    fn an_input_counts_once_with_its_last_envelope() {
        let mut ledger = Ledger::default();
        ledger.record(&envelope(1, Status::Interrupted, 100, 0.5));
        ledger.record(&envelope(2, Status::Completed, 10, 0.25));
        ledger.record(&envelope(1, Status::Completed, 150, 0.75));
        assert_eq!(ledger.inputs(), 2);
        assert_eq!(ledger.count(Status::Completed), 2);
        assert_eq!(ledger.count(Status::Interrupted), 0);
        assert_eq!(ledger.spent().tokens, 160);
        assert_eq!(ledger.spent().cost_usd, 1.0);
        let mut lines: Vec<u64> = ledger.final_lines().collect();
        lines.sort();
        assert_eq!(lines, [1, 2]);
    }
}
