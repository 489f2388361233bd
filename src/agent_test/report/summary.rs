//! The job summary of `runner test` (`GITHUB_STEP_SUMMARY`, `--summary FILE`): the totals,
//! a table of the cases with how each ended, and each failure at its `file:line`, in
//! [`safe_markdown`](crate::output::safe_markdown) pieces (failure messages quote what the
//! model said).

use std::time::Duration;

use crate::agent_test::outcome::{CaseReport, Totals, Verdict};
use crate::output::safe_markdown::{Document, Table, Text};

pub fn markdown_summary(cases: &[CaseReport], totals: &Totals, elapsed: Duration) -> String {
    let verdict = if totals.failed == 0 { "ok" } else { "FAILED" };
    let mut doc = Document::new();
    doc.heading(
        3,
        Text::plain(&format!(
            "runner test: {verdict}. {} passed, {} failed, {} skipped ({:.2} s)",
            totals.passed,
            totals.failed,
            totals.skipped,
            elapsed.as_secs_f64()
        )),
    );
    if cases.is_empty() {
        return doc.finish();
    }
    let mut table = Table::new(&["Case", "Result", "Runs passed", "Duration"]);
    for case in cases {
        let result = match (case.verdict, &case.skipped) {
            (Verdict::Passed, _) => "✅ passed".to_string(),
            (Verdict::Failed, _) => "❌ failed".to_string(),
            (Verdict::Skipped, Some(reason)) => format!("skipped ({reason})"),
            (Verdict::Skipped, None) => "skipped".to_string(),
        };
        table.row(vec![
            case.id.as_str().into(),
            result.into(),
            format!("{} of {}", case.passed_runs, case.runs).into(),
            format!("{:.2} s", case.duration.as_secs_f64()).into(),
        ]);
    }
    doc.table(&table);
    let failed: Vec<&CaseReport> = cases
        .iter()
        .filter(|c| c.verdict == Verdict::Failed)
        .collect();
    if failed.is_empty() {
        return doc.finish();
    }
    doc.heading(4, Text::plain("Failures"));
    for case in failed {
        doc.paragraph(Text::strong(&case.id));
        let mut items: Vec<Text> = case
            .failures
            .iter()
            .map(|f| {
                Text::plain(&format!(
                    "{}:{}:{}: {}",
                    f.file.display(),
                    f.line,
                    f.column,
                    f.message
                ))
            })
            .collect();
        if let Some(dir) = &case.run_dir {
            items.push(Text::plain(&format!("run directory: {}", dir.display())));
        }
        doc.list(&items);
    }
    doc.finish()
}
