//! Reports for CI systems: GitHub Actions workflow commands (`::error file=…::…`, shown as
//! annotations on the pull request's lines) and JUnit XML (read by most CI dashboards).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::output::result::{ResultError, RunResult};
use crate::output::summary::status_label;
use crate::protocol;
use crate::spec::{Diagnostic, Severity};

/// Whether this process runs as a GitHub Actions step.
pub fn in_github_actions() -> bool {
    std::env::var_os("GITHUB_ACTIONS").is_some_and(|value| value == "true")
}

/// Where an annotation points.
#[derive(Debug, Clone, Copy, Default)]
pub struct At<'a> {
    pub file: Option<&'a Path>,
    pub line: usize,
    pub column: usize,
}

/// One workflow command: `::error file=F,line=L,col=C,title=T::MESSAGE`. Values are
/// escaped as the runner expects (`%`, CR and LF everywhere; `:` and `,` in properties too),
/// so a message cannot end the command early or start another.
pub fn github_annotation(severity: Severity, at: At<'_>, title: &str, message: &str) -> String {
    let level = match severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
    };
    let mut properties = Vec::new();
    if let Some(file) = at.file {
        properties.push(format!("file={}", property(&file.display().to_string())));
        if at.line > 0 {
            properties.push(format!("line={}", at.line));
            properties.push(format!("col={}", at.column));
        }
    }
    properties.push(format!("title={}", property(title)));
    format!("::{level} {}::{}", properties.join(","), data(message))
}

fn data(text: &str) -> String {
    text.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

fn property(text: &str) -> String {
    data(text).replace(':', "%3A").replace(',', "%2C")
}

/// A run that did not complete, as an annotation on the job (no file: the run has no line).
pub fn run_annotation(result: &RunResult, error: &ResultError) -> String {
    let title = format!("runner: {} {}", result.agent, status_label(result.status));
    let message = format!("error[{}]: {}", error.code, error.message);
    github_annotation(Severity::Error, At::default(), &title, &message)
}

/// The diagnostics of `runner validate` as annotations, one per line.
pub fn github_diagnostics(diagnostics: &[Diagnostic]) -> String {
    diagnostics
        .iter()
        .map(|d| {
            let at = At {
                file: Some(&d.file),
                line: d.line,
                column: d.column,
            };
            let message = match &d.hint {
                Some(hint) => format!("{}\n{hint}", d.message),
                None => d.message.clone(),
            };
            github_annotation(d.severity, at, d.code.as_str(), &message) + "\n"
        })
        .collect()
}

/// The files `runner validate` checked as a JUnit test suite: a test case per file, failed
/// by its errors (warnings go in its output).
pub fn junit(files: &[PathBuf], diagnostics: &[Diagnostic]) -> String {
    let failures = files
        .iter()
        .filter(|file| diagnostics.iter().any(|d| d.is_error() && d.file == **file))
        .count();
    let mut xml = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        xml,
        "<testsuites name=\"runner validate\" tests=\"{}\" failures=\"{failures}\">",
        files.len()
    );
    let _ = writeln!(
        xml,
        "  <testsuite name=\"runner validate\" tests=\"{}\" failures=\"{failures}\" errors=\"0\">",
        files.len()
    );
    for file in files {
        let name = escape(&file.display().to_string());
        let (errors, warnings): (Vec<&Diagnostic>, Vec<&Diagnostic>) = diagnostics
            .iter()
            .filter(|d| d.file == *file)
            .partition(|d| d.is_error());
        let _ = write!(
            xml,
            "    <testcase classname=\"runner.validate\" name=\"{name}\" file=\"{name}\""
        );
        if errors.is_empty() && warnings.is_empty() {
            xml.push_str("/>\n");
            continue;
        }
        xml.push_str(">\n");
        if let Some(first) = errors.first() {
            let lines: Vec<String> = errors.iter().map(|d| d.to_string()).collect();
            let _ = writeln!(
                xml,
                "      <failure message=\"{}\" type=\"{}\">{}</failure>",
                escape(&first.message),
                first.code.as_str(),
                escape(&lines.join("\n"))
            );
        }
        if !warnings.is_empty() {
            let lines: Vec<String> = warnings.iter().map(|d| d.to_string()).collect();
            let _ = writeln!(
                xml,
                "      <system-out>{}</system-out>",
                escape(&lines.join("\n"))
            );
        }
        xml.push_str("    </testcase>\n");
    }
    xml.push_str("  </testsuite>\n</testsuites>\n");
    xml
}

/// Text for XML content and attribute values: the XML protocol's escaping, after characters
/// XML 1.0 cannot hold at all (control characters other than tab, CR and LF) become U+FFFD.
pub(crate) fn escape(text: &str) -> String {
    let holdable: String = text
        .chars()
        .map(|c| match c {
            '\t' | '\n' | '\r' => c,
            c if (c as u32) < 0x20 => '\u{FFFD}',
            c => c,
        })
        .collect();
    protocol::escape(&holdable)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_cannot_end_the_command_or_start_another() {
        let at = At {
            file: Some(Path::new("a,b:c.yaml")),
            line: 3,
            column: 7,
        };
        let line = github_annotation(Severity::Error, at, "x", "50%\n::error::forged");
        assert_eq!(
            line,
            "::error file=a%2Cb%3Ac.yaml,line=3,col=7,title=x::50%25%0A::error::forged"
        );
    }

    #[test]
    fn xml_text_is_escaped() {
        assert_eq!(
            escape("<a & \"b\">\u{1}"),
            "&lt;a &amp; &quot;b&quot;&gt;\u{FFFD}"
        );
    }
}
