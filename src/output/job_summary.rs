//! Job summaries of a run and of `runner validate`: short Markdown for a CI job's page
//! (GitHub's `GITHUB_STEP_SUMMARY`, or any file with `--summary`), built of
//! [`safe_markdown`](super::safe_markdown) pieces so nothing a model wrote becomes markup.

use std::path::{Path, PathBuf};

use super::result::RunResult;
use super::safe_markdown::{Document, Table, Text};
use super::summary::{counted, status_label, thousands};
use crate::spec::{Diagnostic, Severity};

/// A run: how it ended, what it did and spent, its answer (or structured value), its
/// error or limit, its warnings, and where its files are.
pub fn run_summary(result: &RunResult, run_dir: Option<&Path>) -> String {
    let mut doc = Document::new();
    // A run refused before its file was read has no agent name yet.
    let agent = match result.agent.as_str() {
        "" => String::new(),
        name => format!(" {name}"),
    };
    doc.heading(
        3,
        Text::plain(&format!(
            "runner:{agent} {} (exit {})",
            status_label(result.status),
            result.exit_code
        )),
    );
    let mut table = Table::new(&[
        "Status",
        "Exit code",
        "Steps",
        "Model calls",
        "Tool calls",
        "Tokens",
        "Cost",
        "Duration",
    ]);
    let usage = &result.usage;
    table.row(vec![
        status_label(result.status).into(),
        result.exit_code.to_string().into(),
        result.steps.to_string().into(),
        result.llm_calls.to_string().into(),
        result.tool_calls.to_string().into(),
        format!(
            "{} ({} in, {} out)",
            thousands(usage.total_tokens),
            thousands(usage.input_tokens),
            thousands(usage.output_tokens)
        )
        .into(),
        usage
            .cost_usd
            .map_or("not priced".to_string(), |cost| format!("${cost:.4}"))
            .into(),
        format!("{:.1} s", result.duration_ms as f64 / 1000.0).into(),
    ]);
    doc.table(&table);
    if let Some(error) = &result.error {
        doc.paragraph(Text::join(
            &[
                Text::strong("Error:"),
                Text::plain(&format!("error[{}]: {}", error.code, error.message)),
            ],
            " ",
        ));
    }
    if let Some(limit) = result.limit {
        let key = limit.yaml_key().unwrap_or_else(|| limit.to_string());
        doc.paragraph(Text::join(
            &[Text::strong("Limit reached:"), Text::plain(&key)],
            " ",
        ));
    }
    if !result.warnings.is_empty() {
        doc.paragraph(Text::strong("Warnings"));
        let items: Vec<Text> = result.warnings.iter().map(|w| Text::plain(w)).collect();
        doc.list(&items);
    }
    match (&result.structured, &result.output) {
        (Some(value), _) => {
            doc.paragraph(Text::strong("Structured output"));
            doc.fenced(
                "json",
                &serde_json::to_string_pretty(value).unwrap_or_default(),
            );
        }
        (None, Some(answer)) if !answer.trim().is_empty() => {
            doc.paragraph(Text::strong("Answer"));
            doc.quote(answer);
        }
        _ => {}
    }
    let mut places = vec![Text::join(
        &[Text::strong("Session:"), Text::plain(&result.session_id)],
        " ",
    )];
    if let Some(dir) = run_dir {
        places.push(Text::join(
            &[
                Text::strong("Run directory:"),
                Text::plain(&dir.display().to_string()),
            ],
            " ",
        ));
    }
    doc.list(&places);
    doc.finish()
}

/// `runner validate`: how many files and problems, and each problem at its `file:line`.
pub fn validate_summary(files: &[PathBuf], diagnostics: &[Diagnostic]) -> String {
    let errors = diagnostics.iter().filter(|d| d.is_error()).count() as u64;
    let warnings = diagnostics.len() as u64 - errors;
    let verdict = match errors {
        0 => "valid",
        _ => "not valid",
    };
    let mut doc = Document::new();
    doc.heading(
        3,
        Text::plain(&format!(
            "runner validate: {} {verdict} ({}, {})",
            counted(files.len() as u64, "file", "files"),
            counted(errors, "error", "errors"),
            counted(warnings, "warning", "warnings"),
        )),
    );
    if diagnostics.is_empty() {
        return doc.finish();
    }
    let mut table = Table::new(&["Location", "Severity", "Code", "Problem"]);
    for d in diagnostics {
        let severity = match d.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        let problem = match &d.hint {
            Some(hint) => format!("{} (hint: {hint})", d.message),
            None => d.message.clone(),
        };
        table.row(vec![
            format!("{}:{}:{}", d.file.display(), d.line, d.column).into(),
            severity.into(),
            d.code.as_str().into(),
            problem.into(),
        ]);
    }
    doc.table(&table);
    doc.finish()
}
