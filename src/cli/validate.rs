//! `runner validate PATH... [--format text|json|github|junit|gitlab] [--watch]`.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use clap::ValueEnum;

use super::Exit;
use super::job_summary;
use super::style::{paint, stdout_colored};
use crate::output::ci_report::{github_diagnostics, junit};
use crate::output::code_quality::validate_report;
use crate::output::job_summary::validate_summary;
use crate::reload::{FileWatcher, agent_files};
use crate::spec::validate::expand_paths;
use crate::spec::validate::validate_files;
use crate::spec::{Diagnostic, Severity};

/// How `runner validate` prints what it found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ValidateFormat {
    Text,
    Json,
    Github,
    Junit,
    /// GitLab's Code Quality JSON: an issue per problem, on the merge request's lines.
    Gitlab,
}

/// Validates the files of `paths` and prints what it found; the job summary goes where
/// [`job_summary::write`] says (`summary`, and GitHub's in a workflow).
pub fn run(paths: &[PathBuf], format: ValidateFormat, summary: Option<&Path>) -> Exit {
    let files = match expand_paths(paths) {
        Ok(files) => files,
        Err(message) => {
            eprintln!("error: {message}");
            return Exit::Invalid;
        }
    };
    let diagnostics = validate_files(&files);
    match format {
        ValidateFormat::Json => match serde_json::to_string_pretty(&diagnostics) {
            Ok(json) => outln!("{json}"),
            Err(error) => {
                eprintln!("error: cannot print diagnostics: {error}");
                return Exit::Failed;
            }
        },
        ValidateFormat::Text => print_text(&diagnostics),
        ValidateFormat::Github => out!("{}", github_diagnostics(&diagnostics)),
        ValidateFormat::Junit => out!("{}", junit(&files, &diagnostics)),
        ValidateFormat::Gitlab => out!("{}", validate_report(&diagnostics)),
    }
    job_summary::write(|| validate_summary(&files, &diagnostics), summary);
    if diagnostics.iter().any(Diagnostic::is_error) {
        Exit::Invalid
    } else {
        Exit::Completed
    }
}

/// `--watch`: validates, then again after every save of a checked file (or a file one of
/// them pulls in), clearing the screen first on a terminal. Runs until interrupted.
pub fn watch(paths: &[PathBuf], format: ValidateFormat) -> Exit {
    loop {
        // Watch first, so a save during the validation is not missed.
        let files = match expand_paths(paths) {
            Ok(files) => files,
            Err(message) => {
                eprintln!("error: {message}");
                return Exit::Invalid;
            }
        };
        let watched: Vec<PathBuf> = files.iter().flat_map(|file| agent_files(file)).collect();
        let watcher = match FileWatcher::new(&watched) {
            Ok(watcher) => watcher,
            Err(error) => {
                eprintln!("error: cannot watch the files: {error}");
                return Exit::Failed;
            }
        };
        if std::io::stdout().is_terminal() {
            out!("\x1b[2J\x1b[H");
        }
        let exit = run(paths, format, None);
        let verdict = if exit == Exit::Completed {
            "valid"
        } else {
            "not valid"
        };
        outln!(
            "-- {} file(s) {verdict}; watching {} file(s) for changes",
            files.len(),
            watched.len()
        );
        let _ = std::io::stdout().flush();
        watcher.wait();
    }
}

fn print_text(diagnostics: &[Diagnostic]) {
    let color = stdout_colored();
    for diagnostic in diagnostics {
        let text = diagnostic.to_string();
        if color {
            let (label, ansi) = match diagnostic.severity {
                Severity::Error => ("error[", "1;31"),
                Severity::Warning => ("warning[", "1;33"),
            };
            outln!("{}", text.replacen(label, &paint(label, ansi, true), 1));
        } else {
            outln!("{text}");
        }
    }
    let errors = diagnostics.iter().filter(|d| d.is_error()).count();
    let warnings = diagnostics.len() - errors;
    if errors > 0 || warnings > 0 {
        eprintln!("{errors} error(s), {warnings} warning(s)");
    }
}
