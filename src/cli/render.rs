//! `runner render TRANSCRIPT [--format markdown|text|json]`: a transcript for people or
//! programs. The strict parser refuses a malformed file with `line:col` and what it expected.

use std::io::{IsTerminal, Write};
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
        RenderFormat::Json => {
            // For programs: compact, streamed to stdout without building the text first
            // (a 100 MB transcript renders at the speed of the parser).
            let stdout = std::io::stdout();
            let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
            let written = serde_json::to_writer(&mut out, &transcript)
                .map_err(std::io::Error::other)
                .and_then(|()| out.write_all(b"\n"))
                .and_then(|()| out.flush());
            return match written {
                Ok(()) => Exit::Completed,
                Err(error) => {
                    eprintln!("error: cannot write the JSON: {error}");
                    Exit::Failed
                }
            };
        }
    };
    let color = format == Format::Text
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        && std::io::stdout().is_terminal();
    out!("{}", render(&transcript, format, color));
    Exit::Completed
}
