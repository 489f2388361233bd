//! `--format junit`: a test suite per test file, a test case per case, a failure with each
//! failure's `file:line:col` and the run directory kept. `tests/fixtures/junit.xsd` is the
//! schema the test suite checks it against.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use crate::agent_test::outcome::{CaseReport, Totals, Verdict};
use crate::output::ci_report::escape;

pub fn junit_report(cases: &[CaseReport], totals: &Totals, elapsed: Duration) -> String {
    let mut files: Vec<PathBuf> = Vec::new();
    for case in cases {
        if !files.contains(&case.file) {
            files.push(case.file.clone());
        }
    }
    let mut xml = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        xml,
        "<testsuites name=\"runner test\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\" time=\"{:.3}\">",
        cases.len(),
        totals.failed,
        totals.skipped,
        elapsed.as_secs_f64()
    );
    for file in &files {
        let of_file: Vec<&CaseReport> = cases.iter().filter(|c| &c.file == file).collect();
        suite(&mut xml, file, &of_file);
    }
    xml.push_str("</testsuites>\n");
    xml
}

fn suite(xml: &mut String, file: &std::path::Path, cases: &[&CaseReport]) {
    let count = |verdict| cases.iter().filter(|c| c.verdict == verdict).count();
    let time: Duration = cases.iter().map(|c| c.duration).sum();
    let name = escape(&file.display().to_string());
    let _ = writeln!(
        xml,
        "  <testsuite name=\"{name}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\" time=\"{:.3}\">",
        cases.len(),
        count(Verdict::Failed),
        count(Verdict::Skipped),
        time.as_secs_f64()
    );
    for case in cases {
        testcase(xml, &name, case);
    }
    xml.push_str("  </testsuite>\n");
}

fn testcase(xml: &mut String, file: &str, case: &CaseReport) {
    let line = case
        .failures
        .first()
        .map_or(String::new(), |f| format!(" line=\"{}\"", f.line));
    let _ = write!(
        xml,
        "    <testcase classname=\"{file}\" name=\"{}\" file=\"{file}\"{line} time=\"{:.3}\"",
        escape(&case.name),
        case.duration.as_secs_f64()
    );
    match case.verdict {
        Verdict::Passed => xml.push_str("/>\n"),
        Verdict::Skipped => {
            let reason = escape(case.skipped.as_deref().unwrap_or_default());
            let _ = writeln!(
                xml,
                ">\n      <skipped message=\"{reason}\"/>\n    </testcase>"
            );
        }
        Verdict::Failed => {
            let first = case.failures.first().map_or("", |f| f.message.as_str());
            let lines: Vec<String> = case
                .failures
                .iter()
                .map(|f| {
                    format!(
                        "{}:{}:{}: {}",
                        f.file.display(),
                        f.line,
                        f.column,
                        f.message
                    )
                })
                .collect();
            let _ = writeln!(
                xml,
                ">\n      <failure message=\"{}\" type=\"assertion\">{}</failure>",
                escape(first),
                escape(&lines.join("\n"))
            );
            if let Some(dir) = &case.run_dir {
                let _ = writeln!(
                    xml,
                    "      <system-out>run directory: {}</system-out>",
                    escape(&dir.display().to_string())
                );
            }
            xml.push_str("    </testcase>\n");
        }
    }
}
