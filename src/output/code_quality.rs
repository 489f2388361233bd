//! GitLab's Code Quality report (`artifacts: reports: codequality:`): a JSON array of
//! issues, each with a description, a check name, a fingerprint, a severity and a location
//! (a path relative to the repository and a line), which GitLab shows on the merge request.
//! `runner validate --format gitlab` and `runner test --format gitlab` write it;
//! `tests/fixtures/gitlab-code-quality.schema.json` is the schema the tests check it with.

use std::collections::HashMap;
use std::path::{Component, Path};
use std::sync::LazyLock;

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::secrets::TextRedactor;
use crate::spec::{Diagnostic, Severity};

/// The severities runner gives, of GitLab's five (`info`, `minor`, `major`, `critical`,
/// `blocker`): a warning is minor, an error or a failed assertion major.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum QualitySeverity {
    Minor,
    Major,
}

/// One issue of the report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QualityIssue {
    pub description: String,
    pub check_name: String,
    pub fingerprint: String,
    pub severity: QualitySeverity,
    pub location: QualityLocation,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QualityLocation {
    pub path: String,
    pub lines: QualityLines,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QualityLines {
    pub begin: usize,
}

/// What a report is made of, before fingerprints: the issue's check, text, place and
/// severity.
pub struct Finding<'a> {
    pub check_name: String,
    pub description: String,
    pub file: &'a Path,
    pub line: usize,
    pub severity: QualitySeverity,
}

/// The report of `findings`, as pretty JSON. Descriptions are redacted (a test's failure
/// quotes what the model said). Each fingerprint is the SHA-256 of the check, the path,
/// the line and the description, with how many identical findings came before it, so it
/// is stable from one pipeline to the next and unique in a report (GitLab shows one issue
/// per fingerprint).
pub fn report(findings: Vec<Finding<'_>>) -> String {
    static REDACTOR: LazyLock<TextRedactor> = LazyLock::new(TextRedactor::default);
    let mut seen: HashMap<String, usize> = HashMap::new();
    let issues: Vec<QualityIssue> = findings
        .into_iter()
        .map(|finding| {
            let path = repository_path(finding.file);
            let description = REDACTOR
                .redact_text(&finding.description)
                .unwrap_or(finding.description);
            let line = finding.line.max(1);
            let key = format!("{}\0{path}\0{line}\0{description}", finding.check_name);
            let occurrence = seen.entry(key.clone()).or_default();
            *occurrence += 1;
            let digest = Sha256::digest(format!("{key}\0{occurrence}").as_bytes());
            QualityIssue {
                description,
                check_name: finding.check_name,
                fingerprint: digest.iter().map(|b| format!("{b:02x}")).collect(),
                severity: finding.severity,
                location: QualityLocation {
                    path,
                    lines: QualityLines { begin: line },
                },
            }
        })
        .collect();
    serde_json::to_string_pretty(&issues).unwrap_or_else(|_| "[]".into()) + "\n"
}

/// The diagnostics of `runner validate`: errors `major`, warnings `minor`, the check named
/// by the diagnostic's code, the hint after the message.
pub fn validate_report(diagnostics: &[Diagnostic]) -> String {
    let findings = diagnostics
        .iter()
        .map(|d| Finding {
            check_name: format!("runner/{}", d.code.as_str()),
            description: match &d.hint {
                Some(hint) => format!("{} (hint: {hint})", d.message),
                None => d.message.clone(),
            },
            file: &d.file,
            line: d.line,
            severity: match d.severity {
                Severity::Error => QualitySeverity::Major,
                Severity::Warning => QualitySeverity::Minor,
            },
        })
        .collect();
    report(findings)
}

/// The path GitLab matches against the repository: relative to the working directory
/// (where CI jobs start, the repository's root) when it is under it, with `/` separators
/// and no `./`.
fn repository_path(file: &Path) -> String {
    let relative = std::env::current_dir()
        .ok()
        .and_then(|cwd| file.strip_prefix(cwd).ok().map(Path::to_path_buf))
        .unwrap_or_else(|| file.to_path_buf());
    let parts: Vec<String> = relative
        .components()
        .filter(|c| !matches!(c, Component::CurDir))
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    parts.join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(file: &Path) -> Finding<'_> {
        Finding {
            check_name: "runner/x".into(),
            description: "same".into(),
            file,
            line: 0,
            severity: QualitySeverity::Major,
        }
    }

    #[test]
    fn identical_findings_get_different_fingerprints_and_line_one() {
        let file = Path::new("./agents/a.yaml");
        let json = report(vec![finding(file), finding(file)]);
        let issues: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_ne!(issues[0]["fingerprint"], issues[1]["fingerprint"]);
        assert_eq!(issues[0]["location"]["path"], "agents/a.yaml");
        assert_eq!(issues[0]["location"]["lines"]["begin"], 1);
    }
}
