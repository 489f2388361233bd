//! `runner render TRANSCRIPT [--format markdown|text|json]`: a transcript for people or
//! programs. The strict parser refuses a malformed file with `line:col` and what it expected.

use std::io::IsTerminal;
use std::path::Path;

use clap::ValueEnum;

use super::Exit;
use crate::output::render::{Format, render};
use crate::output::transcript::parse;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RenderFormat {
    Markdown,
    Text,
    Json,
}

pub fn run(path: &Path, format: RenderFormat) -> Exit {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) => {
            eprintln!("error: cannot read {}: {error}", path.display());
            return Exit::Invalid;
        }
    };
    let transcript = match parse(&text) {
        Ok(transcript) => transcript,
        Err(error) => {
            eprintln!("{}:{error}", path.display());
            return Exit::Invalid;
        }
    };
    let format = match format {
        RenderFormat::Markdown => Format::Markdown,
        RenderFormat::Text => Format::Text,
        RenderFormat::Json => Format::Json,
    };
    let color = format == Format::Text
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        && std::io::stdout().is_terminal();
    print!("{}", render(&transcript, format, color));
    Exit::Completed
}
