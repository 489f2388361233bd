//! `runner render TRANSCRIPT [--format markdown|text|json] [--strict]`: a transcript for
//! people or programs. Any transcript of the reference format is read (the tolerant
//! parser); `--strict` holds it to the runner's own grammar. Either refuses a malformed
//! file with `line:col` and what it expected.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use clap::ValueEnum;

use super::Exit;
use crate::checkpoint::{CheckpointStore, FileCheckpointStore};
use crate::output::render::{Format, render, write_markdown};
use crate::output::transcript::{Transcript, parse, parse_tolerant};
use crate::session::files::default_sessions_dir;
use crate::session::run_dir::runs_dir;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RenderFormat {
    Markdown,
    Text,
    Json,
}

pub fn run(what: &Path, format: RenderFormat, strict: bool) -> Exit {
    let path = match transcript_of(what) {
        Ok(path) => path,
        Err(message) => {
            eprintln!("error: {message}");
            return Exit::Invalid;
        }
    };
    let path = path.as_path();
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) => {
            eprintln!("error: cannot read {}: {error}", path.display());
            return Exit::Invalid;
        }
    };
    let parsed = if strict {
        parse(&text)
    } else {
        parse_tolerant(&text)
    };
    let transcript = match parsed {
        Ok(transcript) => transcript,
        Err(error) => {
            eprintln!("{}:{error}", path.display());
            return Exit::Invalid;
        }
    };
    let exit = print(&transcript, format);
    // The process ends here: freeing the tree and the text piece by piece cost a sixth of
    // a large render.
    std::mem::forget(transcript);
    std::mem::forget(text);
    exit
}

/// Prints `transcript` in `format` on stdout.
fn print(transcript: &Transcript, format: RenderFormat) -> Exit {
    let format = match format {
        RenderFormat::Markdown => {
            // Written a piece at a time; a reader that went away ends it quietly.
            let mut out = std::io::stdout().lock();
            let _ = write_markdown(transcript, &mut out).and_then(|()| out.flush());
            return Exit::Completed;
        }
        RenderFormat::Text => Format::Text,
        RenderFormat::Json => {
            // For programs: compact, streamed to stdout without building the text first
            // (a 100 MB transcript renders at the speed of the parser).
            let stdout = std::io::stdout();
            let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
            let written = serde_json::to_writer(&mut out, transcript)
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
    out!("{}", render(transcript, format, color));
    Exit::Completed
}

/// The transcript `what` names: a file; a run directory; `last`, a run id or a session id
/// (its last run) under `.runner`. A run given `--run-dir` elsewhere is found by its
/// directory.
fn transcript_of(what: &Path) -> Result<PathBuf, String> {
    if what.is_file() {
        return Ok(what.to_path_buf());
    }
    let name = what.to_string_lossy();
    let dir = if what.is_dir() {
        what.to_path_buf()
    } else if name == "last" {
        latest_run().ok_or_else(|| format!("no runs in {}", runs_dir().display()))?
    } else if runs_dir().join(what).is_dir() {
        runs_dir().join(what)
    } else if let Some(run) = last_run_of_session(&name) {
        runs_dir().join(run)
    } else {
        return Err(format!(
            "no transcript, run directory, run id or session `{name}` (give a transcript.txt, a run \
             directory, or `last`)"
        ));
    };
    Ok(dir.join("transcript.txt"))
}

/// The run directory under `.runner/runs` whose transcript changed last.
fn latest_run() -> Option<PathBuf> {
    let runs = std::fs::read_dir(runs_dir()).ok()?;
    runs.flatten()
        .filter_map(|run| {
            let changed = run
                .path()
                .join("transcript.txt")
                .metadata()
                .ok()?
                .modified()
                .ok()?;
            Some((changed, run.path()))
        })
        .max_by_key(|(changed, _)| *changed)
        .map(|(_, path)| path)
}

/// The id of a session's last run, when `name` is a session of `.runner/sessions`.
fn last_run_of_session(name: &str) -> Option<String> {
    crate::checkpoint::check_session_id(name).ok()?;
    if !default_sessions_dir().is_dir() {
        return None;
    }
    let store = FileCheckpointStore::create(default_sessions_dir()).ok()?;
    store.metadata(name).ok()??.run_ids.last().cloned()
}
