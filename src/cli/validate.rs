//! `runner validate PATH... [--format text|json]`.

use std::path::PathBuf;

use super::style::{paint, stdout_colored};
use super::{Exit, Format};
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
            Ok(json) => println!("{json}"),
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

fn print_text(diagnostics: &[Diagnostic]) {
    let color = stdout_colored();
    for diagnostic in diagnostics {
        let text = diagnostic.to_string();
        if color {
            let (label, ansi) = match diagnostic.severity {
                Severity::Error => ("error[", "1;31"),
                Severity::Warning => ("warning[", "1;33"),
            };
            println!("{}", text.replacen(label, &paint(label, ansi, true), 1));
        } else {
            println!("{text}");
        }
    }
    let errors = diagnostics.iter().filter(|d| d.is_error()).count();
    let warnings = diagnostics.len() - errors;
    if errors > 0 || warnings > 0 {
        eprintln!("{errors} error(s), {warnings} warning(s)");
    }
}
