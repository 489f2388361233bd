//! GitHub Actions annotations: one `::error` per failure, on the line of the test file that
//! asks for what failed (the assertion's, or the case's for a run that went wrong before
//! its assertions), written with `runner validate`'s workflow-command code.

use crate::agent_test::outcome::{CaseReport, Verdict};
use crate::output::ci_report::{At, github_annotation};
use crate::spec::Severity;

pub fn annotations(cases: &[CaseReport]) -> String {
    let mut lines = String::new();
    for case in cases.iter().filter(|c| c.verdict == Verdict::Failed) {
        let title = format!("runner test: {}", case.id);
        for failure in &case.failures {
            let at = At {
                file: Some(&failure.file),
                line: failure.line,
                column: failure.column,
            };
            let message = match &case.run_dir {
                Some(dir) => format!("{}\nrun directory: {}", failure.message, dir.display()),
                None => failure.message.clone(),
            };
            lines.push_str(&github_annotation(Severity::Error, at, &title, &message));
            lines.push('\n');
        }
    }
    lines
}
