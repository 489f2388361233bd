//! `runner validate PATH... [--format text|json] [--watch]`.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use super::style::{paint, stdout_colored};
use super::{Exit, Format};
use crate::reload::{FileWatcher, agent_files};
use crate::spec::validate::expand_paths;
use crate::spec::{Diagnostic, Severity, validate_paths};

pub fn run(paths: &[PathBuf], format: Format) -> Exit {
    let diagnostics = match validate_paths(paths) {
        Ok(diagnostics) => diagnostics,
        Err(message) => {
            eprintln!("error: {message}");
            return Exit::Invalid;
        }
    };
    match format {
        Format::Json => match serde_json::to_string_pretty(&diagnostics) {
            Ok(json) => outln!("{json}"),
            Err(error) => {
                eprintln!("error: cannot print diagnostics: {error}");
                return Exit::Failed;
            }
        },
        Format::Text => print_text(&diagnostics),
    }
    if diagnostics.iter().any(Diagnostic::is_error) {
        Exit::Invalid
    } else {
        Exit::Completed
    }
}

/// `--watch`: validates, then again after every save of a checked file (or a file one of
/// them pulls in), clearing the screen first on a terminal. Runs until interrupted.
pub fn watch(paths: &[PathBuf], format: Format) -> Exit {
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
        let exit = run(paths, format);
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
