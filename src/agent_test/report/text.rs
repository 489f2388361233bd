//! The text report, after `cargo test`: a line per case as it finishes, then each failed
//! case's failures with the run directory kept for it, then the summary line.

use std::fmt::Write as _;
use std::time::Duration;

use crate::agent_test::outcome::{CaseReport, Totals, Verdict};

/// `test agents/x.test.yaml::case ... ok`.
pub fn progress_line(case: &CaseReport) -> String {
    let verdict = match (case.verdict, &case.skipped) {
        (Verdict::Skipped, Some(reason)) => format!("skipped ({reason})"),
        (Verdict::Skipped, None) => "skipped".to_string(),
        (Verdict::Passed, _) => "ok".to_string(),
        (Verdict::Failed, _) => "FAILED".to_string(),
    };
    let runs = match case.runs {
        0 | 1 => String::new(),
        runs => format!(" ({} of {runs} runs passed)", case.passed_runs),
    };
    format!("test {} ... {verdict}{runs}", case.id)
}

/// Each failed case: its failures at their `file:line:col`, and where its run is kept.
pub fn failures_section(cases: &[CaseReport]) -> String {
    let failed: Vec<&CaseReport> = cases
        .iter()
        .filter(|c| c.verdict == Verdict::Failed)
        .collect();
    if failed.is_empty() {
        return String::new();
    }
    let mut text = String::from("\nfailures:\n");
    for case in &failed {
        let _ = writeln!(text, "\n---- {} ----", case.id);
        for failure in &case.failures {
            let _ = writeln!(
                text,
                "{}:{}:{}: {}",
                failure.file.display(),
                failure.line,
                failure.column,
                failure.message
            );
        }
        if let Some(dir) = &case.run_dir {
            let _ = writeln!(text, "run directory: {}", dir.display());
        }
    }
    text.push_str("\nfailures:\n");
    for case in &failed {
        let _ = writeln!(text, "    {}", case.id);
    }
    text
}

/// `test result: ok. 3 passed, 0 failed, 1 skipped; finished in 0.52 s`.
pub fn summary_line(totals: &Totals, elapsed: Duration) -> String {
    let verdict = if totals.failed == 0 { "ok" } else { "FAILED" };
    let filtered = match totals.filtered_out {
        0 => String::new(),
        n => format!("; {n} filtered out"),
    };
    format!(
        "test result: {verdict}. {} passed, {} failed, {} skipped{filtered}; finished in {:.2} s",
        totals.passed,
        totals.failed,
        totals.skipped,
        elapsed.as_secs_f64()
    )
}
