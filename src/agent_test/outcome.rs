//! What running the cases found: per run (an attempt), per case, and for the whole lot.
//! The reports (text, JSON, JUnit, GitHub) all print these.

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

/// One thing a run did wrong, and where the test file asks for it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Failure {
    pub message: String,
    /// The test file.
    pub file: PathBuf,
    pub line: usize,
    pub column: usize,
}

/// One run of a case.
#[derive(Debug, Clone)]
pub struct Attempt {
    pub failures: Vec<Failure>,
    /// The run directory, kept because the attempt failed.
    pub kept: Option<PathBuf>,
    pub duration: Duration,
}

impl Attempt {
    pub fn passed(&self) -> bool {
        self.failures.is_empty()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Passed,
    Failed,
    Skipped,
}

/// A case, all its runs counted.
#[derive(Debug, Clone, Serialize)]
pub struct CaseReport {
    /// `file::case`, as progress lines and `--filter` know it.
    pub id: String,
    pub file: PathBuf,
    pub name: String,
    pub verdict: Verdict,
    /// Why it was skipped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    /// Runs made, and how many passed.
    pub runs: usize,
    pub passed_runs: usize,
    pub min_pass_rate: f64,
    /// The failures of the first run that failed (or why the pass rate is too low).
    pub failures: Vec<Failure>,
    /// The run directory of the first run that failed (transcript, events, result).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_dir: Option<PathBuf>,
    #[serde(serialize_with = "millis")]
    pub duration: Duration,
}

/// The summary line's numbers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Totals {
    pub passed: usize,
    pub failed: usize,
    pub skipped: usize,
    /// Cases `--filter` left out.
    pub filtered_out: usize,
}

impl Totals {
    pub fn of(cases: &[CaseReport], filtered_out: usize) -> Self {
        let count = |verdict| cases.iter().filter(|c| c.verdict == verdict).count();
        Totals {
            passed: count(Verdict::Passed),
            failed: count(Verdict::Failed),
            skipped: count(Verdict::Skipped),
            filtered_out,
        }
    }
}

fn millis<S: serde::Serializer>(duration: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_u64(duration.as_millis() as u64)
}

impl CaseReport {
    /// The share of runs that passed.
    pub fn pass_rate(&self) -> f64 {
        match self.runs {
            0 => 0.0,
            runs => self.passed_runs as f64 / runs as f64,
        }
    }
}
