//! `--format gitlab`: GitLab's Code Quality report, an issue per failure of a failed case
//! at the line of the test file that asks for what failed (as the GitHub annotations).

use crate::agent_test::outcome::{CaseReport, Verdict};
use crate::output::code_quality::{Finding, QualitySeverity, report};

pub fn gitlab_report(cases: &[CaseReport]) -> String {
    let findings = cases
        .iter()
        .filter(|case| case.verdict == Verdict::Failed)
        .flat_map(|case| {
            case.failures.iter().map(move |failure| Finding {
                check_name: "runner/test".into(),
                description: match &case.run_dir {
                    Some(dir) => format!(
                        "{}: {} (run directory: {})",
                        case.id,
                        failure.message,
                        dir.display()
                    ),
                    None => format!("{}: {}", case.id, failure.message),
                },
                file: &failure.file,
                line: failure.line,
                severity: QualitySeverity::Major,
            })
        })
        .collect();
    report(findings)
}
